"""The offline WordNet loader: the folder it builds, real lookups, and a clean 'unavailable'."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from core.tasks import BUILTIN_TASKS
from core.types import Sample
from relations import wordnet
from relations.apply import SkippedFollowUp, generate_followups, transform_text
from relations.catalog import describe_relation
from relations.registry import get_relation
from relations.requirements import availability, wordnet_status

HAVE_DEBIAN_WORDNET = (wordnet.SOURCE_DIR / "data.noun").is_file()
needs_wordnet = pytest.mark.skipif(
    not HAVE_DEBIAN_WORDNET, reason="apt-get install wordnet-base wordnet-sense-index"
)


@pytest.fixture
def no_wordnet(tmp_path, monkeypatch):
    """WordNet made unavailable: no Debian files and an empty data folder."""
    empty_source = tmp_path / "no-debian-wordnet"
    empty_source.mkdir()
    monkeypatch.setattr(wordnet, "SOURCE_DIR", empty_source)
    monkeypatch.setenv(wordnet.ENV_DIR, str(tmp_path / "empty-root"))
    wordnet_status.cache_clear()
    yield
    wordnet_status.cache_clear()


def _fake_debian_folder(folder: Path) -> None:
    folder.mkdir()
    for name in wordnet.REQUIRED_FILES:
        (folder / name).write_text(f"fake {name}\n", encoding="utf-8")


def test_lexnames_has_45_numbered_lines_in_wordnet_order():
    lines = wordnet.lexnames_text().splitlines()
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3"
    assert lines[3] == "03\tnoun.Tops\t1"
    assert lines[5] == "05\tnoun.animal\t1"
    assert lines[28] == "28\tnoun.time\t1"
    assert lines[29] == "29\tverb.body\t2"
    assert lines[43] == "43\tverb.weather\t2"
    assert lines[44] == "44\tadj.ppl\t3"
    assert all(len(line.split("\t")) == 3 for line in lines)


def test_build_copies_files_and_writes_lexnames(tmp_path):
    source = tmp_path / "debian"
    _fake_debian_folder(source)
    corpus = wordnet.build_corpus_dir(source, tmp_path / "root")
    assert corpus == tmp_path / "root" / "corpora" / "wordnet"
    for name in wordnet.REQUIRED_FILES:
        copied = corpus / name
        assert copied.is_file() and not copied.is_symlink()  # NLTK refuses outside symlinks
        assert copied.read_text(encoding="utf-8") == f"fake {name}\n"
    assert (corpus / "lexnames").read_text(encoding="utf-8") == wordnet.lexnames_text()
    # Idempotent, and a finished copy still works once the Debian files are gone.
    assert wordnet.build_corpus_dir(source, tmp_path / "root") == corpus
    for name in wordnet.REQUIRED_FILES:
        (source / name).unlink()
    assert wordnet.build_corpus_dir(source, tmp_path / "root") == corpus


def test_missing_debian_files_raise_with_the_install_hint(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RuntimeError, match="install wordnet-base wordnet-sense-index"):
        wordnet.build_corpus_dir(empty, tmp_path / "root")


def test_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(wordnet.ENV_DIR, raising=False)
    assert wordnet.wordnet_root() == Path(wordnet.__file__).resolve().parents[1] / "data" / (
        "wordnet"
    )
    monkeypatch.setenv(wordnet.ENV_DIR, str(tmp_path))
    assert wordnet.wordnet_root() == tmp_path.resolve()


@pytest.mark.slow  # loading WordNet into NLTK takes seconds, once per process
@needs_wordnet
def test_load_wordnet_reads_real_wordnet():
    reader = wordnet.load_wordnet()
    assert reader is wordnet.load_wordnet()  # cached
    assert reader.get_version() == "3.0"
    assert reader.synset("dog.n.01").lexname() == "noun.animal"  # our lexnames file is right
    names = {s.name() for s in reader.synsets("happy")}
    assert "happy.a.01" in names
    corpus = wordnet.wordnet_root() / "corpora" / "wordnet"
    assert (corpus / "lexnames").is_file() and not (corpus / "data.noun").is_symlink()


@pytest.mark.slow  # loading WordNet into NLTK takes seconds, once per process
@needs_wordnet
def test_synonyms_and_antonyms_are_real_wordnet_content():
    assert "felicitous" in wordnet.synonyms("happy", "a")
    assert wordnet.synonyms("happy", "a") == sorted(wordnet.synonyms("happy", "a"))
    assert "happy" not in wordnet.synonyms("happy", "a")
    assert "film" in wordnet.synonyms("movie", "n", senses=1)
    assert wordnet.antonyms("happy", "a") == ["unhappy"]
    assert "cold" in wordnet.antonyms("hot", "a")
    assert wordnet.antonyms("buy", "v") == ["sell"]
    assert wordnet.antonyms("glad", "a", indirect=True) != []  # via its head adjective
    assert wordnet.antonyms("good", "a", senses=1) == ["bad"]


@pytest.mark.slow  # loading WordNet into NLTK takes seconds, once per process
@needs_wordnet
def test_part_of_speech_comes_from_wordnet_sense_counts():
    assert wordnet.pos_candidates("happy") == ["a"]
    assert wordnet.pos_candidates("movie") == ["n"]
    assert wordnet.pos_candidates("quickly") == ["r"]
    assert wordnet.pos_candidates("run")[0] == "v"
    assert wordnet.pos_candidates("the") == []  # our stopword list
    assert wordnet.pos_candidates("will") == []
    assert wordnet.is_lemma("walk", "v") and not wordnet.is_lemma("walked", "v")


def test_unavailable_wordnet_is_reported_not_raised(no_wordnet):
    ok, why = availability(("wordnet",))
    assert ok is False
    assert "install wordnet-base wordnet-sense-index" in why
    for relation_id in ("word.synonym", "word.antonym"):
        relation = get_relation(relation_id)
        entry = describe_relation(relation)
        assert entry["available"] is False
        assert "WordNet" in entry["unavailable_reason"]
        followups = generate_followups(
            relation,
            Sample(fields={"text": relation.example}),
            BUILTIN_TASKS["sentiment"],
            ["text"],
        )
        assert len(followups) == 1 and isinstance(followups[0], SkippedFollowUp)
        assert followups[0].reason.startswith("relation unavailable: WordNet unavailable")
        assert isinstance(
            transform_text(relation, "A happy day.", task=BUILTIN_TASKS["qa"]), SkippedFollowUp
        )
    # Relations that do not need WordNet are unaffected.
    assert describe_relation(get_relation("word.negation"))["available"] is True


# A mix of adjectives, verbs, adverbs, nouns and inflected forms; most have several senses, so
# a lookup reads many data-file lines (and cntlist.rev for the sense counts).
_THREAD_WORD_LIST = (
    "happy good hot fresh quick slow open close rise fall win lose buy sell give take "
    "early late light heavy strong weak young old increase decrease arrive leave long short "
    "walked rides bigger difficult student question answer cyclist speed road minute price"
)
THREAD_WORDS = _THREAD_WORD_LIST.split(" ")


def _every_lookup(word: str) -> tuple:
    return (
        tuple(wordnet.pos_candidates(word)),
        tuple(wordnet.synonyms(word, None, 2)),
        tuple(wordnet.antonyms(word)),
        tuple(wordnet.antonyms(word, "v", indirect=False)),
        tuple(wordnet.is_lemma(word, pos) for pos in wordnet.WN_POS),
    )


class OverlapDetectingReader:
    """A stand-in WordNet reader that records whether two threads were ever inside it at once."""

    def __init__(self) -> None:
        self.inside = 0
        self.overlaps = 0
        self.calls = 0
        self.guard = threading.Lock()

    def synsets(self, word, pos=None):
        with self.guard:
            self.inside += 1
            self.calls += 1
            self.overlaps += self.inside > 1
        time.sleep(0.002)  # NLTK's seek + readline take about this long
        with self.guard:
            self.inside -= 1
        return []


def test_no_two_threads_are_ever_inside_the_reader_at_once(monkeypatch):
    """Regression: lookups used NLTK's reader with no lock from the runner's 8-thread pool.

    The reader shares one open file per data file (seek, then readline), so concurrent lookups
    read each other's lines. Here a fake reader counts threads inside it: with the lock there is
    never more than one; each distinct question reaches the reader once (memoised).
    """
    reader = OverlapDetectingReader()
    monkeypatch.setattr(wordnet, "load_wordnet", lambda: reader)
    wordnet.clear_lookup_caches()
    words = [f"word{chr(ord('a') + i)}" for i in range(24)]  # alphabetic: not skipped
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda w: (wordnet.synonyms(w), wordnet.pos_candidates(w)), words * 2))
    finally:
        wordnet.clear_lookup_caches()
    assert reader.overlaps == 0
    # synonyms: one synsets call per word; pos_candidates: one per part of speech (n v a r).
    assert reader.calls == len(words) * (1 + len(wordnet.WN_POS))


@pytest.mark.slow  # loading WordNet into NLTK takes seconds, once per process
@needs_wordnet
def test_lookups_from_eight_threads_match_one_thread_from_a_cold_cache():
    """Regression: NLTK's reader shares one file handle per data file (seek, then readline).

    Eight threads building follow-ups read each other's lines: three identical runs gave three
    different follow-up sets, 14–47% ERRORs ("read length must be non-negative", assertion
    errors in the synset parser) and ``rrb.opposites`` hung in a binary search of cntlist.rev.
    Every lookup now runs under one lock and is memoised, so eight threads starting from a cold
    cache get exactly what one thread gets.
    """
    wordnet.load_wordnet()
    wordnet.clear_lookup_caches()
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(_every_lookup, w) for w in THREAD_WORDS * 3]
        threaded = [f.result(timeout=120) for f in futures]
    wordnet.clear_lookup_caches()
    alone = [_every_lookup(w) for w in THREAD_WORDS * 3]
    assert threaded == alone
    assert _every_lookup("happy")[2] == ("unhappy",)  # a sanity pin of a real answer


@pytest.mark.slow  # loading WordNet into NLTK takes seconds, once per process
@needs_wordnet
def test_memoised_answers_cannot_be_changed_by_a_caller():
    first = wordnet.synonyms("happy")
    first.append("not a synonym")
    assert "not a synonym" not in wordnet.synonyms("happy")
