"""Judging finished cases: parse both outputs, apply the relation's oracle, measure similarities.

Usable on its own (shrinking, adaptive sampling judge a few cases at a time): ``Judge.judge``
takes planned cases with their outputs and returns the stored ``Case`` rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from app.engine.embedder import EmbeddingCache, MissingVectorsError
from app.engine.plan import PlannedCase
from core.tasks import Task, scoring_steps
from core.types import Case, Completion, ParsedOutput, Verdict
from relations.oracles import evaluate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Judge:
    """The oracles' settings for a run: the embedder and the per-relation threshold overrides."""

    embeddings: EmbeddingCache
    thresholds: dict[str, float]

    def judge(self, batch: list[PlannedCase], task: Task, run_id: str, model: str) -> list[Case]:
        """The cases of ``batch`` as stored rows. The texts every case measures are embedded in
        one batch first; the oracles run on those vectors, and the texts some oracle asks about
        besides (answers compared by meaning) are embedded in one more batch, then those
        cases are judged again. An answer that no oracle compares by meaning (labels, numbers,
        equal math answers) is never embedded."""
        parsed: dict[str, dict[str, ParsedOutput]] = {}
        texts: list[str] = []
        for case in batch:
            if not case.outputs:
                continue
            parsed[case.case_id] = {name: task.parse(c.text) for name, c in case.outputs.items()}
            texts += _texts_to_measure(case, parsed[case.case_id])
        if texts:
            self.embeddings.prefetch(texts)
        judged: dict[str, Case] = {}
        asked: list[str] = []
        for case in batch:
            try:
                judged[case.case_id] = self._case(
                    case, task, run_id, model, parsed.get(case.case_id), strict=True
                )
            except MissingVectorsError as missing:
                asked += missing.texts
        if asked:
            self.embeddings.prefetch(asked)
        return [
            judged[case.case_id]
            if case.case_id in judged
            else self._case(case, task, run_id, model, parsed.get(case.case_id))
            for case in batch
        ]

    def _case(
        self,
        case: PlannedCase,
        task: Task,
        run_id: str,
        model: str,
        parsed: dict[str, ParsedOutput] | None,
        strict: bool = False,
    ) -> Case:
        """One stored row. ``strict``: the oracle sees only vectors already embedded, and
        ``MissingVectorsError`` names the texts it asked about besides."""
        planned = _planned_row(case, task, run_id, model)
        if case.error:
            return Case(**planned, verdict=Verdict.ERROR, reason=case.error, details=case.details)
        if case.skip_reason:
            return Case(
                **planned, verdict=Verdict.SKIP, reason=case.skip_reason, details=case.details
            )
        outputs = case.outputs
        planned["source_output"] = outputs["source"].text
        planned["followup_output"] = outputs["followup"].text
        failed = [f"{name}: {c.error}" for name, c in outputs.items() if not c.ok]
        if failed or parsed is None:
            reason = "; ".join(failed)[:500]
            return Case(**planned, verdict=Verdict.ERROR, reason=reason, details=case.details)
        source, follow = parsed["source"], parsed["followup"]
        planned["source_answer"], planned["followup_answer"] = source.answer, follow.answer
        companions = {k: v for k, v in parsed.items() if k not in ("source", "followup")}
        try:
            result = evaluate(
                case.relation,
                task.answer_type,
                source,
                follow,
                self.embeddings.known_similarity if strict else self.embeddings.similarity,
                companions=companions,
                threshold=self.thresholds.get(case.relation.id),
            )
        except MissingVectorsError:
            raise
        except Exception as exc:
            log.exception("oracle failed for %s", case.case_id)
            reason = f"oracle failed: {exc}"
            return Case(**planned, verdict=Verdict.ERROR, reason=reason, details=case.details)
        return Case(
            **planned,
            **self._measured(case, outputs, source, follow),
            verdict=result.verdict,
            oracle=result.oracle,
            value=result.value,
            reason=result.reason,
            details={**result.details, **case.details},
        )

    def _measured(
        self,
        case: PlannedCase,
        outputs: dict[str, Completion],
        source: ParsedOutput,
        follow: ParsedOutput,
    ) -> dict[str, Any]:
        """Similarities stored with an answered case: of the outputs, of their reasoning traces,
        against the reference (Δ/Score) and its steps."""
        similarity = self.embeddings.similarity
        measured: dict[str, Any] = {
            "output_similarity": similarity(outputs["source"].text, outputs["followup"].text)
        }
        if source.trace and follow.trace:
            measured["trace_sim"] = similarity(" ".join(source.trace), " ".join(follow.trace))
        reference = case.sample.reference
        if reference:
            score_source = similarity(outputs["source"].text, reference)
            score_followup = similarity(outputs["followup"].text, reference)
            measured |= {
                "score_source": score_source,
                "score_followup": score_followup,
                "delta": score_followup - score_source,
            }
        reference_steps = case.sample.reference_steps
        if reference_steps:
            measured["step_score_source"] = self.embeddings.avg_step_score(
                scoring_steps(source.trace), reference_steps
            )
            measured["step_score_followup"] = self.embeddings.avg_step_score(
                scoring_steps(follow.trace), reference_steps
            )
        return measured


def _texts_to_measure(case: PlannedCase, parsed: dict[str, ParsedOutput]) -> list[str]:
    """The texts ``_measured`` compares: the outputs, their traces, the reference; the steps of
    both sides only when the sample has reference steps to score them against (the reference
    and its steps are the sample's: embedded once, whatever the number of its cases)."""
    sides = ("source", "followup")
    if not all(name in case.outputs and case.outputs[name].ok for name in sides):
        return []  # an ERROR case: nothing is measured
    texts = [case.outputs[name].text for name in sides]
    if all(parsed[name].trace for name in sides):
        texts += [" ".join(parsed[name].trace) for name in sides]
    if case.sample.reference:
        texts.append(case.sample.reference)
    if case.sample.reference_steps:
        texts += list(case.sample.reference_steps)
        texts += [step for name in sides for step in scoring_steps(parsed[name].trace)]
    return texts


def _planned_row(case: PlannedCase, task: Task, run_id: str, model: str) -> dict[str, Any]:
    """What a case's row holds before it is answered: ids, inputs and the prompts sent."""
    followup = case.followup
    return {
        "id": case.case_id,
        "run_id": run_id,
        "sample_id": case.sample.id,
        "relation_id": case.relation.id,
        "family": case.relation.family,
        "side": case.relation.side,
        "target": followup.target if followup else "*",
        "followup_index": case.followup_index,
        "repeat_index": case.repeat_index,
        "model": model,
        "task_id": task.id,
        "source_input": case.source_fields,
        "followup_input": followup.fields if followup else None,
        "source_prompt": task.render(case.source_fields)
        if _has(task, case.source_fields)
        else None,
        "followup_prompt": (
            task.render(followup.fields, followup.preamble)
            if followup and _has(task, followup.fields)
            else None
        ),
    }


def _has(task: Task, fields: dict[str, str]) -> bool:
    return all(f in fields for f in task.fields)
