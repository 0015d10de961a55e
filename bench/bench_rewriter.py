"""Rewrite yield of the embedded SmolLM2-135M as rewriter (issue 23, targets of items 7–9).

The texts of ``bench/data/rewriter_texts.jsonl`` (ours: 10 word problems, 10 reviews) are run
through ``python -m app run`` with the embedded model as both the model under test and the
transformation endpoint, under ``si.paraphrase``, ``ad.paraphrase``, ``si.expand`` and
``sentence.back_translation``. Every case is stored in ``test-artifacts/rewriter-bench/LABEL/``:
its source, every rewrite candidate with the gate's word on it, the chosen rewrite, the gate's
verdict and the judged verdict (``cases.jsonl``, and ``report.md`` to read).

Whether a judged case rests on a valid rewrite is read by a person: ``bench/data/
rewriter_review.jsonl`` holds our reading of each judged follow-up (keyed by relation, source and
follow-up). Judged cases nobody has read yet are listed as unreviewed (``to_review.jsonl``).

Printed per relation and in total: attempts, gate SKIPs, the relation's own SKIPs, judged,
judged on an invalid rewrite, and the yield (judged on a valid rewrite / attempts). Targets: at
most 1 in 20 judged cases on an invalid rewrite, a yield of at least 40 %.

    .venv/bin/python bench/bench_rewriter.py [--texts N] [--k K] [--label NAME] [--code DIR]

``--code DIR`` runs another checkout (e.g. ``git archive`` of an older commit) for a before/after
comparison; ``--k`` is left out for code that has no ``--rewrite-candidates``. The embedded
server is started the way the app starts it (offline, ``HF_HUB_OFFLINE=1``) and reused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "rewriter_texts.jsonl"
REVIEW = ROOT / "bench" / "data" / "rewriter_review.jsonl"
OUT = ROOT / "test-artifacts" / "rewriter-bench"
RELATIONS = ("si.paraphrase", "ad.paraphrase", "si.expand", "sentence.back_translation")
FIELD = {"math": "problem", "sentiment": "text"}
GATE_PREFIXES = ("identical_followup", "invalid_followup")
TARGET_INVALID_SHARE = 1 / 20
TARGET_YIELD = 0.40


def load_texts(count: int, data: Path = DATA) -> list[dict]:
    """``count`` texts, word problems and reviews taken in turn (so 5 texts are a mix too)."""
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line]
    by_task = {task: [r for r in rows if r["task"] == task] for task in FIELD}
    mixed = [row for pair in zip(*by_task.values(), strict=True) for row in pair]
    return mixed[:count]


def review_key(relation: str, source: str, followup: str) -> str:
    return hashlib.sha256(f"{relation}\x1f{source}\x1f{followup}".encode()).hexdigest()[:16]


def load_review() -> dict[str, dict]:
    if not REVIEW.exists():
        return {}
    rows = [json.loads(line) for line in REVIEW.read_text(encoding="utf-8").splitlines() if line]
    return {row["key"]: row for row in rows}


def forget_runs(db: Path) -> None:
    """Drop the runs of an earlier bench in ``db`` but keep its call cache: a rerun after a change
    to the gate asks the model nothing it was asked before."""
    if not db.exists():
        return
    conn = sqlite3.connect(db)
    with conn:
        for table in ("verdict_history", "labels", "cases", "run_samples", "runs"):
            conn.execute(f"DELETE FROM {table}")
    conn.close()


def start_server(state_dir: Path) -> None:
    """Start (or adopt) the embedded server as the app does, so the runs below reuse it."""
    sys.path.insert(0, str(ROOT))
    from app.engine.model_server import EmbeddedServer

    server = EmbeddedServer(state_dir=state_dir)
    server.ensure_started()
    status = server.wait_ready(300)
    if status.port is None or status.state != "ready":
        raise SystemExit(f"embedded server not ready: {status.message}\n{status.log_tail}")


def run_task(code: Path, task: str, rows: list[dict], out: Path, k: int | None) -> dict:
    inputs = out / f"{task}.jsonl"
    inputs.write_text("".join(json.dumps({FIELD[task]: r[FIELD[task]]}) + "\n" for r in rows))
    command = [
        sys.executable, "-m", "app", "run", "--endpoint", "embedded", "--task", task,
        "--relations", ",".join(RELATIONS), "--inputs", str(inputs), "--db", str(out / "bench.db"),
        "--max-tokens", "96", "--json", "--quiet",
    ]  # fmt: skip
    if k is not None:
        command += ["--rewrite-candidates", str(k)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MORPHSCOPE_DB": str(out / "bench.db")}
    done = subprocess.run(command, cwd=code, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"run failed for {task}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def case_records(db: Path, review: dict[str, dict]) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    rows = conn.execute(
        "SELECT task_id, relation_id, source_input, followup_input, verdict, reason, details "
        "FROM cases ORDER BY task_id, relation_id, sample_id"
    ).fetchall()
    conn.close()
    records = []
    for row in rows:
        field = FIELD[row["task_id"]]
        source = json.loads(row["source_input"])[field]
        followup = json.loads(row["followup_input"])[field] if row["followup_input"] else None
        details = json.loads(row["details"] or "{}").get("rewrite", {})
        key = review_key(row["relation_id"], source, followup or "")
        records.append(
            {
                "key": key,
                "task": row["task_id"],
                "relation": row["relation_id"],
                "source": source,
                "candidates": details.get("candidates", []),
                "tried": details.get("tried", 1),
                "followup": followup,
                "outcome": outcome(row["verdict"], row["reason"]),
                "verdict": row["verdict"],
                "reason": row["reason"],
                "review": review.get(key, {}).get("valid"),
                "review_note": review.get(key, {}).get("note", ""),
            }
        )
    return records


def outcome(verdict: str, reason: str | None) -> str:
    if verdict in ("PASS", "FAIL"):
        return "judged"
    if verdict == "SKIP" and (reason or "").startswith(GATE_PREFIXES):
        return "gate_skip"
    if verdict == "SKIP" and (reason or "").startswith("precondition"):
        return "judged"  # a valid rewrite whose source output is outside the relation's scope
    return "relation_skip" if verdict == "SKIP" else "error"


def tally(records: list[dict]) -> dict:
    counts = Counter(r["outcome"] for r in records)
    judged = [r for r in records if r["outcome"] == "judged"]
    invalid = sum(1 for r in judged if r["review"] is False)
    valid = sum(1 for r in judged if r["review"] is True)
    return {
        "attempts": len(records),
        "candidates": sum(r["tried"] for r in records),
        "gate_skips": counts["gate_skip"],
        "relation_skips": counts["relation_skip"],
        "errors": counts["error"],
        "judged": len(judged),
        "judged_on_invalid": invalid,
        "unreviewed": len(judged) - invalid - valid,
        "yield": valid / len(records) if records else 0.0,
    }


def print_table(records: list[dict]) -> dict:
    head = f"{'relation':<28}{'att':>5}{'cand':>6}{'gate':>6}{'rel':>5}{'err':>5}{'judg':>6}"
    print(head + f"{'inval':>7}{'unrev':>7}{'yield':>8}")
    groups = [(rel, [r for r in records if r["relation"] == rel]) for rel in RELATIONS]
    for name, group in [*groups, ("total", records)]:
        t = tally(group)
        print(
            f"{name:<28}{t['attempts']:>5}{t['candidates']:>6}{t['gate_skips']:>6}"
            f"{t['relation_skips']:>5}{t['errors']:>5}{t['judged']:>6}{t['judged_on_invalid']:>7}"
            f"{t['unreviewed']:>7}{t['yield']:>8.0%}"
        )
    return tally(records)


def write_report(out: Path, records: list[dict], texts: list[dict]) -> None:
    with (out / "cases.jsonl").open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    unreviewed = [r for r in records if r["outcome"] == "judged" and r["review"] is None]
    with (out / "to_review.jsonl").open("w", encoding="utf-8") as handle:
        for r in unreviewed:
            row = {k: r[k] for k in ("key", "relation", "source", "followup")}
            handle.write(json.dumps(row | {"valid": None, "note": ""}, ensure_ascii=False) + "\n")
    lines = ["# Rewriter bench", "", "## Texts", ""]
    lines += [f"{i + 1}. ({t['task']}) {t[FIELD[t['task']]]}" for i, t in enumerate(texts)]
    for r in records:
        lines += ["", f"## {r['relation']} — {r['outcome']} ({r['verdict']})", ""]
        lines += [f"- source: {r['source']}", f"- chosen: {r['followup']}"]
        lines += [f"- reason: {r['reason']}", f"- our reading: {r['review']} {r['review_note']}"]
        for c in r["candidates"]:
            lines.append(f"  - candidate {c['n']} (sim {c['similarity']}, gate {c['gate']}):")
            lines.append(f"    {c['text']!r}")
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=20)
    parser.add_argument(
        "--k", type=int, default=3, help="rewrite candidates; 0: leave the option out"
    )
    parser.add_argument("--label", default="current")
    parser.add_argument("--code", type=Path, default=ROOT)
    args = parser.parse_args()
    out = OUT / args.label
    out.mkdir(parents=True, exist_ok=True)
    forget_runs(out / "bench.db")
    state_dir = Path(os.environ.setdefault("MORPHSCOPE_STATE_DIR", str(OUT / "server")))
    start_server(state_dir)
    texts = load_texts(args.texts)
    for task in FIELD:
        rows = [t for t in texts if t["task"] == task]
        if rows:
            run_task(args.code.resolve(), task, rows, out, args.k or None)
    records = case_records(out / "bench.db", load_review())
    write_report(out, records, texts)
    print(f"{len(texts)} texts × {len(RELATIONS)} relations, k = {args.k or 'n/a'}; in {out}")
    total = print_table(records)
    judged = total["judged"] or 1
    print(
        f"judged on an invalid rewrite: {total['judged_on_invalid']} of {total['judged']} "
        f"({total['judged_on_invalid'] / judged:.0%}; target ≤ {TARGET_INVALID_SHARE:.0%}), "
        f"unreviewed {total['unreviewed']}; yield {total['yield']:.0%} "
        f"(target ≥ {TARGET_YIELD:.0%})"
    )


if __name__ == "__main__":
    main()
