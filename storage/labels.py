"""Label verbs for Triage (mixed into ``Store``). Labels are an append-only history."""

from __future__ import annotations


class LabelVerbs:
    """Triage verbs: add_label, current labels, false-positive rates …"""
