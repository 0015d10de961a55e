"""The offline WordNet loader: the folder it builds, real lookups, and a clean 'unavailable'."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.tasks import BUILTIN_TASKS
from core.types import Sample
from relations import wordnet
from relations.apply import SkippedFollowUp, generate_followups, transform_text
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
        entry = relation.describe()
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
    assert get_relation("word.negation").describe()["available"] is True
