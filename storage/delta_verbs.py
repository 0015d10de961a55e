"""SQL aggregates of Δ (mixed into ``Store``): the SI paper's MAD and stability, per-cell mean Δ,
and the per-observation |Δ| the statistical tests compare.

Definitions (``app.analysis.metrics`` documents the full list):

- *observation* — one judged case (PASS or FAIL) with a Δ, each repeat, follow-up and target its
  own, as the SI paper's eq. 6 sums |Δ_τ(p)| per inference. A *once-per-repeat* relation (the
  noise floor's ``si.identity``) is the exception: a multi-field task sends the unchanged input
  once per field target, which is one re-sample of the same prompt, so only the first judged
  follow-up of each (run, model, task, sample, repeat) counts, exactly as the noise floor counts.
- *cell* — one (model, task, sample, relation [, run]); its Δ is the mean Δ of its observations.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.case_filter import CaseFilter
from storage.case_filter import case_where
from storage.endpoint_models import EndpointModels

IDENTITY_RELATION = "si.identity"
STABILITY_THRESHOLD = 0.05

# Numbers the follow-ups of one re-sample: a once-per-repeat relation counts only its ``nth = 1``
# (the noise floor's rule, shared by every aggregate that counts such observations).
NTH_OF_REPEAT = (
    "row_number() OVER (PARTITION BY run_id, model, task_id, relation_id, sample_id, "
    "repeat_index ORDER BY followup_index, id) AS nth"
)
_WHERE_JUDGED = "+verdict IN ('PASS', 'FAIL')"  # the unary + keeps SQLite on idx_cases_analysis
_OBSERVATION_COLUMNS = "model, relation_id, task_id, sample_id, run_id, delta"
_CELL_GROUPS = ("model", "relation_id", "task_id", "run_id")

# The additive sums of a ``cell_stats`` group, each over the group's cells: name → (the cells it
# counts, the cell column it adds up). ``all`` = every relation, ``paper`` = the SI paper's
# transformations identity included, ``mad`` = the same without identity, ``invariance`` = every
# "equivalent" relation.
_SUMS = {
    "n_observations": ("all", "n_obs"),
    "sum_abs_delta": ("all", "sum_abs"),
    "n_stable": ("all", "n_stable"),
    "n_paper": ("paper", "n_obs"),
    "n_paper_stable": ("paper", "n_stable"),
    "n_mad": ("mad", "n_obs"),
    "sum_mad": ("mad", "sum_abs"),
    "n_mad_stable": ("mad", "n_stable"),
    "n_invariance": ("invariance", "n_obs"),
    "n_invariance_stable": ("invariance", "n_stable"),
}
CELL_SUM_KEYS = tuple(_SUMS)
"""The additive columns of a ``cell_stats`` row (what combining rows adds up)."""


def _in(column: str, ids: tuple[str, ...]) -> tuple[str, list[str]]:
    """``column IN (?, …)`` and its parameters; ``0`` (false) for no ids."""
    if not ids:
        return "0", []
    return f"{column} IN ({', '.join('?' * len(ids))})", list(ids)


def cell_ratios(row: dict[str, Any]) -> dict[str, Any]:
    """The ratios of a row of ``CELL_SUM_KEYS`` sums (None where nothing was observed):
    ``mean_abs_delta``, ``mad``, ``stability``, ``stability_excl_identity``,
    ``invariance_stability``."""

    def share(numerator: str, denominator: str) -> float | None:
        return row[numerator] / row[denominator] if row[denominator] else None

    return {
        "mean_abs_delta": share("sum_abs_delta", "n_observations"),
        "mad": share("sum_mad", "n_mad"),
        "stability": share("n_paper_stable", "n_paper"),
        "stability_excl_identity": share("n_mad_stable", "n_mad"),
        "invariance_stability": share("n_invariance_stable", "n_invariance"),
    }


class DeltaVerbs(EndpointModels):
    """Mixin of :class:`storage.store.Store`: Δ aggregates, grouped in SQL."""

    def _observations(
        self, flt: CaseFilter, once_per_repeat: Iterable[str], columns: str = _OBSERVATION_COLUMNS
    ) -> list[tuple[str, list[Any]]]:
        """The observations (see the module docstring) as sub-selects with their parameters:
        every other relation's cases, then the ``once_per_repeat`` relations' first follow-ups
        (absent when there are none). Kept apart so a GROUP BY over the large first part walks
        idx_cases_analysis in order instead of sorting a union."""
        where, params = case_where(flt, ["delta IS NOT NULL", _WHERE_JUDGED])
        once = tuple(dict.fromkeys(once_per_repeat))
        source = self._cases()
        if not once:
            return [(f"SELECT {columns} FROM {source} {where}", params)]
        is_once, once_params = _in("relation_id", once)
        others = f"SELECT {columns} FROM {source} {where} AND NOT {is_once}"
        firsts = (
            f"SELECT {columns} FROM (SELECT {_OBSERVATION_COLUMNS}, {NTH_OF_REPEAT} "
            f"FROM {source} {where} AND {is_once}) WHERE nth = 1"
        )
        return [(others, [*params, *once_params]), (firsts, [*params, *once_params])]

    def cell_stats(
        self,
        flt: CaseFilter,
        by: Iterable[str] = ("model", "relation_id"),
        threshold: float = STABILITY_THRESHOLD,
        *,
        paper: Iterable[str] = (),
        identity: str = IDENTITY_RELATION,
        invariance: Iterable[str] = (),
        once_per_repeat: Iterable[str] = (IDENTITY_RELATION,),
    ) -> list[dict[str, Any]]:
        """Per group: mean Δ per cell, and the SI paper's MAD and stability per observation.

        ``paper`` names the SI paper's transformations (its 8 ``si.*`` relations) and
        ``identity`` the one MAD leaves out; ``invariance`` the relations whose expectation is
        "equivalent"; ``once_per_repeat`` the relations counted once per sample × repeat.

        Columns: the group columns, ``n_cells``, ``mean_delta`` (mean cell Δ, every relation),
        the ``CELL_SUM_KEYS`` sums, then :func:`cell_ratios`: ``mean_abs_delta`` (mean |Δ| over
        every observation), ``mad`` (SI §3.1 eq. 6: mean |Δ| over the paper's non-identity
        transformations), ``stability`` (share with |Δ| < ``threshold`` over all the paper's
        transformations, identity included: Table 3's Stability Rate),
        ``stability_excl_identity`` and ``invariance_stability`` (the same share over every
        "equivalent" relation). Grouping by ``run_id`` makes cells per run.
        """
        by = tuple(by)
        for column in by:
            if column not in _CELL_GROUPS:
                raise ValueError(f"cells cannot be grouped by {column!r}")
        paper_ids = tuple(dict.fromkeys(paper))
        mad_ids = tuple(r for r in paper_ids if r != identity)
        cell_key = "model, relation_id, task_id, sample_id" + (", run_id" if "run_id" in by else "")
        # Cells are per relation, so the parts' cells never share a key: group each apart.
        per_cell = (
            f"SELECT {cell_key}, avg(delta) AS d, count(*) AS n_obs, "
            "total(abs(delta)) AS sum_abs, total(abs(delta) < ?) AS n_stable"
        )
        parts = self._observations(flt, once_per_repeat)
        cells = " UNION ALL ".join(
            f"{per_cell} FROM ({part}) GROUP BY {cell_key}" for part, _ in parts
        )
        cell_params = [value for _, params in parts for value in (threshold, *params)]
        sets = {
            "all": ("1", []),
            "paper": _in("relation_id", paper_ids),
            "mad": _in("relation_id", mad_ids),
            "invariance": _in("relation_id", tuple(dict.fromkeys(invariance))),
        }
        sums, sum_params = [], []
        for name, (subset, column) in _SUMS.items():
            condition, condition_params = sets[subset]
            sums.append(f"total(CASE WHEN {condition} THEN {column} END) AS {name}")
            sum_params += condition_params
        select = "".join(f"{column}, " for column in by)
        group = f"GROUP BY {', '.join(by)} ORDER BY {', '.join(by)}" if by else ""
        sql = (
            f"WITH cells AS ({cells}) "
            f"SELECT {select}count(*) AS n_cells, avg(d) AS mean_delta, {', '.join(sums)} "
            f"FROM cells {group}"
        )
        rows = self._query(sql, [*cell_params, *sum_params])
        out = []
        for row in rows:
            if not row["n_cells"]:
                continue
            for key in CELL_SUM_KEYS:
                if key.startswith("n_"):
                    row[key] = int(row[key])
            out.append({**row, **cell_ratios(row)})
        return out

    def observation_deltas(
        self,
        flt: CaseFilter,
        relations: Iterable[str],
        *,
        once_per_repeat: Iterable[str] = (IDENTITY_RELATION,),
    ) -> list[tuple[str, str, float]]:
        """(model, relation_id, |Δ|) per observation of ``relations`` that the filter lets
        through: the unit of the statistical tests, what MAD averages."""
        wanted = set(relations) if flt.relations is None else set(relations) & set(flt.relations)
        chosen = flt.with_relations(sorted(wanted))
        columns = "model, relation_id, abs(delta)"
        parts = self._observations(chosen, once_per_repeat, columns)
        sql = " UNION ALL ".join(part for part, _ in parts)
        return self._db.execute(sql, [value for _, params in parts for value in params]).fetchall()
