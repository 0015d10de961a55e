"""LLMorph result logs, both ways: :func:`llmorph_logs` writes them, :func:`import_llmorph` reads.

The logs follow the tool's result files: one JSON per model × task × relation,
``{"llm_name", "task_name", "relation_name", "data": [item, …]}``, each item
``{"id", "source_input": [field, …], "source_output", "followup_inputs": [[field, …], …],
"followup_outputs": [...], "relations": [bool | null, …], "verif_failure": null | "si" | "so" |
"fi" | "sfoe"}``. We write one item per case (a single follow-up) so SKIP and ERROR survive the
trip: SKIP → "fi" when its reason starts with ``invalid_followup``, else "si"; ERROR → "sfoe"
with ``relations: [null]``. Extra keys (``fields``, ``morphscope``) carry what LLMorph lacks;
LLMorph-only readers ignore them.

:func:`import_llmorph` reads such a file, a directory of them or a zip into one new run, all or
nothing, raising ``ValueError`` with a readable message on bad input.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.analysis.case_fields import field_texts
from core.case_filter import CaseFilter
from core.json_text import UnreadableJsonError, load_json
from core.tasks import BUILTIN_TASKS
from core.types import Case, Endpoint, Sample, content_hash
from storage.run_verbs import RunDefinition

log = logging.getLogger(__name__)

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


# ------------------------------------------------------------------ export


def _task_fields(task_id: str, fields: dict[str, str]) -> list[str]:
    task = BUILTIN_TASKS.get(task_id)
    names = list(task.fields) if task is not None else []
    if not names or set(names) != set(fields):
        names = sorted(fields)
    return names


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"


def _llmorph_item(index: int, case: dict[str, Any], names: list[str]) -> dict[str, Any]:
    source = field_texts(case["source_input"])
    followup = field_texts(case["followup_input"]) if case["followup_input"] else None
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


def llmorph_logs(store, flt: CaseFilter) -> Iterator[tuple[str, dict[str, Any]]]:
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
            names = _task_fields(case["task_id"], field_texts(case["source_input"]))
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


# ------------------------------------------------------------------ import


def _read_documents(path: Path) -> list[tuple[str, Any]]:
    """(name, parsed JSON) for a .json file, every *.json in a directory, or in a .zip."""
    if not path.exists():
        raise ValueError(f"{path}: no such file or directory")
    raw: list[tuple[str, bytes]] = []
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.json") if p.is_file())
        raw = [(str(p.relative_to(path)), p.read_bytes()) for p in files]
    elif zipfile.is_zipfile(path):
        raw = _read_zip(path)
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
            documents.append((name, load_json(text)))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
        except UnreadableJsonError as exc:
            raise ValueError(f"{name}: {exc}") from None
    return documents


def _read_zip(path: Path) -> list[tuple[str, bytes]]:
    """(name, bytes) of every .json member; a damaged archive is a ValueError naming it."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = [
                i for i in archive.infolist() if i.filename.endswith(".json") and not i.is_dir()
            ]
            if sum(i.file_size for i in infos) > MAX_IMPORT_BYTES:
                raise ValueError(f"{path}: archive is too large to import")
            return [(i.filename, archive.read(i)) for i in sorted(infos, key=lambda i: i.filename)]
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
        raise ValueError(f"{path}: the zip archive is damaged ({exc})") from None


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


# The fields of an item's "morphscope" block (written by our own export), by the type they need.
_EXTRA_NUMBERS = (
    "value",
    "score_source",
    "score_followup",
    "delta",
    "output_similarity",
    "trace_sim",
)
_EXTRA_TEXTS = ("oracle", "target", "source_answer", "followup_answer", "side", "verdict", "reason")
_EXTRA_COUNTS = ("followup_index", "repeat_index")
_VERDICTS = ("PASS", "FAIL", "SKIP", "ERROR")


