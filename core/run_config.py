"""A run's configuration: everything that defines it, stored with it so it can be re-run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from core.identity import run_id
from core.types import Endpoint, Sample

# Which NLI field the relations that expect the same label perturb. The hypothesis is the claim
# judged against the premise: editing it can change what it claims, so by default only the
# premise changes (``relations.apply.kept_fields_of`` applies the rule).
NLI_TARGETS = ("premise", "hypothesis", "both")
DEFAULT_NLI_TARGET = "premise"
# Rewrite candidates an LLM-prompted relation asks for by default (best of k, issue 23 item 8).
DEFAULT_REWRITE_CANDIDATES = 3
MAX_REWRITE_CANDIDATES = 10
# What the option means, for the CLI's --help and the Probe form's.
REWRITE_CANDIDATES_HELP = (
    "Best of k for LLM-prompted relations: ask the transformation endpoint for up to k rewrites "
    "of each input (each with its own seed), keep the one most similar to the source among those "
    "that pass the validity gate; none passing, the case is a SKIP with the gate's reason. "
    "1 asks once. More candidates cost more rewrite calls but give a weak rewriter more chances."
)


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run; stored with it so it can be re-run and compared."""

    endpoint: Endpoint
    task_id: str
    relation_ids: tuple[str, ...]
    repeats: int = 1
    seed: int = 0
    dataset: str | None = None
    transformation_endpoint: Endpoint | None = None
    nli_target: str = DEFAULT_NLI_TARGET
    # Best of k: how many rewrite candidates an LLM-prompted relation asks for per follow-up.
    rewrite_candidates: int = DEFAULT_REWRITE_CANDIDATES

    def __post_init__(self) -> None:
        if self.nli_target not in NLI_TARGETS:
            raise ValueError(
                f"nli_target must be one of {', '.join(NLI_TARGETS)}, not {self.nli_target!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """The stored config. ``nli_target`` and ``rewrite_candidates`` are written only when they
        are not the default, so the ids of runs stored before they existed stay what they were."""
        data = asdict(self)
        data["endpoint"] = self.endpoint.to_dict()
        if self.transformation_endpoint is not None:
            data["transformation_endpoint"] = self.transformation_endpoint.to_dict()
        data["relation_ids"] = list(self.relation_ids)
        if self.nli_target == DEFAULT_NLI_TARGET:
            del data["nli_target"]
        if self.rewrite_candidates == DEFAULT_REWRITE_CANDIDATES:
            del data["rewrite_candidates"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """The config ``to_dict`` wrote (e.g. a run's stored config), rebuilt to run it again."""
        transformation = data.get("transformation_endpoint")
        return cls(
            endpoint=Endpoint.from_dict(data["endpoint"]),
            task_id=data["task_id"],
            relation_ids=tuple(data["relation_ids"]),
            repeats=data.get("repeats", 1),
            seed=data.get("seed", 0),
            dataset=data.get("dataset"),
            transformation_endpoint=Endpoint.from_dict(transformation) if transformation else None,
            nli_target=data.get("nli_target", DEFAULT_NLI_TARGET),
            rewrite_candidates=data.get("rewrite_candidates", DEFAULT_REWRITE_CANDIDATES),
        )

    def run_id(self, samples: Sequence[Sample]) -> str:
        """Deterministic: the same config over the same samples is the same run (resumable)."""
        return run_id(self.to_dict(), [s.id for s in samples])
