"""Small shared value types: the vocabulary of every layer (endpoint, sample, completion, verdict)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    """Outcome of one case. SKIP and ERROR are shown but never counted as pass or violation."""

    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"
    ERROR = "ERROR"


class Label(StrEnum):
    """A human judgement on a FAIL (append-only history; the verdict itself is never changed)."""

    CONFIRMED = "confirmed"
    FP_INVALID_FOLLOWUP = "fp_invalid_followup"
    FP_ORACLE = "fp_oracle"
    UNSURE = "unsure"


# Endpoint kinds the project ships; a kind names the client factory that talks to it (the
# registry in ``app.clients`` is the list of valid kinds, so adding one needs no change here).
OPENAI_KIND = "openai"
EMBEDDED_KIND = "embedded"
# Stored run configs and run ids predate kinds and say ``embedded: true/false``; these two kinds
# keep that shape so existing run ids and stored configs stay byte-identical.
_LEGACY_KINDS = (OPENAI_KIND, EMBEDDED_KIND)


@dataclass(frozen=True)
class Endpoint:
    """A model endpoint of some kind (OpenAI-compatible by default). Holds the *name* of the
    key's variable, never the key."""

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = None
    # 24, not 8: the openai client costs ~4 ms of CPU per call on the event loop, so 8 in
    # flight reach only ~9× a sequential loop at 100 ms latency; 24 reach 13–15× (≥ 12× target).
    concurrency: int = 24
    timeout_s: float = 60.0
    kind: str = OPENAI_KIND

    @property
    def embedded(self) -> bool:
        """True for the local model served by this app (its port changes with every start)."""
        return self.kind == EMBEDDED_KIND

    @property
    def cache_base_url(self) -> str:
        """The base URL used in call-cache keys: the embedded server's port changes per start."""
        return "embedded://local" if self.embedded else self.base_url.rstrip("/")

    def sampling_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            params["seed"] = self.seed
        return params

    def to_dict(self) -> dict[str, Any]:
        """The endpoint as stored in a run config (and hashed into its run id).

        The two original kinds keep the pre-kind shape (an ``embedded`` flag, no ``kind``) so
        run ids and stored configs do not change; any other kind is written out by name.
        """
        data = asdict(self)
        kind = data.pop("kind")
        data["embedded"] = kind == EMBEDDED_KIND
        if kind not in _LEGACY_KINDS:
            data["kind"] = kind
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Endpoint:
        """The inverse of ``to_dict``; also reads configs stored before kinds existed."""
        values = dict(data)
        embedded = bool(values.pop("embedded", False))
        values.setdefault("kind", EMBEDDED_KIND if embedded else OPENAI_KIND)
        return cls(**values)


@dataclass(frozen=True)
class Sample:
    """One source input: field values plus optional reference answer / solution / steps."""

    fields: dict[str, str]
    reference: str | None = None
    reference_steps: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return content_hash({"fields": self.fields, "reference": self.reference})[:16]


@dataclass(frozen=True)
class Completion:
    """A provider response as data: text or error, with cache and timing facts."""

    text: str | None
    error: str | None = None
    cached: bool = False
    latency_ms: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


@dataclass(frozen=True)
class ParsedOutput:
    """What a task's parser extracted from a completion."""

    answer: str | None
    trace: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class OracleResult:
    """A verdict with the measured value and a one-line reason."""

    verdict: Verdict
    oracle: str
    value: float | None = None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def content_hash(obj: Any) -> str:
    """Stable sha256 of a JSON-serialisable object (sorted keys), used for cache keys and ids."""
    payload = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
