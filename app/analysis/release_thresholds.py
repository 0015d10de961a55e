"""The release gate's settings: the highest violation rate each relation may show, the rule that
judges a rate against it, and the TOML file they are kept in.

(The *release gate* — ``morphscope gate``, ``app.analysis.release_gate`` — decides whether a
model passes a build. It is not the *validity gate* of ``relations.validity``, which rejects a
follow-up before it is sent.)

The file (every key optional)::

    mode = "significant"        # or "strict"
    max = 0.10                  # every relation's highest rate
    allow_errors = false
    max_increase = 0.0          # against a baseline: the increase of a rate that is tolerated

    [relations]                 # per relation; a glob such as "char.*" matches several
    "char.*" = 0.20

    [tasks.sentiment]           # per task: the same max and [relations] again
    max = 0.05
    relations = { "word.antonym" = 0.30 }

The most specific threshold wins: the task's relation entry, the task's ``max``, the file's
relation entry, then ``max``; among relation entries an exact id beats a glob, a longer glob a
shorter one. A relation that none of them names is not gated.
"""

from __future__ import annotations

import fnmatch
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

SIGNIFICANT = "significant"
STRICT = "strict"
MODES = (SIGNIFICANT, STRICT)
MODE_HELP = {
    SIGNIFICANT: "fail when the rate's 95% interval lies wholly above the max (evidence fails)",
    STRICT: "fail unless the rate's 95% interval lies wholly below the max (evidence passes)",
}


class GateConfigError(ValueError):
    """A setting no gate can use; the message names the key (``tasks.qa.max``)."""


RelationLimits = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class TaskThresholds:
    """One task's own thresholds (they take precedence over the file-wide ones)."""

    max_rate: float | None = None
    relation_max: RelationLimits = ()


@dataclass(frozen=True)
class GateSettings:
    """Everything the release gate judges with: thresholds, mode, errors, regressions."""

    max_rate: float | None = None
    relation_max: RelationLimits = ()
    tasks: tuple[tuple[str, TaskThresholds], ...] = ()
    mode: str = SIGNIFICANT
    allow_errors: bool = False
    max_increase: float = 0.0

    def threshold_for(self, task_id: str, relation_id: str) -> float | None:
        """The highest rate ``relation_id`` may show on ``task_id``; None when nothing names it."""
        task = dict(self.tasks).get(task_id, TaskThresholds())
        for found in (
            _most_specific(task.relation_max, relation_id),
            task.max_rate,
            _most_specific(self.relation_max, relation_id),
            self.max_rate,
        ):
            if found is not None:
                return found
        return None

    @property
    def has_thresholds(self) -> bool:
        return (
            self.max_rate is not None
            or bool(self.relation_max)
            or any(t.max_rate is not None or t.relation_max for _, t in self.tasks)
        )

    def with_overrides(
        self,
        *,
        max_rate: float | None = None,
        relation_max: RelationLimits = (),
        mode: str | None = None,
        allow_errors: bool = False,
        max_increase: float | None = None,
    ) -> GateSettings:
        """These settings with the command line's on top (a relation given again replaces it)."""
        given = {pattern for pattern, _ in relation_max}
        kept = tuple((p, r) for p, r in self.relation_max if p not in given)
        return replace(
            self,
            max_rate=self.max_rate if max_rate is None else max_rate,
            relation_max=kept + tuple(relation_max),
            mode=mode or self.mode,
            allow_errors=self.allow_errors or allow_errors,
            max_increase=self.max_increase if max_increase is None else max_increase,
        )


def _most_specific(limits: RelationLimits, relation_id: str) -> float | None:
    exact = [rate for pattern, rate in limits if pattern == relation_id]
    if exact:
        return exact[-1]
    globs = [
        (len(p), i, rate)
        for i, (p, rate) in enumerate(limits)
        if fnmatch.fnmatchcase(relation_id, p)
    ]
    return max(globs)[2] if globs else None


# ------------------------------------------------------------------ reading and checking


