"""The QIX API as the engine's published schema (12.2027.0, the one enigma.js ships) describes
it: per object type, each method's in-parameters (name, order, default, optional) and
out-parameter names. Methods are declared by name; their parameters come from here.

`schema.json` beside this module is the schema reduced to the object types assoc serves;
`python -m assoc.server.qix.schema <enigma.js>/schemas/12.2027.0.json` rewrites it."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from assoc.server.qix.rpc import Param

SCHEMA_FILE = Path(__file__).with_name("schema.json")
SCHEMA_VERSION = "12.2027.0"
OBJECT_TYPES = (
    "Global",
    "Doc",
    "Field",
    "GenericObject",
    "GenericDimension",
    "GenericMeasure",
    "GenericVariable",
    "GenericBookmark",
)


@dataclass(frozen=True)
class SchemaMethod:
    """One method as the schema declares it."""

    params: tuple[Param, ...]
    out: tuple[str, ...]


def reduce_schema(full: dict[str, Any]) -> dict[str, Any]:
    """The parts of an enigma.js schema file assoc reads: {type: {method: {"In", "Out"}}}."""
    structs = full["structs"]
    return {
        qix_type: {
            name: {
                "In": [
                    {k: v for k, v in p.items() if k in ("Name", "DefaultValue", "Optional")}
                    for p in method["In"]
                ],
                "Out": [p["Name"] for p in method["Out"]],
            }
            for name, method in sorted(structs[qix_type].items())
        }
        for qix_type in OBJECT_TYPES
    }


def kind_of(example: Any) -> str:
    """The JSON type a schema default stands for (the `CHECKS` names of rpc.py)."""
    if isinstance(example, bool):
        return "bool"
    if isinstance(example, int):
        return "int"
    if isinstance(example, float):
        return "number"
    if isinstance(example, str):
        return "str"
    if isinstance(example, dict):
        return "object"
    if isinstance(example, list) and example:
        return {"int": "ints", "str": "strs", "object": "objects"}.get(kind_of(example[0]), "any")
    return "any"


def _param(spec: dict[str, Any]) -> Param:
    """A schema in-parameter. A list's or object's schema default is an example of its shape
    (`[0]` for an array of numbers), so an absent one is empty, as the engine takes it."""
    example = spec.get("DefaultValue")
    kind = kind_of(example)
    if isinstance(example, list):
        default: Any = []
    elif isinstance(example, dict):
        default = {}
    else:
        default = example
    return Param(spec["Name"], kind, default, required=not spec.get("Optional", False))


@cache
def schema() -> dict[str, dict[str, SchemaMethod]]:
    """Every method of every served object type, by type and name."""
    raw = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return {
        qix_type: {
            name: SchemaMethod(tuple(_param(p) for p in m["In"]), tuple(m["Out"]))
            for name, m in methods.items()
        }
        for qix_type, methods in raw.items()
    }


def main(argv: list[str]) -> None:
    """Rewrites schema.json from an enigma.js schema file."""
    full = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    SCHEMA_FILE.write_text(dump_schema(reduce_schema(full)), encoding="utf-8")


def dump_schema(reduced: dict[str, Any]) -> str:
    """schema.json's text: one line per method."""
    types = []
    for qix_type, methods in reduced.items():
        lines = ",\n".join(
            f"    {json.dumps(name)}: {json.dumps(method, sort_keys=True)}"
            for name, method in methods.items()
        )
        types.append(f"  {json.dumps(qix_type)}: {{\n{lines}\n  }}")
    return "{\n" + ",\n".join(types) + "\n}\n"


if __name__ == "__main__":
    main(sys.argv[1:])
