"""`make mutation`: mutmut on the engine's critical modules, each with its own fast tests.

Each group below mutates some functions (or whole modules) and runs only the tests that exercise
them, in a copy of the tree under ``test-artifacts/mutation/<group>/`` (so concurrent edits to
the checkout do not change a run halfway). The report goes to
``test-artifacts/mutation/report.md`` and ``report.json``: per module, the number of mutants, how
many the tests killed, which survived (with mutmut's diff), and the score with and without the
mutants listed as equivalent in ``tests/mutation/EQUIVALENT.md``.

    python tests/mutation/run.py                 # every group
    python tests/mutation/run.py runner store    # some groups
    python tests/mutation/run.py --jobs 2        # mutmut's --max-children

Not run by CI: the whole run takes tens of minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "test-artifacts" / "mutation"
EQUIVALENT = Path(__file__).with_name("EQUIVALENT.md")
PYTEST_ARGS = ["-p", "no:cacheprovider", "-m", "not slow", "-q"]
# The runner's property test draws 30 examples in CI; a mutant runs it again for each survivor.
PROPERTY_EXAMPLES = "8"
KILLED = {"killed", "timeout", "segfault", "caught by type check"}


@dataclass(frozen=True)
class Group:
    """One mutmut run: the files it mutates, which of their functions, and the tests it runs."""

    name: str
    files: tuple[str, ...]
    mutants: tuple[str, ...]  # mutmut name globs; ("*",) = every function of ``files``
    tests: tuple[str, ...]


GROUPS = (
    Group(
        "runner",
        ("app/engine/plan.py", "app/engine/calls.py"),
        (
            "app.engine.plan.x_job_batches__mutmut_*",
            "app.engine.plan.x_plan_cases__mutmut_*",
            "app.engine.plan.x__make_followups__mutmut_*",
            "app.engine.plan.x__cases_of__mutmut_*",
            "app.engine.plan.xǁPartnersǁ*",
            "app.engine.calls.x_case_calls__mutmut_*",
            "app.engine.calls.xǁCallCacheǁ*",
        ),
        (
            "tests/test_runner_pairing.py",
            "tests/test_call_keys.py",
            "tests/test_runner_mock.py",
            "tests/test_mutation_kills.py",
        ),
    ),
    Group(
        "store",
        ("core/identity.py", "storage/busy.py", "storage/case_verbs.py"),
        (
            "core.identity.*",
            "storage.busy.x_retry_when_busy__mutmut_*",
            "storage.case_verbs.xǁCaseVerbsǁrecord_cases__mutmut_*",
        ),
        (
            "tests/test_call_keys.py",
            "tests/test_store.py",
            "tests/test_mutation_kills.py",
            "tests/test_engine_stage_kills.py",
        ),
    ),
    Group(
        "batch",
        ("app/batch/export.py", "app/batch/importer.py"),
        ("app.batch.export.*", "app.batch.importer.*"),
        ("tests/test_batch.py", "tests/test_batch_survivors.py", "tests/test_mutation_kills.py"),
    ),
    Group(
        "thresholds",
        ("core/thresholds.py", "app/analysis/proportions.py"),
        ("core.thresholds.*", "app.analysis.proportions.*"),
        (
            "tests/test_thresholds.py",
            "tests/test_metrics.py",
            "tests/test_stats.py",
            "tests/test_mutation_kills.py",
        ),
    ),
    Group(
        "metrics",
        (
            "app/analysis/metrics.py",
            "app/analysis/aggregates.py",
            "app/analysis/rates.py",
            "app/analysis/noise_floor.py",
            "app/analysis/relation_roles.py",
            "app/analysis/severity.py",
            "app/analysis/case_fields.py",
            "app/analysis/consistency.py",
        ),
        (
            "app.analysis.metrics.*",
            "app.analysis.aggregates.*",
            "app.analysis.rates.*",
            "app.analysis.noise_floor.*",
            "app.analysis.relation_roles.*",
            "app.analysis.severity.*",
            "app.analysis.case_fields.*",
            "app.analysis.consistency.*",
        ),
        (
            "tests/test_metrics.py",
            "tests/test_si_metrics.py",
            "tests/test_mutation_kills.py",
            "tests/test_metrics_survivors.py",
            "tests/test_counted_metrics.py",
            "tests/test_answer_equivalence.py",
        ),
    ),
)


def equivalent_mutants() -> dict[str, str]:
    """The mutants listed as equivalent: ``- `name`: reason`` lines of EQUIVALENT.md."""
    if not EQUIVALENT.exists():
        return {}
    found = {}
    for line in EQUIVALENT.read_text().splitlines():
        match = re.match(r"\s*[-*]\s+`([^`]+)`\s*:?\s*(.*)", line)
        if match:
            found[match[1]] = match[2]
    return found


def copy_tree(work: Path) -> None:
    """The checkout's tracked and untracked-but-not-ignored files, copied to ``work``."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / name.decode()
        if source.is_file():
            target = work / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def toml_list(items) -> str:
    return "[" + ", ".join(json.dumps(str(item)) for item in items) + "]"


