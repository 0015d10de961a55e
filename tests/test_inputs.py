"""Pasted and uploaded inputs: formats, encodings, limits and the messages users see."""

import codecs
import json
import random

import pandas as pd
import pytest

from app.inputs.column_mapping import suggest_mapping
from app.inputs.encodings import decode_bytes
from app.inputs.errors import InputError
from app.inputs.input_files import load_input_file
from app.inputs.limits import MAX_ROWS
from app.inputs.pasted import parse_pasted, samples_from_pasted
from app.inputs.samples import auto_samples, samples_from_frame
from app.inputs.uploads import encoding_note, read_upload
from core.types import Sample

QA = ("context", "question")

# ---------------------------------------------------------------- pasting


def test_paste_one_input_per_line_ignores_blank_lines():
    text = "The room was lovely.\n\n   \n  The bus was late.  \r\n"
    assert parse_pasted(text, ["text"]) == [
        {"text": "The room was lovely."},
        {"text": "The bus was late."},
    ]


def test_paste_multi_field_with_tab_and_triple_bar():
    text = "Ann has a cat.\tWhat does Ann have?\nBo lives in Oslo. ||| Where does Bo live?\n"
    assert parse_pasted(text, QA) == [
        {"context": "Ann has a cat.", "question": "What does Ann have?"},
        {"context": "Bo lives in Oslo.", "question": "Where does Bo live?"},
    ]


def test_paste_multi_field_plain_lines_explain_the_format():
    text = "Ann has a cat.\tWhat does Ann have?\nno separator here\na ||| b ||| c\n"
    with pytest.raises(InputError) as caught:
        parse_pasted(text, QA)
    message = caught.value.message
    assert "line 2 has 1 part(s), line 3 has 3 part(s)" in message
    assert "separated by a tab or ' ||| ' (<context> ||| <question>)" in message
    assert '{"context": "...", "question": "..."}' in message


def test_paste_multi_field_empty_part_is_reported():
    with pytest.raises(InputError, match=r"line 1 has an empty question"):
        parse_pasted("Ann has a cat. ||| \n", QA)


def test_paste_json_lines_maps_keys_and_synonyms():
    text = '{"passage": "Ann has a cat.", "query": "Pet?"}\n\n{"passage": "B", "query": 7}'
    assert parse_pasted(text, QA) == [
        {"context": "Ann has a cat.", "question": "Pet?"},
        {"context": "B", "question": "7"},
    ]


def test_paste_json_lines_errors_name_the_line():
    with pytest.raises(InputError, match=r"line 3 is not valid JSON"):
        parse_pasted('{"text": "a"}\n\nnot json\n', ["text"])
    with pytest.raises(InputError, match=r"no JSON key for the field\(s\) question"):
        parse_pasted('{"context": "a", "other": "b"}', QA)
    with pytest.raises(InputError, match=r"missing or empty values: line 2 \(question\)"):
        parse_pasted('{"context": "a", "question": "b"}\n{"context": "a", "question": " "}', QA)


def test_paste_json_array_line_is_not_an_object():
    # A first line starting with '{' switches to JSON mode; an array line is then rejected.
    with pytest.raises(InputError, match=r"line 2 is JSON but not an object"):
        parse_pasted('{"text": "a"}\n["b"]\n', ["text"])


def test_paste_empty_and_oversized_inputs_are_rejected():
    with pytest.raises(InputError, match="nothing to run"):
        parse_pasted(" \n\n\t\n", ["text"])
    with pytest.raises(InputError, match=r"line 2 is 100,001 characters long"):
        parse_pasted("ok\n" + "x" * 100_001, ["text"])
    with pytest.raises(InputError, match=r"5,001 rows; at most 5,000"):
        parse_pasted("a\n" * (MAX_ROWS + 1), ["text"])


def test_samples_from_pasted_keeps_reference_and_meta_from_json_lines():
    text = '{"problem": "2+2?", "answer": "4", "category": "Mathematics"}'
    assert samples_from_pasted(text, ["problem"]) == [
        Sample(fields={"problem": "2+2?"}, reference="4", meta={"category": "Mathematics"})
    ]
    assert samples_from_pasted("2+2?", ["problem"]) == [Sample(fields={"problem": "2+2?"})]


