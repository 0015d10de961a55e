"""Issue 5's promise, end to end in the pages: labeling in Triage changes Analysis' FP rates."""

from __future__ import annotations

from storage import Store
from tests.pages.conftest import open_page
from tests.triage_data import make_case, save_runs


def _fp_table(at):
    at.session_state["analysis_tab"] = "Robustness"
    at.run()
    assert not at.exception, at.exception
    frames = [df.value for df in at.dataframe]
    return next((f for f in frames if "false positives %" in f.columns), None)


def test_labeling_ten_cases_in_triage_changes_fp_rates_in_analysis(app_db):
    store = Store(app_db)
    cases = [make_case(f"c{i:02d}", index=i, value=0.5 + i / 100) for i in range(12)]
    cases += [make_case(f"p{i:02d}", index=20 + i, verdict="PASS", value=0.95) for i in range(4)]
    save_runs(store, cases)
    store.close()

    analysis = open_page("pages/analysis.py")
    assert _fp_table(analysis) is None  # nothing labeled yet: no FP table

    triage = open_page("pages/triage.py")
    triage.text_input(key="triage_labeler").input("ann").run()
    for i in range(10):
        key = "triage_label_fp_oracle" if i < 4 else "triage_label_confirmed"
        triage.button(key=key).click().run()
        assert not triage.exception, triage.exception
    assert len(Store(app_db).current_labels()) == 10

    analysis = open_page("pages/analysis.py")
    table = _fp_table(analysis)
    assert table is not None
    row = table.iloc[0]
    assert row["labeled"] == 10
    assert row["false positives %"] == 40.0  # 4 fp_oracle of 10 labeled
    assert row["FP CI low %"] < 40.0 < row["FP CI high %"]
    # 12 FAIL, 4 PASS: violation 75%, confirmed = 75% × (1 − 0.4) = 45%
    assert row["violation %"] == 75.0 and row["confirmed violation %"] == 45.0
