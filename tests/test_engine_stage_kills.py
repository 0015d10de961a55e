"""Tests written for the mutants of `make mutation` that survived once the engine was split into
stages (issue 22): the run id in ``core/identity.py`` (store group), pinned by content.

Each expectation is written out by hand: the JSON that is hashed is spelled in the test (sorted
keys, no spaces, as ``content_hash`` serialises), and the id is the first 12 hex digits of its
sha256, so a run id that changes shape or length fails here before it orphans stored runs.
"""

from __future__ import annotations

import hashlib

from core.identity import run_id


def _id_of(payload: str) -> str:
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


def test_run_id_hashes_the_config_with_both_endpoints_reduced_to_what_is_answered() -> None:
    """Both endpoints lose their sending-only settings (name, concurrency, timeout, retries,
    rate limits); the embedded one's changing port becomes ``embedded://local``; the samples
    are added under ``samples``, in order; the id is 12 hex digits."""
    config = {
        "task_id": "sentiment",
        "endpoint": {
            "name": "prod",
            "base_url": "http://x/v1",
            "model": "m",
            "kind": "openai",
            "concurrency": 8,
            "timeout_s": 30,
            "retries": 2,
            "rpm_limit": 10,
            "tpm_limit": 100,
            "embedded": False,
        },
        "transformation_endpoint": {
            "name": "local",
            "base_url": "http://127.0.0.1:5123/v1",
            "model": "smol",
            "concurrency": 2,
            "embedded": True,
        },
    }
    payload = (
        '{"endpoint":{"base_url":"http://x/v1","embedded":false,"kind":"openai","model":"m"},'
        '"samples":["s1","s2"],"task_id":"sentiment",'
        '"transformation_endpoint":{"base_url":"embedded://local","embedded":true,"model":"smol"}}'
    )
    assert run_id(config, ["s1", "s2"]) == _id_of(payload)
    assert len(run_id(config, ["s1", "s2"])) == 12
    # The caller's config is left as it was.
    assert config["endpoint"]["name"] == "prod"
    assert config["transformation_endpoint"]["base_url"] == "http://127.0.0.1:5123/v1"
    # The samples' order is part of the run.
    swapped = payload.replace('["s1","s2"]', '["s2","s1"]')
    assert run_id(config, ["s2", "s1"]) == _id_of(swapped)


def test_a_batch_endpoints_run_is_the_run_of_the_endpoint_it_stands_for() -> None:
    """``kind: batch`` is dropped (answers from files are the same answers); any other kind is
    kept; an endpoint without ``embedded`` keeps its own base URL; no transformation endpoint
    (``None``) stays ``null``."""
    batch = {"name": "b", "base_url": "http://x/v1", "model": "m", "kind": "batch"}
    other = {"name": "b", "base_url": "http://x/v1", "model": "m", "kind": "other"}
    plain = {"name": "b", "base_url": "http://x/v1", "model": "m"}
    config = {"task_id": "t", "transformation_endpoint": None}
    assert run_id({**config, "endpoint": batch}, ["s1"]) == _id_of(
        '{"endpoint":{"base_url":"http://x/v1","model":"m"},"samples":["s1"],"task_id":"t",'
        '"transformation_endpoint":null}'
    )
    assert run_id({**config, "endpoint": batch}, ["s1"]) == run_id(
        {**config, "endpoint": plain}, ["s1"]
    )
    assert run_id({**config, "endpoint": other}, ["s1"]) == _id_of(
        '{"endpoint":{"base_url":"http://x/v1","kind":"other","model":"m"},"samples":["s1"],'
        '"task_id":"t","transformation_endpoint":null}'
    )
