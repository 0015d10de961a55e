"""The `morphscope` command's surface: every command and option explains itself, `--version`
answers, and the console script pyproject.toml declares is the CLI's entry point."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from app.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, action, parent parser) for every action of the parser tree."""
    for action in parser._actions:
        yield path, action, parser
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from walk(child, (*path, name))


def test_every_option_and_argument_has_help_text():
    missing = [
        f"{' '.join(path) or 'morphscope'} {action.option_strings or action.dest}"
        for path, action, _ in walk(build_parser())
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
        and not (action.help or "").strip()
    ]
    assert missing == []


def test_every_help_page_formats():
    """A stray ``%`` in a help text breaks ``--help`` of its command only: format them all."""
    for _, _, parser in walk(build_parser()):
        assert parser.format_help()


def test_every_command_has_a_one_line_help():
    commands = []
    for path, action, _ in walk(build_parser()):
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                commands.append((*path, choice.dest))
                assert choice.help and "\n" not in choice.help, choice.dest
    # The walk sees the nested groups too (else this test could pass on an empty tree).
    assert {("run",), ("gate",), ("baseline",), ("batch", "export")} <= set(commands)


def test_help_lists_each_top_level_command_on_its_own_line(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # a terminal's usual width: a long help would wrap
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: morphscope")
    for command in ("relations", "transform", "run", "delete-run", "report", "export",
                    "import", "batch", "gate", "baseline"):  # fmt: skip
        lines = [line for line in out.splitlines() if line.split()[:1] == [command]]
        assert len(lines) == 1, command
        assert len(lines[0].split()) > 2, f"{command} has no one-line description"
    listing = out.split("commands:", 1)[1].splitlines()[2:]
    wrapped = [line for line in listing if line.startswith(" " * 6)]
    assert wrapped == [], "a command's description runs onto a second line"


def test_version_is_pyprojects(capsys):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"morphscope {version}\n"


def test_the_declared_console_script_is_the_cli():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["morphscope"].partition(":")
    assert getattr(importlib.import_module(module), name).__name__ == "console"


def test_python_dash_m_app_still_runs_and_names_itself():
    done = subprocess.run(
        [sys.executable, "-m", "app", "--help"], capture_output=True, text=True, cwd=ROOT,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0
    assert done.stdout.startswith("usage: python -m app")
