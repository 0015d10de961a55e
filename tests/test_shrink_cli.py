"""`morphscope shrink` end to end (issue 26 §3): a run against the fake OpenAI server whose
'model' answers negative exactly when the text holds the digit 3, then every FAIL shrunk."""

from __future__ import annotations

import json

import pytest

from app.cli.main import main
from storage import Store
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer

TEXTS = [
    "The waiter was friendly and the dessert was excellent, we will be back next week.",
    "Everything here feels fresh, the staff were helpful and the seats were comfortable.",
    "We enjoyed every minute of the evening between the trees beside the quiet river.",
    "These are the best green beans I have eaten since the summer festival last year.",
    "She sent me a lovely letter, and the sweet message made me smile all afternoon.",
    "The hotel team welcomed us; the breakfast was generous and the sheets were clean.",
]


def three_means_negative(messages: list[dict[str, str]]) -> str:
    """A model that flips on exactly one kind of edit: any '3' in the prompt (leet e → 3)."""
    return "negative" if "3" in messages[-1]["content"] else "positive"


@pytest.fixture
def bow(monkeypatch):
    import functools

    from app.engine import workspace
    from tests.conftest import BagOfWordsEmbedder

    fast = functools.partial(workspace.make_runner, embedder_factory=BagOfWordsEmbedder)
    monkeypatch.setattr(workspace, "make_runner", fast)
    monkeypatch.setattr(workspace, "default_embedder", BagOfWordsEmbedder)


@pytest.fixture
def leet_run(tmp_path, bow, capsys):
    inputs = tmp_path / "inputs.csv"
    inputs.write_text("text\n" + "\n".join(f'"{t}"' for t in TEXTS) + "\n")
    db = tmp_path / "shrink.db"
    with FakeOpenAIServer(FakeBehaviour(responder=three_means_negative)) as server:
        code = main(
            [
                "run", "--endpoint", server.base_url, "--model", "fake-model",
                "--task", "sentiment", "--relations", "char.leet,sentence.uppercase",
                "--inputs", str(inputs), "--db", str(db), "--quiet",
            ]
        )  # fmt: skip
        assert code == 0, capsys.readouterr().err
        capsys.readouterr()
        store = Store(db)
        run_id = store.runs()[0].id
        fails = [c for c in store.cases_for() if c.verdict == "FAIL"]
        store.close()
        yield server, db, run_id, fails


