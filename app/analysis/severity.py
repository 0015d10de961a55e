"""How far a follow-up input moved from its source: AgentDiff's severity proxies (§4.1), computed
in Python for bounded sets only (a heatmap cell's cases, the severity scatter's sample).

The proxies compare the fields the follow-up changed: normalised Levenshtein distance, token
Jaccard distance, embedding cosine distance of the two *inputs* (1 − input similarity) and the
|length change| ratio.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from rapidfuzz.distance import Levenshtein

from app.analysis.case_fields import input_texts
from app.analysis.consistency import AnswerTypes, answer_changed_of, answer_types
from core.case_filter import CaseFilter
from core.types import Case

_WORD = re.compile(r"\w+", re.UNICODE)


def normalized_levenshtein(a: str, b: str) -> float:
    """Levenshtein distance / max(len a, len b) (rapidfuzz); 0 for two empty strings."""
    return float(Levenshtein.normalized_distance(a, b))


def token_jaccard_distance(a: str, b: str) -> float:
    """1 − |A ∩ B| / |A ∪ B| over the sets of lower-cased word tokens; 0 if both are empty."""
    tokens_a = set(_WORD.findall(a.lower()))
    tokens_b = set(_WORD.findall(b.lower()))
    union = tokens_a | tokens_b
    if not union:
        return 0.0
    return 1.0 - len(tokens_a & tokens_b) / len(union)


def length_change_ratio(a: str, b: str) -> float:
    """|len(b) − len(a)| / len(a) in characters (len(a) taken as at least 1)."""
    return abs(len(b) - len(a)) / max(len(a), 1)


@dataclass(frozen=True)
class SeverityProxies:
    """AgentDiff's four proxies of how far one follow-up input moved from its source."""

    levenshtein: float
    jaccard: float
    cosine_distance: float | None  # None without the validity gate's or an embedder's similarity
    length_change: float


def severity_proxies(
    case: Case, similarity: Callable[[str, str], float] | None = None
) -> SeverityProxies:
    """AgentDiff's four severity proxies of one case's follow-up input against its source.

    ``cosine_distance`` = 1 − the cosine similarity of the two *inputs* (AgentDiff §4.1 applies
    the encoder to the (original, variant) question pairs): ``details["input_similarity"]`` when
    the validity gate stored it, else ``similarity(source, follow-up)`` of the changed fields
    when an embedding similarity is given, else None — never a proxy on the outputs.
    """
    source, followup = input_texts(case.source_input, case.followup_input)
    details = case.details  # a stored text that is not JSON stays text
    input_similarity = details.get("input_similarity") if isinstance(details, dict) else None
    cosine = None
    if isinstance(input_similarity, int | float):
        cosine = 1.0 - float(input_similarity)
    elif similarity is not None and case.followup_input is not None:
        cosine = 1.0 - float(similarity(source, followup))
    return SeverityProxies(
        levenshtein=normalized_levenshtein(source, followup),
        jaccard=token_jaccard_distance(source, followup),
        cosine_distance=cosine,
        length_change=length_change_ratio(source, followup),
    )


def _prefetch_inputs(embeddings, cases: list[Case]) -> None:
    """Embed every input text the proxies will compare, in one batch (cached per text)."""
    texts = []
    for case in cases:
        if case.followup_input is not None:
            texts.extend(input_texts(case.source_input, case.followup_input))
    if texts:
        embeddings.prefetch(texts)


def answer_changed(case: Case, types: AnswerTypes) -> bool | None:
    """Whether the follow-up answer is a different answer from the source's (None without both):
    the oracles' answer equivalence under the case's task type, the rule of every inconsistency
    rate (``app.analysis.consistency``)."""
    return answer_changed_of(types, case.task_id, case.source_answer, case.followup_answer)


@dataclass(frozen=True)
class DrilldownCase:
    """A heatmap cell's case, with how far its follow-up moved and whether the answer changed."""

    case: Case
    proxies: SeverityProxies
    answer_changed: bool | None

    def table_row(self) -> dict[str, Any]:
        """The case's columns and its proxies, flat, for the drill-down table."""
        return {
            **self.case.to_row(),
            **asdict(self.proxies),
            "answer_changed": self.answer_changed,
        }


@dataclass(frozen=True)
class SeverityPoint:
    """One point of the severity scatter: a judged case's proxies against its outcome."""

    id: str
    model: str
    relation_id: str
    side: str | None
    verdict: str
    abs_delta: float | None
    answer_changed: bool | None
    output_similarity: float | None
    levenshtein: float
    jaccard: float
    cosine_distance: float | None
    length_change: float


def _similarity(embeddings, cases: list[Case]) -> Callable[[str, str], float] | None:
    if embeddings is None:
        return None
    _prefetch_inputs(embeddings, cases)
    return embeddings.similarity


def drilldown(
    store,
    flt: CaseFilter,
    *,
    model: str | None = None,
    relation_id: str | None = None,
    verdicts: Iterable[str] | None = None,
    limit: int = 500,
    embeddings=None,
) -> list[DrilldownCase]:
    """The cases of one heatmap cell with their severity proxies and answer change attached.

    ``embeddings`` (an ``app.engine.embedder.EmbeddingCache``) gives the input cosine proxy.
    """
    cases = store.cell_cases(
        flt, model=model, relation_id=relation_id, verdicts=verdicts, limit=limit
    )
    similarity = _similarity(embeddings, cases)
    types = answer_types(store)
    return [
        DrilldownCase(case, severity_proxies(case, similarity), answer_changed(case, types))
        for case in cases
    ]


def severity_table(
    store, flt: CaseFilter, limit: int = 2000, *, embeddings=None
) -> list[SeverityPoint]:
    """Severity proxies for a bounded sample of cases (the scatter), with |Δ| and answer change.

    ``embeddings`` (an ``app.engine.embedder.EmbeddingCache``) gives the input cosine proxy; the
    inputs are embedded together, each distinct text once.
    """
    cases = store.severity_rows(flt, limit=limit)
    similarity = _similarity(embeddings, cases)
    types = answer_types(store)
    return [
        SeverityPoint(
            id=case.id,
            model=case.model,
            relation_id=case.relation_id,
            side=case.side,
            verdict=case.verdict.value,
            abs_delta=abs(case.delta) if case.delta is not None else None,
            answer_changed=answer_changed(case, types),
            output_similarity=case.output_similarity,
            **asdict(severity_proxies(case, similarity)),
        )
        for case in cases
    ]
