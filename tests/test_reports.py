"""app/reports/: report --json content, exports, LLMorph round trip and import, HTML report."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from collections import Counter

import pytest

from app.analysis import figures
from app.reports import exports, llmorph, summary
from app.reports.formats import EXPORT_FORMATS, FORMATS
from app.reports.html_report import filter_items, for_print, render_html_report
from core.case_filter import CaseFilter
from core.types import Endpoint
from storage import Store
from tests.test_analysis_queries import ROWS, seed_dataset


@pytest.fixture
def seeded(store):
    seed_dataset(store)
    return store


def verdict_counts(store) -> Counter:
    return Counter(
        (r["model"], r["relation_id"], r["verdict"])
        for r in store._query("SELECT model, relation_id, verdict FROM cases")
    )


# ------------------------------------------------------------------ report --json


def test_report_has_the_spec_content(seeded):
    doc = summary.report(seeded)
    json.dumps(doc, allow_nan=False)  # strict JSON: no NaN
    assert doc["n_cases"] == len(ROWS)
    row = {(r["model"], r["relation_id"]): r for r in doc["rows"]}[("A", "si.paraphrase")]
    for key in (
        "n",
        "pass",
        "fail",
        "skip",
        "error",
        "violation_rate",
        "ci_low",
        "ci_high",
        "mean_delta",
        "mad",
        "stability",
        "mean_similarity",
    ):
        assert key in row
    assert (row["n"], row["pass"], row["fail"], row["skip"], row["error"]) == (7, 2, 2, 2, 1)
    assert row["violation_rate"] == 0.5 and row["mad"] == pytest.approx(0.63 / 4)
    assert doc["noise_floor"]["A"]["reasoning"]["violation_rate"] == 0.25  # keyed by task
    assert doc["noise_floor"]["A"]["reasoning"]["n"] == 4
    assert "B" not in doc["noise_floor"]
    assert doc["tests"]["mann_whitney"][0]["subject"] == "A vs B"
    assert "reading" in doc["tests"]["kruskal_wallis"][0]
    # ad.paraphrase IR (1/2 + 1 + 0) / 3 = 0.5; ad.format IR (0 + 1) / 2 = 0.5
    assert doc["agentdiff_gap"][0]["gap"] == pytest.approx(0.0)
    assert set(doc["definitions"]) >= {"violation_rate", "mad", "stability", "noise_floor"}


def test_report_json_for_one_run(seeded):
    doc = summary.report_json(seeded, "run-b")
    assert doc["filters"]["run_ids"] == ["run-b"]
    assert {r["model"] for r in doc["rows"]} == {"B"}
    assert doc["tests"]["mann_whitney"] == []
    with pytest.raises(ValueError, match="no run with id 'nope'"):
        summary.report_json(seeded, "nope")


def test_report_on_empty_db(store):
    doc = summary.report(store)
    assert doc["rows"] == [] and doc["n_cases"] == 0 and doc["noise_floor"] == {}


# ------------------------------------------------------------------ csv / jsonl


def test_csv_export_has_every_column_and_no_secrets(seeded, tmp_path):
    seeded.save_endpoint(
        Endpoint(name="paid", base_url="https://api.example", model="m", api_key_env="MY_API_KEY")
    )
    out = tmp_path / "cases.csv"
    assert exports.export_cases(seeded, "csv", out) == len(ROWS)
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(ROWS)
    columns = set(seeded.case_column_names())
    assert columns <= set(rows[0])
    by_id = {r["id"]: r for r in rows}
    assert by_id["case-008"]["reason"] == "invalid_followup: dropped 7"
    assert float(by_id["case-005"]["delta"]) == pytest.approx(-0.3)
    text = out.read_text("utf-8")
    assert "MY_API_KEY" not in text and "api_key" not in text.lower()
    assert not list(tmp_path.glob(".cases.csv.*"))  # no temporary file left behind


def test_jsonl_export_decodes_json_columns(seeded, tmp_path):
    out = tmp_path / "b.jsonl"
    assert exports.export_cases(seeded, "jsonl", out, run_ids=["run-b"]) == 3
    lines = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert len(lines) == 3
    problems = {line["source_input"]["problem"] for line in lines}  # decoded, not a string
    assert "What is the capital of France?" in problems
    assert all(isinstance(line["details"], dict) for line in lines)
    assert {line["model"] for line in lines} == {"B"}


def test_export_rejects_bad_arguments(seeded, tmp_path):
    with pytest.raises(ValueError, match="unknown export format 'xml'"):
        exports.export_cases(seeded, "xml", tmp_path / "x.xml")
    with pytest.raises(ValueError, match="no run with id"):
        exports.export_cases(seeded, "csv", tmp_path / "x.csv", run_ids=["missing"])
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "other.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not an empty directory"):
        exports.export_cases(seeded, "llmorph", tmp_path / "full")
    assert not (tmp_path / "x.csv").exists()


# ------------------------------------------------------------------ LLMorph


def test_llmorph_zip_shape(seeded, tmp_path):
    out = tmp_path / "logs.zip"
    assert exports.export_cases(seeded, "llmorph", out) == len(ROWS)
    with zipfile.ZipFile(out) as archive:
        names = sorted(archive.namelist())
        assert names == [
            "log__A__reasoning__ad.format.json",
            "log__A__reasoning__ad.paraphrase.json",
            "log__A__reasoning__si.identity.json",
            "log__A__reasoning__si.paraphrase.json",
            "log__B__reasoning__si.paraphrase.json",
        ]
        doc = json.loads(archive.read("log__A__reasoning__si.paraphrase.json"))
    assert (doc["llm_name"], doc["task_name"], doc["relation_name"]) == (
        "A",
        "reasoning",
        "si.paraphrase",
    )
    items = {item["morphscope"]["id"]: item for item in doc["data"]}
    failed = items["case-005"]
    assert failed["source_input"] == ["A ball falls for 2 s. How far does it fall?"]
    assert failed["followup_inputs"] == [[failed["source_input"][0] + " Please answer."]]
    assert failed["followup_outputs"] == ["Answer: 5"]
    assert (failed["relations"], failed["verif_failure"]) == ([False], None)
    assert (items["case-004"]["relations"], items["case-004"]["verif_failure"]) == ([True], None)
    assert items["case-008"]["verif_failure"] == "fi"  # invalid_followup SKIP
    assert items["case-010"]["verif_failure"] == "si"  # precondition SKIP
    assert (items["case-009"]["relations"], items["case-009"]["verif_failure"]) == ([None], "sfoe")


@pytest.mark.parametrize("target", ["logs.zip", "logs_dir"])
def test_llmorph_round_trip_keeps_verdict_counts(seeded, tmp_path, target):
    out = tmp_path / target
    exports.export_cases(seeded, "llmorph", out)
    fresh = Store(tmp_path / "fresh.db")
    try:
        run_id = llmorph.import_llmorph(fresh, out)
        assert verdict_counts(fresh) == verdict_counts(seeded)
        assert fresh.run(run_id).status == "done"
        assert fresh.run(run_id).model == "A, B"
        original = {
            r["relation_id"]: r for r in summary.report(seeded)["rows"] if r["model"] == "A"
        }
        again = {r["relation_id"]: r for r in summary.report(fresh)["rows"] if r["model"] == "A"}
        for relation_id, row in original.items():
            for key in ("violation_rate", "invalid_followup", "mean_delta", "stability"):
                assert again[relation_id][key] == pytest.approx(row[key]), (relation_id, key)
        # importing the same logs again updates the same run instead of duplicating it
        assert llmorph.import_llmorph(fresh, out) == run_id
        assert fresh.count_cases(CaseFilter()) == len(ROWS)
    finally:
        fresh.close()


def _plain_llmorph_log() -> dict:
    """A log as LLMorph itself writes it (QA: [context, question]; three follow-ups)."""
    context, question = "Glaciers form cirques.", "What do glaciers form?"
    return {
        "llm_name": "gpt-test",
        "task_name": "question_answering",
        "relation_name": "5",
        "data": [
            {
                "id": 0,
                "source_input": [context, question],
                "source_output": "cirques",
                "followup_inputs": [
                    ["Glac iers form cirques.", question],
                    [context, "Wha t do glaciers form?"],
                    ["Glac iers form cirques.", "Wha t do glaciers form?"],
                ],
                "followup_outputs": ["cirques", "unknown", "cirques"],
                "relations": [True, False, True],
                "verif_failure": None,
            },
            {
                "id": 1,
                "source_input": ["A short one.", "Why?"],
                "source_output": None,
                "followup_inputs": None,
                "followup_outputs": None,
                "relations": None,
                "verif_failure": "si",
            },
            {
                "id": 2,
                "source_input": ["Third context.", "Who?"],
                "source_output": "Ann",
                "followup_inputs": [["Third  context.", "Who?"]],
                "followup_outputs": [None],
                "relations": [None],
                "verif_failure": "sfoe",
            },
        ],
    }


def test_import_plain_llmorph_log(store, tmp_path):
    path = tmp_path / "log__gpt-test__question_answering__5__2025_01_01.json"
    path.write_text(json.dumps(_plain_llmorph_log()), "utf-8")
    run_id = llmorph.import_llmorph(store, path)
    cases = store._query("SELECT * FROM cases ORDER BY sample_id, followup_index")
    assert len(cases) == 5
    assert Counter(c["verdict"] for c in cases) == {"PASS": 2, "FAIL": 1, "SKIP": 1, "ERROR": 1}
    assert {c["model"] for c in cases} == {"gpt-test"}
    assert {c["task_id"] for c in cases} == {"qa"}
    # LLMorph catalogue number 5 (add random spaces) is our char.add_spaces (ref "LLMorph 5")
    assert {(c["relation_id"], c["family"]) for c in cases} == {("char.add_spaces", "char")}
    first = [c for c in cases if c["source_output"] == "cirques"]
    assert json.loads(first[0]["source_input"]) == {
        "context": "Glaciers form cirques.",
        "question": "What do glaciers form?",
    }
    targets = sorted(c["target"] for c in first)
    assert targets == ["context", "context+question", "question"]
    skip = next(c for c in cases if c["verdict"] == "SKIP")
    assert skip["reason"].startswith("precondition: LLMorph source-input")
    assert store.run(run_id).task_id == "qa"


def test_import_arguments_override_the_file(store, tmp_path):
    log = _plain_llmorph_log()
    del log["llm_name"], log["task_name"], log["relation_name"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(log), "utf-8")
    with pytest.raises(ValueError, match="cannot tell the model"):
        llmorph.import_llmorph(store, path)
    assert store.runs() == []
    llmorph.import_llmorph(store, path, model="m1", task_id="qa", relation_id="char.add_spaces")
    assert {r["model"] for r in store._query("SELECT DISTINCT model FROM cases")} == {"m1"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b'{"llm_name": "m", "task_name": "qa", "relation_name": "1", "data": 5}', "LLMorph log"),
        (
            b'{"llm_name": "m", "task_name": "qa", "relation_name": "1", "data": [{}, 7]}',
            "item 0: missing 'source_input'",
        ),
        (
            b'{"llm_name": "m", "task_name": "qa", "relation_name": "1", "data": '
            b'[{"source_input": ["a", "b"], "verif_failure": "zz"}]}',
            "unknown value 'zz'",
        ),
        (b'{"llm_name": "m", "task_name": "qa", "relation_name": "1", "data": []}', "no items"),
    ],
)
def test_import_rejects_bad_input_and_writes_nothing(store, tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        llmorph.import_llmorph(store, path)
    assert store.runs() == [] and store.count_cases(CaseFilter()) == 0


def test_import_missing_path(store, tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        llmorph.import_llmorph(store, tmp_path / "nothing.json")


# ------------------------------------------------------------------ HTML report


def test_html_report_is_standalone_and_escaped(seeded, tmp_path):
    hostile = "<script>alert('x')</script>"
    with seeded._write():
        seeded._db.execute("UPDATE cases SET model = ? WHERE model = 'B'", [hostile])
    out = tmp_path / "report.html"
    assert exports.export_cases(seeded, "html", out) == len(ROWS)
    page = out.read_text("utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "plotly.js" in page and "Plotly.newPlot" in page  # the library itself, inline
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.IGNORECASE)
    assert not re.search(r"<link[^>]*href\s*=\s*[\"']?https?:", page, re.IGNORECASE)
    assert hostile not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    for section in ("Heatmaps", "Distributions", "MAD and stability", "Noise floor", "Statistics"):
        assert section in page
    assert "unlikely to be chance" in page or "could be chance" in page
    assert page.count("Plotly.newPlot") >= 6  # 3 heatmaps, 2 box plots, bars, floor
    # The noise floor per model × task, counted in observations (one per sample × repeat).
    assert "identity observations" in page and '<td class="text">reasoning</td>' in page


def test_export_bytes_for_downloads(seeded):
    data = exports.export_bytes(seeded, "llmorph", CaseFilter.make(models=["B"]))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.namelist() == ["log__B__reasoning__si.paraphrase.json"]
    csv_text = exports.export_bytes(seeded, "csv", CaseFilter.make(models=["A"])).decode()
    assert len(csv_text.strip().splitlines()) == 1 + 18


def test_the_report_download_is_the_report_and_not_a_file_export(seeded, tmp_path):
    """One registry serves the download buttons and `export --format`: the JSON report is a
    download only (the command line has `report --json`)."""
    assert EXPORT_FORMATS == ("csv", "jsonl", "llmorph", "html")
    assert list(FORMATS) == ["csv", "jsonl", "report", "llmorph", "html"]
    flt = CaseFilter.make(models=["A"])
    document = json.loads(exports.export_bytes(seeded, "report", flt))
    assert {key: value for key, value in document.items() if key != "generated_at"} == {
        key: value
        for key, value in summary.report(seeded, flt=flt).items()
        if key != "generated_at"
    }
    with pytest.raises(ValueError, match="choose csv, jsonl, llmorph, html"):
        exports.export_cases(seeded, "report", tmp_path / "report.json")


def test_html_report_shows_filters_as_text_and_prints(seeded):
    """Regression: the filters were printed as raw JSON; the page had no print layout."""
    page = render_html_report(seeded, CaseFilter.make(models=["A"], date_from="2026-11-01"))
    assert "<li>models: A</li>" in page and "<li>from 2026-11-01</li>" in page
    assert '"run_ids"' not in page and "null" not in page.split("<script")[0]
    assert "@media print" in page and "@page" in page
    unfiltered = render_html_report(seeded)
    assert "no filters (every case)" in unfiltered


def test_report_figures_keep_their_labels_and_colours_under_streamlits_template(monkeypatch):
    """Regression: built inside the dashboard (plotly's default template is Streamlit's), the MAD
    bars were all black and tick labels were cut (no colour cycle, no automargin)."""
    import plotly.io as pio

    # Recorded first, so the test gives back the default it found (importing Streamlit's chart
    # module sets its template as plotly's default for the whole process).
    monkeypatch.setattr(pio.templates, "default", pio.templates.default)
    import streamlit.elements.plotly_chart  # noqa: F401  (registers the "streamlit" template)

    monkeypatch.setattr(pio.templates, "default", "streamlit")
    models = [
        {"model": "A", "mad": 0.1, "stability": 0.6, "stability_excl_identity": 0.5},
        {"model": "B", "mad": 0.2, "stability": 0.9, "stability_excl_identity": 0.8},
    ]
    fig = for_print(figures.stability_bars(models))
    colours = [trace.marker.color for trace in fig.data]
    assert len(set(colours)) == 2 and None not in colours
    assert for_print(figures.mad_bars(models)).data[0].marker.color is not None
    assert fig.layout.xaxis.automargin and fig.layout.yaxis.automargin
    assert fig.layout.width <= 703  # A4 between 12 mm margins, at 96 px per inch
    compare = [{"relation_id": "r", "a_violation_rate": 0.1, "b_violation_rate": 0.2}]
    legend = for_print(figures.compare_runs_bars(compare, "A", "B")).layout.legend
    assert legend.yanchor == "bottom"  # above the plot, clear of the tick labels
    assert list(filter_items(CaseFilter())) == []


def test_html_report_turns_heatmaps_with_more_relations_than_fit_across(seeded, monkeypatch):
    from app.analysis import heatmaps

    turned: list[bool] = []
    original = heatmaps.heatmap

    def recording(rows, metric="violation_rate", **options):
        turned.append(options.get("relations_down", False))
        return original(rows, metric, **options)

    monkeypatch.setattr(heatmaps, "heatmap", recording)
    render_html_report(seeded)
    assert turned and not any(turned)  # the seeded store has few relations: left to right
    turned.clear()
    monkeypatch.setattr("app.reports.html_report._RELATIONS_ACROSS_MAX", 1)
    render_html_report(seeded)
    assert turned and all(turned)
