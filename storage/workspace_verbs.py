"""Store verbs for what the user sets up before a run: endpoints, custom tasks, custom relations."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from core.key_names import validate_api_key_env
from core.prices import TokenPrices
from core.types import Endpoint, json_text
from storage.sql_helpers import now

if TYPE_CHECKING:
    from sqlite_utils import Database


# Keys of an endpoint's stored params that are no setting of the Endpoint itself.
_PRICE_IN = "price_in_per_million"
_PRICE_OUT = "price_out_per_million"


class WorkspaceVerbs:
    """Mixin of :class:`storage.store.Store`: endpoints, custom tasks and custom relations."""

    _db: Database  # provided by Store, with ``_query(sql, params)`` and ``_write()``

    # ------------------------------------------------------------ endpoints

    def save_endpoint(self, endpoint: Endpoint, prices: TokenPrices | None = None) -> None:
        """Save (or replace) an endpoint. A key setting that looks like a key itself, not a
        variable's name, is refused with ValueError: keys are never written. ``prices`` (per
        million tokens, for cost previews) replace the saved ones; None keeps them."""
        validate_api_key_env(endpoint.api_key_env)
        if prices is None:
            prices = self.endpoint_prices(endpoint.name)
        params = {
            "temperature": endpoint.temperature,
            "top_p": endpoint.top_p,
            "max_tokens": endpoint.max_tokens,
            "seed": endpoint.seed,
            "concurrency": endpoint.concurrency,
            "timeout_s": endpoint.timeout_s,
            "retries": endpoint.retries,
            "rpm_limit": endpoint.rpm_limit,
            "tpm_limit": endpoint.tpm_limit,
        }
        for price, value in (
            (_PRICE_IN, prices.per_million_in),
            (_PRICE_OUT, prices.per_million_out),
        ):
            if value is not None:  # an endpoint without prices is stored as before
                params[price] = value
        with self._write():
            self._db["endpoints"].upsert(
                {
                    "name": endpoint.name,
                    "base_url": endpoint.base_url,
                    "model": endpoint.model,
                    "api_key_env": endpoint.api_key_env,
                    "params": json_text(params),
                    "embedded": int(endpoint.embedded),
                    "kind": endpoint.kind,
                    "created_at": now(),
                },
                pk="name",
            )

    def endpoint_prices(self, name: str) -> TokenPrices:
        """The prices saved with an endpoint (unset when none were, or no such endpoint)."""
        rows = self._query("SELECT params FROM endpoints WHERE name = ?", [name])
        params = json.loads(rows[0]["params"]) if rows else {}
        return TokenPrices(params.get(_PRICE_IN), params.get(_PRICE_OUT))

    def endpoints(self) -> list[Endpoint]:
        rows = self._query("SELECT * FROM endpoints ORDER BY name")
        return [_endpoint(row) for row in rows]

    def endpoint(self, name: str) -> Endpoint | None:
        rows = self._query("SELECT * FROM endpoints WHERE name = ?", [name])
        return _endpoint(rows[0]) if rows else None

    def delete_endpoint(self, name: str) -> None:
        with self._write():
            self._db.execute("DELETE FROM endpoints WHERE name = ?", [name])

    # ------------------------------------------------------------ custom tasks & relations

    def save_task(self, task_id: str, name: str, template: str, answer_type: str, labels) -> None:
        with self._write():
            self._db["tasks"].upsert(
                {
                    "id": task_id,
                    "name": name,
                    "template": template,
                    "answer_type": answer_type,
                    "labels": json_text(list(labels)),
                    "created_at": now(),
                },
                pk="id",
            )

    def custom_task_rows(self) -> list[dict[str, Any]]:
        rows = self._query("SELECT * FROM tasks ORDER BY id")
        for row in rows:
            row["labels"] = json.loads(row["labels"])
        return rows

    def save_custom_relation(self, relation_id: str, spec: dict[str, Any]) -> None:
        with self._write():
            existing = self._query(
                "SELECT created_at FROM custom_relations WHERE id = ?", [relation_id]
            )
            self._db["custom_relations"].upsert(
                {
                    "id": relation_id,
                    "spec": json_text(spec),
                    "created_at": existing[0]["created_at"] if existing else now(),
                    "updated_at": now(),
                },
                pk="id",
            )

    def save_custom_relations(self, specs: Iterable[dict[str, Any]]) -> None:
        """Save several custom relations (each under its ``id``) in one transaction."""
        with self._write():
            for spec in specs:
                self.save_custom_relation(spec["id"], spec)

    def custom_relation_specs(self) -> dict[str, dict[str, Any]]:
        rows = self._query("SELECT id, spec FROM custom_relations ORDER BY id")
        return {row["id"]: json.loads(row["spec"]) for row in rows}

    def delete_custom_relation(self, relation_id: str) -> None:
        with self._write():
            self._db.execute("DELETE FROM custom_relations WHERE id = ?", [relation_id])


def _endpoint(row: dict[str, Any]) -> Endpoint:
    params = json.loads(row["params"])
    for price in (_PRICE_IN, _PRICE_OUT):  # stored beside the endpoint, not part of a run
        params.pop(price, None)
    return Endpoint(
        name=row["name"],
        base_url=row["base_url"],
        model=row["model"],
        api_key_env=row["api_key_env"],
        kind=row["kind"],
        **params,
    )