# ---------------------------------------------------------------- mapping


def test_suggest_mapping_exact_case_insensitive_and_synonyms():
    assert suggest_mapping(["Review", "stars"], ["text"]) == {"text": "Review"}
    assert suggest_mapping(["TEXT", "review"], ["text"]) == {"text": "TEXT"}
    assert suggest_mapping(["Passage", "Query", "answer"], QA) == {
        "context": "Passage",
        "question": "Query",
    }
    # 'question' is a synonym of 'problem', but an exact 'question' column goes to qa's own field
    assert suggest_mapping(["question", "context"], QA) == {
        "context": "context",
        "question": "question",
    }
    assert suggest_mapping(["question", "gold"], ["problem"]) == {"problem": "question"}
    assert suggest_mapping(["sentence1", "sentence2"], ["premise", "hypothesis"]) == {
        "premise": "sentence1",
        "hypothesis": "sentence2",
    }
    assert suggest_mapping(["id", "notes"], ["text"]) == {"text": None}
    # a lone column serves a single-field task (a .txt upload for the reasoning task)
    assert suggest_mapping(["text"], ["problem"]) == {"problem": "text"}


# ---------------------------------------------------------------- uploads


def test_csv_upload_to_samples():
    data = (
        b"review,label,source\n"
        b'"Great, really great.",positive,web\n'
        b'"She said ""fine"".",neutral,mail\n'
        b'"two\nlines",negative,web\n'
    )
    frame = read_upload("reviews.csv", data)
    assert list(frame.columns) == ["review", "label", "source"]
    # the line each row starts on, for messages (the third record spans lines 4 and 5)
    assert frame.attrs == {"encoding": "utf-8", "format": "csv", "line_numbers": (2, 3, 4)}
    assert encoding_note(frame) is None
    mapping = suggest_mapping(frame.columns, ["text"])
    samples = samples_from_frame(frame, mapping, reference_column="label", meta_columns=["source"])
    assert samples == [
        Sample(
            fields={"text": "Great, really great."}, reference="positive", meta={"source": "web"}
        ),
        Sample(fields={"text": 'She said "fine".'}, reference="neutral", meta={"source": "mail"}),
        Sample(fields={"text": "two\nlines"}, reference="negative", meta={"source": "web"}),
    ]


def test_csv_semicolon_and_tsv_delimiters():
    frame = read_upload("x.csv", b"text;label\nhello, world;positive\n")
    assert frame.to_dict("records") == [{"text": "hello, world", "label": "positive"}]
    frame = read_upload("x.tsv", b"context\tquestion\nA, b.\tWhy?\n")
    assert frame.to_dict("records") == [{"context": "A, b.", "question": "Why?"}]


def test_csv_missing_mapping_is_an_input_error():
    frame = read_upload("x.csv", b"passage,notes\nAnn has a cat.,x\n")
    mapping = suggest_mapping(frame.columns, QA)
    assert mapping == {"context": "passage", "question": None}
    with pytest.raises(InputError, match=r"choose a column for the task field\(s\) question"):
        samples_from_frame(frame, mapping)
    with pytest.raises(InputError, match=r"'query' \(for field 'question'\)"):
        samples_from_frame(frame, {"context": "passage", "question": "query"})
    with pytest.raises(InputError, match=r"'gold' \(for the reference\)"):
        samples_from_frame(frame, {"context": "passage", "question": "notes"}, "gold")


def test_empty_mapped_cells_are_listed_by_row_first_ten():
    rows = [{"text": "" if i % 2 else f"t{i}"} for i in range(30)]
    frame = pd.DataFrame(rows)
    with pytest.raises(InputError) as caught:
        samples_from_frame(frame, {"text": "text"})
    message = caught.value.message
    assert message.startswith("15 row(s) have an empty value in a mapped field: row 2 (text), ")
    assert "row 20 (text) and 5 more" in message
    assert "row 22" not in message


