"""`run --dry-run`: the cost preview (app/engine/preview.py) against the fake OpenAI server. Its
planned calls are the distinct call keys the run would use, so a full run afterwards sends
exactly the calls it said, and the cache answers exactly the ones it called cached."""

from __future__ import annotations

import hashlib

import pytest

from app.cli.main import main
from app.engine.token_count import CHARACTERS_PER_TOKEN, TokenCounter
from storage import Store
from tests.test_cli import _run_args, run_json


def _with_relations(args: tuple, relations: str) -> tuple:
    args = list(args)
    args[args.index("--relations") + 1] = relations
    return tuple(args)


def _file_digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_preview_sends_nothing_creates_nothing_and_a_run_sends_what_it_said(
    capsys,
    tmp_path,
    fake_server,
    inputs_file,
    bow,
):
    db = tmp_path / "p.db"
    run = _run_args(fake_server.base_url, inputs_file, db, "--json")
    preview = run_json(capsys, *run, "--dry-run")
    # 20 sources + 20 identity follow-ups (a separate sample of the same prompt) + 20 upper-cased.
    assert (preview["planned_calls"], preview["cached_calls"], preview["calls_to_send"]) == (
        60,
        0,
        60,
    )
    assert preview["cases"] == 40 and preview["cases_settled"] == 0
    assert fake_server.stats.chat_calls == 0 and fake_server.stats.model_listings == 0
    assert not db.exists()
    summary = run_json(capsys, *run)
    assert summary["run_id"] == preview["run_id"]
    assert summary["calls_made"] == fake_server.stats.chat_calls == preview["calls_to_send"]
    # After the run every case is settled: a preview of the same run plans no call.
    again = run_json(capsys, *run, "--dry-run")
    assert again["cases_settled"] == 40 and again["planned_calls"] == 0


def test_the_calls_a_preview_calls_cached_are_the_ones_the_cache_answers(
    capsys,
    tmp_path,
    fake_server,
    inputs_file,
    bow,
):
    db = tmp_path / "c.db"
    both = _run_args(fake_server.base_url, inputs_file, db, "--json")
    first = run_json(capsys, *_with_relations(both, "si.identity"))
    assert first["calls_made"] == 40  # 20 sources + 20 identity samples, now cached
    before = _file_digest(db), Store(db).count_calls()
    preview = run_json(capsys, *both, "--dry-run", "--price-in", "0.5", "--price-out", "2")
    assert (_file_digest(db), Store(db).count_calls()) == before  # nothing written
    assert fake_server.stats.chat_calls == 40
    assert (preview["planned_calls"], preview["cached_calls"], preview["calls_to_send"]) == (
        60,
        40,
        20,
    )
    # Cost = prompt × 0.5 / 1e6 + completion × 2 / 1e6 of the 20 calls to send.
    expected = preview["prompt_tokens"] * 0.5 / 1e6 + preview["completion_tokens"] * 2 / 1e6
    assert preview["cost_usd"] == pytest.approx(expected)
    assert preview["prompt_tokens"] > 20 * 5 and preview["warnings"] == []
    summary = run_json(capsys, *both)
    assert (summary["calls_made"], summary["cache_hits"]) == (20, 40)


def test_without_a_price_the_preview_warns_and_shows_no_cost(
    capsys,
    tmp_path,
    fake_server,
    inputs_file,
    bow,
):
    run = _run_args(fake_server.base_url, inputs_file, tmp_path / "w.db")
    code = main([*run, "--dry-run"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "calls: 60 planned, 0 cached, 60 to send" in out
    assert "warning: no price set" in out and "cost:" not in out


def test_a_negative_price_is_refused(capsys, tmp_path, fake_server, inputs_file):
    run = _run_args(fake_server.base_url, inputs_file, tmp_path / "n.db")
    with pytest.raises(SystemExit) as exited:
        main([*run, "--dry-run", "--price-in", "-1"])
    assert exited.value.code == 2
    assert "--price-in must be a price" in capsys.readouterr().err


def test_token_counts_of_each_counter():
    smollm2 = TokenCounter(prefer=("smollm2",))
    if smollm2.name == "smollm2":
        # Byte-level BPE: "the", " food", " was", " cold", "." are five tokens.
        assert smollm2.count("the food was cold.") == 5
    wordpiece = TokenCounter(prefer=("wordpiece",))
    if wordpiece.name == "wordpiece":
        assert wordpiece.count("the food was cold.") == 5
        # Not cut at the embedding model's 128 tokens: 300 words count 300.
        assert wordpiece.count("food " * 300) == 300
    characters = TokenCounter(prefer=("characters",))
    assert characters.method.startswith(f"characters ÷ {CHARACTERS_PER_TOKEN}")
    assert characters.count("abcdefghi") == 3  # ⌈9 / 4⌉
    # Two messages: 5 framing tokens each + ⌈8/4⌉ + ⌈5/4⌉ = 10 + 2 + 2 = 14, and 3 that open
    # the reply: 17.
    messages = [{"role": "system", "content": "abcdefgh"}, {"role": "user", "content": "hello"}]
    assert characters.count_messages(messages) == 17
    # Without the embedded model's template the framing stands in for it.
    assert characters.count_messages(messages, served_by_embedded=True) == 17


def test_the_embedded_model_s_prompt_is_counted_as_its_server_builds_it():
    """SmolLM2's chat template (in its GGUF) adds a default system message when a call has
    none, frames each message in ChatML and opens the reply. The endpoint's reported prompt
    tokens equal this count (1,750 of 1,750 on 24 sentiment calls, by hand against the
    embedded server); counting the texts alone missed them by a third."""
    smollm2 = TokenCounter(prefer=("smollm2",))
    if smollm2.name != "smollm2":
        pytest.skip("the SmolLM2 vocabulary is not installed")
    messages = [{"role": "user", "content": "the food was cold."}]
    # <|im_start|> system \n You are a helpful AI assistant named Sm ol LM , trained by H ugging
    # Face <|im_end|> \n: 21 tokens; <|im_start|> user \n the food was cold . <|im_end|> \n: 10;
    # <|im_start|> ass istant \n: 4. In all 35.
    assert smollm2.count_messages(messages, served_by_embedded=True) == 35
    # The same messages sent elsewhere: 5 framing + 5 text + 3 opening the reply = 13.
    assert smollm2.count_messages(messages) == 13


def test_a_precision_preview_quotes_the_inputs_and_calls_it_would_take(
    capsys, tmp_path, fake_server, inputs_file, bow
):
    run = _run_args(fake_server.base_url, inputs_file, tmp_path / "q.db", "--json")
    preview = run_json(capsys, *run, "--dry-run", "--precision", "0.25", "--round-size", "5")
    # Near 0.05 on 5 and 10 inputs no violation is expected: ±0.308 after 5, ±0.2085 ≤ 0.25
    # after 10 (the all-pass closed form). Near 0.5 even 20 inputs give ±0.296: all 20.
    # The 60 calls to send scale to 60 × 10/20 = 30 and 60 × 20/20 = 60.
    estimate = preview["precision"]
    assert (estimate["inputs_near_zero"], estimate["inputs_at_half"]) == (10, 20)
    assert (estimate["calls_near_zero"], estimate["calls_at_half"]) == (30, 60)
    assert estimate["calls_worst_case"] == 60
    assert fake_server.stats.chat_calls == 0
