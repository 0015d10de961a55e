"""The cost preview's token counters against a BPE chat tokenizer, on the built-in datasets.

The preview counts with the embedded model's SmolLM2 byte-level BPE vocabulary when it is
installed (exact for that model); without it, with MiniLM's WordPiece vocabulary, else
characters ÷ 4 (app/engine/token_count.py). For every built-in dataset, its source prompts (as
its task renders them, with the same framing per message) are counted each way. Printed: each
fallback's total as a share of the SmolLM2 count (target ±15%). SmolLM2's is one model's
tokenizer: other models' BPE vocabularies differ from it by some percent too.

    .venv/bin/python bench/bench_token_estimate.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.token_count import TokenCounter
from app.inputs.datasets import DATASETS, load_dataset
from core.tasks import BUILTIN_TASKS

TARGET_GAP = 0.15
FALLBACKS = ("wordpiece", "characters")


def measure() -> dict:
    reference = TokenCounter(prefer=("smollm2",))
    if reference.name != "smollm2":
        return {"status": "skipped", "reason": "the SmolLM2 vocabulary is not installed"}
    fallbacks = {name: TokenCounter(prefer=(name,)) for name in FALLBACKS}
    rows = {}
    for dataset_id, info in DATASETS.items():
        task = BUILTIN_TASKS[info.task_id]
        prompts = [task.messages(dict(sample.fields)) for sample in load_dataset(dataset_id)]
        truth = sum(reference.count_messages(m) for m in prompts)
        rows[dataset_id] = {"prompts": len(prompts), "smollm2_tokens": truth}
        for name, counter in fallbacks.items():
            total = sum(counter.count_messages(m) for m in prompts)
            rows[dataset_id][f"{name}_share"] = round(total / truth, 3)
    within = {
        name: all(abs(row[f"{name}_share"] - 1) <= TARGET_GAP for row in rows.values())
        for name in FALLBACKS
    }
    return {"preview_uses": reference.method, "datasets": rows, "fallbacks_within_target": within}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = measure()
    if args.json or "datasets" not in figures:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{'dataset':<22} {'prompts':>7} {'SmolLM2':>8} {'WordPiece':>10} {'chars/4':>8}")
    for dataset_id, row in figures["datasets"].items():
        print(
            f"{dataset_id:<22} {row['prompts']:>7} {row['smollm2_tokens']:>8} "
            f"{row['wordpiece_share']:>10.3f} {row['characters_share']:>8.3f}"
        )
    print(
        f"the preview counts with {figures['preview_uses']}; fallbacks within "
        f"±{TARGET_GAP:.0%} of it on every dataset: {figures['fallbacks_within_target']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
