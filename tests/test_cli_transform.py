"""`morphscope transform` asks for rewrites as a run does: best of k (issue 23, item 8)."""

from __future__ import annotations

import itertools
import json

import pytest

from app.cli.main import main
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer

SOURCE = "Tom has 3 marbles and gives 2 to Ann. How many marbles does Tom have now?"
# The rewriter's replies, in the order the candidates are asked (0, 1, 2).
REPLIES = (
    "Tom has 1 marble left.",  # an answer: 3, 2 and Ann dropped, the question gone
    "Tom owns 3 marbles and hands 2 to Ann. How many marbles does Tom own now?",
    "Tom has 3 marbles and gives Ann 2. How many marbles does Tom have now?",
)


@pytest.fixture
def bag_of_words(monkeypatch):
    from app.engine import workspace
    from tests.conftest import BagOfWordsEmbedder

    monkeypatch.setattr(workspace, "default_embedder", BagOfWordsEmbedder)


def _transform(capsys, server, db, *extra) -> dict:
    args = [
        "transform", "si.paraphrase", "--task", "math", "--text", SOURCE,
        "--endpoint", server.base_url, "--model", "fake-model", "--db", str(db), "--json", *extra,
    ]  # fmt: skip
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_transform_asks_for_k_candidates_and_prints_the_one_a_run_would_keep(
    capsys, tmp_path, bag_of_words
):
    """k = 3 (the run's default): #0 is an answer the gate rejects; #1 and #2 pass, and #2 shares
    every word of the source but "to" while #1 swaps two verbs (owns, hands, own), so #2 is the
    closer and is printed. A second try asks nothing: the calls are the runs' cached calls."""
    replies = itertools.cycle(REPLIES)
    with FakeOpenAIServer(FakeBehaviour(responder=lambda messages: next(replies))) as server:
        payload = _transform(capsys, server, tmp_path / "t.db")
        assert server.stats.chat_calls == 3
        assert payload["followup"] == REPLIES[2]
        tried = payload["details"]["rewrite"]
        assert (tried["tried"], tried["valid"], tried["chosen"]) == (3, 2, 2)
        assert tried["candidates"][0]["gate"].startswith("invalid_followup")
        assert _transform(capsys, server, tmp_path / "t.db")["followup"] == REPLIES[2]
        assert server.stats.chat_calls == 3


def test_transform_with_one_candidate_asks_once_and_skips_as_a_run_would(
    capsys, tmp_path, bag_of_words
):
    """k = 1 asks once; that one reply is an answer (#0), which the gate refuses: a run would
    SKIP the case, so transform prints no follow-up, says SKIP with the gate's reason and exits
    3, as it does for a relation that does not apply."""
    replies = itertools.cycle(REPLIES)
    with FakeOpenAIServer(FakeBehaviour(responder=lambda messages: next(replies))) as server:
        args = [
            "transform", "si.paraphrase", "--task", "math", "--text", SOURCE,
            "--endpoint", server.base_url, "--model", "fake-model", "--db", str(tmp_path / "t.db"),
            "--rewrite-candidates", "1",
        ]  # fmt: skip
        assert main([*args, "--json"]) == 3
        payload = json.loads(capsys.readouterr().out)
        assert server.stats.chat_calls == 1
        assert payload["skipped"] is True and "followup" not in payload
        assert payload["reason"].startswith("invalid_followup")
        tried = payload["details"]["rewrite"]
        assert (tried["tried"], tried["valid"], tried["chosen"]) == (1, 0, 0)
        assert tried["candidates"][0]["text"] == REPLIES[0]
        # In words: nothing on stdout, the reason on stderr; the cached call is asked no more.
        assert main(args) == 3
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("SKIP: invalid_followup")
        assert server.stats.chat_calls == 1


def test_transform_refuses_a_k_out_of_range(capsys, tmp_path):
    code = main(["transform", "si.paraphrase", "--text", SOURCE, "--rewrite-candidates", "0"])
    assert code != 0
    assert "--rewrite-candidates must be from 1 to 10" in capsys.readouterr().err
