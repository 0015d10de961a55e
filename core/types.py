"""Small shared value types: the vocabulary of every layer (endpoint, sample, completion, verdict,
case)."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar


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
# Answers from batch files: it stands for the OpenAI-compatible endpoint that answers them, so
# its runs and cached calls are that endpoint's (see ``core.identity``).
BATCH_KIND = "batch"
# The base URL the embedded endpoint has in run ids and call keys: its port changes per start.
EMBEDDED_BASE_URL = "embedded://local"
# Stored run configs and run ids predate kinds and say ``embedded: true/false``; these two kinds
# keep that shape so existing run ids and stored configs stay byte-identical.
_LEGACY_KINDS = (OPENAI_KIND, EMBEDDED_KIND)


# Endpoint fields that pace calls and say nothing about what is asked.
_BUDGET_FIELDS = ("rpm_limit", "tpm_limit")


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
    # 24, not 8: at 100 ms latency 8 calls in flight reach only ~9× a sequential loop; 24 reach
    # 13–15× (≥ 12× target).
    concurrency: int = 24
    timeout_s: float = 60.0
    kind: str = OPENAI_KIND
    retries: int = 4  # of a failed call; all attempts of one call stop after 2 minutes
    # Budgets a hosted API enforces (requests / tokens per minute); None: no budget. Calls are
    # paced to stay within them; neither changes what a run is (its id) nor the call cache.
    rpm_limit: int | None = None
    tpm_limit: int | None = None

    @property
    def embedded(self) -> bool:
        """True for the local model served by this app (its port changes with every start)."""
        return self.kind == EMBEDDED_KIND

    @property
    def cache_base_url(self) -> str:
        """The base URL used in call-cache keys: the embedded server's port changes per start."""
        return EMBEDDED_BASE_URL if self.embedded else self.base_url.rstrip("/")

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
        # Unset budgets are left out: configs stored before budgets existed read the same.
        for budget in _BUDGET_FIELDS:
            if data[budget] is None:
                del data[budget]
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
class CallRequest:
    """One chat call as the call cache keys it (``key`` from ``Store.call_key``): what a batch
    export writes as a request line, and what an answer is cached under."""

    key: str
    base_url: str
    model: str
    params: dict
    messages: list
    repeat_index: int


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


# The columns of a stored case that hold JSON text.
CASE_JSON_COLUMNS: tuple[str, ...] = ("source_input", "followup_input", "details")


@dataclass(frozen=True, kw_only=True)
class Case:
    """One recorded case: a row of the ``cases`` table, with its JSON columns as Python values.

    The runner builds these; ``Store.record_cases`` writes them (``to_row``) and the typed
    readers decode them (``from_row``), so a case's columns are encoded and decoded in one place.
    ``created_at`` is filled in when the case is recorded; ``original_verdict`` is set only when a
    Triage threshold later recomputes the verdict.
    """

    id: str
    run_id: str
    sample_id: str
    relation_id: str
    family: str
    side: str | None = None  # AgentDiff: meaning / presentation
    target: str
    followup_index: int
    repeat_index: int
    model: str
    task_id: str
    source_input: dict[str, Any]
    followup_input: dict[str, Any] | None = None
    source_prompt: str | None = None
    followup_prompt: str | None = None
    source_output: str | None = None
    followup_output: str | None = None
    source_answer: str | None = None
    followup_answer: str | None = None
    verdict: Verdict
    oracle: str | None = None
    value: float | None = None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    score_source: float | None = None
    score_followup: float | None = None
    delta: float | None = None
    output_similarity: float | None = None
    trace_sim: float | None = None
    created_at: str | None = None
    original_verdict: Verdict | None = None
    # AvgStepScore (SI paper eq. 4) of each output's reasoning steps against the sample's
    # reference steps; None when the sample has no reference steps or an output has no trace.
    step_score_source: float | None = None
    step_score_followup: float | None = None

    # Columns stored as JSON text.
    JSON_COLUMNS: ClassVar[tuple[str, ...]] = CASE_JSON_COLUMNS

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """The ``cases`` table's columns, in table order."""
        return _CASE_COLUMNS

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Case:
        """Decode a ``cases`` row (JSON columns as text, as SQLite returns them).

        Columns left out take their defaults, and JSON columns that are already Python values are
        kept, so a mapping of Python values (an importer's case) decodes the same way. Unknown
        keys are an error: they would have no column to go to.
        """
        known = set(cls.columns())
        unknown = sorted(set(row) - known)
        if unknown:
            raise ValueError(f"not columns of a case: {', '.join(unknown)}")
        values = decode_case_columns(row)
        values["verdict"] = Verdict(values["verdict"])
        if values.get("original_verdict") is not None:
            values["original_verdict"] = Verdict(values["original_verdict"])
        return cls(**values)

    def to_row(self) -> dict[str, Any]:
        """The ``cases`` row: JSON columns encoded (sorted keys, UTF-8 kept), verdicts as text."""
        row = {column: getattr(self, column) for column in self.columns()}
        for column in self.JSON_COLUMNS:
            if row[column] is not None:
                row[column] = json_text(row[column])
        row["verdict"] = self.verdict.value
        if self.original_verdict is not None:
            row["original_verdict"] = self.original_verdict.value
        return row


_CASE_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Case))


def decode_case_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    """The one decoder of stored case columns, for whole rows and for partial selections.

    Each JSON column the row has, stored as text, becomes its Python value (a text that is not
    JSON stays as it is); every other column is returned unchanged.
    """
    values = dict(row)
    for column in CASE_JSON_COLUMNS:
        value = values.get(column)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                values[column] = json.loads(value)
    return values


def json_text(obj: Any) -> str:
    """The JSON text stored in the database: sorted keys, non-ASCII kept as is."""
    return json.dumps(obj, ensure_ascii=False, sort_keys=True)


def content_hash(obj: Any) -> str:
    """Stable sha256 of a JSON-serialisable object (sorted keys), used for cache keys and ids."""
    payload = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
