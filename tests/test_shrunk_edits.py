"""Which edits flip answers most often, from stored shrinks (issue 26 §4, Analysis view)."""

from __future__ import annotations

from app.analysis.shrunk_edits import edit_kind, flipping_edits


def _edit(old: str, new: str) -> dict:
    return {"field": "text", "start": 0, "end": len(old), "old": old, "new": new}


def test_edit_kind_keeps_only_the_change() -> None:
    assert edit_kind("every", "3very") == "'e' → '3'"
    assert edit_kind("here", "her3") == "'e' → '3'"
    assert edit_kind("", " Buses leave.") == "+ 'Buses leave.'"
    assert edit_kind("not ", "") == "- 'not'"


def test_flipping_edits_count_cases_per_relation_and_model() -> None:
    rows = [
        {"relation_id": "char.leet", "model": "m", "kept_edits": [_edit("every", "3very")]},
        # Two e → 3 edits kept in one case count once for that case.
        {
            "relation_id": "char.leet",
            "model": "m",
            "kept_edits": [_edit("here", "her3"), _edit("seen", "s3en")],
        },
        {"relation_id": "char.leet", "model": "m", "kept_edits": [_edit("bad", "b4d")]},
        {"relation_id": "char.leet", "model": "n", "kept_edits": [_edit("bad", "b4d")]},
    ]
    table = flipping_edits(rows)
    # m: 3 shrunk cases, 2 kept an e → 3 (share 2/3), 1 an a → 4 (1/3); n: 1 of 1.
    assert table[0] == {
        "relation_id": "char.leet",
        "model": "m",
        "edit": "'e' → '3'",
        "cases": 2,
        "share": 2 / 3,
    }
    assert [(r["model"], r["edit"], r["cases"]) for r in table[1:]] == [
        ("m", "'a' → '4'", 1),
        ("n", "'a' → '4'", 1),
    ]
    assert table[2]["share"] == 1.0
