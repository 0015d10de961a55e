"""An inputs file on disk (the command line's inputs) → samples, refusing what cannot be read
safely: a FIFO or a device, a directory, a file larger than the limit or still growing."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from app.inputs.errors import InputError
from app.inputs.limits import MAX_ROWS, megabytes
from app.inputs.samples import auto_samples
from app.inputs.uploads import read_upload
from core.types import Sample

# An inputs file the CLI reads (``--max-input-mb``): checked before reading, and reading stops
# there, so an endless or enormous file is refused instead of filling the memory.
MAX_INPUT_BYTES = 500 * 1024 * 1024


def load_input_file(
    path: str | Path,
    task_fields: Sequence[str],
    prefer_reference: Sequence[str] = (),
    *,
    max_rows: int = MAX_ROWS,
    max_bytes: int = MAX_INPUT_BYTES,
    encoding: str | None = None,
) -> list[Sample]:
    """Read an inputs file (CSV/TSV/JSONL/JSON/TXT) with the suggested column mapping; more
    than ``max_rows`` rows are refused (``batch export`` takes more than a run), and so is a
    file larger than ``max_bytes`` or one that is not a regular file (``read_input_file``)."""
    frame = read_input_file(path, max_bytes=max_bytes, encoding=encoding)
    return auto_samples(frame, task_fields, prefer_reference, max_rows=max_rows)


_FILE_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_READ_CHUNK = 1024 * 1024
_DIRECTORY = "{name} is a directory, not a file; give a CSV, JSONL, JSON or TXT file"


def check_input_path(path: str | Path, max_bytes: int = MAX_INPUT_BYTES) -> None:
    """What ``read_input_file`` checks before reading, on the path alone and opening nothing, so
    that a command can refuse a FIFO, a device or a file too large before it creates anything. A
    path that does not exist passes (the reader says so)."""
    try:
        status = os.stat(path)
    except OSError:
        return
    _refuse_to_read(Path(path), status, max_bytes)


def _refuse_to_read(path: Path, status: os.stat_result, max_bytes: int) -> None:
    if stat.S_ISDIR(status.st_mode):
        raise InputError(_DIRECTORY.format(name=path.name))
    if not stat.S_ISREG(status.st_mode):
        kind = next(
            (what for test, what in _FILE_KINDS if test(status.st_mode)), "not a regular file"
        )
        raise InputError(
            f"{path} is {kind}, not a regular file; give a CSV, JSONL, JSON or TXT file"
        )
    if status.st_size > max_bytes:
        size = f"{status.st_size / 1024 / 1024:,.1f} MB"
        raise InputError(_too_large(path, size, max_bytes))


def read_input_file(
    path: str | Path, *, max_bytes: int = MAX_INPUT_BYTES, encoding: str | None = None
) -> pd.DataFrame:
    """An inputs file on disk → DataFrame, as ``read_upload`` reads an upload.

    Only a regular file is read: a FIFO would block until something writes to it and a device
    like ``/dev/zero`` never ends. It is opened without blocking and checked on the open file (so
    nothing can swap it in between); its size is checked before reading, and reading stops at
    ``max_bytes`` even when the file grows meanwhile.
    """
    path = Path(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise InputError(_DIRECTORY.format(name=path.name)) from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        _refuse_to_read(path, os.fstat(descriptor), max_bytes)
    except InputError:
        os.close(descriptor)
        raise
    with open(descriptor, "rb", buffering=0) as file:
        chunks, total = [], 0
        try:
            while chunk := file.read(min(_READ_CHUNK, max_bytes + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
                if total > max_bytes:  # it grew while being read
                    raise InputError(_too_large(path, "still growing", max_bytes))
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    data = b"".join(chunks)
    del chunks
    return read_upload(path.name, data, max_bytes=max_bytes, encoding=encoding)


def _too_large(path: Path, size: str, max_bytes: int) -> str:
    return (
        f"{path.name} is {size}; the limit for an inputs file is {megabytes(max_bytes)}. "
        "Split the file, or raise the limit with --max-input-mb."
    )
