"""Reports, exports and imports: ``report --json``, CSV / JSONL / LLMorph / HTML, LLMorph import.

- :func:`report` is the content of ``report --json`` (SPEC §7): one row per model × relation with
  n, pass, fail, skip, error, violation_rate, ci_low, ci_high, mean_delta, mad, stability,
  mean_similarity (plus a few documented extras), the noise floor per model, and the statistical
  tests. Definitions live in :mod:`app.metrics` and :mod:`app.stats`.
- :func:`export_cases` writes csv | jsonl | llmorph | html to a path, atomically (a temporary file
  renamed into place, so a failure leaves nothing half-written). Cases hold no secrets (endpoints
  store only a key's variable *name*, and only in the endpoints table, which is never exported).
- **LLMorph logs** follow the tool's result files: one JSON per model × task × relation,
  ``{"llm_name", "task_name", "relation_name", "data": [item, …]}``, each item
  ``{"id", "source_input": [field, …], "source_output", "followup_inputs": [[field, …], …],
  "followup_outputs": [...], "relations": [bool | null, …], "verif_failure": null | "si" | "so" |
  "fi" | "sfoe"}``. We write one item per case (a single follow-up) so SKIP and ERROR survive the
  trip: SKIP → "fi" when its reason starts with ``invalid_followup``, else "si"; ERROR → "sfoe"
  with ``relations: [null]``. Extra keys (``fields``, ``morphscope``) carry what LLMorph lacks;
  LLMorph-only readers ignore them.
- :func:`import_llmorph` reads such a file, a directory of them or a zip into one new run, all
  or nothing, raising ``ValueError`` with a readable message on bad input.
"""

from __future__ import annotations

import contextlib
import csv
import html
import io
import json
import logging
import math
import os
import re
import secrets
import zipfile
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app import metrics, stats
from app.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample, content_hash
from storage.analysis import CaseFilter

log = logging.getLogger(__name__)

EXPORT_FORMATS = ("csv", "jsonl", "llmorph", "html")
REPORT_ROW_KEYS = (
    "model",
    "relation_id",
    "n",
    "pass",
    "fail",
    "skip",
    "error",
    "violation_rate",
    "ci_low",
    "ci_high",
    "mean_delta",
    "mad",
    "stability",
    "mean_similarity",
    # extras beyond SPEC §7, documented in app.metrics
    "invalid_followup",
    "net_violation_rate",
    "inconsistency_rate",
)
JSON_COLUMNS = ("source_input", "followup_input", "details")

