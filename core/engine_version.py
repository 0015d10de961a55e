"""The engine's version, stamped on every run it judges, and the defects known in older ones.

A stored run keeps the version of the engine that judged its cases (``runs.engine_version``;
runs recorded before versions were stamped read as version 1). When a defect is found that made
some runs' cases wrong, it is listed here with the first version that fixes it, so the dashboard
and ``report`` can flag the runs it touched, and a rerun of such a run judges every case again.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

ENGINE_VERSION = 2
UNSTAMPED_VERSION = 1  # runs recorded before engine versions were stamped

REPAIR_HINT = "judged by an engine with a known defect — rerun to repair"


@dataclass(frozen=True)
class KnownDefect:
    """A defect of engine versions below ``fixed_in`` that made the cases of some runs wrong."""

    id: str
    fixed_in: int
    summary: str
    # The relation kinds (``RelationKind`` values) a run must mix for the defect to touch it.
    needs_kinds: frozenset[str]

    def touches(self, engine_version: int | None, relation_kinds: Collection[str]) -> bool:
        version = engine_version or UNSTAMPED_VERSION
        kinds = set(relation_kinds)
        mixed = bool(kinds & self.needs_kinds) and bool(kinds - self.needs_kinds)
        return version < self.fixed_in and mixed


# Planning made LLM-prompted follow-ups in batches of their own ahead of the buffered rule-based
# ones, then paired the results with the jobs in their original order (commit 6b2b41d,
# 2026-11-25): a run mixing the kinds gave cases other samples' or relations' follow-ups. Runs
# recorded before version stamping cannot be told apart from those, so all of them are flagged.
MIXED_KINDS_PAIRING = KnownDefect(
    id="mixed-kinds-pairing",
    fixed_in=2,
    summary="follow-ups of LLM-prompted and other relations went to the wrong cases",
    needs_kinds=frozenset({"llm"}),
)

KNOWN_DEFECTS: tuple[KnownDefect, ...] = (MIXED_KINDS_PAIRING,)


def defects_touching(
    engine_version: int | None, relation_kinds: Collection[str]
) -> list[KnownDefect]:
    """The known defects that made the cases of a run with these relation kinds wrong."""
    return [d for d in KNOWN_DEFECTS if d.touches(engine_version, relation_kinds)]
