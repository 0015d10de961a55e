"""The release gate's CI outputs: JUnit XML validated against ``tests/junit.xsd`` (the
Jenkins / Surefire format GitHub's and GitLab's reporters read), the Markdown summary and the
GitHub annotations."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from app.cli.main import main
from storage import Store
from tests.gate_data import add_run
from tests.xsd_subset import Schema, SchemaError

SCHEMA = Schema(Path(__file__).with_name("junit.xsd"))
RUN = {
    "si.identity": (45, 5, 0, 0),
    "char.leet": (20, 30, 0, 0),  # 60%, net 50%: fails a max of 0.2
    "sentence.uppercase": (48, 2, 3, 1),  # 4%: holds
}


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "gate.db"
    store = Store(path)
    add_run(store, "run-1", RUN)
    store.close()
    return str(path)


def write_junit(db: str, tmp_path, capsys) -> ET.Element:
    out = tmp_path / "gate.xml"
    assert main(["gate", "--db", db, "--max", "0.2", "--junit", str(out)]) == 1
    capsys.readouterr()
    return ET.parse(out).getroot()


def test_junit_validates_against_the_schema(db, tmp_path, capsys):
    SCHEMA.validate(write_junit(db, tmp_path, capsys))


def test_schema_check_rejects_what_readers_would(db, tmp_path, capsys):
    """Guards the test above: the validator does fail documents that break the schema."""
    root = write_junit(db, tmp_path, capsys)
    suite = root.find("testsuite")
    del suite.attrib["tests"]
    with pytest.raises(SchemaError, match="required attribute 'tests'"):
        SCHEMA.validate(root)
    root = write_junit(db, tmp_path, capsys)
    case = root.find("testsuite/testcase")
    ET.SubElement(case, "failure")
    ET.SubElement(case, "error")  # two outcomes in one test case
    with pytest.raises(SchemaError, match="unexpected <error>"):
        SCHEMA.validate(root)
    root = write_junit(db, tmp_path, capsys)
    root.find("testsuite").set("failures", "-1")
    with pytest.raises(SchemaError, match="not a non-negative integer"):
        SCHEMA.validate(root)


def test_junit_suites_cases_and_properties(db, tmp_path, capsys):
    root = write_junit(db, tmp_path, capsys)
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == set(RUN)
    leet = suites["char.leet"]
    assert (leet.get("tests"), leet.get("failures"), leet.get("errors")) == ("50", "30", "0")
    properties = {p.get("name"): p.get("value") for p in leet.find("properties")}
    assert properties["rate"] == "0.5"  # 30/50 − 5/50
    assert properties["noise_floor"] == "0.1" and properties["n"] == "50"
    assert properties["threshold"] == "0.2" and properties["verdict"] == "fail"
    assert float(properties["ci_low"]) < 0.5 < float(properties["ci_high"])
    failure = leet.find("testcase/failure")
    assert "source input:    Sentiment of: review number" in failure.text
    assert "follow-up output: negative" in failure.text
    assert "output diff:     -positive +negative" in failure.text
    upper = suites["sentence.uppercase"]
    # A relation that holds: its 2 FAIL cases are tolerated violations, not red test cases.
    assert upper.get("failures") == "0" and upper.find("testcase/failure") is None
    assert len(upper.findall("testcase/system-out")) == 2
    assert len(upper.findall("testcase/error")) == 1 and len(upper.findall("testcase/skipped")) == 3
    assert root.get("tests") == str(50 + 50 + 54)


def test_junit_carries_control_characters_of_model_output_as_valid_xml(tmp_path, capsys):
    path = tmp_path / "ctl.db"
    store = Store(path)
    add_run(store, "run-1", {"char.leet": (0, 2, 0, 0)})
    store._db.execute("UPDATE cases SET followup_output = ?", ["bad\x00\x1b[31m <b>&</b>"])
    store._db.conn.commit()
    store.close()
    out = tmp_path / "gate.xml"
    assert main(["gate", "--db", str(path), "--max", "0.1", "--junit", str(out)]) == 1
    failure = ET.parse(out).getroot().find("testsuite/testcase/failure")
    assert "bad\ufffd\ufffd[31m <b>&</b>" in failure.text


def test_markdown_lists_worst_relations_first_with_links_to_cases(db, tmp_path, capsys):
    out = tmp_path / "summary.md"
    assert main(["gate", "--db", db, "--max", "0.2", "--markdown", str(out)]) == 1
    text = out.read_text()
    table = [line for line in text.splitlines() if line.startswith("| ")][1:]  # after the head
    assert table[0].startswith("| FAIL | `char.leet`")
    assert table[1].startswith("| PASS | `sentence.uppercase`")
    assert "](#case-run-1-char-leet-" in table[0]
    assert '<a name="case-run-1-char-leet-' in text and "<pre>" in text
    assert len(text.encode()) < 1024 * 1024


def test_markdown_escapes_model_output(tmp_path, capsys):
    path = tmp_path / "md.db"
    store = Store(path)
    add_run(store, "run-1", {"char.leet": (0, 2, 0, 0)}, model="a|b <i>")
    store._db.execute(
        "UPDATE cases SET followup_output = '![x](http://evil.example/a.png) <img src=x>'"
    )
    store._db.conn.commit()
    store.close()
    out = tmp_path / "summary.md"
    main(["gate", "--db", str(path), "--max", "0.1", "--markdown", str(out)])
    text = out.read_text()
    assert "<img" not in text and "&lt;img src=x&gt;" in text
    assert "| a&#124;b &lt;i&gt; / sentiment |" in text  # the model name stays in its cell
    pre = text[text.index("<pre>") : text.index("</pre>")]
    assert "![x](http://evil.example/a.png)" in pre  # inside <pre>: shown as text, not parsed


def test_markdown_stays_under_a_mebibyte_with_huge_outputs(tmp_path, capsys):
    path = tmp_path / "big.db"
    store = Store(path)
    add_run(
        store, "run-1", {f"char.{name}": (0, 40, 0, 0) for name in ("leet", "delete", "insert")}
    )
    store._db.execute("UPDATE cases SET followup_output = ?", ["x" * 200_000])
    store._db.conn.commit()
    store.close()
    out = tmp_path / "summary.md"
    main(["gate", "--db", str(path), "--max", "0.1", "--markdown", str(out)])
    assert len(out.read_bytes()) < 1024 * 1024


def test_github_annotations_at_most_ten_worst_first(tmp_path, capsys):
    path = tmp_path / "gh.db"
    store = Store(path)
    # 12 relations, each failing; the one with most FAILs first.
    relations = ["char.leet", "char.delete", "char.insert", "char.add_spaces", "char.swap_neighbours",
                 "char.random_replace", "char.shuffle_inner", "sentence.uppercase", "word.synonym",
                 "sentence.identity", "word.tense", "word.plural"]  # fmt: skip
    add_run(store, "run-1", {r: (20 - i, 30 + i, 0, 0) for i, r in enumerate(relations)})
    store.close()
    capsys.readouterr()
    assert main(["gate", "--db", str(path), "--max", "0.1", "--github"]) == 1
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert len(lines) == 10 and all(line.startswith("::error title=") for line in lines)
    assert "word.plural" in lines[0]  # 41 of 50: the worst
    assert "%2C" in lines[0] and "gate FAILED" in out.err  # the table goes to stderr


def test_schema_check_accepts_a_surefire_style_report():
    """Guards against an over-strict validator: a report written by hand the way Surefire writes
    them (a single-suite root, properties, a skipped case, output streams) is accepted."""
    document = ET.fromstring(
        """<testsuite name="com.example.AppTest" tests="3" failures="1" errors="0" skipped="1"
               time="0.052" timestamp="2026-11-20T10:00:00" hostname="ci">
             <properties><property name="java.version" value="21"/></properties>
             <testcase name="adds" classname="com.example.AppTest" time="0.001"/>
             <testcase name="divides" classname="com.example.AppTest" time="0.010">
               <failure message="expected 2" type="AssertionError">stack</failure>
               <system-out>log line</system-out>
             </testcase>
             <testcase name="later" classname="com.example.AppTest"><skipped/></testcase>
             <system-err></system-err>
           </testsuite>"""
    )
    SCHEMA.validate(document)
