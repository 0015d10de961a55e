"""Streamlit helpers for the Analysis page: cached aggregates, table frames, the case view.

Aggregates are cached with ``st.cache_data`` keyed by the DB path, the data version (read from
the database on every rerun, ``Store.data_version``: a run from the CLI or another session, a
label or a verdict change moves it) and the filter; a rerun that changed none of them recomputes
nothing. Each cached function opens its own short-lived ``Store`` so no SQLite connection crosses
threads or reruns.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from app.analysis import heatmaps, metrics
from app.analysis import severity as severity_metrics
from app.analysis.case_fields import field_texts
from app.analysis.catalogue.definitions import metric_label
from app.analysis.catalogue.formats import Unit, format_shown
from app.analysis.catalogue.tables import Shown
from app.analysis.severity import DrilldownCase, SeverityPoint
from app.analysis.triage.false_positives import false_positive_rates
from app.engine.embedder import EmbeddingCache, default_embedder
from app.engine.workspace import all_relations
from app.reports.exports import export_bytes
from app.ui.components import inert, side_by_side, verdict_badge
from app.ui.data import sessionless_thread
from core.case_filter import CaseFilter
from core.types import Case
from relations.base import RelationKind
from storage import Store
from storage.gate_verbs import RewriteYield

_LOG = logging.getLogger(__name__)

Version = str | int  # a data version: the database's fingerprint (tests pass 0)

SEP = " × "
ALL_VERDICTS = ["FAIL", "ERROR", "SKIP", "PASS"]


def _with_store(path: str, fn: Callable[[Store], Any]) -> Any:
    store = Store(path)
    try:
        return fn(store)
    finally:
        store.close()


# ------------------------------------------------------------------ cached aggregates

# Summaries this process has computed (the keys of ``summary``'s cache, as far as it knows):
# a page whose summary is among them draws at once and needs no placeholder chart.
_AGGREGATED: OrderedDict[tuple, None] = OrderedDict()
_AGGREGATED_LOCK = threading.Lock()
_AGGREGATED_KEPT = 256


def _remember_aggregated(key: tuple) -> None:
    with _AGGREGATED_LOCK:
        _AGGREGATED[key] = None
        _AGGREGATED.move_to_end(key)
        while len(_AGGREGATED) > _AGGREGATED_KEPT:
            _AGGREGATED.popitem(last=False)


def is_aggregated(path: str, version: Version, flt: CaseFilter) -> bool:
    """Whether ``summary(path, version, flt)`` was computed before (most likely still cached).

    Wrong only after the cache was cleared or evicted the entry: then the page merely skips its
    placeholder chart while the numbers are computed again."""
    with _AGGREGATED_LOCK:
        return (path, version, flt) in _AGGREGATED


@st.cache_data(show_spinner=False, max_entries=64)
def options(path: str, version: Version) -> dict[str, Any]:
    """Filter choices plus the total number of cases."""
    return _with_store(
        path, lambda s: {**s.filter_options(), "n_cases": s.count_cases(CaseFilter())}
    )


@st.cache_data(show_spinner="Aggregating…", max_entries=64)
def summary(path: str, version: Version, flt: CaseFilter) -> dict[str, Any]:
    """``metrics.summarize``: every overview number, the filtered case count included."""
    found = _with_store(path, lambda s: metrics.summarize(s, flt))
    _remember_aggregated((path, version, flt))
    return found


_PREFETCH_LOCK = threading.Lock()
_PREFETCHING: set[str] = set()
_PREFETCHED_KEY = "_analysis_prefetched"  # the database this session has prefetched


def prefetch(path: str) -> None:
    """Start aggregating the unfiltered view of ``path`` in a background thread, unless it is
    cached: the filter choices and the summary a newly opened page shows first.

    Called first thing on the page, so on a cold server the numbers are counted while the page's
    modules are imported and the session is set up; the page's own calls then wait for these
    (``st.cache_data`` computes each key once) or find them cached. SQLite does the counting
    with the GIL released, so the first paint is not slowed. Failures are left to the page's own
    calls, which show them. Once per session and database: later reruns find the cache."""
    if st.session_state.get(_PREFETCHED_KEY) == path:
        return
    st.session_state[_PREFETCHED_KEY] = path
    if not Path(path).exists():  # never create a database from a background thread
        return
    with _PREFETCH_LOCK:
        if path in _PREFETCHING:
            return
        _PREFETCHING.add(path)
    threading.Thread(
        target=_prefetch_default,
        args=(path,),
        name=sessionless_thread("analysis-prefetch"),
        daemon=True,
    ).start()


@st.cache_data(show_spinner=False, max_entries=16)
def damage(path: str, identity: tuple[int, int, int] | None) -> str | None:
    """What ``PRAGMA quick_check`` finds wrong with the database (None: sound). Keyed by the
    file's identity (``storage.health.file_identity``), not the data version: the check reads
    every page, so it is repeated when the file is replaced or checkpointed, not at every write."""
    from storage.health import damage as quick_check

    return _with_store(path, quick_check)


def render_damage(path: str) -> None:
    """A banner over the page when the database is damaged: its numbers would silently leave
    out what cannot be read, so the page says so and how to recover."""
    from storage.health import damaged_message, file_identity

    finding = damage(path, file_identity(path))
    if finding:
        st.error(
            f"**The numbers below may be incomplete.** {inert(damaged_message(path, finding))}",
            icon=":material/error:",
        )


def aggregate_default(path: str) -> None:
    """Compute (or find cached) what a newly opened Analysis page of ``path`` shows first: its
    filter choices and its unfiltered summary, at the database's current data version, and
    whether the database is sound."""
    from storage.health import file_identity

    damage(path, file_identity(path))
    version = _with_store(path, lambda s: s.data_version())
    if not is_aggregated(path, version, CaseFilter()):
        options(path, version)
        summary(path, version, CaseFilter())


def _prefetch_default(path: str) -> None:
    try:
        aggregate_default(path)
    except Exception:  # the page's own calls report it
        _LOG.debug("prefetching the Analysis summary failed", exc_info=True)
    finally:
        with _PREFETCH_LOCK:
            _PREFETCHING.discard(path)


@st.cache_data(show_spinner="Running tests…", max_entries=64)
def tests(path: str, version: Version, flt: CaseFilter) -> dict[str, Any]:
    """``stats.run_tests``, reusing the (cached) summary's verdict counts and relation roles."""
    from app.analysis import stats  # scipy: imported when the Statistics tab is first opened

    found = summary(path, version, flt)
    return _with_store(
        path,
        lambda s: stats.run_tests(s, flt, counts=found["counts"], roles=found["roles"]),
    )