# LLMorph's task names → ours.
LLMORPH_TASKS = {
    "question_answering": "qa",
    "inference": "nli",
    "natural_language_inference": "nli",
    "sentiment_analysis_continuous": "sentiment_score",
    "sentiment_analysis": "sentiment_score",
    "relation_extraction": "relation_extraction",
}
_VERIF_SKIP_REASONS = {
    "si": "precondition: LLMorph source-input verification failed (si)",
    "so": "precondition: LLMorph source-output verification failed (so)",
    "fi": "invalid_followup: LLMorph follow-up input verification failed (fi)",
}
_LOG_NAME = re.compile(r"^log__(?P<model>.+?)__(?P<task>.+?)__(?P<relation>.+?)(__[\d_\-T:.]+)?$")
MAX_IMPORT_BYTES = 512 * 1024 * 1024


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _clean(value: Any) -> Any:
    """JSON-safe copy: NaN / inf → None, numpy scalars → Python, tuples → lists."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _filter(
    run_ids: Iterable[str] | None = None, flt: CaseFilter | None = None, **filters: Any
) -> CaseFilter:
    if flt is not None:
        return flt
    return CaseFilter.make(run_ids=run_ids, **filters)


# ------------------------------------------------------------------ report --json


def report(
    store,
    run_ids: Iterable[str] | None = None,
    *,
    models: Iterable[str] | None = None,
    tasks: Iterable[str] | None = None,
    relations: Iterable[str] | None = None,
    date_from: str | None = None,
    date_to: str | None = None,
    alpha: float = stats.ALPHA,
    flt: CaseFilter | None = None,
) -> dict[str, Any]:
    """The ``report --json`` document for the filtered cases (JSON-serialisable, no NaN).

    Keys: ``generated_at``, ``filters``, ``n_cases``, ``rows`` (model × relation, keys
    ``REPORT_ROW_KEYS``), ``models`` (per-model summary: MAD, stability with and without identity,
    noise floor, net rate, AgentDiff gap), ``noise_floor`` (model → identity violation rate with
    its Wilson interval, or absent), ``agentdiff_gap``, ``tests`` (``mann_whitney`` and
    ``kruskal_wallis`` lists with statistic, p_value, p_adjusted, reading) and ``definitions``.
    """
    flt = _filter(
        run_ids,
        flt,
        models=models,
        tasks=tasks,
        relations=relations,
        date_from=date_from,
        date_to=date_to,
    )
    summary = metrics.summarize(store, flt)
    rows = [{key: row.get(key) for key in REPORT_ROW_KEYS} for row in summary["rows"]]
    floors = {
        model: {
            key: floor[key] for key in ("n", "pass", "fail", "violation_rate", "ci_low", "ci_high")
        }
        | {"inconsistency_rate": floor["inconsistency_rate"]}
        for model, floor in summary["noise_floor"].items()
    }
    return _clean(
        {
            "generated_at": _now(),
            "filters": flt.as_dict(),
            "n_cases": store.count_cases(flt),
            "rows": rows,
            "models": summary["models"],
            "noise_floor": floors,
            "agentdiff_gap": summary["gap"],
            "tests": stats.run_tests(store, flt, alpha=alpha, counts=summary["counts"]),
            "definitions": metrics.DEFINITIONS,
        }
    )


def report_json(store, run_id: str | None = None) -> dict[str, Any]:
    """``report --db PATH [--run RUN_ID] --json``: :func:`report` for one run or every case."""
    if run_id is not None and store.run(run_id) is None:
        raise ValueError(f"no run with id {run_id!r}")
    return report(store, [run_id] if run_id is not None else None)


# ------------------------------------------------------------------ exports


def export_cases(
    store,
    fmt: str,
    out_path: str | os.PathLike,
    run_ids: Iterable[str] | None = None,
    *,
    flt: CaseFilter | None = None,
) -> int:
    """Write the cases as csv | jsonl | llmorph | html to ``out_path``; returns cases written.

    ``llmorph`` writes a zip when ``out_path`` ends in ``.zip``, else a directory (which must not
    exist yet or be empty). Everything is built next to the target and renamed into place.
    """
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (choose {', '.join(EXPORT_FORMATS)})")
    flt = _filter(run_ids, flt)
    if flt.run_ids:
        missing = [r for r in flt.run_ids if store.run(r) is None]
        if missing:
            raise ValueError(f"no run with id {', '.join(map(repr, missing))}")
    out = Path(out_path)
    if fmt == "llmorph" and out.suffix.lower() != ".zip":
        return _export_llmorph_dir(store, flt, out)
    if out.is_dir():
        raise ValueError(f"{out} is a directory; give a file name")
    out.parent.mkdir(parents=True, exist_ok=True)
    # A fresh sibling name opened with "x" (not mkstemp) so the file gets the usual umask mode.
    tmp_name = out.with_name(f".{out.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(tmp_name, "xb") as fh:
            count = write_export(store, fmt, fh, flt)
        os.replace(tmp_name, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    return count


def export_bytes(store, fmt: str, flt: CaseFilter | None = None) -> bytes:
    """The export as bytes (the page's download buttons); ``llmorph`` gives a zip."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (choose {', '.join(EXPORT_FORMATS)})")
    buffer = io.BytesIO()
    write_export(store, fmt, buffer, flt or CaseFilter())
    return buffer.getvalue()


def write_export(store, fmt: str, fh, flt: CaseFilter) -> int:
    """Write one export format to a binary file object; returns the number of cases."""
    if fmt == "csv":
        return _write_csv(store, flt, fh)
    if fmt == "jsonl":
        return _write_jsonl(store, flt, fh)
    if fmt == "llmorph":
        count = 0
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, document in llmorph_logs(store, flt):
                archive.writestr(name, json.dumps(document, ensure_ascii=False, indent=1))
                count += len(document["data"])
        return count
    if fmt == "html":
        fh.write(render_html_report(store, flt).encode("utf-8"))
        return store.count_cases(flt)
    raise ValueError(f"unknown export format {fmt!r}")


def _write_csv(store, flt: CaseFilter, fh) -> int:
    text = io.TextIOWrapper(fh, encoding="utf-8", newline="", write_through=True)
    writer = None
    count = 0
    for row in store.iter_cases(flt):
        if writer is None:
            writer = csv.DictWriter(text, fieldnames=list(row))
            writer.writeheader()
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
        count += 1
    if writer is None:  # no cases: still write the header
        columns = [r["name"] for r in store.query("PRAGMA table_info(cases)")]
        csv.writer(text).writerow(columns)
    text.flush()
    text.detach()
    return count


def _decode_json_columns(row: dict[str, Any]) -> dict[str, Any]:
    for key in JSON_COLUMNS:
        value = row.get(key)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                row[key] = json.loads(value)
    return row


def _write_jsonl(store, flt: CaseFilter, fh) -> int:
    count = 0
    for row in store.iter_cases(flt):
        line = json.dumps(_clean(_decode_json_columns(row)), ensure_ascii=False)
        fh.write(line.encode("utf-8") + b"\n")
        count += 1
    return count


def _task_fields(task_id: str, fields: dict[str, str]) -> list[str]:
    task = BUILTIN_TASKS.get(task_id)
    names = list(task.fields) if task is not None else []
    if not names or set(names) != set(fields):
        names = sorted(fields)
    return names


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"


def _llmorph_item(index: int, case: dict[str, Any], names: list[str]) -> dict[str, Any]:
    source = metrics.parse_fields(case["source_input"])
    followup = metrics.parse_fields(case["followup_input"]) if case["followup_input"] else None
    verdict = case["verdict"]
    item: dict[str, Any] = {
        "id": index,
        "source_input": [source.get(n, "") for n in names],
        "source_output": case["source_output"],
        "followup_inputs": [[followup.get(n, "") for n in names]] if followup else None,
        "followup_outputs": None,
        "relations": None,
        "verif_failure": None,
    }
    if verdict in ("PASS", "FAIL"):
        item["followup_outputs"] = [case["followup_output"]]
        item["relations"] = [verdict == "PASS"]
    elif verdict == "ERROR":
        item["followup_outputs"] = [case["followup_output"]]
        item["relations"] = [None]
        item["verif_failure"] = "sfoe"
    else:
        invalid = (case["reason"] or "").lower().startswith("invalid_followup")
        item["verif_failure"] = "fi" if invalid else "si"
    item["morphscope"] = {
        key: case[key]
        for key in (
            "id",
            "sample_id",
            "verdict",
            "reason",
            "oracle",
            "value",
            "target",
            "followup_index",
            "repeat_index",
            "family",
            "side",
            "source_answer",
            "followup_answer",
            "score_source",
            "score_followup",
            "delta",
            "output_similarity",
            "trace_sim",
        )
    }
    return item


def llmorph_logs(store, flt: CaseFilter | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file name, LLMorph log document) per model × task × relation, streaming the cases."""
    columns = (
        "id, model, task_id, relation_id, sample_id, family, side, target, followup_index, "
        "repeat_index, source_input, followup_input, source_output, followup_output, "
        "source_answer, followup_answer, verdict, oracle, value, reason, score_source, "
        "score_followup, delta, output_similarity, trace_sim"
    )
    used: set[str] = set()
    key = None
    document: dict[str, Any] | None = None
    names: list[str] = []
    for case in store.iter_cases(flt, columns=columns):
        case_key = (case["model"], case["task_id"], case["relation_id"])
        if case_key != key:
            if document is not None:
                yield _unique_name(key, used), document
            key = case_key
            names = _task_fields(case["task_id"], metrics.parse_fields(case["source_input"]))
            document = {
                "llm_name": case["model"],
                "task_name": case["task_id"],
                "relation_name": case["relation_id"],
                "fields": names,
                "format": "llmorph-log (exported by Morphscope)",
                "data": [],
            }
        document["data"].append(_llmorph_item(len(document["data"]), case, names))
    if document is not None:
        yield _unique_name(key, used), document


def _unique_name(key: tuple[str, str, str], used: set[str]) -> str:
    base = "log__" + "__".join(_safe_name(part) for part in key)
    name, counter = f"{base}.json", 2
    while name in used:
        name, counter = f"{base}-{counter}.json", counter + 1
    used.add(name)
    return name


def _export_llmorph_dir(store, flt: CaseFilter, out: Path) -> int:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and is not an empty directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{secrets.token_hex(6)}.tmp")
    tmp.mkdir()  # not mkdtemp: the folder gets the usual umask mode
    try:
        count = 0
        for name, document in llmorph_logs(store, flt):
            (tmp / name).write_text(json.dumps(document, ensure_ascii=False, indent=1), "utf-8")
            count += len(document["data"])
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        for child in tmp.glob("*"):
            child.unlink()
        with contextlib.suppress(OSError):
            tmp.rmdir()
        raise
    return count


# ------------------------------------------------------------------ LLMorph import


def _read_documents(path: Path) -> list[tuple[str, Any]]:
    """(name, parsed JSON) for a .json file, every *.json in a directory, or in a .zip."""
    if not path.exists():
        raise ValueError(f"{path}: no such file or directory")
    raw: list[tuple[str, bytes]] = []
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.json") if p.is_file())
        raw = [(str(p.relative_to(path)), p.read_bytes()) for p in files]
    elif zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            infos = [
                i for i in archive.infolist() if i.filename.endswith(".json") and not i.is_dir()
            ]
            if sum(i.file_size for i in infos) > MAX_IMPORT_BYTES:
                raise ValueError(f"{path}: archive is too large to import")
            raw = [(i.filename, archive.read(i)) for i in sorted(infos, key=lambda i: i.filename)]
    else:
        if path.stat().st_size > MAX_IMPORT_BYTES:
            raise ValueError(f"{path}: file is too large to import")
        raw = [(path.name, path.read_bytes())]
    if not raw:
        raise ValueError(f"{path}: no .json LLMorph logs found")
    documents = []
    for name, data in raw:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{name}: not UTF-8 text ({exc.reason})") from exc
        try:
            documents.append((name, json.loads(text)))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name}: not valid JSON (line {exc.lineno}: {exc.msg})") from exc
    return documents


def _resolve_relation(name: str) -> tuple[str, str, str | None]:
    """(relation_id, family, side) for an LLMorph relation name (our id, or its catalogue no.)."""
    try:
        from relations.registry import list_relations

        known = list_relations()
    except Exception:  # a broken relation module must not block importing data
        log.warning("relation registry unavailable; keeping LLMorph relation names", exc_info=True)
        known = []
    for relation in known:
        if relation.id == name:
            return relation.id, relation.family, relation.side
    if name.isdigit():
        for relation in known:
            ref = str(relation.ref or "")
            if "llmorph" in ref.lower() and re.search(rf"(?<!\d){name}(?!\d)", ref):
                return relation.id, relation.family, relation.side
        return f"llmorph.{name}", "llmorph", None
    family = name.split(".", 1)[0] if "." in name else "llmorph"
    return name, family, None


def _as_fields(value: Any, names: list[str] | None, where: str) -> dict[str, str]:
    if isinstance(value, str):
        values = [value]
    elif isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        values = [str(v) for v in value]
    else:
        raise ValueError(f"{where}: expected a text or a list of texts")
    if names and len(names) == len(values):
        return dict(zip(names, values, strict=True))
    if len(values) == 1 and not names:
        return {"text": values[0]}
    return {f"input_{i + 1}": v for i, v in enumerate(values)}


def _optional_text(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float | bool):
        return str(value)
    raise ValueError(f"{where}: expected text")


def _parse_answer(task_id: str, text: str | None) -> str | None:
    task = BUILTIN_TASKS.get(task_id)
    if task is None or text is None:
        return None
    try:
        return task.parse(text).answer
    except Exception:  # a parser bug must not abort an import; the answer stays unknown
        log.warning("could not parse an imported %s output", task_id, exc_info=True)
        return None


def _item_cases(
    item: Any, where: str, names: list[str] | None, task_id: str
) -> list[dict[str, Any]]:
    """Case dicts (without run/model/relation columns) for one LLMorph item."""
    if not isinstance(item, dict):
        raise ValueError(f"{where}: expected an object")
    if "source_input" not in item:
        raise ValueError(f"{where}: missing 'source_input'")
    source = _as_fields(item["source_input"], names, f"{where}.source_input")
    source_output = _optional_text(item.get("source_output"), f"{where}.source_output")
    followup_inputs = item.get("followup_inputs")
    if followup_inputs is not None and not isinstance(followup_inputs, list):
        raise ValueError(f"{where}.followup_inputs: expected a list")
    followup_inputs = followup_inputs or []
    outputs = item.get("followup_outputs")
    if outputs is not None and not isinstance(outputs, list):
        raise ValueError(f"{where}.followup_outputs: expected a list")
    relations = item.get("relations", item.get("relation"))
    if relations is not None and not isinstance(relations, list):
        relations = [relations]
    failure = item.get("verif_failure", item.get("verification_failure"))
    if failure is True:
        failure = "fi"
    if failure is False:
        failure = None
    if failure not in (None, "si", "so", "fi", "sfoe"):
        raise ValueError(f"{where}.verif_failure: unknown value {failure!r}")
    extra = item.get("morphscope") if isinstance(item.get("morphscope"), dict) else {}
    cases = []
    count = max(len(followup_inputs), 1)
    for j in range(count):
        followup = (
            _as_fields(followup_inputs[j], list(source), f"{where}.followup_inputs[{j}]")
            if j < len(followup_inputs)
            else None
        )
        output = outputs[j] if outputs is not None and j < len(outputs) else None
        output = _optional_text(output, f"{where}.followup_outputs[{j}]")
        outcome = relations[j] if relations is not None and j < len(relations) else None
        if failure in _VERIF_SKIP_REASONS:
            verdict, reason = "SKIP", _VERIF_SKIP_REASONS[failure]
        elif outcome is True:
            verdict, reason = "PASS", "LLMorph output relation satisfied"
        elif outcome is False:
            verdict, reason = "FAIL", "LLMorph output relation violated"
        else:
            verdict = "ERROR"
            reason = "LLMorph: source or follow-up output error (sfoe)"
        if extra.get("verdict") == verdict and extra.get("reason"):
            reason = str(extra["reason"])
        case = {
            "source_input": source,
            "followup_input": followup,
            "source_output": source_output,
            "followup_output": output,
            "source_answer": _parse_answer(task_id, source_output),
            "followup_answer": _parse_answer(task_id, output),
            "verdict": verdict,
            "reason": reason,
            "oracle": "llmorph",
            "value": None,
            "target": "+".join(n for n in source if followup and followup.get(n) != source[n])
            or "all",
            "followup_index": j,
        }
        if extra and count == 1:
            for key in (
                "oracle",
                "value",
                "target",
                "followup_index",
                "source_answer",
                "followup_answer",
                "score_source",
                "score_followup",
                "delta",
                "output_similarity",
                "trace_sim",
                "side",
            ):
                if key in extra and (
                    extra[key] is None or isinstance(extra[key], str | int | float)
                ):
                    case[key] = extra[key]
            if isinstance(extra.get("repeat_index"), int):
                case["repeat_index"] = extra["repeat_index"]
        cases.append(case)
    return cases


def import_llmorph(
    store,
    path: str | os.PathLike,
    *,
    model: str | None = None,
    task_id: str | None = None,
    relation_id: str | None = None,
    run_id: str | None = None,
) -> str:
    """Import LLMorph result logs (a .json, a directory of them, or a .zip) as one run.

    Model, task and relation come from the arguments when given, else from each log's
    ``llm_name`` / ``task_name`` / ``relation_name``, else from a ``log__MODEL__TASK__RELATION…``
    file name. Numeric relation names are matched to our relations by their LLMorph catalogue
    number (``ref``) when possible, else kept as ``llmorph.N``; LLMorph task names are mapped to
    ours (question_answering → qa …). Everything is validated before anything is written, and
    the run and its cases are written in one transaction. Returns the run id (derived from the
    content, so importing the same logs twice updates the same run instead of duplicating it).
    """
    path = Path(path)
    documents = _read_documents(path)
    all_cases: list[dict[str, Any]] = []
    samples: dict[str, Sample] = {}
    models: set[str] = set()
    tasks: set[str] = set()
    for name, document in documents:
        if isinstance(document, list):
            header, items = {}, document
        elif isinstance(document, dict) and isinstance(document.get("data"), list):
            header, items = document, document["data"]
        else:
            raise ValueError(f"{name}: expected an LLMorph log (an object with a 'data' list)")
        match = _LOG_NAME.match(Path(name).stem)
        file_model = model or header.get("llm_name") or (match and match["model"])
        file_task = task_id or header.get("task_name") or (match and match["task"])
        file_relation = relation_id or header.get("relation_name") or (match and match["relation"])
        for what, value in (
            ("model (llm_name)", file_model),
            ("task (task_name)", file_task),
            ("relation (relation_name)", file_relation),
        ):
            if value in (None, ""):
                raise ValueError(
                    f"{name}: cannot tell the {what}; pass it as an argument or name the file "
                    "log__MODEL__TASK__RELATION.json"
                )
        file_model, file_task = str(file_model), str(file_task)
        file_task = LLMORPH_TASKS.get(file_task, file_task)
        rel_id, family, side = _resolve_relation(str(file_relation))
        names = header.get("fields")
        if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            task = BUILTIN_TASKS.get(file_task)
            names = list(task.fields) if task is not None else None
        repeats: dict[tuple[str, int], int] = {}
        for i, item in enumerate(items):
            for case in _item_cases(item, f"{name}: item {i}", names, file_task):
                sample = Sample(fields=case["source_input"])
                samples[sample.id] = sample
                seen_key = (sample.id, case["followup_index"])
                repeat = case.pop("repeat_index", repeats.get(seen_key, 0))
                repeats[seen_key] = repeats.get(seen_key, 0) + 1
                case.update(
                    model=file_model,
                    task_id=file_task,
                    relation_id=rel_id,
                    family=family,
                    side=case.get("side", side),
                    sample_id=sample.id,
                    repeat_index=repeat,
                )
                all_cases.append(case)
        models.add(file_model)
        tasks.add(file_task)
    if not all_cases:
        raise ValueError(f"{path}: the logs contain no items")
    run_id = run_id or "llmorph-" + content_hash([path.name, all_cases])[:12]
    key_columns = ("model", "task_id", "relation_id", "sample_id", "followup_index")
    for index, case in enumerate(all_cases):
        case["run_id"] = run_id
        identity = [run_id, index, case["repeat_index"], *(case[k] for k in key_columns)]
        case["id"] = content_hash(identity)[:32]
    endpoint = Endpoint(
        name="llmorph-import", base_url="file://llmorph", model=", ".join(sorted(models))
    )
    with store.db.atomic():
        store.save_run(
            run_id,
            endpoint=endpoint,
            task_id=", ".join(sorted(tasks)),
            config={"imported_from": path.name, "format": "llmorph", "files": len(documents)},
            samples=list(samples.values()),
            dataset=path.name,
            n_planned=len(all_cases),
        )
        store.db.execute("DELETE FROM cases WHERE run_id = ?", [run_id])
        store.record_cases(all_cases)
        store.finish_run(run_id, "done")
    return run_id


# ------------------------------------------------------------------ standalone HTML report

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#222}
h1{margin-bottom:.2rem} h2{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.6rem 0}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right}
th{background:#f5f5f5} td.text,th.text{text-align:left}
.note{color:#555;font-size:.9rem} .sig{color:#b00020;font-weight:600}
"""


def _fmt(value: Any, kind: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if kind == "pct":
        return f"{value:.1%}"
    if kind == "f3":
        return f"{value:+.3f}" if value < 0 else f"{value:.3f}"
    if kind == "p":
        return "<0.001" if value < 0.001 else f"{value:.3g}"
    return str(value)


def html_table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> str:
    """An HTML table; every header and cell is escaped. columns: (key, header, kind)."""
    head = "".join(
        f'<th class="{"text" if kind == "text" else ""}">{html.escape(title)}</th>'
        for _, title, kind in columns
    )
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="{"text" if kind == "text" else ""}">'
            f"{html.escape(_fmt(row.get(key), kind))}</td>"
            for key, _, kind in columns
        )
        body.append(f"<tr>{cells}</tr>")
    if not body:
        return '<p class="note">Nothing to show.</p>'
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


ROW_COLUMNS = [
    ("model", "model", "text"),
    ("relation_id", "relation", "text"),
    ("n", "n", "int"),
    ("pass", "pass", "int"),
    ("fail", "fail", "int"),
    ("skip", "skip", "int"),
    ("invalid_followup", "invalid follow-up", "int"),
    ("error", "error", "int"),
    ("violation_rate", "violation rate", "pct"),
    ("ci_low", "95% CI low", "pct"),
    ("ci_high", "95% CI high", "pct"),
    ("net_violation_rate", "net of floor", "pct"),
    ("mean_delta", "mean Δ", "f3"),
    ("mad", "mean |Δ|", "f3"),
    ("stability", "stability", "pct"),
    ("mean_similarity", "mean similarity", "f3"),
    ("inconsistency_rate", "inconsistency", "pct"),
]
MODEL_COLUMNS = [
    ("model", "model", "text"),
    ("n", "cases (non-identity)", "int"),
    ("violation_rate", "violation rate", "pct"),
    ("ci_low", "95% CI low", "pct"),
    ("ci_high", "95% CI high", "pct"),
    ("noise_floor", "noise floor", "pct"),
    ("net_violation_rate", "net of floor", "pct"),
    ("mad", "MAD", "f3"),
    ("stability", "stability (incl. identity)", "pct"),
    ("stability_excl_identity", "stability (excl. identity)", "pct"),
    ("mean_similarity", "mean similarity", "f3"),
    ("inconsistency_rate", "inconsistency", "pct"),
    ("agentdiff_gap", "AgentDiff gap", "f3"),
]
FLOOR_COLUMNS = [
    ("model", "model", "text"),
    ("n", "identity cases", "int"),
    ("pass", "pass", "int"),
    ("fail", "fail", "int"),
    ("violation_rate", "noise floor", "pct"),
    ("ci_low", "95% CI low", "pct"),
    ("ci_high", "95% CI high", "pct"),
    ("inconsistency_rate", "identity inconsistency", "pct"),
]
GAP_COLUMNS = [
    ("model", "model", "text"),
    ("n_originals", "originals with both sides", "int"),
    ("meaning_rate", "meaning-bearing inconsistency", "pct"),
    ("presentation_rate", "presentation inconsistency", "pct"),
    ("gap", "gap (per original, averaged)", "f3"),
    ("sd_gap", "sd of gap", "f3"),
]
TEST_COLUMNS = [
    ("subject", "compared", "text"),
    ("measure", "measure", "text"),
    ("statistic", "statistic", "p"),
    ("p_value", "p", "p"),
    ("p_adjusted", "BH-adjusted p", "p"),
    ("reading", "reading", "text"),
]


def render_html_report(
    store, flt: CaseFilter | None = None, title: str = "Morphscope robustness report"
) -> str:
    """A standalone, offline HTML report: plotly.js is embedded once, inline (no CDN, no server).

    Sections: summary per model, heatmaps (violation rate, mean Δ, mean similarity — numbers in
    cells), box plots of Δ and similarity, MAD / stability bars, noise floor, AgentDiff gap,
    per-category breakdowns, the model × relation table, statistics with readings, definitions.
    All text from the database is HTML-escaped.
    """
    from app.ui import figures  # plotly only; no streamlit

    flt = flt or CaseFilter()
    summary = metrics.summarize(store, flt)
    tests = stats.run_tests(store, flt, counts=summary["counts"])
    n_cases = store.count_cases(flt)
    parts: list[str] = []
    plotly_included = False

    def figure(fig) -> None:
        nonlocal plotly_included
        parts.append(
            fig.to_html(
                full_html=False,
                include_plotlyjs=not plotly_included,
                config={"displaylogo": False, "responsive": True},
            )
        )
        plotly_included = True

    esc = html.escape
    parts.append(f"<h1>{esc(title)}</h1>")
    parts.append(
        f'<p class="note">Generated {esc(_now())} · {n_cases} cases · filters: '
        f"{esc(json.dumps(flt.as_dict(), ensure_ascii=False))}</p>"
    )
    parts.append("<h2>Summary per model</h2>")
    parts.append(html_table(summary["models"], MODEL_COLUMNS))
    if summary["rows"]:
        parts.append("<h2>Heatmaps (model × relation)</h2>")
        for metric in ("violation_rate", "mean_delta", "mean_similarity"):
            if any(row.get(metric) is not None for row in summary["rows"]):
                figure(figures.heatmap(summary["rows"], metric))
        parts.append("<h2>Distributions</h2>")
        for column, label in (("delta", "Δ"), ("output_similarity", "output similarity")):
            box_rows, stride = metrics.box_stats(store, flt, column)
            if box_rows:
                figure(figures.box_plot(box_rows, measure_label=label))
                if stride > 1:
                    parts.append(f'<p class="note">Based on every {stride}th case.</p>')
        if any(m.get("mad") is not None for m in summary["models"]):
            parts.append("<h2>MAD and stability</h2>")
            figure(figures.mad_stability_bars(summary["models"]))
        parts.append("<h2>Noise floor</h2>")
        floors = {m: f["noise_floor"] for m, f in summary["noise_floor"].items()}
        figure(figures.violation_with_floor(summary["rows"], floors))
        floor_rows = [{"model": m, **f} for m, f in sorted(summary["noise_floor"].items())]
        parts.append(html_table(floor_rows, FLOOR_COLUMNS))
        if not floor_rows:
            parts.append('<p class="note">No si.identity cases: no noise floor measured.</p>')
    if summary["gap"]:
        parts.append("<h2>AgentDiff gap (meaning-bearing − presentation)</h2>")
        parts.append(html_table(summary["gap"], GAP_COLUMNS))
    for key in [k for k in store.meta_keys() if k in ("category", "difficulty")]:
        rows = metrics.breakdown(store, key, flt)
        if rows:
            parts.append(f"<h2>By {esc(key)}</h2>")
            parts.append(
                html_table(
                    rows,
                    [
                        ("model", "model", "text"),
                        (key, key, "text"),
                        ("samples", "samples", "int"),
                        ("n", "cases", "int"),
                        ("violation_rate", "violation rate", "pct"),
                        ("mean_delta", "mean Δ", "f3"),
                        ("inconsistency_rate", "inconsistency", "pct"),
                    ],
                )
            )
    parts.append("<h2>Model × relation</h2>")
    parts.append(html_table(summary["rows"], ROW_COLUMNS))
    parts.append("<h2>Statistics</h2>")
    parts.append(
        f'<p class="note">Benjamini-Hochberg adjusted within each family; significant when the '
        f"adjusted p &lt; {tests['alpha']}.</p>"
    )
    parts.append("<h3>Mann-Whitney U between models</h3>")
    parts.append(html_table(tests["mann_whitney"], TEST_COLUMNS))
    parts.append("<h3>Kruskal-Wallis across relations, per model</h3>")
    parts.append(html_table(tests["kruskal_wallis"], TEST_COLUMNS))
    parts.append("<h2>Definitions</h2><ul>")
    parts.extend(f"<li><b>{esc(k)}</b>: {esc(v)}</li>" for k, v in metrics.DEFINITIONS.items())
    parts.append("</ul>")
    if not plotly_included:
        parts.append('<p class="note">No charts: nothing matched the filters.</p>')
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
