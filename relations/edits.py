"""A follow-up as a list of edits against its source, so that any subset of them can be applied.

Shrinking a violation (``app.engine.shrink``) searches for the fewest edits that still flip the
model's answer. Every relation's follow-up is read as the hunks of a word-level diff between each
source field and the same follow-up field: a hunk is a run of changed words (with the whitespace
between them) and what replaced it. Hunks never overlap and are applied right to left, so every
subset is a text the diff defines; applying all of them gives the follow-up back exactly.

Some transformations are one edit whatever their diff says: an RRB encoding is read under
decoding rules that describe the whole text (half a rail fence contradicts its own rules), a
reordering's hunks taken apart would drop or duplicate a sentence, a voice change or an entity
swap rewrites the sentence as a whole. Those relations are *indivisible*: their cases are not
shrinkable.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from relations.base import FollowUp, Relation

# Whole-text transformations outside the RRB family (whose every relation is indivisible).
INDIVISIBLE_RELATIONS = frozenset(
    {
        "sentence.shuffle",  # a permutation of sentences
        "ad.reorder",  # a permutation of the options / facts
        "si.reorder_facts",  # a permutation, written by the LLM
        "word.voice",  # active → passive rewrites the whole clause
        "word.question_form",  # statement → question moves the auxiliary to the front
        "re.swap_symmetric",  # the two entities change places: one swap
        "re.swap_asymmetric",
    }
)
# RRB: an encoding read under decoding rules about the whole text. Multi-input: the follow-up is
# judged with companion inputs a stored case does not carry, so no candidate can be re-judged.
INDIVISIBLE_FAMILIES = frozenset({"rrb", "multi"})

_TOKENS = re.compile(r"\S+|\s+")


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` at ``[start, end)`` of the source's ``field`` with ``new``."""

    field: str
    start: int
    end: int
    old: str
    new: str

    def describe(self) -> str:
        """'every → 3v3ry', '+ really', '- not' — for a person reading a shrunk case."""
        if not self.old.strip():
            return f"+ {self.new.strip()!r}"
        if not self.new.strip():
            return f"- {self.old.strip()!r}"
        return f"{self.old.strip()!r} → {self.new.strip()!r}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Edit:
        return cls(
            field=str(data["field"]),
            start=int(data["start"]),
            end=int(data["end"]),
            old=str(data["old"]),
            new=str(data["new"]),
        )


def indivisible_reason(relation: Relation, followup: FollowUp | None = None) -> str | None:
    """Why this relation's (or this follow-up's) edits cannot be taken apart, or None."""
    if relation.family in INDIVISIBLE_FAMILIES or relation.id in INDIVISIBLE_RELATIONS:
        return "not shrinkable: the transformation is one edit"
    if followup is not None and (followup.companions or followup.source_fields):
        return "not shrinkable: the follow-up is built from several inputs"
    if relation.params.get("preamble") or (followup is not None and followup.preamble):
        return "not shrinkable: the follow-up's preamble describes the whole transformation"
    return None


def field_edits(field: str, source: str, followup: str) -> list[Edit]:
    """The hunks of the word-level diff of one field, left to right."""
    old_tokens = _TOKENS.findall(source)
    new_tokens = _TOKENS.findall(followup)
    offsets = [0]
    for token in old_tokens:
        offsets.append(offsets[-1] + len(token))
    matcher = difflib.SequenceMatcher(a=old_tokens, b=new_tokens, autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        edits.append(
            Edit(
                field=field,
                start=offsets[i1],
                end=offsets[i2],
                old="".join(old_tokens[i1:i2]),
                new="".join(new_tokens[j1:j2]),
            )
        )
    return edits


def diff_edits(source_fields: Mapping[str, str], followup_fields: Mapping[str, str]) -> list[Edit]:
    """Every field's hunks, fields in the follow-up's order. A field only the follow-up has is
    one insertion into an empty source field."""
    edits: list[Edit] = []
    for name, new in followup_fields.items():
        old = source_fields.get(name, "")
        if old != new:
            edits += field_edits(name, old, new)
    return edits


def apply_edits(source_fields: Mapping[str, str], edits: Iterable[Edit]) -> dict[str, str]:
    """The source with ``edits`` applied (any subset of one diff's hunks)."""
    fields = dict(source_fields)
    by_field: dict[str, list[Edit]] = {}
    for edit in edits:
        by_field.setdefault(edit.field, []).append(edit)
    for name, field_hunks in by_field.items():
        text = fields.get(name, "")
        # Right to left, so the offsets of the hunks still to apply stay valid.
        for edit in sorted(field_hunks, key=lambda e: e.start, reverse=True):
            text = text[: edit.start] + edit.new + text[edit.end :]
        fields[name] = text
    return fields


def edits_text(edits: Sequence[Edit], total: int) -> str:
    """'1 of 6 edits is enough: 'every' → '3v3ry''."""
    kept = "; ".join(f"{e.describe()} in {e.field}" for e in edits)
    verb = "is" if len(edits) == 1 else "are"
    return f"{len(edits)} of {total} edits {verb} enough: {kept}"


def applied_spans(edits: Iterable[Edit]) -> dict[str, list[tuple[int, int]]]:
    """Where each edit's new text stands in the text the edits make, per field (to highlight
    them): left to right, each span shifted by what the edits before it added or removed."""
    spans: dict[str, list[tuple[int, int]]] = {}
    shift: dict[str, int] = {}
    for edit in sorted(edits, key=lambda e: (e.field, e.start)):
        offset = shift.get(edit.field, 0)
        start = edit.start + offset
        spans.setdefault(edit.field, []).append((start, start + len(edit.new)))
        shift[edit.field] = offset + len(edit.new) - (edit.end - edit.start)
    return spans
