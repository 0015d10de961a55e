"""The release gate's verdict as JUnit XML (the Jenkins / Surefire format that GitHub's and
GitLab's test reporters read): one ``<testsuite>`` per relation of a judged run, one
``<testcase>`` per case.

- A FAIL case is a ``<failure>`` in a relation the gate failed (or that regressed against its
  baseline), carrying the source input, the follow-up input, both outputs and a one-line diff of
  the outputs. In a relation that holds, a FAIL case is a violation the threshold tolerates: the
  testcase passes and the same text goes to its ``<system-out>``, so the report is red exactly
  where the gate is.
- An ERROR case is an ``<error>``, a SKIP case ``<skipped>`` with its reason.
- Each suite's ``<properties>`` hold the gated rate, its 95% interval, the noise floor, n (all
  cases) and judged (PASS + FAIL), the threshold, the mode and the verdict.

Model output is data: characters XML 1.0 cannot carry (control characters) are replaced, and
the writer escapes the rest.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from app.analysis.release_gate import FAILED, RelationVerdict
from app.analysis.release_report import GateReport
from app.reports.diffing import diff_line

# Characters outside XML 1.0's Char production (tabs, newlines and carriage returns are allowed).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: object) -> str:
    """``value`` as text an XML 1.0 document can hold (each forbidden character → U+FFFD)."""
    return _NOT_XML.sub("\ufffd", "" if value is None else str(value))


def _number(value: float | int | None) -> str:
    if value is None:
        return "none"
    return str(value) if isinstance(value, int) else f"{value:.6g}"


def _properties(suite: ET.Element, verdict: RelationVerdict, mode: str) -> None:
    properties = ET.SubElement(suite, "properties")
    gated = verdict.gated
    for name, value in (
        ("run_id", verdict.run_id),
        ("model", verdict.model),
        ("task", verdict.task_id),
        ("role", verdict.role),
        ("rate", _number(gated.rate)),
        ("ci_low", _number(gated.ci_low)),
        ("ci_high", _number(gated.ci_high)),
        ("violation_rate", _number(gated.violation_rate)),
        ("noise_floor", _number(gated.noise_floor)),
        ("n", _number(verdict.n)),
        ("judged", _number(gated.judged)),
        ("threshold", _number(verdict.threshold)),
        ("mode", mode),
        ("verdict", verdict.outcome),
    ):
        ET.SubElement(properties, "property", name=name, value=xml_text(value))


def case_text(case) -> str:
    """What a reader needs to see a violation: both inputs, both outputs, the diff."""
    source = case.source_prompt or " | ".join(str(v) for v in case.source_input.values())
    followup = case.followup_prompt or " | ".join(
        str(v) for v in (case.followup_input or {}).values()
    )
    return "\n".join(
        [
            f"source input:    {source}",
            f"follow-up input: {followup}",
            f"source output:   {case.source_output or ''}",
            f"follow-up output: {case.followup_output or ''}",
            f"output diff:     {diff_line(case.source_output, case.followup_output)}",
            f"reason:          {case.reason}",
        ]
    )


def _testcase(suite: ET.Element, case, verdict: RelationVerdict, red: bool) -> None:
    testcase = ET.SubElement(
        suite,
        "testcase",
        name=xml_text(f"{case.id} (sample {case.sample_id}, repeat {case.repeat_index})"),
        classname=xml_text(f"{verdict.model}.{verdict.task_id}.{verdict.relation_id}"),
        time="0",
    )
    verdict_name = str(case.verdict)
    if verdict_name == "FAIL" and red:
        failure = ET.SubElement(
            testcase, "failure", message=xml_text(case.reason or "violation"), type="violation"
        )
        failure.text = xml_text(case_text(case))
    elif verdict_name == "FAIL":
        out = ET.SubElement(testcase, "system-out")
        out.text = xml_text("violation within the threshold\n" + case_text(case))
    elif verdict_name == "ERROR":
        error = ET.SubElement(testcase, "error", message=xml_text(case.reason), type="error")
        error.text = xml_text(case.reason)
    elif verdict_name == "SKIP":
        ET.SubElement(testcase, "skipped", message=xml_text(case.reason))


def junit_tree(store, report: GateReport) -> ET.ElementTree:
    """The report as a ``<testsuites>`` document, cases read from ``store``."""
    regressed = {(c.run_id, c.relation_id) for c in report.regressions}
    root = ET.Element("testsuites", name="morphscope gate")
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for run in report.runs:
        cases_by_relation: dict[str, list] = {}
        for case in store.cases_for(run_ids=[run.run.id]):
            cases_by_relation.setdefault(case.relation_id, []).append(case)
        for verdict in run.verdicts:
            red = verdict.outcome == FAILED or (run.run.id, verdict.relation_id) in regressed
            cases = cases_by_relation.get(verdict.relation_id, [])
            counts = {
                "tests": len(cases),
                "failures": verdict.n_fail if red else 0,
                "errors": verdict.n_error,
                "skipped": verdict.n_skip,
            }
            suite = ET.SubElement(
                root,
                "testsuite",
                name=xml_text(verdict.relation_id),
                id=xml_text(f"{run.run.id}/{verdict.relation_id}"),
                package=xml_text(f"{verdict.model}.{verdict.task_id}"),
                timestamp=xml_text(run.run.created_at[:19]),
                time="0",
                **{key: str(value) for key, value in counts.items()},
            )
            _properties(suite, verdict, report.settings.mode)
            for case in cases:
                _testcase(suite, case, verdict, red)
            for key, value in counts.items():
                totals[key] += value
    root.attrib.update({key: str(value) for key, value in totals.items()})
    return ET.ElementTree(root)


def write_junit(store, report: GateReport, path: Path) -> None:
    """Write the JUnit XML file (UTF-8, with an XML declaration)."""
    tree = junit_tree(store, report)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
