"""How a model is named when two endpoints serve models of the same name.

A run remembers both its endpoint and its model. Where one model name was served by endpoints at
two or more addresses (a broken deployment beside a working one), the analysis, the lists and the
filters name such a model "endpoint · model", so each endpoint is its own row; any other model
keeps its plain name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.records import endpoint_label

if TYPE_CHECKING:
    from sqlite_utils import Database

# Where a run's endpoint answers: the embedded server (whatever its port), else its base URL
# without a trailing slash, else (another tool's config) its endpoint's name. Two saved endpoints
# at one address, e.g. online calls and batch files for the same server, are one endpoint: they
# share the run id and the call cache.
RUN_ADDRESS = (
    "CASE WHEN NOT json_valid(config) THEN 'name:' || coalesce(endpoint_name, '') "
    "WHEN json_extract(config, '$.endpoint.embedded') THEN 'embedded' "
    "ELSE coalesce(rtrim(json_extract(config, '$.endpoint.base_url'), '/'), "
    "'name:' || coalesce(endpoint_name, '')) END"
)
# Model names that endpoints at more than one address served (runs remember both).
SHARED_MODELS = f"SELECT model FROM runs GROUP BY model HAVING count(DISTINCT {RUN_ADDRESS}) > 1"
# A case's model label: "endpoint · model" when its model name is shared, else the model name.
ENDPOINT_MODEL = (
    f"CASE WHEN c.model IN ({SHARED_MODELS}) THEN coalesce((SELECT r.endpoint_name FROM runs r "
    "WHERE r.id = c.run_id), '?') || ' · ' || c.model ELSE c.model END"
)
# The same label computed from a bare ``model``/``run_id`` pair (filters on the cases table).
MODEL_LABEL_OF_ROW = ENDPOINT_MODEL.replace("c.model", "{m}").replace("c.run_id", "{r}")


def with_endpoint_label(row: dict[str, Any]) -> dict[str, Any]:
    """Add ``endpoint`` = "endpoint-name · model" to a run row (runs are listed by endpoint)."""
    row["endpoint"] = endpoint_label(row.get("endpoint_name"), row.get("model"))
    return row


class EndpointModels:
    """Mixin of :class:`storage.store.Store`: the cases as the analysis reads them, each model
    named as above."""

    _db: Database  # provided by Store, with ``_query(sql, params)`` and ``_write()``

    def _cases(self) -> str:
        """The cases the analysis reads: the ``cases`` table itself, or — when one model name is
        served by two or more endpoints — the same rows with ``model`` reading "endpoint · model"
        for those models, so each endpoint is its own row (a broken endpoint's ERROR cases do not
        merge into a working endpoint's). Unambiguous models keep their plain name."""
        if not self._models_shared():
            return "cases"
        columns = [row["name"] for row in self._query("PRAGMA table_info(cases)")]
        selected = ", ".join(
            f"{ENDPOINT_MODEL} AS model" if column == "model" else f"c.{column}"
            for column in columns
        )
        return f"(SELECT {selected} FROM cases c) AS cases"

    def _models_shared(self) -> bool:
        return bool(self._query(SHARED_MODELS + " LIMIT 1"))

    def _model_column(self, alias: str) -> str:
        """SQL for a case's model as the analysis names it (see ``_cases``), on ``alias``'s row
        of the bare cases table."""
        if not self._models_shared():
            return f"{alias}.model"
        return MODEL_LABEL_OF_ROW.format(m=f"{alias}.model", r=f"{alias}.run_id")
