"""WordNet 3.0 for NLTK, built offline from the Debian ``wordnet-base`` files.

NLTK's own downloader cannot reach the network here, but Debian ships the same WordNet 3.0
database in ``/usr/share/wordnet`` (packages ``wordnet-base`` and ``wordnet-sense-index``). NLTK
reads it if the files sit in ``<root>/corpora/wordnet/`` next to a ``lexnames`` file, which Debian
does not ship, so we generate it. NLTK refuses symlinks that leave its data root: we copy.

The root defaults to ``data/wordnet`` in the repository and can be moved with the environment
variable ``MORPHSCOPE_WORDNET_DIR``. Nothing here downloads anything.

Also: small lookups several relations share (``synonyms``, ``antonyms``, part-of-speech guesses
from WordNet itself, since NLTK's POS tagger data cannot be installed here).

Thread safety: NLTK's reader is not safe to share between threads. It keeps one open handle per
data file and answers a synset lookup with ``seek`` then ``readline`` (and binary-searches
``cntlist.rev`` the same way), so two threads interleaving those calls read each other's lines:
wrong synsets, exceptions, or a binary search that never ends. Follow-ups are built in a thread
pool, so every lookup here runs under one lock and its answer is memoised (an immutable tuple per
reader and arguments): the same word always gets the same answer, whichever thread asks first.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable
from functools import cache, lru_cache, wraps
from pathlib import Path
from typing import Any

from core.settings import WORDNET_DIR_VARIABLE, settings

SOURCE_DIR = Path("/usr/share/wordnet")  # where apt puts WordNet 3.0 (tests point it elsewhere)
ENV_DIR = WORDNET_DIR_VARIABLE

# The files NLTK's WordNet reader opens; the rest of the Debian folder is copied when present.
REQUIRED_FILES = (
    "data.noun",
    "data.verb",
    "data.adj",
    "data.adv",
    "index.noun",
    "index.verb",
    "index.adj",
    "index.adv",
    "noun.exc",
    "verb.exc",
    "adj.exc",
    "adv.exc",
)
OPTIONAL_FILES = ("index.sense", "cntlist.rev", "cntlist", "frames.vrb", "sents.vrb", "sentidx.vrb")


def _words(text: str) -> list[str]:
    return text.split()


# WordNet's lexicographer files in file-number order, with their part of speech
# (1 noun, 2 verb, 3 adjective, 4 adverb). The numbers are the ones in the data files.
LEXNAMES: tuple[tuple[str, int], ...] = (
    ("adj.all", 3),
    ("adj.pert", 3),
    ("adv.all", 4),
    *(
        (f"noun.{name}", 1)
        for name in _words(
            "Tops act animal artifact attribute body cognition communication event feeling food "
            "group location motive object person phenomenon plant possession process quantity "
            "relation shape state substance time"
        )
    ),
    *(
        (f"verb.{name}", 2)
        for name in _words(
            "body change cognition communication competition consumption contact creation "
            "emotion motion perception possession social stative weather"
        )
    ),
    ("adj.ppl", 3),
)

MISSING_MESSAGE = (
    "WordNet files not found in /usr/share/wordnet; install wordnet-base wordnet-sense-index"
)

# One lock for building the folder, loading the reader and every lookup (see the module docstring).
# Re-entrant: a memoised lookup calls ``load_wordnet`` and other lookups while holding it.
_wordnet_lock = threading.RLock()
LOOKUP_CACHE_SIZE = 200_000  # memoised answers per lookup function (words, not bytes)

# Function words that WordNet also lists as nouns or adjectives ("a" the vitamin, "in" the state,
# "will" the noun …): never treated as content words. Our own list.
STOPWORDS = frozenset(
    _words(
        """
    a an the this that these those some any each every no none all both either neither such
    i me my mine myself you your yours yourself yourselves he him his himself she her hers herself
    it its itself we us our ours ourselves they them their theirs themselves who whom whose which
    what whatever whoever where when why how there here then than so too very just only also
    not nor never no yes and or but if because as while until unless although though whether
    of at by for with about against between into through during before after above below to from
    up down in out on off over under again further once upon within without toward towards onto
    across along around behind beyond near among per via
    am is are was were be been being have has had having do does did doing done
    will would shall should can could may might must ought
    s t d ll m re ve o y don isn aren wasn weren hasn haven hadn doesn didn won wouldn shan
    shouldn can't cannot couldn mightn mustn needn
    more most other another same own few many much several lot lots
    one ones something anything nothing everything someone anyone everyone nobody somebody
    """
    )
)

WN_POS = ("n", "v", "a", "r")


def wordnet_root() -> Path:
    """The NLTK data root holding ``corpora/wordnet`` (env override, else ``data/wordnet``)."""
    return settings().wordnet_root


def lexnames_text() -> str:
    """The generated ``lexnames`` file: ``NN<TAB>name<TAB>pos`` per line, 45 lines."""
    return "".join(f"{number:02d}\t{name}\t{pos}\n" for number, (name, pos) in enumerate(LEXNAMES))


def _copy_atomic(source: Path, target: Path) -> None:
    # Copy to a temporary name then rename, so a concurrent reader never sees half a file.
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    os.close(handle)
    try:
        shutil.copyfile(source, temporary)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _complete(corpus: Path) -> bool:
    needed = (*REQUIRED_FILES, "lexnames")
    return all((corpus / name).is_file() for name in needed)


def build_corpus_dir(source: Path, root: Path) -> Path:
    """Copy WordNet from ``source`` into ``root/corpora/wordnet`` (idempotent). Returns that dir.

    Raises RuntimeError when ``source`` lacks the WordNet files and no complete copy exists.
    """
    corpus = root / "corpora" / "wordnet"
    missing = [name for name in REQUIRED_FILES if not (source / name).is_file()]
    if missing:
        if _complete(corpus):
            return corpus  # built earlier; the Debian packages are gone since, the copy is not
        raise RuntimeError(MISSING_MESSAGE)
    corpus.mkdir(parents=True, exist_ok=True)
    for name in REQUIRED_FILES + OPTIONAL_FILES:
        origin = source / name
        if not origin.is_file():
            continue
        target = corpus / name
        if target.is_file() and target.stat().st_size == origin.stat().st_size:
            continue
        _copy_atomic(origin, target)
    lexnames = corpus / "lexnames"
    if not lexnames.is_file() or lexnames.read_text(encoding="utf-8") != lexnames_text():
        handle, temporary = tempfile.mkstemp(dir=corpus, prefix=".lexnames.")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(lexnames_text())
        os.replace(temporary, lexnames)
    return corpus


def _reader_class() -> type:
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class Wordnet30Reader(WordNetCorpusReader):
        """NLTK's reader, minus a needless start-up cost for this exact database.

        NLTK maps synsets of "its" WordNet onto the loaded one for the multilingual data by
        reading ``index.sense`` twice (seconds). Our files *are* WordNet 3.0, the version that
        mapping starts from, so the mapping is the identity and we skip it.
        """

        def map_wn(self, version: str = "wordnet") -> Any:
            if self.get_version() == "3.0":
                return None
            return super().map_wn(version)

    return Wordnet30Reader


@cache
def _load(source: str, root: str) -> Any:
    build_corpus_dir(Path(source), Path(root))  # first: a missing WordNet fails fast
    import nltk

    if root not in nltk.data.path:
        # Also lets ``nltk.corpus.wordnet`` find the same files for code that imports it directly.
        nltk.data.path.insert(0, root)
    with warnings.catch_warnings():
        # "multilingual functions are not available": we load no Open Multilingual Wordnet.
        warnings.simplefilter("ignore")
        wordnet = _reader_class()(nltk.data.find("corpora/wordnet"), None)
    if not wordnet.synsets("happy"):
        raise RuntimeError(f"WordNet under {root} loaded but finds no synsets for 'happy'")
    return wordnet


def load_wordnet() -> Any:
    """A WordNet reader (NLTK's ``WordNetCorpusReader``) over the Debian files, built once, cached.

    Raises RuntimeError (naming the apt packages to install) when the Debian files are missing.
    """
    with _wordnet_lock:
        return _load(str(SOURCE_DIR), str(wordnet_root()))


def _serialised(lookup: Callable[..., tuple[Any, ...]]) -> Callable[..., tuple[Any, ...]]:
    """Memoise ``lookup(reader, *args)`` and run it under the WordNet lock.

    The reader is part of the key, so a test that swaps the WordNet folder never sees answers
    from another one. Answers are tuples: nothing a caller does can change a memoised answer.
    """
    memoised = lru_cache(maxsize=LOOKUP_CACHE_SIZE)(lookup)

    @wraps(lookup)
    def locked(*args: Any) -> tuple[Any, ...]:
        with _wordnet_lock:
            return memoised(load_wordnet(), *args)

    locked.cache_clear = memoised.cache_clear  # type: ignore[attr-defined]
    return locked


# ---------------------------------------------------------------- lookups shared by relations


def _lemma_text(name: str) -> str:
    return name.replace("_", " ")


def _pos_matches(synset_pos: str, pos: str | None) -> bool:
    # NLTK tags adjective satellites "s"; callers ask for adjectives as "a".
    if pos is None:
        return True
    return synset_pos == pos or (pos == "a" and synset_pos == "s")


def _synsets(wordnet: Any, word: str, pos: str | None) -> list[Any]:
    # Callers hold the WordNet lock: the reader reads its data files here.
    found = wordnet.synsets(word.lower(), pos=pos)
    return [s for s in found if _pos_matches(s.pos(), pos)]


@_serialised
def _synonyms(
    wordnet: Any, word: str, pos: str | None, senses: int | None, min_count: int
) -> tuple[str, ...]:
    lower = word.lower()
    found: set[str] = set()
    for synset in _synsets(wordnet, lower, pos)[:senses]:
        for lemma in synset.lemmas():
            text = _lemma_text(lemma.name())
            # ``lemma.count()`` reads cntlist.rev through the shared handle: under the lock.
            if text.lower() != lower and (min_count == 0 or lemma.count() >= min_count):
                found.add(text)
    return tuple(sorted(found))


def synonyms(
    word: str, pos: str | None = None, senses: int | None = None, min_count: int = 0
) -> list[str]:
    """WordNet synonyms of ``word`` (other lemmas of its synsets), sorted, without the word.

    ``pos`` is one of ``n v a r`` (None: any); ``senses`` keeps only the first N synsets
    (WordNet lists the most frequent sense first); ``min_count`` keeps only lemmas tagged at
    least that often in that sense in WordNet's sense-tagged corpus (``cntlist.rev``): 'car' →
    'automobile' (15), not 'machine' (0). Multi-word lemmas come back with spaces.
    Safe to call from several threads; the same arguments always give the same list.
    """
    return list(_synonyms(word.lower(), pos, senses, min_count))


@_serialised
def _antonyms(
    wordnet: Any, word: str, pos: str | None, indirect: bool, senses: int | None
) -> tuple[str, ...]:
    lower = word.lower()
    found: set[str] = set()
    satellites = []
    for synset in _synsets(wordnet, lower, pos)[:senses]:
        for lemma in synset.lemmas():
            if lemma.name().lower() != lower:
                continue
            found.update(_lemma_text(a.name()) for a in lemma.antonyms())
        if synset.pos() == "s":
            satellites.append(synset)
    if indirect and not found:
        for satellite in satellites:
            for head in satellite.similar_tos():
                for lemma in head.lemmas():
                    found.update(_lemma_text(a.name()) for a in lemma.antonyms())
    found.discard(lower)
    return tuple(sorted(found))


def antonyms(
    word: str, pos: str | None = None, indirect: bool = True, senses: int | None = None
) -> list[str]:
    """WordNet antonyms of ``word``, sorted.

    Direct antonyms are those of the lemmas spelled like ``word``. With ``indirect``, an adjective
    satellite without direct antonyms borrows those of its head
    (``glad`` → ``happy`` → ``unhappy``). ``senses`` keeps only the first N synsets.
    Safe to call from several threads; the same arguments always give the same list.
    """
    return list(_antonyms(word.lower(), pos, indirect, senses))


@_serialised
def _lemma_poses(wordnet: Any, word: str) -> tuple[str, ...]:
    # The parts of speech for which ``word`` itself is a lemma (not only an inflection).
    return tuple(
        pos
        for pos in WN_POS
        if any(
            lemma.name().lower() == word
            for s in _synsets(wordnet, word, pos)
            for lemma in s.lemmas()
        )
    )


def is_lemma(word: str, pos: str) -> bool:
    """True when ``word`` itself (not an inflection) is a WordNet lemma of this part of speech."""
    return pos in _lemma_poses(word.lower())


@_serialised
def _common_lemmas(wordnet: Any, word: str) -> tuple[str, ...]:
    # Lemmas written in lower case: "bus" for "buses"; none for "lena" (only the river "Lena").
    found = {lemma.name() for s in wordnet.synsets(word) for lemma in s.lemmas()}
    return tuple(sorted(name for name in found if name.islower()))


def is_common_word(word: str) -> bool:
    """Whether ``word`` (any case, any inflection) is a common English word: one of its WordNet
    synsets has a lemma written in lower case. Names are not ("Lena", "Priya", "Oscar"), nor
    are acronyms ("SAM"); a name that is also a word ("Mark", "Ben") is."""
    return bool(_common_lemmas(word.lower()))


@_serialised
def _pos_candidates(wordnet: Any, word: str) -> tuple[str, ...]:
    scored: list[tuple[int, int, str]] = []
    for order, pos in enumerate(WN_POS):
        found = _synsets(wordnet, word, pos)
        if not found:
            continue
        # ``lemma.count()`` binary-searches cntlist.rev through a shared file handle: locked too.
        count = sum(
            lemma.count() for s in found for lemma in s.lemmas() if lemma.name().lower() == word
        )
        scored.append((-count, order, pos))
    return tuple(pos for _, _, pos in sorted(scored))


def pos_candidates(word: str) -> list[str]:
    """Parts of speech (``n v a r``) WordNet knows ``word`` as, most frequent use first.

    Stopwords and non-alphabetic tokens get none. The order uses WordNet's sense counts
    (``cntlist.rev``) of the word's own lemma, so ``happy`` is an adjective before a noun.
    """
    lower = word.lower()
    if lower in STOPWORDS or not lower.isalpha():
        return []
    return list(_pos_candidates(lower))


@_serialised
def _usual_pos(wordnet: Any, word: str) -> tuple[str, ...]:
    scored: list[tuple[int, int, str]] = []
    for order, pos in enumerate(WN_POS):
        lemma = wordnet.morphy(word, pos)  # "gives" → "give" (v), "leaves" → "leaf" (n)
        if not lemma:
            continue
        count = sum(
            entry.count()
            for s in _synsets(wordnet, lemma, pos)
            for entry in s.lemmas()
            if entry.name().lower() == lemma
        )
        scored.append((-count, order, pos))
    return tuple(pos for _, _, pos in sorted(scored))[:1]


def usual_pos(word: str) -> str | None:
    """The part of speech (``n v a r``) of ``word``'s most frequent use, inflections included
    ("gives" is a verb, "hours" a noun), by WordNet's sense counts of its lemma; None for a
    stopword, or a word WordNet does not know (a name, a brand)."""
    lower = word.lower()
    if lower in STOPWORDS or not lower.isalpha():
        return None
    found = _usual_pos(lower)
    return found[0] if found else None


def _forms(wordnet: Any, word: str) -> tuple[str, ...]:
    # Callers hold the WordNet lock (morphy reads the exception lists).
    forms = {word} | {lemma for pos in WN_POS if (lemma := wordnet.morphy(word, pos))}
    return tuple(sorted(forms))


_base_forms = _serialised(_forms)


def base_forms(word: str) -> set[str]:
    """``word`` and its WordNet lemmas for every part of speech ("lessons" → lesson, "rudely"
    stays itself: see ``kin_words``)."""
    return set(_base_forms(word.lower()))


@_serialised
def _kin_words(wordnet: Any, word: str) -> tuple[str, ...]:
    found: set[str] = set()
    for lemma_form in _forms(wordnet, word):
        for synset in wordnet.synsets(lemma_form):
            if synset.pos() == "v":
                continue
            for near in (synset, *synset.similar_tos(), *synset.also_sees()):
                for lemma in near.lemmas():
                    found.add(lemma.name().lower())
                    found.update(d.name().lower() for d in lemma.derivationally_related_forms())
            for lemma in synset.lemmas():
                found.update(p.name().lower() for p in lemma.pertainyms())
    return tuple(sorted(w for w in found if "_" not in w))


def kin_words(word: str) -> set[str]:
    """Words that say what ``word`` says, from its noun, adjective and adverb senses: the lemmas
    of its synsets and of the adjectives WordNet lists as similar, their derived forms ("rude" ↔
    "rudeness") and, for an adverb, the adjective it comes from ("rudely" → "rude"). Verbs are
    left out: their synsets are too wide ("make" shares one with "get")."""
    return set(_kin_words(word.lower()))


def clear_lookup_caches() -> None:
    """Forget every memoised lookup (tests use it to start from a cold cache)."""
    with _wordnet_lock:
        for lookup in (
            _synonyms,
            _antonyms,
            _lemma_poses,
            _pos_candidates,
            _usual_pos,
            _base_forms,
            _kin_words,
        ):
            lookup.cache_clear()  # type: ignore[attr-defined]
