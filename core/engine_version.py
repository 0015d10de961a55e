"""The engine's version, stamped on every run it judges, and the defects known in older ones.

A stored run keeps the version of the engine that judged its cases (``runs.engine_version``;
runs recorded before versions were stamped read as version 1). When a defect is found that made
some runs' cases wrong, it is listed here with the first version that fixes it, so the dashboard
and ``report`` can flag the runs it touched, and a rerun of such a run judges every case again.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

ENGINE_VERSION = 3
UNSTAMPED_VERSION = 1  # runs recorded before engine versions were stamped

REPAIR_HINT = "judged by an engine with a known defect — rerun to repair"


@dataclass(frozen=True)
class KnownDefect:
    """A defect of engine versions below ``fixed_in`` that made the cases of some runs wrong.

    Which runs it touched is said one of three ways: by the relation kinds a run must mix
    (``needs_kinds``, a defect of pairing kinds), by the relations whose follow-ups were wrong
    (``relation_ids``: a run using any of them), or by what its stored cases show
    (``read_from_cases``: every run of an older engine may be touched, and
    ``app.engine.repairs`` reads its cases to tell)."""

    id: str
    fixed_in: int
    summary: str
    # The relation kinds (``RelationKind`` values) a run must mix for the defect to touch it.
    needs_kinds: frozenset[str] = frozenset()
    # The relations that made wrong follow-ups: a run using any one of them is touched.
    relation_ids: frozenset[str] = frozenset()
    # Told only by the run's stored cases (``app.engine.repairs.confirmed``).
    read_from_cases: bool = False

    def touches(
        self,
        engine_version: int | None,
        relation_kinds: Collection[str],
        relation_ids: Collection[str] = (),
    ) -> bool:
        version = engine_version or UNSTAMPED_VERSION
        if version >= self.fixed_in:
            return False
        if self.read_from_cases:
            return True
        if self.relation_ids:
            return bool(self.relation_ids.intersection(relation_ids))
        kinds = set(relation_kinds)
        return bool(kinds & self.needs_kinds) and bool(kinds - self.needs_kinds)


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

# Six rule relations wrote broken English or changed facts under an invariance relation ("company
# unemployed", "John never does not eat", "Seoul is the capital of Germany", "did Tom had"); they
# SKIP such inputs since issue 23 (commits 4b97946 and a0ab30a, 2026-11-26). The fix shipped
# without a new version, so runs judged with it before version 3 are flagged too: their rerun
# judges again from the call cache and changes nothing.
INVALID_RULE_OUTPUTS = KnownDefect(
    id="invalid-rule-outputs",
    fixed_in=3,
    summary="rule relations (word.antonym, negation, same_category, number, tense, synonym) "
    "sent invalid follow-ups that were judged",
    relation_ids=frozenset(
        {
            "word.antonym",
            "word.negation",
            "word.same_category",
            "word.number",
            "word.tense",
            "word.synonym",
        }
    ),
)

# On NLI, relations that expect the same label (ad.distractor, ad.format, si.academic, si.expand,
# …) edited the hypothesis as well as the premise, until commit d8a15b4 (2026-11-26): an edited
# hypothesis can claim something else ("Unrelated note: some bus routes… A woman is preparing
# food."), so "same label" was the wrong expectation (768 judged cases, 525 FAIL, in issue 23's
# audit). Engine 3 came after the fix. A run is flagged where its cases show such an edit of a
# field its NLI target keeps.
NLI_CLAIM_EDITS = KnownDefect(
    id="nli-claim-edits",
    fixed_in=3,
    summary="relations expecting the same NLI label edited the hypothesis, not only the premise",
    read_from_cases=True,
)

KNOWN_DEFECTS: tuple[KnownDefect, ...] = (
    MIXED_KINDS_PAIRING,
    INVALID_RULE_OUTPUTS,
    NLI_CLAIM_EDITS,
)


def defects_touching(
    engine_version: int | None,
    relation_kinds: Collection[str],
    relation_ids: Collection[str] = (),
) -> list[KnownDefect]:
    """The known defects that made the cases of a run with these relations (their kinds, their
    ids) wrong."""
    return [d for d in KNOWN_DEFECTS if d.touches(engine_version, relation_kinds, relation_ids)]
