"""The Probe page's batch mode: export the run the form describes as a batch request file,
import batch result files (uploaded), and the runs still waiting for theirs.

The batch engine (an OpenAI Batch job, vLLM's offline runner) does the inference; the export and
the import are ``app.batch``'s, exactly as ``morphscope batch export|import`` do them. Model
text from result files is only ever shown as plain text or in tables, never as Markdown.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import streamlit as st

from app.engine.run_setup import RunSetupError, plan_run
from app.inputs.datasets import DATASETS
from app.ui.components import inert, page_link
from app.ui.data import claim_results, data_changed, shows_results
from app.ui.probe_form import ProbeChoices
from app.ui.probe_results import render_results
from app.ui.probe_run import probe_run_config
from core.tasks import Task
from core.types import Endpoint, Sample
from storage import Store
from storage.batch_verbs import BATCH_RUN_STATES

# A browser download or upload holds the whole file in this server's memory (once per session):
# past these sizes the CLI, which streams files from disk, is the way.
MAX_DOWNLOAD_BYTES = 100 * 1024 * 1024
MAX_UPLOAD_BYTES = 200 * 1024 * 1024


# ---------------------------------------------------------------- export


@dataclass(frozen=True)
class BatchFile:
    """One request file of an export, held for its download button."""

    name: str
    data: bytes
    lines: int


@dataclass(frozen=True)
class ExportedBatch:
    """What an export from the Probe page did (kept in the session for its download buttons)."""

    run_id: str
    stage: str  # "calls", or "rewrites" (stage 1 of 2)
    cases: int  # cases planned
    requests: int  # request lines written
    cached: int  # calls the call cache already answers
    files: tuple[BatchFile, ...]  # empty when nothing was written, or too big to download
    file_names: tuple[str, ...]  # every part written, downloadable or not
    judged_status: str | None = None  # with 0 lines: the run judged from the cache at once

    @property
    def too_big(self) -> bool:
        """Written, but too big to offer as a browser download."""
        return bool(self.requests) and not self.files


def _named_only(endpoint: Endpoint) -> Endpoint:
    """An endpoint as it is: a batch export sends nothing, so nothing is started."""
    return endpoint


def export_for_download(
    store: Store,
    config,
    task: Task,
    samples: Sequence[Sample],
    *,
    runner_factory=None,
    max_download_bytes: int = MAX_DOWNLOAD_BYTES,
) -> ExportedBatch:
    """Export ``config`` as ``batch export`` does, into a temporary folder, and read the part
    files back for download (none when together they pass ``max_download_bytes``). Raises
    ``BatchExportError`` (nothing stored) when the files cannot be written."""
    from app.batch.export import BatchExportError, default_runner, export_batch

    samples = list(samples)
    with tempfile.TemporaryDirectory(prefix="morphscope-batch-") as folder:
        out = Path(folder) / f"batch-{config.run_id(samples)}.jsonl"
        try:
            export = export_batch(
                store, config, task, samples, out, runner_factory=runner_factory or default_runner
            )
        except BatchExportError as exc:  # named as the download would be, not by its folder
            message = str(exc).replace(str(out), out.name)
            message = message.replace(folder, "the server's temporary folder")
            raise BatchExportError(message) from None
        total = sum(path.stat().st_size for path in export.files)
        files = ()
        if total <= max_download_bytes:
            files = tuple(
                BatchFile(path.name, path.read_bytes(), lines)
                for path, lines in zip(export.files, export.lines_per_file, strict=True)
            )
    return ExportedBatch(
        run_id=export.run_id,
        stage=export.stage,
        cases=export.cases,
        requests=export.requests,
        cached=export.cached,
        files=files,
        file_names=tuple(path.name for path in export.files),
        judged_status=export.summary.status if export.summary is not None else None,
    )


def cli_export_command(
    choices: ProbeChoices, db_path: str, *, needs_transformation: bool = False
) -> str:
    """The ``batch export`` command line for the form's run (for sweeps too big for a browser).
    Names the endpoint's URL and model, never a key; the inputs are the demo dataset's file or
    a placeholder for the user's own. The transformation endpoint is named only when an
    LLM-prompted relation ``needs_transformation`` (and the embedded model is the default)."""
    endpoint = choices.endpoint
    dataset = DATASETS.get(choices.dataset or "")
    inputs = str(dataset.path) if dataset is not None else "INPUTS.jsonl"
    arguments = [
        "morphscope", "batch", "export",
        "--endpoint", endpoint.base_url, "--model", endpoint.model,
        "--task", choices.task.id, "--relations", ",".join(choices.relation_ids),
        "--inputs", inputs, "--repeats", str(choices.repeats), "--seed", str(choices.seed),
        "--temperature", str(endpoint.temperature), "--top-p", str(endpoint.top_p),
        "--max-tokens", str(endpoint.max_tokens),
    ]  # fmt: skip
    transformation = choices.transformation_endpoint
    if needs_transformation and not transformation.embedded:
        arguments += [
            "--transformation-endpoint", transformation.base_url,
            "--transformation-model", transformation.model,
        ]  # fmt: skip
    arguments += ["--db", db_path, "--out", "batch.jsonl"]
    return shlex.join(arguments)


def export_lines(exported: ExportedBatch) -> list[str]:
    """What the export did, in plain words (Markdown: run ids in code spans)."""
    lines = [
        f"Run `{exported.run_id}`: {exported.cases} cases planned, {exported.requests} request "
        f"lines written, {exported.cached} calls already answered in the call cache."
    ]
    if exported.stage == "rewrites":
        lines.append(
            "**Stage 1 of 2**: these are the rewrites the LLM-prompted relations need before "
            "their follow-ups exist. Send them to the batch engine, import the results below, "
            "then press **Export as batch** again for the model's calls."
        )
    if not exported.requests:
        lines.append(
            f"Nothing to send: every call is answered already, so the run was judged from the "
            f"call cache ({exported.judged_status or 'done'}). Its results are shown below and "
            "in Analysis."
        )
    return lines


def render_export(store: Store, choices: ProbeChoices, key: str) -> ExportedBatch | None:
    """The Export button, then what the export wrote with one download button per part.
    Returns the export while the form still describes it (None otherwise)."""
    if choices.endpoint.embedded:
        st.info(
            "Choose the endpoint of the server that will answer the batch as **Model endpoint**: "
            "the embedded model is not a batch engine."
        )
        return None
    st.caption(
        "Writes one request line (OpenAI Batch format, read by the Batch API and vLLM's "
        "`run_batch`) per call of this run that the call cache cannot answer, and stores the run "
        "as awaiting batch results."
    )
    if st.button("Export as batch", disabled=not choices.ready, key=f"{key}_export_button"):
        try:
            config = probe_run_config(store, choices, resolve=_named_only)
        except RunSetupError as exc:
            st.error(f"Cannot export: {inert(exc)}")
            return None
        if config is None:  # never with _named_only; kept for the signature's sake
            return None
        from app.batch.export import BatchExportError

        try:
            with st.spinner("Planning the run and writing its requests…"):
                exported = export_for_download(store, config, choices.task, choices.samples)
        except BatchExportError as exc:  # nothing was stored: the message says why
            st.session_state.pop(f"{key}_export", None)
            st.error(f"Cannot export: {inert(exc, one_line=True)}")
            return None
        st.session_state[f"{key}_export"] = (choices.fingerprint, exported)
        claim_results(key)
        data_changed()
    kept = st.session_state.get(f"{key}_export")
    if kept is None or kept[0] != choices.fingerprint:
        return None
    exported = kept[1]
    for line in export_lines(exported):
        st.markdown(line)
    if exported.too_big:
        st.warning(
            f"{len(exported.file_names)} file(s) were written, too big for a browser download: "
            "export this run with the command line below (it writes the files to disk)."
        )
    for number, batch_file in enumerate(exported.files):
        st.download_button(
            f"Download {batch_file.name} ({batch_file.lines} requests)",
            batch_file.data,
            file_name=batch_file.name,
            mime="application/jsonl",
            on_click="ignore",
            key=f"{key}_download_{exported.run_id}_{number}",
        )
    return exported


def render_cli_hint(store: Store, choices: ProbeChoices) -> None:
    """For sweeps too big for a browser: the same export on the command line."""
    if choices.endpoint.embedded or not choices.ready:
        return
    try:
        plan = plan_run(store, choices.task.id, choices.relation_ids)
    except RunSetupError:  # the Export button says why
        return
    st.caption(
        "Sweeps too large for a browser download (tens of thousands of cases, several models): "
        "export them with the command line, which writes numbered parts of at most 50,000 "
        "requests / 200 MB. The same export of this form (the command line names the run's "
        "dataset after the inputs file, so its run id differs from the form's):"
    )
    command = cli_export_command(
        choices, store.path, needs_transformation=plan.needs_transformation_endpoint
    )
    st.code(command, language="bash")
    if choices.dataset in DATASETS:
        st.caption("The command line reads the whole demo dataset, not only the first inputs.")
    else:
        st.caption("Replace INPUTS.jsonl with the file your inputs come from.")


# ---------------------------------------------------------------- import


@dataclass
class UploadedImport:
    """What importing uploaded result files did: a refusal, or the importer's report."""

    error: str | None = None  # the one-line message of a refused import (nothing written)
    warnings: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # ``BatchImport.describe()``
    run_ids: list[str] = field(default_factory=list)
    status: dict[str, str] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)  # run → calls still unanswered
    new_answers: int = 0  # answers the call cache did not hold before
    judged: list[str] = field(default_factory=list)  # runs judged again by this import
    # Runs whose first-stage rewrites were answered: export again for their calls.
    rewrites_answered: list[str] = field(default_factory=list)

    @property
    def changed_nothing(self) -> bool:
        """The same results imported before: no new answer, no run judged again."""
        return self.error is None and not self.new_answers and not self.judged