def test_values_become_strings_and_steps_are_read():
    frame = pd.DataFrame(
        [
            {"problem": 12, "answer": 3.5, "steps": ["a", "b"], "n": 1},
            {"problem": "x", "answer": None, "steps": "first\n\nsecond", "n": 2},
        ],
        dtype=object,
    )
    samples = samples_from_frame(
        frame, {"problem": "problem"}, "answer", "steps", meta_columns=["n"]
    )
    assert samples[0] == Sample({"problem": "12"}, "3.5", ("a", "b"), {"n": 1})
    assert samples[1] == Sample({"problem": "x"}, None, ("first", "second"), {"n": 2})


def test_row_limit_has_a_clear_message():
    frame = pd.DataFrame({"text": ["a"] * (MAX_ROWS + 1)})
    with pytest.raises(InputError, match=r"5,001 rows; at most 5,000 rows"):
        samples_from_frame(frame, {"text": "text"})
    with pytest.raises(InputError, match="no rows"):
        samples_from_frame(pd.DataFrame({"text": []}), {"text": "text"})


def test_utf16_with_bom_decodes():
    data = "text,label\ncafé crème,positive\n".encode("utf-16")
    assert data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    frame = read_upload("x.csv", data)
    assert frame.to_dict("records") == [{"text": "café crème", "label": "positive"}]
    assert frame.attrs["encoding"] == "utf-16"
    assert encoding_note(frame) == "read the file as UTF-16"


def test_utf16_without_bom_decodes():
    text, encoding = decode_bytes("text\nnaïve but fine\n".encode("utf-16-le"))
    assert (text, encoding) == ("text\nnaïve but fine\n", "utf-16")


def test_utf8_bom_is_dropped_from_the_header():
    frame = read_upload("x.csv", codecs.BOM_UTF8 + b"text\nok\n")
    assert list(frame.columns) == ["text"]
    assert frame.attrs["encoding"] == "utf-8"


def test_cp1252_falls_back_and_says_so():
    data = "text\nThe café costs 5 € – “worth it”.\n".encode("cp1252")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    frame = read_upload("notes.txt", data)
    assert frame["text"].tolist() == ["text", "The café costs 5 € – “worth it”."]
    assert encoding_note(frame) == "read the file as Windows-1252 (cp1252)"


def test_binary_garbage_is_rejected():
    garbage = random.Random(7).randbytes(4000)
    with pytest.raises(InputError, match=r"binary file \(it contains NUL bytes\)"):
        read_upload("data.csv", garbage)
    no_nul = bytes(b for b in garbage if b not in (0, 0x81, 0x8D, 0x8F, 0x90, 0x9D))
    with pytest.raises(InputError, match="control characters"):
        read_upload("data.txt", no_nul)
    with pytest.raises(InputError, match=r"ZIP archive \(an .xlsx/.docx file\?\)"):
        read_upload("sheet.csv", b"PK\x03\x04" + garbage)


def test_unsupported_extension_too_big_and_empty_files():
    with pytest.raises(InputError, match=r"unsupported file type '.xlsx'"):
        read_upload("sheet.xlsx", b"a,b\n")
    with pytest.raises(InputError, match=r"20.0 MB; the limit is 20 MB"):
        read_upload("big.txt", b"a\n" * (10 * 1024 * 1024 + 1))
    for name in ("empty.csv", "empty.txt", "empty.jsonl"):
        with pytest.raises(InputError, match="the file is empty"):
            read_upload(name, b"  \n\n")
    with pytest.raises(InputError, match="header but no data rows"):
        read_upload("x.csv", b"text,label\n")


def test_huge_line_is_rejected_with_its_number():
    data = b"text\nshort\n" + b"y" * 100_001 + b"\n"
    for name in ("x.csv", "x.txt"):
        with pytest.raises(InputError, match=r"line 3 is 100,001 characters long"):
            read_upload(name, data)
    record = json.dumps({"text": "z" * 100_001}).encode()
    with pytest.raises(InputError, match=r"line 1 is 100,0\d\d characters long"):
        read_upload("x.jsonl", record)
    with pytest.raises(InputError, match=r"item 1: the value of 'text' is 100,001 characters"):
        read_upload("x.json", b"[" + record + b"]")


