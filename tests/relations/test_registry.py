"""The registry finds the built-in families by itself."""

from __future__ import annotations

from relations.registry import REGISTRY, family_modules, load_builtins


def _family_module(relation) -> str:
    function = relation.transform or relation.build
    return ".".join(function.__module__.split(".")[:2])  # relations.word.grammar → relations.word


def test_each_found_family_module_registers_relations_and_nothing_else_does():
    load_builtins()
    assert {_family_module(r) for r in REGISTRY.values()} == set(family_modules())


def test_the_built_in_families_are_found():
    found = set(family_modules())
    for family in ("si", "rrb", "ad", "char", "word", "sentence", "nli", "sentiment", "multi"):
        assert f"relations.{family}" in found
    assert "relations.relation_extraction" in found
    assert found.isdisjoint({"relations.base", "relations.english", "relations.oracles"})