def _custom_ids(data: bytes) -> list[str]:
    """The ``custom_id`` of every line that has one (to count the answers that are new)."""
    ids = []
    for raw in data.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and isinstance(line.get("custom_id"), str):
            ids.append(line["custom_id"])
    return ids


def _not_utf8(name: str, data: bytes) -> str | None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return (
            f"{name}: line {line} is not UTF-8 text (byte {exc.start}); its lines with bad bytes "
            "are skipped, the others imported"
        )
    return None


def import_uploaded(
    store: Store,
    uploads: Sequence[tuple[str, bytes]],
    *,
    runner_factory=None,
    max_bytes: int = MAX_UPLOAD_BYTES,
) -> UploadedImport:
    """Import uploaded result files (name, bytes) as ``batch import`` does. A refused upload
    (too big, foreign, no result lines) comes back as ``error``, with nothing written."""
    from app.batch.export import default_runner
    from app.batch.importer import BatchImportError, import_results

    if not uploads:
        return UploadedImport(error="Choose one or more result files (.jsonl) first.")
    total = sum(len(data) for _, data in uploads)
    if total > max_bytes:
        return UploadedImport(
            error=f"The files hold {total / 1024 / 1024:.0f} MB, more than a browser upload may "
            f"({max_bytes / 1024 / 1024:.0f} MB): import them with morphscope batch import "
            "FILE … --db …, which reads them from disk."
        )
    outcome = UploadedImport(warnings=[w for n, d in uploads if (w := _not_utf8(n, d))])
    keys = [key for _, data in uploads for key in _custom_ids(data)]
    before = store.cached_call_keys(keys)
    with tempfile.TemporaryDirectory(prefix="morphscope-results-") as folder:
        paths = []
        for number, (name, data) in enumerate(uploads):
            # One folder per upload: two uploads of the same name stay two files.
            path = Path(folder) / str(number) / (Path(name).name or "results.jsonl")
            path.parent.mkdir()
            path.write_bytes(data)
            paths.append((path, name))
        try:
            imported = import_results(
                store, [path for path, _ in paths], runner_factory=runner_factory or default_runner
            )
        except BatchImportError as exc:
            message = str(exc)
            for path, name in paths:  # the message names the file as uploaded, not its copy
                message = message.replace(str(path), name)
            outcome.error = message
            return outcome
    outcome.lines = imported.describe()
    outcome.run_ids = list(imported.run_ids)
    outcome.status = dict(imported.status)
    outcome.missing = {run_id: len(keys) for run_id, keys in imported.missing.items()}
    outcome.new_answers = len(store.cached_call_keys(keys) - before)
    outcome.judged = list(imported.summaries)
    outcome.rewrites_answered = list(imported.rewrites_answered)
    return outcome


