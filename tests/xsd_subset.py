"""A validator for the part of XML Schema that ``tests/junit.xsd`` uses, for test environments
without lxml or xmlschema: global elements (by ``ref``), named and inline complex types with
``sequence`` / ``choice`` particles and their occurrence bounds, ``mixed`` content, attributes
with ``use="required"``, and simple types restricted from string, decimal and non-negative
integer. Anything else in the schema raises ``NotImplementedError`` rather than being ignored,
so a schema this cannot read never passes a document by accident.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from decimal import Decimal, InvalidOperation
from pathlib import Path

XS = "{http://www.w3.org/2001/XMLSchema}"
_PARTICLE_TAGS = {f"{XS}element", f"{XS}choice", f"{XS}sequence"}


class SchemaError(AssertionError):
    """The document does not follow the schema; the message says where."""


def _check_builtin(base: str, value: str, facets: dict[str, str], where: str) -> None:
    if base == "xs:string":
        return
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise SchemaError(f"{where}: {value!r} is not a number") from None
    if base == "xs:nonNegativeInteger" and not (re.fullmatch(r"\+?\d+", value) and number >= 0):
        raise SchemaError(f"{where}: {value!r} is not a non-negative integer")
    if base not in ("xs:decimal", "xs:nonNegativeInteger"):
        raise NotImplementedError(base)
    if "minInclusive" in facets and number < Decimal(facets["minInclusive"]):
        raise SchemaError(f"{where}: {value!r} is below {facets['minInclusive']}")


class Schema:
    def __init__(self, path: Path) -> None:
        root = ET.parse(path).getroot()
        self.elements = {e.get("name"): e for e in root.findall(f"{XS}element")}
        self.complex = {t.get("name"): t for t in root.findall(f"{XS}complexType")}
        self.simple = {t.get("name"): t for t in root.findall(f"{XS}simpleType")}
        known = {f"{XS}element", f"{XS}complexType", f"{XS}simpleType"}
        for child in root:
            if child.tag not in known:
                raise NotImplementedError(child.tag)

    def check_value(self, type_name: str, value: str, where: str) -> None:
        if type_name.startswith("xs:"):
            return _check_builtin(type_name, value, {}, where)
        restriction = self.simple[type_name].find(f"{XS}restriction")
        facets = {f.tag.removeprefix(XS): f.get("value") for f in restriction}
        _check_builtin(restriction.get("base"), value, facets, where)

    def validate(self, element: ET.Element) -> None:
        """Raise SchemaError unless ``element`` (a document's root) follows the schema."""
        if element.tag not in self.elements:
            raise SchemaError(f"<{element.tag}> is not a global element of the schema")
        self._element(element, self.elements[element.tag], element.tag)

    def _element(self, element: ET.Element, declaration: ET.Element, where: str) -> None:
        type_name = declaration.get("type")
        if type_name is not None and not type_name.startswith("xs:"):
            complex_type = self.complex[type_name]
        elif type_name is not None:  # a simple-typed element: text only
            if len(element) or element.attrib:
                raise SchemaError(f"{where}: must hold text only")
            return self.check_value(type_name, element.text or "", where)
        else:
            complex_type = declaration.find(f"{XS}complexType")
        self._attributes(element, complex_type, where)
        if complex_type.get("mixed") != "true" and (element.text or "").strip():
            raise SchemaError(f"{where}: text is not allowed here")
        children = list(element)
        for child in children:
            if (child.tail or "").strip() and complex_type.get("mixed") != "true":
                raise SchemaError(f"{where}: text is not allowed here")
        particles = [c for c in complex_type if c.tag in _PARTICLE_TAGS]
        position = 0
        for particle in particles:
            position = self._particle(children, position, particle, where)
        if position != len(children):
            raise SchemaError(f"{where}: unexpected <{children[position].tag}>")
        for index, child in enumerate(children):
            self._element(child, self.elements[child.tag], f"{where}/{child.tag}[{index}]")

    def _attributes(self, element: ET.Element, complex_type: ET.Element, where: str) -> None:
        declared = {a.get("name"): a for a in complex_type.findall(f"{XS}attribute")}
        for name, value in element.attrib.items():
            if name not in declared:
                raise SchemaError(f"{where}: attribute {name!r} is not in the schema")
            self.check_value(declared[name].get("type"), value, f"{where}@{name}")
        for name, attribute in declared.items():
            if attribute.get("use") == "required" and name not in element.attrib:
                raise SchemaError(f"{where}: required attribute {name!r} is missing")

    def _particle(self, children, position: int, particle: ET.Element, where: str) -> int:
        """Match ``particle`` (greedily, as this schema's content models allow) from
        ``position``; the position after it."""
        low = int(particle.get("minOccurs", "1"))
        high = particle.get("maxOccurs", "1")
        most = len(children) + 1 if high == "unbounded" else int(high)
        matched = 0
        while matched < most:
            after = self._one(children, position, particle)
            if after is None:
                break
            if after == position:  # an empty sequence: matched as often as needed, at no cost
                matched = max(matched + 1, low)
                break
            position, matched = after, matched + 1
        if matched < low:
            name = particle.get("ref") or particle.tag.removeprefix(XS)
            raise SchemaError(f"{where}: expected {low} × {name}, found {matched}")
        return position

    def _one(self, children, position: int, particle: ET.Element) -> int | None:
        if particle.tag != f"{XS}sequence" and position >= len(children):
            return None
        if particle.tag == f"{XS}element":
            return position + 1 if children[position].tag == particle.get("ref") else None
        if particle.tag == f"{XS}choice":
            for option in particle:
                if children[position].tag == option.get("ref"):
                    return position + 1
            return None
        if particle.tag == f"{XS}sequence":
            for item in particle:
                try:
                    position = self._particle(children, position, item, "")
                except SchemaError:
                    return None
            return position
        raise NotImplementedError(particle.tag)
