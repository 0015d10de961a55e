"""Batch files: request lines, numbered parts, and result lines of the OpenAI Batch API and of
vLLM's offline runner (``python -m vllm.entrypoints.openai.run_batch``)."""

from __future__ import annotations

import json

import pytest

from app.batch.formats import PartWriter, parse_result_line, parse_results, request_line

CHAT = {"object": "chat.completion", "choices": [{"message": {"content": "positive"}}]}


def test_a_request_line_is_the_openai_batch_input_format():
    line = request_line("k1", "m", [{"role": "user", "content": "hi"}], {"temperature": 0.0})
    assert line == {
        "custom_id": "k1",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.0},
    }


def test_one_part_keeps_the_name_asked_for(tmp_path):
    with PartWriter(tmp_path / "out.jsonl", max_lines=3) as writer:
        for i in range(3):
            writer.write({"custom_id": str(i)})
    assert writer.parts == [tmp_path / "out.jsonl"] and writer.lines_per_part == [3]
    assert [json.loads(x)["custom_id"] for x in (tmp_path / "out.jsonl").read_text().split()] == [
        "0",
        "1",
        "2",
    ]


def test_parts_split_at_the_line_limit(tmp_path):
    with PartWriter(tmp_path / "out.jsonl", max_lines=2) as writer:
        for i in range(5):
            writer.write({"custom_id": str(i)})
    assert [p.name for p in writer.parts] == ["out-001.jsonl", "out-002.jsonl", "out-003.jsonl"]
    assert writer.lines_per_part == [2, 2, 1]
    assert not (tmp_path / "out.jsonl").exists()


def test_parts_split_at_the_size_limit(tmp_path):
    line = {"custom_id": "x" * 40}
    size = len(json.dumps(line, separators=(",", ":"))) + 1  # 58 bytes with the newline
    with PartWriter(tmp_path / "out.jsonl", max_bytes=2 * size + 10) as writer:
        for _ in range(5):
            writer.write(line)
    assert writer.lines_per_part == [2, 2, 1]
    assert all(p.stat().st_size <= 2 * size + 10 for p in writer.parts)


def test_a_line_larger_than_the_size_limit_still_gets_a_part(tmp_path):
    with PartWriter(tmp_path / "out.jsonl", max_bytes=10) as writer:
        writer.write({"custom_id": "far longer than ten bytes"})
        writer.write({"custom_id": "again"})
    assert writer.lines_per_part == [1, 1]


def test_nothing_written_makes_no_file(tmp_path):
    with PartWriter(tmp_path / "out.jsonl") as writer:
        pass
    assert writer.parts == [] and not (tmp_path / "out.jsonl").exists()


def test_openai_batch_output_lines():
    ok = {
        "id": "batch_req_1",
        "custom_id": "k1",
        "response": {
            "status_code": 200,
            "request_id": "r",
            "body": CHAT | {"usage": {"total_tokens": 9}},
        },
        "error": None,
    }
    result = parse_result_line(json.dumps(ok), 1)
    assert result.ok and result.text == "positive" and result.usage == {"total_tokens": 9}
    failed = {"id": "b", "custom_id": "k2", "response": None,
              "error": {"code": "batch_expired", "message": "not done in 24h"}}  # fmt: skip
    assert parse_result_line(json.dumps(failed), 2).error == (
        "batch error: batch_expired: not done in 24h"
    )
    http_error = {"id": "b", "custom_id": "k3", "error": None, "response": {
        "status_code": 400, "request_id": "r",
        "body": {"error": {"message": "max_tokens is too large", "code": None}}}}  # fmt: skip
    assert parse_result_line(json.dumps(http_error), 3).error == (
        "batch error: HTTP 400 (max_tokens is too large)"
    )


def test_vllm_run_batch_output_lines():
    """vLLM writes the same shape; its errors are plain strings, and older versions write no
    ``status_code`` (the answer is then the body's)."""
    current = {"id": "vllm-1", "custom_id": "k1", "error": None,
               "response": {"status_code": 200, "request_id": "vllm-batch-1", "body": CHAT}}  # fmt: skip
    older = {"id": "vllm-2", "custom_id": "k2", "error": None,
             "response": {"request_id": "vllm-batch-2", "body": CHAT}}  # fmt: skip
    failed = {"id": "vllm-3", "custom_id": "k3",
              "response": {"status_code": 400, "request_id": "vllm-batch-3", "body": None},
              "error": "The model `x` does not exist."}  # fmt: skip
    assert parse_result_line(json.dumps(current), 1).text == "positive"
    assert parse_result_line(json.dumps(older), 2).text == "positive"
    assert parse_result_line(json.dumps(failed), 3).error == (
        "batch error: The model `x` does not exist."
    )


def test_lines_that_are_not_results_are_numbered():
    good = json.dumps({"custom_id": "k", "response": {"status_code": 200, "body": CHAT}})
    parsed = parse_results(
        enumerate([good, "garbage", '{"id": "no custom id"}', "[1, 2]", good[:20]], start=1)
    )
    assert [r.key for r in parsed.results] == ["k"]
    assert parsed.invalid_lines == [2, 3, 4, 5]


def test_a_response_without_text_is_a_line_error():
    empty = {"custom_id": "k", "response": {"status_code": 200, "body": {"choices": []}}}
    assert parse_result_line(json.dumps(empty), 1).error == (
        "batch error: the response has no choices"
    )
    tool = {"custom_id": "k", "response": {"status_code": 200,
            "body": {"choices": [{"message": {"content": None}}]}}}  # fmt: skip
    assert parse_result_line(json.dumps(tool), 1).error == "batch error: the response has no text"


def test_a_part_that_cannot_be_created_leaves_no_part_and_says_why(tmp_path, monkeypatch):
    """Issue 20 item 19: a part the folder refused was listed all the same, so closing the
    writer renamed a file that did not exist and "No such file or directory" hid the cause.
    The OS's error comes out, and the parts written before it are removed."""
    import errno
    import pathlib

    real_open = pathlib.Path.open

    def refuse_the_second_part(self, mode="r", *args, **kwargs):
        if self.name == "out-002.jsonl":
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "open", refuse_the_second_part)
    with pytest.raises(PermissionError), PartWriter(tmp_path / "out.jsonl", max_lines=1) as writer:
        for i in range(3):
            writer.write({"custom_id": str(i)})
    assert writer.parts == [] and list(tmp_path.iterdir()) == []


def test_request_lines_are_told_apart_from_results():
    """Issue 20 item 18: a request file given as results is recognised, not read as results
    that have no response."""
    request = json.dumps(request_line("k1", "m", [{"role": "user", "content": "hi"}], {}))
    good = json.dumps({"custom_id": "k2", "response": {"status_code": 200, "body": CHAT}})
    failed = json.dumps({"custom_id": "k3", "response": None, "error": {"code": "x"}})
    parsed = parse_results(enumerate([request, good, failed, "garbage"], start=1))
    assert parsed.request_lines == [1]
    assert [r.key for r in parsed.results] == ["k2", "k3"] and parsed.invalid_lines == [4]