def render_import(store: Store, key: str) -> UploadedImport | None:
    """The uploader and Import button, then the importer's report (kept in the session)."""
    uploads = st.file_uploader(
        "Batch result files (OpenAI Batch or vLLM output, .jsonl)",
        type=["jsonl"],
        accept_multiple_files=True,
        key=f"{key}_uploads",
    )
    if st.button("Import batch results", disabled=not uploads, key=f"{key}_import_button"):
        with st.spinner("Importing the answers and judging the runs they finish…"):
            outcome = import_uploaded(store, [(f.name, f.getvalue()) for f in uploads or []])
        st.session_state[f"{key}_import"] = outcome
        if outcome.error is None:
            claim_results(key)
            data_changed()
    outcome = st.session_state.get(f"{key}_import")
    if outcome is not None:
        show_import(outcome)
    return outcome


def show_import(outcome: UploadedImport) -> None:
    """The report of an import: a refusal in one line, or what was answered and each run's
    state. File contents and server messages are shown as plain text only."""
    if outcome.error is not None:
        st.error(inert(outcome.error, one_line=True))
        return
    for warning in outcome.warnings:
        st.warning(inert(warning, one_line=True))
    if outcome.changed_nothing:
        st.info("Nothing changed: these results were imported already.")
    st.code("\n".join(outcome.lines), language=None)
    for run_id in outcome.run_ids:
        if run_id in outcome.rewrites_answered:
            st.info(
                f"Run `{run_id}`: stage 1 (the rewrites) is answered. Press **Export as batch** "
                "again with the same form for stage 2, the model's calls."
            )
            continue
        status = outcome.status.get(run_id, "")
        missing = outcome.missing.get(run_id, 0)
        if missing:
            st.warning(
                f"Run `{run_id}` is {inert(status)}: {missing} call(s) still missing. Import "
                "their results to finish it."
            )
        elif status == "done":
            st.success(f"Run `{run_id}` is done.")