def configure(work: Path, group: Group) -> None:
    packages = sorted({Path(f).parts[0] for f in group.files} | {"app", "core", "storage"})
    others = [p for p in ("relations", "pages", "datasets", "bench", "streamlit_app.py")]
    (work / "pyproject.toml").write_text(
        (work / "pyproject.toml").read_text()
        + "\n[tool.mutmut]\n"
        + f"source_paths = {toml_list(packages)}\n"
        + f"also_copy = {toml_list(others)}\n"
        + f"only_mutate = {toml_list(group.files)}\n"
        + f"pytest_add_cli_args_test_selection = {toml_list(t for t in group.tests if (work / t).exists())}\n"
        + f"pytest_add_cli_args = {toml_list(PYTEST_ARGS)}\n"
        + "use_git_change_detection = false\n"
        # A mutant that hangs a test (a future never resolved) is a timeout, i.e. killed: give
        # up on it after 3× the tests' own time, not mutmut's default 15×.
        + "timeout_multiplier = 3.0\n"
    )


# Appended to the copy's tests/conftest.py: under mutation the machine is loaded (two mutants at
# once, beside other work), and a hypothesis health check or deadline that fails there would
# stop mutmut's first run of the tests or count a mutant as killed for the wrong reason.
HYPOTHESIS_PROFILE = """

from hypothesis import HealthCheck as _HealthCheck, settings as _settings

_settings.register_profile(
    "mutation", deadline=None, suppress_health_check=list(_HealthCheck), derandomize=True
)
_settings.load_profile("mutation")
"""


def results(work: Path, mutmut: list[str]) -> dict[str, str]:
    listed = subprocess.run(
        [*mutmut, "results", "--all", "true"], cwd=work, capture_output=True, text=True
    ).stdout
    found = {}
    for line in listed.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep:
            found[name] = status
    return found


def diff(work: Path, mutmut: list[str], name: str) -> str:
    shown = subprocess.run([*mutmut, "show", name], cwd=work, capture_output=True, text=True)
    lines = [line for line in shown.stdout.splitlines() if line.startswith(("+", "-", "@@"))]
    return "\n".join(line for line in lines if not line.startswith(("+++", "---")))


def run_group(group: Group, jobs: int) -> tuple[float, int]:
    """Run mutmut on the group in a fresh copy of the tree: (seconds, mutmut's exit code)."""
    work = OUT / group.name
    copy_tree(work)
    configure(work, group)
    with (work / "tests" / "conftest.py").open("a") as conftest:
        conftest.write(HYPOTHESIS_PROFILE)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs), *group.mutants],
        cwd=work,
        capture_output=True,
        text=True,
        env={"MORPHSCOPE_PROPERTY_EXAMPLES": PROPERTY_EXAMPLES, **os.environ},
    )
    seconds = time.monotonic() - started
    (work / "mutmut-run.log").write_text(proc.stdout[-200_000:] + proc.stderr[-200_000:])
    (work / "mutmut-seconds.txt").write_text(f"{seconds:.1f}\n")
    return seconds, proc.returncode