def test_ragged_csv_rows_and_bad_quoting_name_the_line():
    with pytest.raises(InputError) as caught:
        read_upload("x.csv", b"text,label\na,positive\nb,c,negative\nd\n")
    assert caught.value.message.startswith(
        "the header has 2 columns but some rows do not: line 3 (3 values), line 4 (1 value)."
    )
    with pytest.raises(InputError, match=r"quoted value starting on line 3 is never closed"):
        read_upload("x.csv", b'text,label\na,positive\n"b,negative\nc,neutral\n')
    with pytest.raises(InputError, match=r"bad quoting on line 2"):
        read_upload("x.csv", b'text,label\n"a"b,positive\n')


def test_json_array_and_json_lines():
    array = json.dumps([{"text": "a", "score": 0.9}, {"text": "b", "score": 1}]).encode()
    frame = read_upload("x.json", array)
    assert frame.to_dict("records") == [{"text": "a", "score": 0.9}, {"text": "b", "score": 1}]
    lines = b'{"text": "a", "tag": "x"}\n\n{"text": "b"}\n'
    frame = read_upload("x.jsonl", lines)
    assert list(frame.columns) == ["text", "tag"]
    samples = samples_from_frame(frame, {"text": "text"}, meta_columns=["tag"])
    assert [s.meta for s in samples] == [{"tag": "x"}, {"tag": None}]
    pretty = b'{\n  "rows": [\n    {"text": "a"},\n    {"text": "b"}\n  ]\n}\n'
    assert read_upload("x.json", pretty)["text"].tolist() == ["a", "b"]


def test_bad_json_uploads():
    with pytest.raises(InputError, match=r"line 2 is not valid JSON"):
        read_upload("x.jsonl", b'{"text": "a"}\n{"text": \n')
    with pytest.raises(InputError, match=r"not an object: item 2"):
        read_upload("x.json", b'[{"text": "a"}, "b"]')
    with pytest.raises(InputError, match=r"the JSON is not valid: .* line 1, column"):
        read_upload("x.json", b'[{"text": "a"},')
    with pytest.raises(InputError, match="no rows"):
        read_upload("x.json", b"[]")
    with pytest.raises(InputError, match="expected JSON lines"):
        read_upload("x.jsonl", b"text,label\n")


def test_txt_upload_is_one_row_per_non_empty_line():
    frame = read_upload("x.txt", b"first line\r\n\r\n  second line  \nthird\n")
    assert frame["text"].tolist() == ["first line", "second line", "third"]
    assert list(frame.columns) == ["text"]
    assert frame.attrs["format"] == "txt"


