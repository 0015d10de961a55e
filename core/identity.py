"""What makes two runs the same run, and two calls the same call.

Run ids and call-cache keys are computed here and nowhere else: the Probe page, the CLI, batch
export and import, and the demo all use these functions, so a resumed, repaired or imported run
finds its cases and its cached answers again. Both are pinned by tests: changing either orphans
every stored run or cached answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.types import BATCH_KIND, EMBEDDED_BASE_URL, content_hash

# Endpoint settings that change how calls are sent (pacing, naming), never what is answered.
_SENDING_ONLY = ("name", "concurrency", "timeout_s", "retries", "rpm_limit", "tpm_limit")


def run_id(config: dict[str, Any], sample_ids: Sequence[str]) -> str:
    """A run's id: its stored config (``RunConfig.to_dict``) over these samples, in order.
    The same config over the same samples is the same run (resumable)."""
    identity = dict(config)
    for key in ("endpoint", "transformation_endpoint"):
        if identity.get(key):
            identity[key] = _endpoint_identity(identity[key])
    identity["samples"] = list(sample_ids)
    return content_hash(identity)[:12]


def _endpoint_identity(endpoint: dict[str, Any]) -> dict[str, Any]:
    identity = {k: v for k, v in endpoint.items() if k not in _SENDING_ONLY}
    # The embedded server's port changes with every start.
    if identity.get("embedded"):
        identity["base_url"] = EMBEDDED_BASE_URL
    # Answers from batch files are the same answers as online ones: a batch endpoint's run is
    # the run of the OpenAI-compatible endpoint it stands for.
    if identity.get("kind") == BATCH_KIND:
        del identity["kind"]
    return identity


def call_key(
    base_url: str, model: str, params: dict[str, Any], messages: list, repeat_index: int
) -> str:
    """The call cache's key: it changes whenever what the endpoint would answer can change
    (base URL, model, any sampling parameter, the messages, the repeat), and only then."""
    return content_hash(
        {
            "base_url": base_url.rstrip("/"),
            "model": model,
            "params": params,
            "messages": messages,
            "repeat": repeat_index,
        }
    )