def collect(group: Group, equivalent: dict[str, str]) -> dict:
    """The group's results, as mutmut recorded them in its work folder."""
    import fnmatch

    work = OUT / group.name
    mutmut = [sys.executable, "-m", "mutmut"]
    timing = work / "mutmut-seconds.txt"
    seconds = float(timing.read_text()) if timing.exists() else 0.0
    statuses = {
        name: status
        for name, status in results(work, mutmut).items()
        if any(fnmatch.fnmatch(name, pattern) for pattern in group.mutants)
        and status not in {"not checked", "skipped"}
    }
    modules: dict[str, dict] = {}
    for name, status in sorted(statuses.items()):
        module = name.split(".x")[0] if ".x" in name else name.rsplit(".", 1)[0]
        entry = modules.setdefault(
            module, {"mutants": 0, "killed": 0, "equivalent": 0, "survived": []}
        )
        entry["mutants"] += 1
        if status in KILLED:
            entry["killed"] += 1
        elif name in equivalent:
            entry["equivalent"] += 1
        else:
            entry["survived"].append(
                {"name": name, "status": status, "diff": diff(work, mutmut, name)}
            )
    for entry in modules.values():
        entry["score"] = entry["killed"] / entry["mutants"] if entry["mutants"] else None
        counted = entry["mutants"] - entry["equivalent"]
        entry["score_without_equivalent"] = entry["killed"] / counted if counted else None
    return {"group": group.name, "seconds": round(seconds, 1), "modules": modules}


def write_report(reports: list[dict]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "report.json").write_text(json.dumps(reports, indent=2))
    lines = [
        "# Mutation report (mutmut)",
        "",
        "| group | module | mutants | killed | equivalent | survived | score | score without equivalent | time |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for report in reports:
        for module, entry in report["modules"].items():
            lines.append(
                f"| {report['group']} | {module} | {entry['mutants']} | {entry['killed']} | "
                f"{entry['equivalent']} | {len(entry['survived'])} | {entry['score']:.1%} | "
                f"{entry['score_without_equivalent']:.1%} | {report['seconds']:.0f} s |"
            )
    lines.append("")
    for report in reports:
        for entry in report["modules"].values():
            for survivor in entry["survived"]:
                lines += [
                    f"## {survivor['name']} ({survivor['status']})",
                    "```diff",
                    survivor["diff"],
                    "```",
                    "",
                ]
    (OUT / "report.md").write_text("\n".join(lines))
    print("\n".join(lines[: 4 + sum(len(r["modules"]) for r in reports)]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="*", help=f"some of {[g.name for g in GROUPS]}")
    parser.add_argument("--jobs", type=int, default=2, help="mutmut --max-children")
    parser.add_argument(
        "--report-only", action="store_true", help="report the last run's results, run nothing"
    )
    args = parser.parse_args()
    chosen = [g for g in GROUPS if not args.groups or g.name in args.groups]
    equivalent = equivalent_mutants()
    reports = []
    for group in chosen:
        if not args.report_only:
            print(f"mutating {', '.join(group.files)} …", flush=True)
            seconds, _ = run_group(group, args.jobs)
            print(f"  {seconds:.0f} s", flush=True)
        reports.append(collect(group, equivalent))
    previous = OUT / "report.json"
    if args.groups and previous.exists():  # keep the other groups' last results
        kept = [r for r in json.loads(previous.read_text()) if r["group"] not in args.groups]
        reports = kept + reports
    write_report(reports)
    return 0


if __name__ == "__main__":
    sys.exit(main())
