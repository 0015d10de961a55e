"""The Analysis page's **Shrunk edits** tab (issue 26 §4: "Analysis gets a view of the edits that
flip answers most often, per relation and model, from all shrunk cases, and exports it"),
through the entrypoint against stored shrinks."""

from __future__ import annotations

import csv
import io

import pytest

from app.analysis.shrunk_edits import flipping_edits_csv
from app.ui.shrunk_edits_view import shrunk_edits
from core.case_filter import CaseFilter
from relations.edits import apply_edits, diff_edits
from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.pages.conftest import open_page
from tests.triage_data import make_case, save_runs

PAGE = "pages/analysis.py"
SOURCE = "We enjoyed every minute here."


@pytest.fixture(autouse=True)
def _fast_input_embedder(monkeypatch):
    monkeypatch.setattr("app.ui.analysis_view.default_embedder", BagOfWordsEmbedder)


def _shrink(store: Store, case_id: str, followup: str, kept: int | None) -> None:
    """Store the shrink of ``case_id`` keeping its ``kept``-th edit (None: not shrinkable)."""
    fields = {"question": SOURCE}
    edits = diff_edits(fields, {"question": followup})
    chosen = edits if kept is None else [edits[kept]]
    store.save_shrink(
        case_id=case_id,
        run_id="run-a",
        relation_id="char.leet",
        status="not shrinkable" if kept is None else "minimal",
        reason="",
        edits_total=len(edits),
        kept_edits=[e.to_dict() for e in chosen],
        minimal_followup=apply_edits(fields, chosen),
        calls=4,
        confirmed="1/1",
    )


def seed(path) -> None:
    """Four char.leet FAILs of model-a: three shrunk to one edit — 'every' → '3very' and
    'here' → 'her3' (both the change 'e' → '3') and 'minute' → 'minut4' ('e' → '4') — and one
    not shrinkable. A PASS case too, which is never shrunk."""
    store = Store(path)
    follow = {
        "f1": "We enjoyed 3very minute here.",
        "f2": "We enjoyed every minute her3.",
        "f3": "We enjoyed every minut4 here.",
        "f4": "W3 enjoyed every minute here.",
    }
    cases = [
        make_case(case_id, index=i, relation_id="char.leet", source_text=SOURCE,
                  followup_text=text)
        for i, (case_id, text) in enumerate(follow.items())
    ]  # fmt: skip
    cases.append(make_case("p1", index=9, relation_id="char.leet", verdict="PASS"))
    save_runs(store, cases)
    for case_id, kept in (("f1", 0), ("f2", 0), ("f3", 0), ("f4", None)):
        _shrink(store, case_id, follow[case_id], kept)
    store.close()


def test_the_tab_names_the_flipping_edits_and_exports_them(app_db) -> None:
    seed(app_db)
    at = open_page(PAGE)
    assert not at.exception, at.exception
    at.session_state["analysis_tab"] = "Shrunk edits"
    at.run()
    assert not at.exception, at.exception
    shown = " ".join(m.value for m in at.markdown)
    # 3 minimal + 1 not shrinkable; the kept statuses are listed first.
    assert "4 FAIL cases shrunk: 3 minimal, 1 not shrinkable." in shown
    # 'e' → '3' in 2 of the 3 shrunk cases that kept an edit: 2/3 = 67%.
    assert (
        "Most often, the change 'e' → '3' alone is enough to flip model-a's answer under "
        "char.leet: in 2 shrunk cases (67% of that relation × model's)." in shown
    )
    table = next(d.value for d in at.dataframe if "change that flips" in d.value.columns)
    assert list(table["change that flips"]) == ["'e' → '3'", "'e' → '4'"]
    assert list(table["cases"]) == [2, 1]
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels.count("Download as CSV") == 1
    # What the button serves: the tab's own table as CSV.
    table_rows, _counts = shrunk_edits(str(app_db), "any", CaseFilter())
    rows = list(csv.DictReader(io.StringIO(flipping_edits_csv(table_rows))))
    assert [(r["edit"], r["cases"], r["share"]) for r in rows] == [
        ("'e' → '3'", "2", "0.6667"),  # 2 / 3
        ("'e' → '4'", "1", "0.3333"),  # 1 / 3
    ]


def test_without_shrinks_the_tab_says_how_to_make_them(app_db) -> None:
    store = Store(app_db)
    save_runs(store, [make_case("f1", index=1)])
    store.close()
    at = open_page(PAGE)
    at.session_state["analysis_tab"] = "Shrunk edits"
    at.run()
    assert not at.exception, at.exception
    assert any("has been shrunk yet" in i.value for i in at.info)
    assert any("morphscope shrink --run" in c.value for c in at.caption)