@st.cache_data(show_spinner=False, max_entries=64)
def box(path: str, version: Version, flt: CaseFilter, column: str) -> tuple[list[dict], int]:
    return _with_store(path, lambda s: metrics.box_stats(s, flt, column))


@st.cache_data(show_spinner=False, max_entries=64)
def meta_keys(path: str, version: Version) -> list[str]:
    return _with_store(path, lambda s: s.meta_keys())


@st.cache_data(show_spinner=False, max_entries=64)
def rewrite_yield(path: str, version: Version, flt: CaseFilter) -> list[RewriteYield]:
    """The rewrite yield of the LLM-prompted relations among the filtered cases."""

    def run(store: Store) -> list[RewriteYield]:
        llm = sorted(r.id for r in all_relations(store) if r.kind == RelationKind.LLM)
        return store.rewrite_yield(flt, llm)

    return _with_store(path, run)


@st.cache_data(show_spinner=False, max_entries=64)
def breakdown(path: str, version: Version, flt: CaseFilter, key: str) -> list[dict]:
    return _with_store(path, lambda s: metrics.breakdown(s, key, flt))


def input_embeddings(store: Store) -> EmbeddingCache:
    """Input vectors for the cosine severity proxy: MiniLM (loaded only for texts the store's
    embedding cache lacks), cached in the store like every other embedding."""
    return EmbeddingCache(default_embedder(), store)


@st.cache_data(show_spinner="Embedding inputs…", max_entries=64)
def severity(path: str, version: Version, flt: CaseFilter) -> list[SeverityPoint]:
    return _with_store(
        path, lambda s: severity_metrics.severity_table(s, flt, embeddings=input_embeddings(s))
    )


@st.cache_data(show_spinner=False, max_entries=64)
def drilldown(
    path: str, version: Version, flt: CaseFilter, model: str, relation_id: str, verdicts: tuple
) -> list[DrilldownCase]:
    return _with_store(
        path,
        lambda s: severity_metrics.drilldown(
            s,
            flt,
            model=model,
            relation_id=relation_id,
            verdicts=verdicts,
            embeddings=input_embeddings(s),
        ),
    )


@st.cache_data(show_spinner=False, max_entries=64)
def compare(path: str, version: Version, run_a: str, run_b: str) -> list[dict]:
    return _with_store(path, lambda s: metrics.compare_runs(s, run_a, run_b))


