"""Optional resources some relations need (WordNet …), checked once and reported, never crashing."""

from __future__ import annotations

import importlib.util
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


def wordnet_installed() -> tuple[bool, str]:
    """WordNet's files are in place and NLTK is installed, checked without importing NLTK.

    Importing NLTK and opening WordNet costs about a second: a catalog listing (`relations
    --json`) only needs to know whether the relation can run, so it asks this; the relation
    itself loads WordNet fully (``wordnet_status``) before its first use. Not cached, so a test
    that removes WordNet sees it at once; it only looks at a few files.
    """
    if wordnet_status.cache_info().currsize:
        return wordnet_status()  # already loaded (or failed) for real: the exact answer
    try:
        from relations.wordnet import SOURCE_DIR, build_corpus_dir, wordnet_root

        build_corpus_dir(SOURCE_DIR, wordnet_root())
        if importlib.util.find_spec("nltk") is None:
            raise RuntimeError("the nltk package is not installed")
    except Exception as exc:
        return False, f"WordNet unavailable: {exc}"
    return True, ""


CHECKS: dict[str, Callable[[], tuple[bool, str]]] = {"wordnet": wordnet_status}
# Cheaper checks for listings, by the same names; a name missing here uses its CHECKS entry.
QUICK_CHECKS: dict[str, Callable[[], tuple[bool, str]]] = {"wordnet": wordnet_installed}


def availability(requires: tuple[str, ...], *, quick: bool = False) -> tuple[bool, str]:
    """Whether every named resource is usable, and why not. ``quick``: the cheap checks a
    catalog listing uses (a relation's own run still does the full check before its first use)."""
    for name in requires:
        check = (QUICK_CHECKS.get(name) if quick else None) or CHECKS.get(name)
        if check is None:
            return False, f"unknown requirement {name!r}"
        ok, why = check()
        if not ok:
            return False, why
    return True, ""
