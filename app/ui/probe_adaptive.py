"""Probe's adaptive options and cost preview: a Precision choice and a Budget field (the CLI's
`run --precision/--budget`), a preview line above "Run probe" (``app.engine.preview``, as
`run --dry-run` states it), each cell's confidence-sequence interval while an adaptive run
goes. (After a run, `probe_run` sets what it used beside the preview with
``app.engine.preview.comparison_line``.)"""

from __future__ import annotations

import logging

import streamlit as st

from app.engine.adaptive_run import AdaptiveSettings
from app.engine.background import ProgressSnapshot
from app.engine.preview import CostPreview, preview_run
from app.engine.rounds import DEFAULT_ROUND_SIZE
from app.engine.run_setup import RunSetupError, plan_run
from app.engine.workspace import custom_relations, default_embedder
from core.sampling import SampledCell
from storage import Store

_LOG = logging.getLogger(__name__)
PRECISIONS = {"off": None, "±10%": 0.10, "±5%": 0.05, "±2%": 0.02}


def adaptive_options(key: str) -> AdaptiveSettings | None:
    """The Precision and Budget fields; None when both are off (a full run)."""
    cols = st.columns(2)
    choice = cols[0].radio(
        "Precision",
        list(PRECISIONS),
        horizontal=True,
        key=f"{key}_precision",
        help="Stop each relation once its anytime-valid 95% interval is within ± this; inputs "
        "go in rounds, in a seeded random order. 'off' sends every input.",
    )
    budget = cols[1].number_input(
        "Budget (model calls, 0 = none)",
        min_value=0,
        value=0,
        step=10,
        key=f"{key}_budget",
        help="Send at most this many calls to the model, to the widest intervals first.",
    )
    precision = PRECISIONS[str(choice)]
    if precision is None and not budget:
        return None
    return AdaptiveSettings(precision, int(budget) or None, DEFAULT_ROUND_SIZE)


@st.cache_data(show_spinner="Estimating calls and tokens…", max_entries=32)
def _cached_preview(
    path: str, version: str | int, fingerprint: str, precision: float | None, _choices
) -> CostPreview | None:
    """The preview of the form's run; keyed by the database's version and the form's
    fingerprint (``_choices`` itself is not hashed)."""
    store = Store(path, read_only=True)
    try:
        choices = _choices
        plan = plan_run(store, choices.task.id, choices.relation_ids)
        transformation = choices.transformation_endpoint
        config = plan.config(
            choices.endpoint,  # unresolved: run ids and call keys use the embedded model's
            # fixed address, as the run's own do
            transformation_endpoint=transformation if plan.needs_transformation_endpoint else None,
            repeats=choices.repeats,
            seed=choices.seed,
            dataset=choices.dataset,
            nli_target=choices.nli_target,
            rewrite_candidates=choices.rewrite_candidates,
        )
        prices = store.endpoint_prices(choices.endpoint.name)
        return preview_run(
            store,
            default_embedder(),
            config,
            choices.task,
            list(choices.samples),
            custom_relations=custom_relations(store),
            price_in=prices.per_million_in,
            price_out=prices.per_million_out,
            precision=precision,
            round_size=DEFAULT_ROUND_SIZE,
        )
    except RunSetupError:
        return None  # the Run button says what is wrong with the form
    finally:
        store.close()


def form_preview(store: Store, choices, adaptive: AdaptiveSettings | None) -> CostPreview | None:
    """The form's preview, or None (said on the page) when it cannot be made: a preview that
    fails must not take the Run button with it."""
    precision = adaptive.precision if adaptive else None
    try:
        return _cached_preview(
            store.path, store.data_version(), choices.fingerprint, precision, choices
        )
    except Exception as exc:  # the log has the traceback; the page one line
        _LOG.warning("cost preview failed", exc_info=True)
        st.caption(f"No cost preview: {' '.join(f'{type(exc).__name__}: {exc}'.split())}")
        return None


def preview_text(preview: CostPreview, adaptive: AdaptiveSettings | None) -> str:
    """The line above "Run probe": planned, cached and to send, tokens and cost."""
    text = (
        f"**Preview:** {preview.planned_calls} planned calls, {preview.cached_calls} cached, "
        f"**{preview.calls_to_send} to send**"
        + (f" ({preview.rewrite_calls} rewrites)" if preview.rewrite_calls else "")
        + f" · ~{preview.prompt_tokens:,} prompt + {preview.completion_estimate} completion "
        f"tokens ({preview.completion_basis}; {preview.token_method})"
    )
    cost = preview.cost_usd
    text += f" · ~${cost:.4f}" if cost is not None else ""
    if preview.precision is not None:
        estimate = preview.precision
        text += (
            f" · with ±{estimate.half_width:.0%}: about {estimate.calls_near_zero}–"
            f"{estimate.calls_at_half} calls to send, at worst {estimate.calls_worst_case}"
        )
    if adaptive is not None and adaptive.budget:
        text += f" · at most {adaptive.budget} sent (budget)"
    return text


def render_preview(preview: CostPreview | None, adaptive: AdaptiveSettings | None) -> None:
    if preview is None:
        return
    st.markdown(preview_text(preview, adaptive))
    if preview.cost_usd is None:
        st.warning(
            "No price is set for this endpoint: the cost is not shown. Set its price per "
            "million input and output tokens on the **Endpoints** page."
        )


def cell_text(cell: SampledCell) -> str:
    """One cell's line while an adaptive run goes: its rate, interval and whether it stopped."""
    if not cell.inputs:
        return f"`{cell.relation}`: no verdicts yet"
    state = "**stopped**" if cell.stopped else "going on"
    return (
        f"`{cell.relation}`: {cell.violations}/{cell.inputs} = {cell.rate:.0%} · interval "
        f"{cell.low:.0%}–{cell.high:.0%} (±{cell.half_width:.1%}) · {state}"
    )


def render_cells(progress: ProgressSnapshot) -> None:
    if progress.cells:
        st.markdown("  \n".join(cell_text(cell) for cell in progress.cells))