@st.cache_data(show_spinner=False, max_entries=16)
def run_relations(path: str, version: Version) -> dict[str, tuple[str, ...]]:
    """Run id → the relations its configuration asked for (for run labels)."""

    def run(store: Store) -> dict[str, tuple[str, ...]]:
        out = {}
        for stored in store.runs():
            # ``relations``: what runs stored before the key was named ``relation_ids`` hold.
            chosen = stored.config.get("relation_ids") or stored.config.get("relations") or []
            out[stored.id] = tuple(str(r) for r in chosen) if isinstance(chosen, list) else ()
        return out

    return _with_store(path, run)


@st.cache_data(show_spinner=False, max_entries=16)
def triage_feedback(path: str, version: Version, flt: CaseFilter) -> list[dict]:
    """Per model × relation false-positive rates from Triage labels (empty when none exist)."""

    def run(store: Store) -> list[dict]:
        if not store.has_labels():
            return []
        # The labels' own filter: the runs, models and relations chosen (not tasks or dates).
        only = CaseFilter.make(run_ids=flt.run_ids, models=flt.models, relations=flt.relations)
        rows = false_positive_rates(store, only)
        return [r for r in rows if r["labeled"]]

    return _with_store(path, run)


def export_data(path: str, fmt: str, flt: CaseFilter) -> Callable[[], bytes]:
    """A callable for ``st.download_button``: builds the file only when it is clicked."""

    def build() -> bytes:
        return _with_store(path, lambda s: export_bytes(s, fmt, flt))

    return build


# ------------------------------------------------------------------ frames for st.dataframe


def _significant(value: Any) -> Any:
    return float(f"{value:.3g}") if isinstance(value, int | float) else value


def frame(rows: list[dict[str, Any]], layout: Sequence[Shown]) -> pd.DataFrame:
    """The columns of ``layout`` (a table from ``app.analysis.catalogue``) under their headers: percent
    columns become percentages (0.1, header + " %"), p-values keep three significant digits,
    other decimals are rounded to 0.001."""
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=[c.label for c in layout])
    units = {c.key: c.unit for c in layout}
    df = df[[c.key for c in layout if c.key in df]].copy()
    for column in df.columns:
        if units[column] is Unit.TEXT and df[column].dtype == object:
            # sample metadata mixes numbers and text across samples: show both as text
            df[column] = df[column].map(
                lambda v: v if v is None or isinstance(v, str | bool) else str(v)
            )
        elif units[column] is Unit.PERCENT:
            df[column] = (pd.to_numeric(df[column], errors="coerce") * 100).round(1)
        elif units[column] is Unit.P_VALUE:
            df[column] = df[column].map(_significant)
        elif pd.api.types.is_float_dtype(df[column]):
            df[column] = df[column].round(3)
    headers = {c.key: c.label + (" %" if c.unit is Unit.PERCENT else "") for c in layout}
    return df.rename(columns=headers)


# ------------------------------------------------------------------ runs


def relation_set_text(relations: Sequence[str], shown: int = 3) -> str:
    """A run's relation set in a few words: "si.identity, si.paraphrase +2 more"."""
    if not relations:
        return "relations unknown"
    head = ", ".join(relations[:shown])
    return head if len(relations) <= shown else f"{head} +{len(relations) - shown} more"


def run_label(run: dict[str, Any], relations: Sequence[str] = ()) -> str:
    """A run as people know it: endpoint (model) · task · start time · relation set · short id.

    The short id stays so that two runs alike in everything else remain distinct."""
    endpoint = run.get("endpoint_name") or "?"
    model = run.get("model") or "?"
    who = endpoint if endpoint == model else f"{endpoint} ({model})"
    started = str(run.get("created_at") or "")[:16].replace("T", " ")
    state = BATCH_STATE_TEXT.get(str(run.get("status")), "")
    return (
        f"{who} · {run.get('task_id') or '?'} · {started} · {relation_set_text(relations)}"
        f" · {str(run['id'])[:6]}{state}"
    )


# Runs of batch mode that are not finished say so in their label.
BATCH_STATE_TEXT = {
    "awaiting_batch": " · awaiting batch results",
    "partial": " · batch partly answered",
}


