"""How far a follow-up input moved from its source: AgentDiff's severity proxies (§4.1), computed
in Python for bounded sets only (a heatmap cell's cases, the severity scatter's sample).

The proxies compare the fields the follow-up changed: normalised Levenshtein distance, token
Jaccard distance, embedding cosine distance of the two *inputs* (1 − input similarity) and the
|length change| ratio.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from rapidfuzz.distance import Levenshtein

from app.analysis.case_fields import input_texts
from app.analysis.consistency import AnswerTypes, answer_changed_of, answer_types
from core.case_filter import CaseFilter

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


def severity_proxies(
    case: dict[str, Any], similarity: Callable[[str, str], float] | None = None
) -> dict[str, Any]:
    """AgentDiff's four severity proxies of one case's follow-up input against its source.

    ``cosine_distance`` = 1 − the cosine similarity of the two *inputs* (AgentDiff §4.1 applies
    the encoder to the (original, variant) question pairs): ``details["input_similarity"]`` when
    the validity gate stored it, else ``similarity(source, follow-up)`` of the changed fields
    when an embedding similarity is given, else None — never a proxy on the outputs.
    """
    source, followup = input_texts(case["source_input"], case.get("followup_input"))
    details = case.get("details")
    input_similarity = details.get("input_similarity") if isinstance(details, dict) else None
    cosine = None
    if isinstance(input_similarity, int | float):
        cosine = 1.0 - float(input_similarity)
    elif similarity is not None and case.get("followup_input") is not None:
        cosine = 1.0 - float(similarity(source, followup))
    return {
        "levenshtein": normalized_levenshtein(source, followup),
        "jaccard": token_jaccard_distance(source, followup),
        "cosine_distance": cosine,
        "length_change": length_change_ratio(source, followup),
    }


def _prefetch_inputs(embeddings, rows: list[dict[str, Any]]) -> None:
    """Embed every input text the proxies will compare, in one batch (cached per text)."""
    texts = []
    for row in rows:
        if row.get("followup_input") is not None:
            texts.extend(input_texts(row["source_input"], row["followup_input"]))
    if texts:
        embeddings.prefetch(texts)


def answer_changed(case: dict[str, Any], types: AnswerTypes) -> bool | None:
    """Whether the follow-up answer is a different answer from the source's (None without both):
    the oracles' answer equivalence under the case's task type, the rule of every inconsistency
    rate (``app.analysis.consistency``)."""
    return answer_changed_of(
        types, case.get("task_id", ""), case.get("source_answer"), case.get("followup_answer")
    )


def drilldown(
    store,
    flt: CaseFilter | None = None,
    *,
    model: str | None = None,
    relation_id: str | None = None,
    verdicts: Iterable[str] | None = None,
    limit: int = 500,
    embeddings=None,
) -> list[dict[str, Any]]:
    """The cases of one heatmap cell with their severity proxies and answer change attached.

    ``embeddings`` (an ``app.engine.embedder.EmbeddingCache``) gives the input cosine proxy.
    """
    rows = store.cell_cases(
        flt, model=model, relation_id=relation_id, verdicts=verdicts, limit=limit
    )
    similarity = None
    if embeddings is not None:
        _prefetch_inputs(embeddings, rows)
        similarity = embeddings.similarity
    types = answer_types(store)
    for row in rows:
        row.update(severity_proxies(row, similarity))
        row["answer_changed"] = answer_changed(row, types)
    return rows


def severity_table(
    store, flt: CaseFilter | None = None, limit: int = 2000, *, embeddings=None
) -> list[dict[str, Any]]:
    """Severity proxies for a bounded sample of cases (the scatter), with |Δ| and answer change.

    ``embeddings`` (an ``app.engine.embedder.EmbeddingCache``) gives the input cosine proxy; the
    inputs are embedded together, each distinct text once.
    """
    rows = store.severity_rows(flt, limit=limit)
    similarity = None
    if embeddings is not None:
        _prefetch_inputs(embeddings, rows)
        similarity = embeddings.similarity
    types = answer_types(store)
    out = []
    for row in rows:
        proxies = severity_proxies(row, similarity)
        out.append(
            {
                "id": row["id"],
                "model": row["model"],
                "relation_id": row["relation_id"],
                "side": row["side"],
                "verdict": row["verdict"],
                "abs_delta": abs(row["delta"]) if row["delta"] is not None else None,
                "answer_changed": answer_changed(row, types),
                "output_similarity": row["output_similarity"],
                **proxies,
            }
        )
    return out