def test_load_input_file_auto_maps_reference_steps_and_meta(tmp_path):
    path = tmp_path / "problems.jsonl"
    rows = [
        {
            "question": "2+3?",
            "solution": "Add.\nFinal answer: 5",
            "steps": ["Add 2 and 3."],
            "level": "Easy",
        }
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert load_input_file(path, ["problem"]) == [
        Sample(
            fields={"problem": "2+3?"},
            reference="Add.\nFinal answer: 5",
            reference_steps=("Add 2 and 3.",),
            meta={"level": "Easy"},
        )
    ]
    with pytest.raises(InputError, match="cannot read"):
        load_input_file(tmp_path / "missing.csv", ["text"])


def test_auto_samples_prefers_the_requested_reference():
    frame = pd.DataFrame([{"text": "ok", "label": "neutral", "score": 0.5}], dtype=object)
    assert auto_samples(frame, ["text"])[0].reference == "neutral"
    sample = auto_samples(frame, ["text"], prefer_reference=["score"])[0]
    assert (sample.reference, sample.meta) == ("0.5", {"label": "neutral"})


def test_input_error_is_a_value_error_with_a_message():
    error = InputError("bad thing")
    assert isinstance(error, ValueError)
    assert error.message == str(error) == "bad thing"


# ---------------------------------------------------------------- issue 20, items 9–14
# Nothing is silently reinterpreted: every text that is not what the user wrote is refused with
# the line (and field) named.

MIXED = b'{"text": "Caf\xc3\xa9 OK"}\n{"text": "Caf\xe9 bad"}\n{"text": "Fine."}\n'


def test_one_cp1252_line_among_utf8_lines_is_refused_not_turned_into_mojibake():
    """Item 12: the whole file was decoded as cp1252, so "Café OK" became "CafÃ© OK"."""
    with pytest.raises(InputError, match=r"mixes encodings: line 2 is not UTF-8") as caught:
        read_upload("mixed.jsonl", MIXED)
    assert "--encoding" in caught.value.message
    several = b"text\nCaf\xc3\xa9\nna\xefve\nok\n\xe9t\xe9\n"
    with pytest.raises(InputError, match=r"lines 3, 5 are not UTF-8"):
        read_upload("x.csv", several)
    # A UTF-8 BOM says the file is UTF-8, so one stray line is a mix even with no other accent.
    with pytest.raises(InputError, match=r"line 3 is not UTF-8"):
        read_upload("x.txt", codecs.BOM_UTF8 + b"plain\nascii\nCaf\xe9\n")


def test_a_file_wholly_in_cp1252_is_still_read_and_an_explicit_encoding_is_honoured(tmp_path):
    frame = read_upload("x.txt", b"plain ascii\nCaf\xe9 \x80 5\n")
    assert frame["text"].tolist() == ["plain ascii", "Café € 5"]
    assert frame.attrs["encoding"] == "cp1252"
    # The user names the file's one encoding: every line is read in it, as asked.
    frame = read_upload("mixed.jsonl", MIXED, encoding="cp1252")
    assert frame["text"].tolist() == ["CafÃ© OK", "Café bad", "Fine."]
    path = tmp_path / "latin.csv"
    path.write_bytes("text\nÀ bientôt\n".encode("latin-1"))
    samples = load_input_file(path, ["text"], encoding="latin-1")
    assert samples == [Sample(fields={"text": "À bientôt"})]
    with pytest.raises(InputError, match=r"line 2 is not valid utf-8"):
        load_input_file(path, ["text"], encoding="utf-8")
    with pytest.raises(InputError, match=r"unknown encoding 'utf-9'"):
        load_input_file(path, ["text"], encoding="utf-9")


NOT_TEXT = [
    ("NUL", "good\nbad\x00one\n", r"line 2 holds a control character \(U\+0000\)"),
    ("escape", "good\n\x1b[31mred\n", r"line 2 holds a control character \(U\+001B\)"),
    ("DEL", "a\x7f\nb\n", r"line 1 holds a control character \(U\+007F\)"),
    ("C1", "a\nb\nc\x85\n", r"line 3 holds a control character \(U\+0085\)"),
    ("surrogate", "a\ud800\n", r"line 1 holds a lone surrogate \(U\+D800"),
]


@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in NOT_TEXT], ids=[c[0] for c in NOT_TEXT]
)
def test_paste_and_upload_refuse_the_same_characters_with_the_same_message(text, message):
    """Item 14: the paste box took NUL and control characters that an upload refused."""
    with pytest.raises(InputError, match=message) as pasted:
        samples_from_pasted(text, ["text"])
    if "\ud800" not in text:  # UTF-8 cannot even encode a lone surrogate
        with pytest.raises(InputError, match=message) as uploaded:
            read_upload("in.txt", text.encode("utf-8"))
        assert uploaded.value.message == pasted.value.message


def test_whitespace_controls_are_text_in_paste_and_upload():
    text = "tab\there\nform\x0cfeed\r\nvertical\x0btab\n"
    assert len(samples_from_pasted(text, ["text"])) == len(read_upload("in.txt", text.encode()))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"text": "a\\u0000b"}', r"line 2: the value of 'text' holds a control character"),
        ('{"text": "\\ud83d"}', r"line 2: the value of 'text' holds a lone surrogate"),
        ('{"text": "ok", "meta": ["\\udc00"]}', r"line 2: the value of 'meta' holds a lone"),
        ('{"te\\u0001xt": "ok"}', r"line 2: a key holds a control character"),
    ],
)
def test_json_escapes_cannot_smuggle_in_what_is_not_text(line, message):
    """Item 9: "\\ud800" in a JSON line became a string that SQLite could not store."""
    text = '{"text": "fine \\ud83d\\ude00"}\n' + line + "\n"  # an escaped pair is fine
    with pytest.raises(InputError, match=message):
        read_upload("in.jsonl", text.encode())
    with pytest.raises(InputError, match=message):
        samples_from_pasted(text, ["text"])
    array = ("[" + text.strip().replace("\n", ",") + "]").encode()
    with pytest.raises(InputError, match=message.replace("line 2", "item 2")):
        read_upload("in.json", array)
    assert auto_samples(read_upload("ok.jsonl", text.split("\n")[0].encode()), ["text"]) == [
        Sample(fields={"text": "fine 😀"})
    ]