def check_rate(value: Any, key: str) -> float:
    """A rate from 0 to 1, else a GateConfigError naming ``key``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GateConfigError(f"{key}: {value!r} is not a number (a rate from 0 to 1)")
    rate = float(value)
    if not (math.isfinite(rate) and 0.0 <= rate <= 1.0):
        raise GateConfigError(f"{key}: {value!r} is not a rate from 0 to 1")
    return rate


def parse_relation_limit(text: str) -> tuple[str, float]:
    """``REL=RATE`` of ``--relation-max`` (REL may be a glob such as ``char.*``)."""
    pattern, sep, rate_text = text.partition("=")
    pattern = pattern.strip()
    if not sep or not pattern:
        raise GateConfigError(f"--relation-max {text!r}: expected RELATION=RATE, e.g. char.*=0.2")
    try:
        rate = float(rate_text)
    except ValueError:
        raise GateConfigError(f"--relation-max {pattern}: {rate_text!r} is not a number") from None
    return pattern, check_rate(rate, f"--relation-max {pattern}")


def _relation_table(table: Any, key: str) -> RelationLimits:
    if not isinstance(table, Mapping):
        raise GateConfigError(f"{key}: expected a table of relation = rate")
    return tuple((str(p), check_rate(rate, f"{key}.{p}")) for p, rate in table.items())


def _reject_unknown(table: Mapping[str, Any], known: set[str], prefix: str) -> None:
    for key in table:
        if key not in known:
            where = f"{prefix}{key}"
            raise GateConfigError(f"{where}: unknown key (known: {', '.join(sorted(known))})")


_TOP_KEYS = {"mode", "max", "allow_errors", "max_increase", "relations", "tasks"}
_TASK_KEYS = {"max", "relations"}


def settings_from_mapping(document: Mapping[str, Any]) -> GateSettings:
    """Settings from a parsed TOML document; a GateConfigError names the first bad key."""
    _reject_unknown(document, _TOP_KEYS, "")
    mode = document.get("mode", SIGNIFICANT)
    if mode not in MODES:
        raise GateConfigError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    allow_errors = document.get("allow_errors", False)
    if not isinstance(allow_errors, bool):
        raise GateConfigError(f"allow_errors: {allow_errors!r} is not true or false")
    tasks_table = document.get("tasks", {})
    if not isinstance(tasks_table, Mapping):
        raise GateConfigError("tasks: expected a table per task, e.g. [tasks.sentiment]")
    tasks = []
    for task_id, table in tasks_table.items():
        prefix = f"tasks.{task_id}"
        if not isinstance(table, Mapping):
            raise GateConfigError(f"{prefix}: expected a table with max and relations")
        _reject_unknown(table, _TASK_KEYS, f"{prefix}.")
        task_max = table.get("max")
        tasks.append(
            (
                str(task_id),
                TaskThresholds(
                    max_rate=None if task_max is None else check_rate(task_max, f"{prefix}.max"),
                    relation_max=_relation_table(table.get("relations", {}), f"{prefix}.relations"),
                ),
            )
        )
    file_max = document.get("max")
    return GateSettings(
        max_rate=None if file_max is None else check_rate(file_max, "max"),
        relation_max=_relation_table(document.get("relations", {}), "relations"),
        tasks=tuple(tasks),
        mode=mode,
        allow_errors=allow_errors,
        max_increase=check_rate(document.get("max_increase", 0.0), "max_increase"),
    )


def settings_from_toml(text: str) -> GateSettings:
    """Settings from the TOML file's text (see the module docstring)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GateConfigError(f"not valid TOML: {exc}") from None
    return settings_from_mapping(document)


# ------------------------------------------------------------------ writing


def _toml_key(key: str) -> str:
    bare = key.replace("_", "").replace("-", "").isalnum() and key.isascii()
    return key if bare else '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml_relations(limits: RelationLimits) -> list[str]:
    return [f"{_toml_key(pattern)} = {rate!r}" for pattern, rate in limits]


def settings_to_toml(settings: GateSettings) -> str:
    """The TOML file that :func:`settings_from_toml` reads back as ``settings``."""
    lines = [f'mode = "{settings.mode}"']
    if settings.max_rate is not None:
        lines.append(f"max = {settings.max_rate!r}")
    lines.append(f"allow_errors = {'true' if settings.allow_errors else 'false'}")
    lines.append(f"max_increase = {settings.max_increase!r}")
    if settings.relation_max:
        lines += ["", "[relations]", *_toml_relations(settings.relation_max)]
    for task_id, task in settings.tasks:
        lines += ["", f"[tasks.{_toml_key(task_id)}]"]
        if task.max_rate is not None:
            lines.append(f"max = {task.max_rate!r}")
        if task.relation_max:
            lines += ["", f"[tasks.{_toml_key(task_id)}.relations]"]
            lines += _toml_relations(task.relation_max)
    return "\n".join(lines) + "\n"
