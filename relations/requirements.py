"""Optional resources some relations need (WordNet …), checked once and reported, never crashing."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache


@cache
def wordnet_status() -> tuple[bool, str]:
    try:
        from relations.wordnet import load_wordnet

        load_wordnet()
    except Exception as exc:
        return False, f"WordNet unavailable: {exc}"
    return True, ""


CHECKS: dict[str, Callable[[], tuple[bool, str]]] = {"wordnet": wordnet_status}


def availability(requires: tuple[str, ...]) -> tuple[bool, str]:
    for name in requires:
        check = CHECKS.get(name)
        if check is None:
            return False, f"unknown requirement {name!r}"
        ok, why = check()
        if not ok:
            return False, why
    return True, ""
