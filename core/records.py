"""Records the store hands out: stored rows as typed, read-only values.

Each is decoded once, where the store reads it, so no caller parses a column's JSON text again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Run:
    """One stored run: the ``runs`` table's row and how many cases it has.

    ``config`` is the configuration it was made with, decoded: a ``RunConfig``'s ``to_dict``
    for runs this tool made (``RunConfig.from_dict`` rebuilds it), another tool's own settings
    for imported runs. ``status`` is the live one: a "running" run whose process is gone reads
    "interrupted".
    """

    id: str
    created_at: str
    finished_at: str | None
    status: str
    endpoint_name: str
    model: str
    task_id: str
    dataset: str | None
    config: dict[str, Any]
    n_planned: int
    n_cases: int
    owner: str | None = None
    heartbeat_at: str | None = None
    engine_version: int | None = None

    @property
    def endpoint(self) -> str:
        """How lists name the run (see ``endpoint_label``)."""
        return endpoint_label(self.endpoint_name, self.model)


def endpoint_label(endpoint_name: str | None, model: str | None) -> str:
    """ "endpoint · model": two endpoints may serve models of the same name."""
    return f"{endpoint_name or '?'} · {model or '?'}"
