"""Which edits flip answers most often: from every shrunk case, per relation and model.

A shrunk case says which of its follow-up's edits are enough to flip the answer; across cases,
the same edit coming back ('e' → '3' in a word, an added sentence) names what a model is fragile
to. An edit is counted by its change with the surrounding word stripped of letters that stayed
the same, so 'every' → '3very' and 'here' → 'her3' both count as 'e' → '3'.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# The columns of the table, in the order the CSV export and `shrink --summary --csv` write them.
FLIPPING_EDIT_COLUMNS = ("relation_id", "model", "edit", "cases", "share")


def _common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    length = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        length += 1
    return length


def edit_kind(old: str, new: str) -> str:
    """The change itself: the common prefix and suffix of old and new left out."""
    old, new = old.strip(), new.strip()
    prefix = _common_prefix(old, new)
    old_rest, new_rest = old[prefix:], new[prefix:]
    suffix = _common_prefix(old_rest[::-1], new_rest[::-1])
    old_core = old_rest[: len(old_rest) - suffix]
    new_core = new_rest[: len(new_rest) - suffix]
    if not old_core:
        return f"+ {new_core!r}"
    if not new_core:
        return f"- {old_core!r}"
    return f"{old_core!r} → {new_core!r}"


def flipping_edits(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per relation × model × edit kind: in how many shrunk cases such an edit was kept, most
    often first; ``share`` of that relation × model's shrunk cases."""
    counts: Counter[tuple[str, str, str]] = Counter()
    cases: Counter[tuple[str, str]] = Counter()
    for row in rows:
        cell = (row["relation_id"], row["model"])
        cases[cell] += 1
        kinds = {edit_kind(e["old"], e["new"]) for e in row["kept_edits"]}
        for kind in kinds:
            counts[(*cell, kind)] += 1
    table = [
        {
            "relation_id": relation,
            "model": model,
            "edit": kind,
            "cases": n,
            "share": n / cases[(relation, model)],
        }
        for (relation, model, kind), n in counts.items()
    ]
    return sorted(table, key=lambda r: (-r["cases"], r["relation_id"], r["model"], r["edit"]))


def flipping_edits_csv(table: Sequence[Mapping[str, Any]]) -> str:
    """The table as CSV text (``share`` as a fraction to 4 places); the header alone when empty."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FLIPPING_EDIT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in table:
        writer.writerow(
            {**{k: row[k] for k in FLIPPING_EDIT_COLUMNS}, "share": round(row["share"], 4)}
        )
    return out.getvalue()
