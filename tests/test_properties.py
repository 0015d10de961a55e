"""Property-based tests (hypothesis) for the doors where outside data comes in: uploads, base URLs,
custom regex relations, task templates, and model text shown on the pages.

Each property states what must hold for *any* input; examples are kept few so the file runs in
a few seconds.
"""

from __future__ import annotations

import json
import string
import time
import urllib.parse

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from app.clients.endpoint_settings import validate_base_url
from app.inputs.errors import InputError
from app.inputs.pasted import samples_from_pasted
from app.inputs.samples import auto_samples
from app.inputs.uploads import read_upload
from app.reports.diffing import diff_html
from app.ui.components import inert
from core.key_names import validate_api_key_env
from core.tasks import BUILTIN_TASKS, check_template, custom_task
from relations.apply import SkippedFollowUp, transform_text
from relations.base import FollowUp
from relations.custom import relation_from_spec, validate_spec

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text as users and models write it: letters, digits, punctuation, spaces, newlines, some Unicode.
texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=80,
)


# ---------------------------------------------------------------- uploads


@FAST
@given(
    data=st.binary(max_size=300),
    name=st.sampled_from(["in.csv", "in.jsonl", "in.txt", "in.json", "in.tsv"]),
)
def test_any_upload_is_read_or_refused_with_an_input_error(data, name):
    """Whatever bytes arrive, reading them either gives a table or an InputError (a message for
    the person), never another exception."""
    try:
        frame = read_upload(name, data)
    except InputError as exc:
        assert str(exc)
        return
    auto_samples(frame, ["text"])


# What an inputs file may hold: whitespace controls are text, other control characters are not.
input_texts = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc"), whitelist_characters="\t\n\r\x0b\x0c"
    ),
    max_size=80,
)


@FAST
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80))
def test_an_upload_refuses_exactly_what_the_paste_box_refuses(text):
    """One rule for characters, whatever the door (issue 20, item 14): plain lines pasted or
    uploaded as .txt give the same inputs, or are both refused."""
    # (a file's magic number, JSON lines and a UTF-8 BOM are read by what the file is)
    assume(text.strip() and not text.lstrip().startswith(("{", "%PDF", "GIF8", "SQLite")))
    assume(not text.startswith("\ufeff"))
    outcomes = []
    for read in (
        lambda: samples_from_pasted(text, ["text"]),
        lambda: auto_samples(read_upload("in.txt", text.encode()), ["text"]),
    ):
        try:
            outcomes.append([sample.fields["text"] for sample in read()])
        except InputError:
            outcomes.append("refused")
    assert outcomes[0] == outcomes[1]


@FAST
@given(rows=st.lists(input_texts.filter(lambda t: t.strip()), min_size=1, max_size=8))
def test_jsonl_upload_keeps_every_text_exactly(rows):
    """A JSONL upload of {"text": …} objects gives one sample per line with the text unchanged."""
    data = "\n".join(json.dumps({"text": row}) for row in rows).encode()
    samples = auto_samples(read_upload("in.jsonl", data), ["text"])
    assert [sample.fields["text"] for sample in samples] == rows


@FAST
@given(digits=st.integers(min_value=4301, max_value=6000))
def test_huge_integers_in_jsonl_are_a_clear_message(digits):
    with pytest.raises(InputError, match="cannot be read"):
        read_upload("in.jsonl", ('{"text": %s}' % ("7" * digits)).encode())


# ---------------------------------------------------------------- base URLs


url_parts = st.text(alphabet=string.ascii_letters + string.digits + ":/[].-_?#@% ", max_size=30)


@FAST
@given(tail=url_parts, scheme=st.sampled_from(["http://", "https://", "ftp://", ""]))
def test_an_accepted_base_url_has_a_host_and_a_valid_port(tail, scheme):
    """validate_base_url either refuses with ValueError or returns a URL whose host is non-empty
    and whose port (if any) is 1–65535, so the HTTP client never meets a malformed URL."""
    try:
        url = validate_base_url(scheme + tail)
    except ValueError as exc:
        assert str(exc)
        return
    parts = urllib.parse.urlsplit(url)
    assert parts.scheme in ("http", "https") and parts.hostname
    assert parts.port is None or 1 <= parts.port <= 65535
    assert not any(char.isspace() for char in url)


