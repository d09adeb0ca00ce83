"""NxAttributes: the one schema of an app's attributes, which app packages, the NxApp answer
and the service's OpenAPI description all read."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from assoc._core import Error

# How each kind of attribute is checked and what it defaults to.
KINDS: dict[str, tuple[type, Any]] = {
    "string": (str, ""),
    "date": (str, ""),  # ISO 8601 UTC, like 2026-11-22T04:35:00.000Z; "" when unknown
    "boolean": (bool, False),
    "object": (dict, {}),
    "strings": (list, []),
}


@dataclass(frozen=True)
class Attribute:
    """One NxAttributes key and the kind of its value."""

    name: str
    kind: str

    def default(self) -> Any:
        """The value the attribute takes when unknown (a fresh copy)."""
        return copy.copy(KINDS[self.kind][1])

    def check(self, value: Any) -> bool:
        """True when `value` is of this attribute's kind."""
        expected = KINDS[self.kind][0]
        if not isinstance(value, expected):
            return False
        if self.kind == "strings" and isinstance(value, list):
            return all(isinstance(v, str) for v in value)
        return True


NX_ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("id", "string"),
    Attribute("name", "string"),
    Attribute("description", "string"),
    Attribute("thumbnail", "string"),
    Attribute("lastReloadTime", "date"),
    Attribute("createdDate", "date"),
    Attribute("modifiedDate", "date"),
    Attribute("owner", "string"),
    Attribute("dynamicColor", "string"),
    Attribute("published", "boolean"),
    Attribute("publishTime", "date"),
    Attribute("custom", "object"),
    Attribute("tags", "strings"),
)
BY_NAME = {a.name: a for a in NX_ATTRIBUTES}

_KIND_TEXT = {
    "string": "a string",
    "date": "a string",
    "boolean": "true or false",
    "object": "an object",
    "strings": "an array of strings",
}


def normalize(raw: Any, where: str) -> dict[str, Any]:
    """Every known attribute of `raw`, type-checked, defaults for the missing ones;
    raises assoc.Error naming `where` for a value of the wrong kind."""
    if not isinstance(raw, dict):
        raise Error(f'{where}: "attributes" must be an object')
    out: dict[str, Any] = {}
    for attribute in NX_ATTRIBUTES:
        value = raw.get(attribute.name)
        if value is None:
            value = attribute.default()
        elif not attribute.check(value):
            raise Error(
                f"{where}: attributes.{attribute.name} must be {_KIND_TEXT[attribute.kind]}"
            )
        out[attribute.name] = value
    return out
