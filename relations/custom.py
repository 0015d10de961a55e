"""User-defined relations, stored in the DB as JSON specs and rebuilt into ``Relation`` objects.

A spec::

    {"id": "custom.<slug>", "name": ..., "description": ..., "example": ... (optional),
     "kind": "llm_rewrite" | "replace" | "regex" | "template",
     "instruction": ...                      # llm_rewrite
     "rules": [{"find": ..., "replace": ...}] # replace / regex (applied in order)
     "prefix": ..., "suffix": ...            # template (added exactly as written)
     "expectation": one of Expectation (single-input ones), "threshold": optional float}

Specs are validated before anything is written; an import validates every spec of the file first
and writes all of them in one transaction, or none.

User regular expressions run on the ``regex`` package with a time limit: Python's ``re`` cannot be
interrupted and holds the GIL, so one catastrophic pattern would freeze every session. A pattern
that backtracks catastrophically on a few adversarial probes is refused when it is saved; any
pattern that still runs past its budget on a real text makes that case a SKIP with the reason.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import regex

from core.json_text import load_json
from relations.base import (
    Expectation,
    NotApplicable,
    Relation,
    RelationKind,
    Rewriter,
    TransformContext,
    TransformFn,
)
from relations.candidates import best_of_k


class SpecStore(Protocol):
    """Where custom specs live (``storage.Store`` is one). Relations sit beside storage, not on
    top of it, so they name only the verbs they use."""

    def custom_relation_specs(self) -> dict[str, dict[str, Any]]: ...

    def save_custom_relation(self, relation_id: str, spec: dict[str, Any]) -> None: ...

    def save_custom_relations(self, specs: list[dict[str, Any]]) -> None: ...


log = logging.getLogger(__name__)

ID_PATTERN = re.compile(r"custom\.[a-z0-9][a-z0-9_]{0,47}")
# Expectations a single-input relation can express; the others need companions and a check.
SINGLE_INPUT_EXPECTATIONS = (
    Expectation.EQUIVALENT,
    Expectation.DIFFERENT,
    Expectation.AT_LEAST_AS_EXTREME,
    Expectation.NO_POLAR_FLIP,
)
KNOWN_KEYS = frozenset(
    {
        "id",
        "name",
        "description",
        "example",
        "kind",
        "instruction",
        "rules",
        "prefix",
        "suffix",
        "expectation",
        "threshold",
    }
)
DEFAULT_EXAMPLE = "The museum opens at 9 am and closes at 5 pm. How many hours is it open?"
EXPORT_FORMAT = "morphscope.custom_relations"

# Time budget for all of a relation's regex rules on one text, and for each probe at save time.
REGEX_BUDGET_S = 1.0
REGEX_PROBE_TIMEOUT_S = 0.1
REGEX_PROBE_TOTAL_S = 0.3
# Long enough that exponential backtracking shows (2^30 steps), short enough to stay cheap.
PROBE_LENGTH = 30

# Our preservation wording, added around the user's instruction for LLM rewrites.
PRESERVE = (
    "Rewrite the text below following the instruction. Keep every number, name and fact, and keep "
    "any question it asks. Reply with the rewritten text only: no quotes, no comments."
)


def slugify(name: str) -> str:
    """A ``custom.<slug>`` id suggestion from a display name."""
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")[:48]
    return f"custom.{slug or 'relation'}"


def _text(spec: dict[str, Any], key: str) -> str:
    value = spec.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be text, not {type(value).__name__}")
    return value


def validate_spec(spec: Any) -> dict[str, Any]:
    """Check a spec and return its normalised form. Raises ValueError with a readable message."""
    if not isinstance(spec, dict):
        raise ValueError("a custom relation must be a JSON object")
    unknown = sorted(set(spec) - KNOWN_KEYS)
    if unknown:
        raise ValueError(f"unknown key(s): {', '.join(unknown)}")

    relation_id = _text(spec, "id").strip()
    if not ID_PATTERN.fullmatch(relation_id):
        raise ValueError(
            f"id {relation_id!r} must look like 'custom.<slug>' (lower-case letters, digits and "
            "'_', at most 48 after 'custom.')"
        )
    name = _text(spec, "name").strip()
    if not name:
        raise ValueError("name is required")

    kind = _text(spec, "kind").strip()
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")

    expectation_text = _text(spec, "expectation").strip()
    try:
        expectation = Expectation(expectation_text)
    except ValueError:
        choices = ", ".join(e.value for e in Expectation)
        raise ValueError(f"expectation {expectation_text!r} is not one of {choices}") from None
    if expectation not in SINGLE_INPUT_EXPECTATIONS:
        choices = ", ".join(e.value for e in SINGLE_INPUT_EXPECTATIONS)
        raise ValueError(
            f"expectation {expectation.value!r} needs a multi-input relation; choose one of "
            f"{choices}"
        )

    threshold = spec.get("threshold")
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise ValueError(f"threshold must be a number, not {threshold!r}")
        if not math.isfinite(threshold) or threshold < 0:
            raise ValueError(f"threshold must be a finite number ≥ 0, not {threshold!r}")
        threshold = float(threshold)

    normalised: dict[str, Any] = {
        "id": relation_id,
        "name": name,
        "description": _text(spec, "description").strip(),
        "kind": kind,
        "expectation": expectation.value,
        "threshold": threshold,
    }
    example = _text(spec, "example").strip()
    if example:
        normalised["example"] = example

    normalised |= CUSTOM_KINDS[kind].fields(spec)
    return normalised


def _validate_rules(rules: Any, *, is_regex: bool) -> list[dict[str, str]]:
    if not isinstance(rules, list) or not rules:
        raise ValueError("rules must be a non-empty list of {find, replace} pairs")
    checked = []
    for number, rule in enumerate(rules, start=1):
        if not isinstance(rule, dict) or set(rule) - {"find", "replace"}:
            raise ValueError(f"rule {number} must be an object with 'find' and 'replace' only")
        find, replace = rule.get("find"), rule.get("replace", "")
        if not isinstance(find, str) or not find:
            raise ValueError(f"rule {number}: 'find' must be non-empty text")
        if not isinstance(replace, str):
            raise ValueError(f"rule {number}: 'replace' must be text")
        if is_regex:
            _check_regex(number, find, replace)
        elif find == replace:
            raise ValueError(
                f"rule {number}: 'find' and 'replace' are the same, it changes nothing"
            )
        checked.append({"find": find, "replace": replace})
    return checked


def _check_regex(number: int, find: str, replace: str) -> None:
    try:
        pattern = regex.compile(find)
    except (regex.error, ValueError, OverflowError) as exc:
        raise ValueError(f"rule {number}: bad regular expression {find!r}: {exc}") from None
    # A replacement template is only parsed on the first match: force one with an empty
    # alternative (same groups), so a bad group reference such as '\3' is reported now.
    try:
        probe = regex.compile(f"(?:{find})|")
    except (regex.error, ValueError):
        probe = None  # e.g. global inline flags, which cannot be wrapped; the pattern is valid
    if probe is not None:
        try:
            probe.sub(replace, "", timeout=REGEX_PROBE_TIMEOUT_S)
        except (regex.error, IndexError, ValueError) as exc:
            raise ValueError(f"rule {number}: bad replacement {replace!r}: {exc}") from None
        except TimeoutError:
            pass  # the adversarial probes below report it
    slow = _catastrophic_probe(pattern)
    if slow is not None:
        raise ValueError(
            f"rule {number}: the regular expression {find!r} backtracks catastrophically (too "
            f"slow on the test text {slow!r}); rewrite it without nested or "
            "overlapping repetition such as (a+)+ or (a|aa)+"
        )


def adversarial_probes(find: str) -> list[str]:
    """Texts that make a backtracking pattern explode: long runs of a character the pattern
    mentions (or a common one) followed by a character that spoils the match."""
    mentioned = [c for c in dict.fromkeys(find) if c.isalnum() or c in " ._-"][:6]
    probes = []
    for char in dict.fromkeys([*mentioned, "a", "0", " "]):
        run = char * PROBE_LENGTH
        probes += [run + "!", run + "\n", "!" + run]
    return probes


def _catastrophic_probe(pattern: regex.Pattern) -> str | None:
    """The first probe text the pattern cannot scan within the probe timeout, else None.

    All probes together get REGEX_PROBE_TOTAL_S, so checking a slow-but-finite pattern (which
    happens on every load of the relations) stays cheap too."""
    deadline = time.monotonic() + REGEX_PROBE_TOTAL_S
    for text in adversarial_probes(pattern.pattern):
        try:
            for scan in (pattern.search, pattern.fullmatch):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return text
                scan(text, timeout=min(REGEX_PROBE_TIMEOUT_S, remaining))
        except TimeoutError:
            return text
    return None


# ---------------------------------------------------------------- spec → Relation


def _rules_transform(rules: list[dict[str, str]], *, regex_rules: bool) -> TransformFn:
    compiled = [
        (regex.compile(r["find"]) if regex_rules else r["find"], r["replace"]) for r in rules
    ]

    def transform(text: str, ctx: TransformContext) -> str:
        result = text
        deadline = time.monotonic() + REGEX_BUDGET_S
        for find, replace in compiled:
            if isinstance(find, str):
                result = result.replace(find, replace)
                continue
            try:
                result = find.sub(replace, result, timeout=max(deadline - time.monotonic(), 0.01))
            except TimeoutError:
                raise NotApplicable(
                    f"the regular expression {find.pattern!r} took longer than "
                    f"{REGEX_BUDGET_S:g} s on this text (catastrophic backtracking); case skipped"
                ) from None
        if result == text:
            raise NotApplicable("no rule changed the text")
        return result

    return transform


def _never_blank(transform: TransformFn) -> TransformFn:
    """A follow-up that is empty or only whitespace is never sent: it becomes a SKIP."""

    def guarded(text: str, ctx: TransformContext) -> str:
        result = transform(text, ctx)
        if not result.strip():
            raise NotApplicable("the follow-up is empty or only whitespace; nothing to send")
        return result

    return guarded


def _template_transform(prefix: str, suffix: str) -> TransformFn:
    def transform(text: str, ctx: TransformContext) -> str:
        return f"{prefix}{text}{suffix}"

    return transform


def rewrite_prompt(instruction: str, text: str) -> str:
    """The prompt sent to the transformation endpoint for an llm_rewrite relation."""
    return f"{PRESERVE}\n\nInstruction: {instruction}\n\nText:\n{text}\n\nRewritten text:"


def clean_rewrite(reply: str) -> str:
    """The rewritten text from an LLM reply: no 'Rewritten text:' label, no wrapping quotes."""
    text = (reply or "").strip()
    for _ in range(2):  # the label may sit inside or outside the quotes
        text = re.sub(r"^rewritten text\s*:\s*", "", text, flags=re.I).strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
            text = text[1:-1].strip()
    return text


def _llm_transform(instruction: str) -> TransformFn:
    """A custom rewrite, asked for like every LLM-prompted relation: the best of k candidates
    (``relations.candidates``), each cleaned, the most similar one the gate passes kept."""

    def transform(text: str, ctx: TransformContext) -> str:
        ctx.require_rewriter()
        prompt = rewrite_prompt(instruction, text)

        def make(rewrite: Rewriter) -> str:
            result = clean_rewrite(rewrite(prompt))
            if not result:
                raise NotApplicable("the transformation endpoint returned an empty rewrite")
            return result

        return best_of_k(ctx, text, make)

    return transform


def relation_from_spec(spec: dict[str, Any]) -> Relation:
    """Build a ``Relation`` (family ``custom``) from a spec; validates it first."""
    spec = validate_spec(spec)
    kind = CUSTOM_KINDS[spec["kind"]]
    transform, how = kind.build(spec)
    transform = _never_blank(transform)
    expectation = Expectation(spec["expectation"])
    check = None
    if expectation is Expectation.NO_POLAR_FLIP:
        from relations.nli import no_polar_flip

        check = no_polar_flip
    return Relation(
        id=spec["id"],
        name=spec["name"],
        family="custom",
        category="custom",
        description=spec["description"] or how,
        example=spec.get("example") or DEFAULT_EXAMPLE,
        kind=kind.relation_kind,
        expectation=expectation,
        transform=transform,
        check=check,
        preconditions=kind.preconditions,
        ref="custom",
        threshold=spec["threshold"],
        params={"spec": spec},
    )


def custom_relations(store: SpecStore) -> list[Relation]:
    """Every stored custom relation; a stored spec that no longer validates is logged, left out."""
    relations = []
    for relation_id, spec in store.custom_relation_specs().items():
        try:
            relations.append(relation_from_spec(spec))
        except ValueError as exc:
            log.warning("custom relation %s is invalid and was skipped: %s", relation_id, exc)
    return relations


def save_spec(store: SpecStore, spec: dict[str, Any]) -> dict[str, Any]:
    """Validate and store one spec (insert or update); returns the normalised spec."""
    spec = validate_spec(spec)
    store.save_custom_relation(spec["id"], spec)
    return spec


def export_specs(store: SpecStore) -> str:
    """All custom relation specs as JSON (the format ``import_specs`` reads)."""
    stored = store.custom_relation_specs()
    specs = [stored[key] for key in sorted(stored)]
    payload = {"format": EXPORT_FORMAT, "version": 1, "relations": specs}
    return json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=False)


def parse_specs(text: str) -> list[dict[str, Any]]:
    """Validated specs from an export (or a bare list / a single spec). Raises ValueError."""
    try:
        data = load_json(
            text
        )  # UnreadableJsonError, a ValueError, says why valid JSON is unreadable
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    if isinstance(data, dict) and "relations" in data:
        if data.get("format", EXPORT_FORMAT) != EXPORT_FORMAT:
            raise ValueError(f"unknown format {data.get('format')!r}")
        data = data["relations"]
    elif isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise ValueError("expected a non-empty list of custom relations")
    errors: list[str] = []
    specs: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, raw in enumerate(data, start=1):
        label = raw.get("id") if isinstance(raw, dict) else None
        where = f"relation {number}" + (f" ({label})" if label else "")
        try:
            spec = validate_spec(raw)
        except ValueError as exc:
            errors.append(f"{where}: {exc}")
            continue
        if spec["id"] in seen:
            errors.append(f"{where}: id {spec['id']!r} appears more than once")
            continue
        seen.add(spec["id"])
        specs.append(spec)
    if errors:
        raise ValueError("nothing imported — " + "; ".join(errors))
    return specs


def import_specs(store: SpecStore, text: str) -> list[str]:
    """Import custom relations from JSON: all valid → all written (one transaction), else none."""
    specs = parse_specs(text)
    store.save_custom_relations(specs)
    return [spec["id"] for spec in specs]


# ---------------------------------------------------------------- the kinds of custom relation


@dataclass(frozen=True)
class CustomKind:
    """One way a custom relation transforms a text: its own spec fields and how it is built.
    A new kind is one entry in ``CUSTOM_KINDS`` (the editor lists them by ``label``)."""

    name: str
    label: str
    relation_kind: RelationKind
    preconditions: str
    # The kind's own fields of a spec, validated and normalised (ValueError says what is wrong).
    fields: Callable[[dict[str, Any]], dict[str, Any]]
    # The transformation of a validated spec, and one line saying what it does.
    build: Callable[[dict[str, Any]], tuple[TransformFn, str]]


def _instruction_field(spec: dict[str, Any]) -> dict[str, Any]:
    instruction = _text(spec, "instruction").strip()
    if not instruction:
        raise ValueError("an llm_rewrite relation needs an instruction")
    return {"instruction": instruction}


def _rules_fields(*, is_regex: bool) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda spec: {"rules": _validate_rules(spec.get("rules"), is_regex=is_regex)}


def _template_fields(spec: dict[str, Any]) -> dict[str, Any]:
    prefix, suffix = _text(spec, "prefix"), _text(spec, "suffix")
    if not prefix and not suffix:
        raise ValueError("a template relation needs a prefix, a suffix or both")
    return {"prefix": prefix, "suffix": suffix}


def _rules_built(*, is_regex: bool) -> Callable[[dict[str, Any]], tuple[TransformFn, str]]:
    def build(spec: dict[str, Any]) -> tuple[TransformFn, str]:
        rules = "; ".join(f"{r['find']!r} → {r['replace']!r}" for r in spec["rules"])
        how = f"{'Regex' if is_regex else 'Find/replace'} rules: {rules}"
        return _rules_transform(spec["rules"], regex_rules=is_regex), how

    return build


_RULES_PRECONDITION = "SKIP when no rule changes the text."
CUSTOM_KINDS: dict[str, CustomKind] = {
    kind.name: kind
    for kind in (
        CustomKind(
            "llm_rewrite",
            "LLM rewrite (needs a transformation endpoint)",
            RelationKind.LLM,
            "Needs a transformation endpoint.",
            _instruction_field,
            lambda spec: (
                _llm_transform(spec["instruction"]),
                f"LLM rewrite: {spec['instruction']}",
            ),
        ),
        CustomKind(
            "replace",
            "find / replace",
            RelationKind.RULE,
            _RULES_PRECONDITION,
            _rules_fields(is_regex=False),
            _rules_built(is_regex=False),
        ),
        CustomKind(
            "regex",
            "regular expression",
            RelationKind.RULE,
            _RULES_PRECONDITION,
            _rules_fields(is_regex=True),
            _rules_built(is_regex=True),
        ),
        CustomKind(
            "template",
            "prefix / suffix template",
            RelationKind.RULE,
            "",
            _template_fields,
            lambda spec: (
                _template_transform(spec["prefix"], spec["suffix"]),
                f"Template: prefix {spec['prefix']!r}, suffix {spec['suffix']!r}",
            ),
        ),
    )
}
KINDS = tuple(CUSTOM_KINDS)
