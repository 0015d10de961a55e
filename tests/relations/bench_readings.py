"""The rewriter bench's rewrites that we read (``bench/data/rewriter_review.jsonl``)."""

from __future__ import annotations

import json
from pathlib import Path

REVIEW = Path(__file__).resolve().parents[2] / "bench/data/rewriter_review.jsonl"


def read_rewrites() -> list[dict]:
    """Every SmolLM2 rewrite of the rewriter bench we read: relation, source, follow-up, whether
    it is ``valid`` (says what its source says, in English) and a ``note`` on why."""
    return [json.loads(line) for line in REVIEW.read_text().splitlines() if line.strip()]