def test_every_leet_fail_keeps_exactly_one_edit_with_a_3(leet_run, capsys) -> None:
    _server, db, run_id, fails = leet_run
    # Only char.leet writes digits; a case fails exactly when a 3 was written.
    assert fails and {c.relation_id for c in fails} == {"char.leet"}
    assert all("3" in c.followup_input["text"] for c in fails)
    code = main(["shrink", "--run", run_id, "--db", str(db), "--json"])
    out = capsys.readouterr().out
    assert code == 0
    results = json.loads(out)
    assert len(results) == len(fails)
    for result in results:
        assert result["status"] == "minimal"
        assert result["edits_kept"] == 1
        (kept,) = result["kept_edits"]
        assert "3" in kept["new"] and "3" not in kept["old"]
        assert result["edits_total"] <= 10 and result["calls"] <= 40
        assert result["confirmed"] == "1/1"  # the run's temperature is 0
        source = next(c for c in fails if c.id == result["case_id"]).source_input["text"]
        # The minimal follow-up is the source with that one word replaced.
        expected = source[: kept["start"]] + kept["new"] + source[kept["end"] :]
        assert result["minimal_followup"] == {"text": expected}
    assert main(["shrink", "--summary", "--run", run_id, "--db", str(db), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    # Every shrunk case kept one leet edit with a 3: 'e' → '3' leads, in most of them (a word
    # with two changed letters, 'h3lp5', shows as its whole change).
    assert summary[0]["edit"] == "'e' → '3'" and summary[0]["relation_id"] == "char.leet"
    assert sum(r["cases"] for r in summary) == len(results)
    # The same table as CSV, as the Analysis tab's download writes it.
    assert main(["shrink", "--summary", "--run", run_id, "--db", str(db), "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "relation_id,model,edit,cases,share"
    assert len(lines) == len(summary) + 1
    top = summary[0]
    assert lines[1] == f"char.leet,fake-model,'e' → '3',{top['cases']},{round(top['share'], 4)}"
    # And in words: one line per edit, a lone case counted as "1 case".
    assert main(["shrink", "--summary", "--run", run_id, "--db", str(db)]) == 0
    worded = capsys.readouterr().out.splitlines()
    assert len(worded) == len(summary)
    for line, row in zip(worded, summary, strict=True):
        noun = "case" if row["cases"] == 1 else "cases"
        assert line.endswith(f": {row['cases']} {noun} ({row['share']:.0%})"), line
    with pytest.raises(SystemExit) as refused:  # argparse's usage error
        main(["shrink", "--summary", "--db", str(db), "--csv", "--json"])
    assert refused.value.code == 2
    store = Store(db)
    stored = store.shrinks_of_run(run_id)
    assert [s.case_id for s in stored] == sorted(r["case_id"] for r in results)
    assert all(store.case(s.case_id).verdict == "FAIL" for s in stored)  # cases untouched
    store.close()


def test_a_repeated_shrink_costs_no_call(leet_run, capsys) -> None:
    server, db, _run_id, fails = leet_run
    case_id = fails[0].id
    assert main(["shrink", case_id, "--db", str(db), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    before = server.stats.chat_calls
    assert main(["shrink", case_id, "--db", str(db), "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert server.stats.chat_calls == before  # every candidate came from the call cache
    assert second["calls"] == 0
    assert second["kept_edits"] == first["kept_edits"]


def test_k_of_n_repeats_sample_each_candidate_again(leet_run, capsys) -> None:
    _server, db, _run_id, fails = leet_run
    code = main(["shrink", fails[0].id, "--db", str(db), "--repeats", "2/3", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["confirmed"] == "2/3" and result["edits_kept"] == 1


def test_bad_case_id_and_database_exit_2(leet_run, tmp_path, capsys) -> None:
    _server, db, _run_id, _fails = leet_run
    assert main(["shrink", "nope", "--db", str(db)]) == 2
    assert "no case 'nope'" in capsys.readouterr().err
    assert main(["shrink", "nope", "--db", str(tmp_path / "missing.db")]) == 2
    passed = Store(db)
    pass_id = next(c.id for c in passed.cases_for() if c.verdict == "PASS")
    passed.close()
    assert main(["shrink", pass_id, "--db", str(db)]) == 2
    assert "not FAIL" in capsys.readouterr().err


def test_triage_button_shrinks_in_the_background(leet_run) -> None:
    import time

    from app.ui import shrink_panel

    _server, db, _run_id, fails = leet_run
    store = Store(db)
    shrink_panel.start_shrink(store, fails[0].id)
    job = shrink_panel._JOBS[fails[0].id]
    deadline = time.monotonic() + 60
    while not job.done and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.done and job.error is None
    stored = store.shrink_of(fails[0].id)
    assert stored.status == "minimal" and len(stored.kept_edits) == 1
    assert "3" in stored.kept_edits[0]["new"]
    store.close()


def test_default_repeats_follow_temperature_and_noise_floor(store) -> None:
    from app.engine.shrink import SINGLE, Repeats
    from app.engine.shrink_oracle import default_repeats
    from core.run_config import RunConfig
    from core.types import Endpoint
    from tests.triage_data import make_case, save_runs

    case = make_case("a1", index=1)  # model-a, task qa
    deterministic = RunConfig(Endpoint("e", "http://127.0.0.1:9/v1", "model-a"), "qa", ())
    sampling = RunConfig(
        Endpoint("e", "http://127.0.0.1:9/v1", "model-a", temperature=0.7), "qa", ()
    )
    save_runs(store, [case, make_case("n1", index=2, relation_id="si.identity", verdict="PASS")])
    assert default_repeats(store, case, deterministic) == SINGLE
    assert default_repeats(store, case, sampling) == Repeats(2, 3)
    # One re-sent unchanged input answered differently: a noise floor above 0 on model-a × qa.
    save_runs(store, [make_case("n2", index=3, relation_id="si.identity", verdict="FAIL")])
    assert default_repeats(store, case, deterministic) == Repeats(2, 3)


def test_an_indivisible_relation_is_not_shrinkable_and_costs_no_call(leet_run, capsys) -> None:
    server, db, _run_id, fails = leet_run
    store = Store(db)
    with store._write():  # the same follow-up, as if a whole-text relation had made it
        store._db.execute(
            "UPDATE cases SET relation_id = 'sentence.shuffle' WHERE id = ?", [fails[0].id]
        )
    store.close()
    before = server.stats.chat_calls
    assert main(["shrink", fails[0].id, "--db", str(db), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "not shrinkable"
    assert result["reason"] == "not shrinkable: the transformation is one edit"
    assert result["edits_kept"] == result["edits_total"] > 1
    assert result["calls"] == 0 and server.stats.chat_calls == before


def test_html_report_shows_shrunk_cases_with_the_kept_edit_marked(leet_run, capsys) -> None:
    from app.reports.html_report import render_html_report
    from app.reports.shrunk_section import shrunk_section
    from core.case_filter import CaseFilter

    _server, db, _run_id, fails = leet_run
    store = Store(db)
    assert shrunk_section(store, CaseFilter()) == ""  # nothing shrunk yet: no section
    store.close()
    assert main(["shrink", fails[0].id, "--db", str(db), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    (kept,) = result["kept_edits"]
    store = Store(db)
    page = render_html_report(store)
    store.close()
    assert "<h2>Shrunk violations</h2>" in page
    assert f"<mark>{kept['new']}</mark>" in page
    assert f"1 of {result['edits_total']} edits is enough" in page


def test_the_budget_returns_the_smallest_failing_subset_so_far(leet_run, capsys) -> None:
    _server, db, _run_id, fails = leet_run
    case = max(fails, key=lambda c: len(c.followup_input["text"]))
    # Confirming the original costs 2 calls (fresh source and follow-up samples): with a
    # budget of 2 nothing more can be tried, and all the edits come back, marked.
    assert main(["shrink", case.id, "--db", str(db), "--max-calls", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "budget reached"
    assert result["calls"] == 2
    assert result["edits_kept"] == result["edits_total"] > 1
    assert result["minimal_followup"] == case.followup_input


@pytest.mark.parametrize("budget", [1, 3, 4])
def test_the_budget_is_exact_though_a_sample_costs_two_calls(leet_run, capsys, budget) -> None:
    """A fresh repeat costs the source and the follow-up: the search looks before it sends, so
    ``--max-calls`` is never overshot (1 fits nothing, 3 fits the confirmation and one more)."""
    server, db, _run_id, fails = leet_run
    case = max(fails, key=lambda c: len(c.followup_input["text"]))
    before = server.stats.chat_calls
    assert main(["shrink", case.id, "--db", str(db), "--max-calls", str(budget), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    sent = server.stats.chat_calls - before
    assert result["calls"] == sent <= budget
    assert result["status"] == "budget reached"
    # 1: the confirmation (2 calls) does not fit. 3 and 4: it does (2) and then one candidate
    # follow-up at a time (1 each, the source's answer is cached): every call is used.
    assert sent == (0 if budget == 1 else budget)


def test_an_endpoint_that_is_down_gives_status_error_not_a_shrink(leet_run, capsys) -> None:
    server, db, _run_id, fails = leet_run
    server.behaviour.always_fault = "500"
    assert main(["shrink", fails[0].id, "--db", str(db), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # The fresh samples that confirm the original cannot be had: no pass is read into that.
    assert result["status"] == "error"
    assert "could not be judged" in result["reason"]
    assert result["edits_kept"] == result["edits_total"]