# ---------------------------------------------------------------- the panel


def render_batch_panel(store: Store, choices: ProbeChoices, key: str) -> None:
    """Batch mode in an expander (export, import, the command line); the results of the run
    just exported or imported are drawn below it (an expander cannot hold their expanders)."""
    shown: list[str] = []
    # Keyed: the open expander and tab stay as they are when an upload or a click reruns.
    with st.expander("Batch mode: export as batch, import batch results", key=f"{key}_open"):
        export_tab, import_tab = st.tabs(
            ["Export as batch", "Import batch results"], key=f"{key}_tab"
        )
        with export_tab:
            exported = render_export(store, choices, key)
            if exported is not None and not exported.requests:
                shown.append(exported.run_id)
            render_cli_hint(store, choices)
        with import_tab:
            outcome = render_import(store, key)
            if outcome is not None and outcome.error is None:
                shown += [
                    run_id
                    for run_id in outcome.run_ids
                    if run_id not in shown and run_id not in outcome.rewrites_answered
                ]
    if not shows_results(key):  # a probe run started since: its results are the newest
        return
    for run_id in shown:
        if store.run(run_id) is None:  # deleted since
            continue
        st.subheader(f"Batch run {run_id}")
        page_link(
            "pages/analysis.py", "Open Analysis", ":material/analytics:",
            help="Rates, intervals and heatmaps of this run with the others",
        )  # fmt: skip
        render_results(store, run_id, key=f"{key}_results_{run_id}")


def render_pending_batches(store: Store, key: str) -> None:
    """A short notice listing the runs that wait for batch results (exported, or imported with
    calls missing), with the hint to import them."""
    pending = [run for run in store.runs() if run.status in BATCH_RUN_STATES]
    if not pending:
        return
    st.info(
        f"{len(pending)} run(s) wait for batch results: import them under **Batch mode** "
        "(Import batch results) once the batch engine has answered."
    )
    st.dataframe(
        pd.DataFrame(
            {
                "run": [run.id for run in pending],
                "task": [run.task_id for run in pending],
                "model": [run.endpoint for run in pending],
                "state": [run.status.replace("_", " ") for run in pending],
                "requests exported": [len(store.batch_request_keys(run.id)) for run in pending],
                "cases": [run.n_cases for run in pending],
                "exported": [str(run.created_at)[:16].replace("T", " ") for run in pending],
            }
        ),
        hide_index=True,
        key=f"{key}_pending",
    )
