"""How Compare runs names its two runs: pickers that tell runs apart at a glance (start time,
task, sampling, relation count first: the long endpoint and model names came first before and
were cut, so every choice read alike) and the sampling settings each run answered under (a run
at T=0.7 and one at T=0 differ by sampling alone)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from app.ui.analysis_view import BATCH_STATE_TEXT, Version
from storage import Store


@dataclass(frozen=True)
class Sampling:
    """The sampling settings a run's endpoint asked the model for (None: not recorded)."""

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> Sampling:
        endpoint = config.get("endpoint")
        if not isinstance(endpoint, Mapping):
            return cls()
        return cls(endpoint.get("temperature"), endpoint.get("top_p"), endpoint.get("seed"))

    def short(self) -> str:
        """ "T=0.7" (or "T unknown"): what the picker shows."""
        return "T unknown" if self.temperature is None else f"T={self.temperature:g}"

    def text(self) -> str:
        """ "T=0.7 · top-p 1 · no seed": everything recorded."""
        parts = [self.short()]
        if self.top_p is not None:
            parts.append(f"top-p {self.top_p:g}")
        parts.append("no seed" if self.seed is None else f"seed {self.seed}")
        return " · ".join(parts)


@st.cache_data(show_spinner=False, max_entries=16)
def run_samplings(path: str, version: Version) -> dict[str, Sampling]:
    """Run id → its sampling settings, from each run's stored configuration."""
    store = Store(path)
    try:
        return {run.id: Sampling.of(run.config) for run in store.runs()}
    finally:
        store.close()


def run_choice_text(
    run: Mapping[str, Any], relations: Sequence[str], sampling: Sampling | None
) -> str:
    """A run in the Compare runs pickers, what tells runs apart first: "2026-11-26 10:32 ·
    sentiment · T=0.7 · 5 relations · endpoint (model) · 715f9d"."""
    started = str(run.get("created_at") or "")[:16].replace("T", " ")
    endpoint, model = run.get("endpoint_name") or "?", run.get("model") or "?"
    who = endpoint if endpoint == model else f"{endpoint} ({model})"
    count = f"{len(relations)} relation{'s' if len(relations) != 1 else ''}"
    parts = [started, str(run.get("task_id") or "?"), (sampling or Sampling()).short()]
    parts += [count if relations else "relations unknown", who, str(run["id"])[:6]]
    return " · ".join(parts) + BATCH_STATE_TEXT.get(str(run.get("status")), "")


def sampling_note(a: Sampling, b: Sampling) -> str:
    """The caption under the pickers: each run's sampling, and a word when they differ."""
    note = f"Sampling — run A: {a.text()}; run B: {b.text()}."
    if (a.temperature, a.top_p) != (b.temperature, b.top_p):
        note += (
            " The runs sampled differently: part of the change may be sampling noise, not the"
            " change you made (compare each to its noise floor on Robustness)."
        )
    return note
