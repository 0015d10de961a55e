"""app/ui/probe_results.py's results table: every column in view at 1280 px (issue 28 item 9)."""

from __future__ import annotations

import pandas as pd

from app.ui.probe_results import _RESULT_COLUMN_PX, results_table

# The table's width beside the sidebar on a 1280 px screen, measured in Chromium (the
# dataframe's bounding box): 1280 − 300 sidebar − 2 × 80 page padding.
TABLE_PX_AT_1280 = 820


def _cases(targets: list[str]) -> pd.DataFrame:
    n = len(targets)
    return pd.DataFrame(
        {
            "verdict": ["FAIL", "SKIP"][:n],
            "relation_id": ["word.negation", "si.identity"][:n],
            "target": targets,
            "source_input": [{"text": "I love it"}] * n,
            "followup_input": [{"text": "I do not love it"}] * n,
            "source_answer": ["positive", None][:n],
            "followup_answer": ["positive", None][:n],
            "value": [0.0, None][:n],
            "reason": ["label 'positive' → 'positive' (unchanged)", "precondition"][:n],
        }
    )


def test_the_columns_fit_the_table_width_at_1280_px():
    """Sized to their contents, the answers, value and reason columns lay beyond the table's
    right edge at 1280 px. Every column now has a width and together they fit:
    56 + 130 + 56 + 130 + 130 + 126 + 52 + 130 = 810 ≤ 820."""
    assert sum(_RESULT_COLUMN_PX.values()) == 810 <= TABLE_PX_AT_1280
    table, columns = results_table(_cases(["text", "*"]))
    assert list(table.columns) == list(_RESULT_COLUMN_PX)
    assert set(columns) == set(table.columns)
    assert all(columns[name]["width"] == px for name, px in _RESULT_COLUMN_PX.items())


def test_the_answers_share_a_column_and_the_field_shows_only_when_it_varies():
    """One column "source → follow-up" for the two answers ("—" for a missing one); the field
    column only when the cases change more than one field."""
    table, columns = results_table(_cases(["text", "text"]))
    assert "field" not in table.columns and "field" not in columns
    assert list(table["answers"]) == ["positive → positive", "— → —"]
    assert list(table["value"]) == ["0", "—"]
    assert list(table["verdict"]) == ["FAIL", "SKIP"]