def test_structured_values_in_a_task_field_are_refused_naming_line_and_field():
    """Item 13: {"text": {"a": 1}} became the text '{"a": 1}'."""
    data = b'{"text": "ok"}\n\n{"text": {"a": 1}}\n{"text": [1, 2]}\n'
    message = r"line 3: the field 'text' is a JSON object, line 4: the field 'text' is a JSON array"
    with pytest.raises(InputError, match=message):
        auto_samples(read_upload("in.jsonl", data), ["text"])
    with pytest.raises(InputError, match=message):
        samples_from_pasted(data.decode(), ["text"])
    frame = read_upload("in.json", b'[{"review": "ok"}, {"review": {"a": 1}}]')
    with pytest.raises(InputError, match=r"row 2: the field 'text' \(column 'review'\) is a JSON"):
        auto_samples(frame, ["text"])
    # numbers are still read as written, and lists stay fine in meta and steps
    frame = read_upload("in.jsonl", b'{"problem": 12, "steps": ["a"], "tags": ["x"]}\n')
    assert auto_samples(frame, ["problem"]) == [
        Sample(fields={"problem": "12"}, reference_steps=("a",), meta={"tags": ["x"]})
    ]


def test_a_field_named_twice_is_refused_naming_line_and_field():
    """Item 13: a CSV with two `text` columns kept one silently; JSON kept the last key."""
    with pytest.raises(InputError, match=r"line 2: the header names the column 'text' 2 times"):
        read_upload("two.csv", b"\ntext,label, text \nGood.,positive,Bad.\n")
    with pytest.raises(InputError, match=r"line 2: the key 'text' appears twice"):
        read_upload("d.jsonl", b'{"text": "a"}\n{"text": "b", "label": "x", "text": "c"}\n')
    with pytest.raises(InputError, match=r"line 1: the key 'a' appears twice"):
        samples_from_pasted('{"text": "b", "meta": {"a": 1, "a": 2}}', ["text"])
    # blank header cells are not a name: they still become column_N
    frame = read_upload("x.csv", b"text,,\nGood.,1,2\n")
    assert list(frame.columns) == ["text", "column_2", "column_3"]


def test_inputs_file_must_be_a_regular_file_within_the_limit(tmp_path):
    """Items 10 and 11: /dev/zero was read until a MemoryError, a FIFO blocked forever."""
    import os

    from app.inputs.input_files import check_input_path, read_input_file

    pipe = tmp_path / "pipe.jsonl"
    os.mkfifo(pipe)
    for check in (check_input_path, read_input_file):
        with pytest.raises(InputError, match=r"pipe.jsonl is a named pipe \(FIFO\), not a regular"):
            check(pipe)
        with pytest.raises(InputError, match=r"/dev/zero is a character device"):
            check("/dev/zero")
        with pytest.raises(InputError, match=r"is a directory, not a file"):
            check(tmp_path)
    big = tmp_path / "big.txt"
    big.write_text("a line\n" * 200_000)  # 1.3 MB
    for check in (check_input_path, read_input_file):
        with pytest.raises(InputError, match=r"big.txt is 1.3 MB; the limit .* is 1 MB"):
            check(big, max_bytes=1024 * 1024)
    assert len(read_input_file(big, max_bytes=2 * 1024 * 1024)) == 200_000
    # Above the 20 MB an upload may have, a file the CLI reads is fine up to its own limit.
    many = tmp_path / "many.txt"
    many.write_bytes((b"x" * 99_999 + b"\n") * 260)  # 26 MB
    assert len(read_input_file(many)) == 260
