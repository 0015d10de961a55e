"""What a run reports while it goes (``Progress``) and when it ends (``RunSummary``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from app.clients.limiter import LiveLoad
from core.types import Verdict

if TYPE_CHECKING:
    from app.engine.embedder import EmbeddingStats


@dataclass
class Progress:
    total: int
    done: int = 0
    calls_made: int = 0
    cache_hits: int = 0
    verdicts: Counter = field(default_factory=Counter)
    retried_errors: int = 0  # stored ERROR cases this run sends again
    load: LiveLoad | None = None  # the endpoint's live concurrency and calls/s, if it adapts
    # Answered cases not judged yet: judging waits for their vectors, sending does not.
    unjudged: int = 0
    embedding: EmbeddingStats | None = None  # the embedder's rate and texts in flight
    # Tokens of the calls sent, as the endpoint reported them (0 where it reports none): what a
    # run used, set against its cost preview.
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def count_usage(self, usage: dict[str, int]) -> None:
        self.prompt_tokens += usage.get("prompt_tokens", 0)
        self.completion_tokens += usage.get("completion_tokens", 0)

    def judging_text(self) -> str:
        """`` · 340 to judge · embedder 412 texts/s, 640 in flight`` while cases wait for
        their vectors ("" when none wait)."""
        if not self.unjudged or self.embedding is None:
            return ""
        return f" · {self.unjudged} to judge · {self.embedding.describe()}"


@dataclass
class RunSummary:
    run_id: str
    status: str
    cases: int
    new_cases: int
    calls_made: int
    cache_hits: int
    verdicts: dict[str, int]
    elapsed_s: float
    retried_errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    stop_reason: str = ""
    prompt_tokens: int = 0  # of the calls sent, as the endpoint reported them
    completion_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def errors(self) -> int:
        return self.verdicts.get(Verdict.ERROR.value, 0)

    def error_line(self) -> str:
        """One line on the run's ERROR cases ("" when there are none), most common kind first."""
        if not self.errors:
            return ""
        kinds = "; ".join(f"{n}× {kind}" for kind, n in self.error_kinds.items())
        if self.errors == self.cases:
            return f"every case ({self.errors}) ended ERROR — {kinds}"
        return f"{self.errors} of {self.cases} cases ended ERROR — {kinds}"


def error_kind(reason: str) -> str:
    """A short class for an ERROR reason: the first failure, without attempt counts."""
    first = (reason or "unknown error").split("; ")[0]
    for prefix in ("source: ", "followup: "):
        if first.startswith(prefix):
            first = first[len(prefix) :]
    first = first.split(" (after ")[0]
    return first[:80] or "unknown error"


def error_kinds(reasons: Sequence[str]) -> dict[str, int]:
    """How many ERROR reasons fall in each ``error_kind``, most common first."""
    return dict(Counter(error_kind(reason) for reason in reasons).most_common())


ProgressCallback = Callable[[Progress], None]
