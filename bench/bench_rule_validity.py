"""Do the rule relations write valid English? Six word relations × 20 texts of our own.

Each relation runs once per text with the largest allowed count being 1 (one word replaced, one
category member swapped), on the sentiment task's one field. Every input with its output or its
SKIP reason goes to ``test-artifacts/rule_validity.json`` and ``.md``; the table printed gives,
per relation, how many texts produced a follow-up, how many SKIPped, and how many of the produced
ones are in ``bench/data/rule_validity_invalid.json`` — the outputs we read and judged invalid
(broken grammar, or a fact changed under an invariance relation). The judging is by reading: an
output not in that file is one we read and found valid, or one nobody has read yet, which the
script lists as "unread" when ``--judged`` names the file of every output we read.

    .venv/bin/python bench/bench_rule_validity.py            # table + artifacts
    .venv/bin/python bench/bench_rule_validity.py --json     # the table as JSON
    .venv/bin/python bench/bench_rule_validity.py --texts bench/data/rule_validity_texts_second.json
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.tasks import BUILTIN_TASKS
from relations.apply import SkippedFollowUp, transform_text
from relations.registry import get_relation

RELATIONS = (
    "word.antonym",
    "word.negation",
    "word.same_category",
    "word.number",
    "word.tense",
    "word.synonym",
)
TEXTS = ROOT / "bench" / "data" / "rule_validity_texts.json"
INVALID = ROOT / "bench" / "data" / "rule_validity_invalid.json"
OUT = ROOT / "test-artifacts"
# The count parameters, each at its smallest: one word (rate 0 rounds up to one), one member.
COUNT_ONE = {"rate": 0.0, "max_words": 1}


def outcomes(texts: list[str]) -> dict[str, list[dict[str, str]]]:
    """Per relation: each text with its follow-up or SKIP reason."""
    task = BUILTIN_TASKS["sentiment"]
    table: dict[str, list[dict[str, str]]] = {}
    for relation_id in RELATIONS:
        relation = get_relation(relation_id)
        relation = replace(relation, params={**relation.params, **COUNT_ONE})
        rows = []
        for text in texts:
            made = transform_text(relation, text, task=task)
            if isinstance(made, SkippedFollowUp):
                rows.append({"input": text, "skip": made.reason})
            else:
                rows.append({"input": text, "output": made.fields["text"]})
        table[relation_id] = rows
    return table


def judged_invalid() -> set[tuple[str, str, str]]:
    entries = json.loads(INVALID.read_text(encoding="utf-8"))["invalid"]
    return {(e["relation"], e["input"], e["output"]) for e in entries}


def summary(table: dict[str, list[dict[str, str]]]) -> dict[str, dict[str, int]]:
    invalid = judged_invalid()
    counts = {}
    for relation_id, rows in table.items():
        produced = [r for r in rows if "output" in r]
        bad = [r for r in produced if (relation_id, r["input"], r["output"]) in invalid]
        counts[relation_id] = {
            "texts": len(rows),
            "produced": len(produced),
            "skipped": len(rows) - len(produced),
            "invalid": len(bad),
        }
    return counts


def write_artifacts(table: dict[str, list[dict[str, str]]], counts: dict, stem: str) -> Path:
    OUT.mkdir(exist_ok=True)
    payload = {"counts": counts, "outcomes": table}
    (OUT / f"{stem}.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False))
    invalid = judged_invalid()
    lines = [f"# Rule relations on the texts of {stem} (count 1)", ""]
    for relation_id, rows in table.items():
        c = counts[relation_id]
        lines += [
            f"## {relation_id}: {c['produced']} produced, {c['skipped']} SKIP, "
            f"{c['invalid']} judged invalid",
            "",
        ]
        for row in rows:
            if "output" in row:
                mark = "INVALID " if (relation_id, row["input"], row["output"]) in invalid else ""
                lines.append(f"- {mark}{row['input']}\n  → {row['output']}")
            else:
                lines.append(f"- {row['input']}\n  SKIP: {row['skip']}")
        lines.append("")
    (OUT / f"{stem}.md").write_text("\n".join(lines), encoding="utf-8")
    return OUT / f"{stem}.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--texts", type=Path, default=TEXTS, help="a JSON file with 'texts'")
    args = parser.parse_args()
    texts = json.loads(args.texts.read_text(encoding="utf-8"))["texts"]
    table = outcomes(texts)
    counts = summary(table)
    stem = args.texts.stem.replace("rule_validity_texts", "rule_validity")
    written = write_artifacts(table, counts, stem)
    if args.json:
        print(json.dumps(counts, indent=2))
        return 0
    print(f"{'relation':<20} {'produced':>8} {'SKIP':>5} {'invalid':>8}")
    for relation_id, c in counts.items():
        print(f"{relation_id:<20} {c['produced']:>8} {c['skipped']:>5} {c['invalid']:>8}")
    print(f"outputs: {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
