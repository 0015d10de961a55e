"""Batch files: request lines, numbered part files, and result lines of both engines.

Requests use the OpenAI Batch input format, which vLLM's offline runner reads too. Results come
in the OpenAI Batch output format (``response.status_code``, ``response.body``,
``error: {code, message}``) or vLLM's (the same shape; ``error`` may be a plain string, and
older vLLM versions write no ``status_code``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

CHAT_URL = "/v1/chat/completions"
# The OpenAI Batch API's limits for one input file.
MAX_LINES = 50_000
MAX_BYTES = 200 * 1024 * 1024


def request_line(
    key: str, model: str, messages: list[dict[str, str]], params: dict[str, Any]
) -> dict[str, Any]:
    """One request of a batch input file; ``custom_id`` is the call's cache key."""
    return {
        "custom_id": key,
        "method": "POST",
        "url": CHAT_URL,
        "body": {"model": model, "messages": messages, **params},
    }


class PartWriter:
    """Writes request lines to ``out``, starting a new numbered part at a line or size limit.

    One part keeps the name asked for (``out.jsonl``); several are ``out-001.jsonl``,
    ``out-002.jsonl``…: zero-padded so they sort in order, and numbered beside the asked name
    so the user finds them where they looked. Whether there will be several is known only at
    the end, so parts are written under their numbered names and a lone part is renamed.
    """

    def __init__(self, out: Path, *, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES):
        self.out = Path(out)
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.parts: list[Path] = []
        self.lines_per_part: list[int] = []
        self._handle: IO[bytes] | None = None
        self._lines = 0
        self._bytes = 0

    def _part_path(self, number: int) -> Path:
        return self.out.with_name(f"{self.out.stem}-{number:03d}{self.out.suffix or '.jsonl'}")

    def write(self, line: dict[str, Any]) -> None:
        data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        full = self._lines >= self.max_lines or self._bytes + len(data) > self.max_bytes
        if self._handle is None or (full and self._lines):
            self._start_part()
        assert self._handle is not None
        self._handle.write(data)
        self._lines += 1
        self._bytes += len(data)
        self.lines_per_part[-1] = self._lines

    def _start_part(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        path = self._part_path(len(self.parts) + 1)
        # Opened before it is listed: a part that could not be created (a read-only folder) is
        # no part, and ``discard`` does not trip over it.
        handle = path.open("wb")
        self.parts.append(path)
        self.lines_per_part.append(0)
        self._handle = handle
        self._lines = self._bytes = 0

    def close(self) -> list[Path]:
        """Finish the files; returns their paths (none when nothing was written)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if len(self.parts) == 1:
            self.parts[0].replace(self.out)
            self.parts = [self.out]
        return list(self.parts)

    def __enter__(self) -> PartWriter:
        return self

    def discard(self) -> None:
        """Remove every part written so far (a write failed: no half export is left)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        for path in self.parts:
            path.unlink(missing_ok=True)
        self.parts = []
        self.lines_per_part = []

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:
            self.discard()
            return
        try:
            self.close()
        except BaseException:
            # Finishing failed (e.g. the lone part cannot take the output's name): no part is left.
            self.discard()
            raise


@dataclass(frozen=True)
class ResultLine:
    """One parsed result line: an answer (``text``) or a per-line ``error``."""

    line_number: int
    key: str
    text: str | None = None
    error: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class ParsedResults:
    """A result file read line by line: good lines, and the numbers of lines that were not."""

    results: list[ResultLine] = field(default_factory=list)
    invalid_lines: list[int] = field(default_factory=list)
    # Lines of a batch *input* file (a request, no response): the wrong file was given.
    request_lines: list[int] = field(default_factory=list)


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        text = ": ".join(str(part) for part in (code, message) if part)
        return text or json.dumps(error)[:300]
    return str(error)[:300]


def is_request_line(data: object) -> bool:
    """Whether a decoded line is a batch *request* (``custom_id``, ``url``, ``body``; no
    ``response`` or ``error``, which every result line of either engine carries)."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("custom_id"), str)
        and isinstance(data.get("body"), dict)
        and isinstance(data.get("url"), str)
        and "response" not in data
        and "error" not in data
    )


def _decode(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def parse_result_line(text: str, line_number: int) -> ResultLine | None:
    """A result line of either engine, or None when it is not one (not JSON, no custom_id)."""
    return _result_line(_decode(text), line_number)


def _result_line(data: Any, line_number: int) -> ResultLine | None:
    if not isinstance(data, dict) or not isinstance(data.get("custom_id"), str):
        return None
    key = data["custom_id"]
    if data.get("error"):
        return ResultLine(line_number, key, error=f"batch error: {_error_text(data['error'])}")
    response = data.get("response")
    if not isinstance(response, dict):
        return ResultLine(line_number, key, error="batch error: the line has no response")
    status = response.get("status_code", 200)  # older vLLM versions write none
    body = response.get("body")
    if status != 200:
        detail = (
            _error_text(body.get("error")) if isinstance(body, dict) and body.get("error") else ""
        )
        return ResultLine(
            line_number,
            key,
            error=f"batch error: HTTP {status}" + (f" ({detail})" if detail else ""),
        )
    try:
        message = body["choices"][0]["message"]
        content = message.get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        return ResultLine(line_number, key, error="batch error: the response has no choices")
    if not isinstance(content, str):
        return ResultLine(line_number, key, error="batch error: the response has no text")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return ResultLine(line_number, key, text=content, usage=usage)


def iter_text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number from 1, text) of a file's non-blank lines; bytes that are not UTF-8 are
    replaced, so such a line is reported as invalid instead of stopping the read."""
    with Path(path).open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            text = raw.decode("utf-8", errors="replace").strip()
            if text:
                yield number, text


def parse_results(lines: Iterable[tuple[int, str]]) -> ParsedResults:
    """Parse numbered result lines; a line that is no result line is listed by number, a
    request line (of a batch input file) apart."""
    parsed = ParsedResults()
    for number, text in lines:
        data = _decode(text)
        if is_request_line(data):
            parsed.request_lines.append(number)
            continue
        result = _result_line(data, number)
        if result is None:
            parsed.invalid_lines.append(number)
        else:
            parsed.results.append(result)
    return parsed