@pytest.mark.parametrize(
    "url", ["http://[::1/v1", "http://localhost:99999/v1", "http://localhost:/v1", "http://:80/v1"]
)
def test_malformed_base_urls_are_refused(url):
    with pytest.raises(ValueError):
        validate_base_url(url)


@FAST
@given(key=st.text(alphabet=string.ascii_letters + string.digits, min_size=24, max_size=60))
def test_key_looking_values_are_never_accepted_as_a_variable_name(key):
    """A mixed-case run with digits (how keys look) is refused as --api-key-env, and the message
    never repeats it."""
    key = "sk-" + key
    with pytest.raises(ValueError) as excinfo:
        validate_api_key_env(key)
    assert key not in str(excinfo.value)


def test_plain_variable_names_are_accepted():
    assert validate_api_key_env("OPENAI_API_KEY") == "OPENAI_API_KEY"
    assert validate_api_key_env(" ") is None


# ---------------------------------------------------------------- regex relations

patterns = st.text(alphabet="a()|+*?.b^$", min_size=1, max_size=12)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns, text=st.text(alphabet="ab!", max_size=40))
def test_any_regex_relation_is_refused_or_answers_quickly(pattern, text):
    """Any pattern is either refused when saved (a readable ValueError) or, applied to any text,
    gives a follow-up or a SKIP within its 1 s budget; a follow-up is never blank."""
    spec = {
        "id": "custom.prop",
        "name": "prop",
        "kind": "regex",
        "rules": [{"find": pattern, "replace": "b"}],
        "expectation": "equivalent",
    }
    try:
        validate_spec(spec)
    except ValueError as exc:
        assert str(exc)
        return
    started = time.monotonic()
    result = transform_text(relation_from_spec(spec), text or "a", task=BUILTIN_TASKS["qa"])
    assert time.monotonic() - started < 3
    assert isinstance(result, FollowUp | SkippedFollowUp)
    if isinstance(result, FollowUp):
        assert result.fields["text"].strip()


# ---------------------------------------------------------------- templates


@pytest.mark.parametrize(
    "placeholder", ["{text.upper}", "{0}", "{text[0]}", "{}", "{text!r}", "{text:>9}"]
)
def test_template_placeholders_other_than_plain_fields_are_refused(placeholder):
    """Pins: only plain {field} placeholders are saved; attribute, index, positional, conversion
    and format-spec placeholders are refused with a message naming the placeholder."""
    with pytest.raises(ValueError, match="is not allowed"):
        custom_task("my_task", "My task", f"Question: {placeholder}", "free_text")


@FAST
@given(template=st.text(alphabet="ab {}[].!:0_", max_size=30), value=texts)
def test_any_accepted_template_renders_any_input(template, value):
    """A template that check_template accepts formats with any input text without an error."""
    try:
        fields = check_template(template)
    except ValueError as exc:
        assert str(exc)
        return
    template.format(**{field: value for field in fields})


# ---------------------------------------------------------------- model text on the pages


@FAST
@given(source=texts, followup=texts)
def test_diff_for_markdown_has_no_newline_and_no_raw_markup(source, followup):
    """Inside a Markdown HTML block a blank line would end the block: the diff written for
    Markdown never contains a newline, and every '<' of the text is escaped."""
    for side in diff_html(source, followup, for_markdown=True):
        assert "\n" not in side and "\r" not in side
        without_tags = side.replace("<br>", "").replace("</span>", "")
        without_tags = without_tags.replace(
            '<span style="background:#ffd7d5;text-decoration:line-through;">', ""
        )
        without_tags = without_tags.replace('<span style="background:#ccffd8;">', "")
        assert "<" not in without_tags


@FAST
@given(text=texts)
def test_inert_escapes_every_markdown_trigger(text):
    """After inert(), no link, image, HTML or emphasis character is left unescaped."""
    escaped = inert(text, one_line=True)
    assert "\n" not in escaped
    unescaped = escaped.replace("\\\\", "")
    for char in "[]!<>*_`$|#&~":
        positions = [i for i, c in enumerate(unescaped) if c == char]
        assert all(i > 0 and unescaped[i - 1] == "\\" for i in positions), (char, escaped)


def test_inert_keeps_plain_punctuation_readable():
    assert inert("unknown relation(s): custom.gone") == "unknown relation(s): custom.gone"
    assert inert("![x](http://host/a.png)") == "\\!\\[x\\](http\\://host/a.png)"