def _checked_extra(extra: Any, where: str) -> dict[str, Any]:
    """The "morphscope" block of an item with every field's type and range checked: text in a
    numeric field (``value: "abc"``) would be stored and break every page that reads it later."""
    if extra is None:
        return {}
    if not isinstance(extra, dict):
        raise ValueError(f"{where}: expected an object")
    checked: dict[str, Any] = {}
    for key, value in extra.items():
        if value is None:
            checked[key] = None
        elif key in _EXTRA_NUMBERS:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{where}.{key}: expected a number, not {value!r:.40}")
            if not math.isfinite(value):
                raise ValueError(f"{where}.{key}: expected a finite number, not {value!r}")
            checked[key] = float(value)
        elif key in _EXTRA_COUNTS:
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1_000_000:
                raise ValueError(f"{where}.{key}: expected a whole number ≥ 0, not {value!r:.40}")
            checked[key] = value
        elif key in _EXTRA_TEXTS:
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise ValueError(f"{where}.{key}: expected text, not {type(value).__name__}")
            checked[key] = str(value)
        # other keys (ours from a newer export, or a tool's own) are ignored, as before
    if checked.get("verdict") not in (None, *_VERDICTS):
        raise ValueError(f"{where}.verdict: expected one of {', '.join(_VERDICTS)}")
    return checked


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
    extra = _checked_extra(item.get("morphscope"), f"{where}.morphscope")
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
            reason = extra["reason"]
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
            # verdict and reason only pick the reason above; the verdict comes from the outcome
            case.update({k: v for k, v in extra.items() if k not in ("verdict", "reason")})
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
    sources: list[_LogSource] = []
    for name, document in documents:
        header, items = _log_items(name, document)
        source = _log_source(name, header, model=model, task_id=task_id, relation_id=relation_id)
        all_cases += _log_cases(name, items, source, samples)
        sources.append(source)
    if not all_cases:
        raise ValueError(f"{path}: the logs contain no items")
    run_id = run_id or "llmorph-" + content_hash([path.name, all_cases])[:12]
    _identify_cases(all_cases, run_id)
    # Every log names its model and task, even one without items.
    models = sorted({source.model for source in sources})
    tasks = sorted({source.task_id for source in sources})
    endpoint = Endpoint(name="llmorph-import", base_url="file://llmorph", model=", ".join(models))
    run = RunDefinition(
        run_id,
        endpoint=endpoint,
        task_id=", ".join(tasks),
        config={"imported_from": path.name, "format": "llmorph", "files": len(documents)},
        samples=list(samples.values()),
        dataset=path.name,
    )
    store.replace_imported_run(run, [Case.from_row(case) for case in all_cases])
    return run_id


@dataclass(frozen=True)
class _LogSource:
    """Where one log's items come from: model, task and relation, and the task's field names."""

    model: str
    task_id: str
    relation_id: str
    family: str
    side: str | None
    field_names: list[str] | None


def _log_items(name: str, document: Any) -> tuple[dict[str, Any], list[Any]]:
    """(header, items) of a log: an object with a ``data`` list, or a bare list of items."""
    if isinstance(document, list):
        return {}, document
    if isinstance(document, dict) and isinstance(document.get("data"), list):
        return document, document["data"]
    raise ValueError(f"{name}: expected an LLMorph log (an object with a 'data' list)")


def _log_source(
    name: str,
    header: dict[str, Any],
    *,
    model: str | None,
    task_id: str | None,
    relation_id: str | None,
) -> _LogSource:
    """Model, task and relation from the arguments, else the log's header, else its file name."""
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
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ValueError(f"{name}: the {what} must be text, not {type(value).__name__}")
    file_task = LLMORPH_TASKS.get(str(file_task), str(file_task))
    rel_id, family, side = _resolve_relation(str(file_relation))
    names = header.get("fields")
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        task = BUILTIN_TASKS.get(file_task)
        names = list(task.fields) if task is not None else None
    return _LogSource(str(file_model), file_task, rel_id, family, side, names)


def _log_cases(
    name: str, items: list[Any], source: _LogSource, samples: dict[str, Sample]
) -> list[dict[str, Any]]:
    """The cases of one log's items, adding their source samples to ``samples``. A case with no
    repeat index of its own is numbered by how often its sample and follow-up came before."""
    cases: list[dict[str, Any]] = []
    repeats: dict[tuple[str, int], int] = {}
    for i, item in enumerate(items):
        for case in _item_cases(item, f"{name}: item {i}", source.field_names, source.task_id):
            sample = Sample(fields=case["source_input"])
            samples[sample.id] = sample
            seen_key = (sample.id, case["followup_index"])
            repeat = case.pop("repeat_index", repeats.get(seen_key, 0))
            repeats[seen_key] = repeats.get(seen_key, 0) + 1
            case.update(
                model=source.model,
                task_id=source.task_id,
                relation_id=source.relation_id,
                family=source.family,
                side=case.get("side", source.side),
                sample_id=sample.id,
                repeat_index=repeat,
            )
            cases.append(case)
    return cases


def _identify_cases(cases: list[dict[str, Any]], run_id: str) -> None:
    """Give every case the run id and an id derived from its content and position."""
    key_columns = ("model", "task_id", "relation_id", "sample_id", "followup_index")
    for index, case in enumerate(cases):
        case["run_id"] = run_id
        identity = [run_id, index, case["repeat_index"], *(case[k] for k in key_columns)]
        case["id"] = content_hash(identity)[:32]