def default_run_pair(runs: Sequence[dict[str, Any]]) -> tuple[str, str] | None:
    """Two runs to compare first: the newest run whose task has another run, and the newest
    earlier run of that task (A older, B newer); else the two newest runs. ``runs`` are newest
    first, as ``Store.filter_options`` gives them."""
    if len(runs) < 2:
        return None
    for index, newer in enumerate(runs):
        for older in runs[index + 1 :]:
            if older.get("task_id") == newer.get("task_id"):
                return str(older["id"]), str(newer["id"])
    return str(runs[1]["id"]), str(runs[0]["id"])


# ------------------------------------------------------------------ drill-down helpers


def cell_label(model: str, relation_id: str) -> str:
    return f"{model}{SEP}{relation_id}"


def clicked_cell(event: Any) -> str | None:
    """The "model × relation" of the first heatmap cell a click selected, if any: from the
    Vega-Lite heatmap's point selection (``heatmaps.HEATMAP_SELECTION``, one dict of ``model``
    and ``relation_id`` per selected cell)."""
    try:
        selection = event["selection"]
    except (KeyError, TypeError):
        selection = getattr(event, "selection", None)
    if not isinstance(selection, Mapping):
        return None
    for point in selection.get(heatmaps.HEATMAP_SELECTION) or []:
        if isinstance(point, Mapping) and "model" in point and "relation_id" in point:
            return cell_label(str(point["model"]), str(point["relation_id"]))
    return None


def fields_text(value: Any) -> str:
    """A case's input fields as readable text ("field: value" blocks for several fields)."""
    fields = field_texts(value)
    if len(fields) == 1:
        return next(iter(fields.values()))
    return "\n\n".join(f"{name}: {text}" for name, text in fields.items())


def render_case(case: Case) -> None:
    """One case: verdict, measured value and reason, then inputs and outputs side by side."""
    value_text = format_shown(case.value, Unit.DECIMAL)
    st.markdown(
        f"{verdict_badge(case.verdict)} measured value **{value_text}** · checked by "
        f"{inert(metric_label(case.oracle) if case.oracle else '—')} · repeat "
        f"{case.repeat_index} · follow-up {case.followup_index}"
    )
    st.caption(f"Sample {inert(case.sample_id)} · case {inert(case.id)}")
    st.text(f"Reason: {case.reason or '—'}")
    side_by_side(
        "Source input",
        fields_text(case.source_input),
        "Follow-up input",
        fields_text(case.followup_input) if case.followup_input else "",
    )
    side_by_side(
        "Source output",
        case.source_output or "",
        "Follow-up output",
        case.followup_output or "",
    )
    st.text(
        f"Answers: {format_shown(case.source_answer, Unit.TEXT)} → "
        f"{format_shown(case.followup_answer, Unit.TEXT)} · "
        f"Δ = {format_shown(case.delta, Unit.DECIMAL)} · output similarity = "
        f"{format_shown(case.output_similarity, Unit.DECIMAL)}"
    )
    if any(v is None for v in (case.source_answer, case.followup_answer, case.delta)):
        st.caption(
            "— = not recorded: no answer was extracted, or no Δ (it needs a reference answer "
            "and a judged PASS/FAIL case)."
        )


# ------------------------------------------------------------------ runs to repair


@st.cache_data(show_spinner=False, max_entries=16)
def flagged(path: str, version: Version) -> list[dict[str, Any]]:
    """The runs a known defect of the engine that judged them touched (``app.engine.repairs``)."""
    from app.engine.repairs import flagged_runs

    return _with_store(path, lambda s: [run.to_dict() for run in flagged_runs(s)])


def render_flagged_runs(store: Store, runs: Sequence[dict[str, Any]]) -> None:
    """A banner over the numbers naming the runs to repair, with a button that reruns the first
    (its answers come from the call cache; it runs in the background like a probe)."""
    if not runs:
        return
    from app.ui.probe_run import rerun_stored

    listed = "\n".join(
        f"- `{run['run_id']}` ({inert(run['model'])}, {inert(run['task_id'])}): "
        f"{'; '.join(run['defects'])}"
        for run in runs
    )
    st.warning(
        f"**{len(runs)} run{'s' if len(runs) != 1 else ''} {runs[0]['hint']}.** Their numbers "
        f"below are wrong until then; a rerun rebuilds the cases from the call cache.\n{listed}",
        icon=":material/build:",
    )
    first = runs[0]
    if st.button(f"Rerun `{first['run_id']}` to repair it", key=f"repair_{first['run_id']}"):
        stored = store.run(first["run_id"])
        if stored is None:
            st.error("That run is gone (deleted meanwhile).")
            return
        rerun_stored(store, stored, "probe", refused="Cannot rerun it")
