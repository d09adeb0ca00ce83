"""Generic objects: properties as clients sent them, layouts with each definition computed."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import assoc
from assoc.server.qix.facts import AppFacts, field_list
from assoc.server.qix.hypercube import HyperCubeDef, HyperCubeView
from assoc.server.qix.listobject import ListObjectDef, ListObjectView
from assoc.server.qix.rpc import (
    GENERIC_NOT_FOUND,
    INVALID_PARAMETERS,
    MAX_PROPERTY_DEPTH,
    NOT_IMPLEMENTED,
    RpcError,
    check_tree,
)

LIST_DEF, CUBE_DEF, FIELD_LIST_DEF = "qListObjectDef", "qHyperCubeDef", "qFieldListDef"
COMPUTED = {LIST_DEF: "qListObject", CUBE_DEF: "qHyperCube", FIELD_LIST_DEF: "qFieldList"}


def _definitions(props: Any, path: str, out: dict[str, Any]) -> None:
    """Collects every definition in `props` by its path (`/qListObjectDef`, `/a/qHyperCubeDef`)."""
    if not isinstance(props, dict):
        return
    for key, value in props.items():
        here = f"{path}/{key}"
        if key == LIST_DEF:
            out[here] = ListObjectDef.parse(value)
        elif key == CUBE_DEF:
            out[here] = HyperCubeDef.parse(value)
        elif key == FIELD_LIST_DEF:
            if not isinstance(value, dict):
                raise RpcError(INVALID_PARAMETERS, here, "must be an object")
            out[here] = value
        elif key in ("qStringExpression", "qValueExpression"):
            raise RpcError(NOT_IMPLEMENTED, here, "expressions in properties are not implemented")
        elif key != "qInfo":
            _definitions(value, here, out)


@dataclass
class GenericObject:
    """A session object: its id, type, properties and parsed definitions."""

    object_id: str
    object_type: str
    properties: dict[str, Any]
    definitions: dict[str, Any] = field(default_factory=dict)
    handle: int = 0

    @classmethod
    def create(cls, properties: dict[str, Any], object_id: str) -> GenericObject:
        """An object from qProp (copied), with its definitions checked; properties nested
        deeper than MAX_PROPERTY_DEPTH or holding NaN or an infinity answer -32602."""
        check_tree(properties, "qProp", MAX_PROPERTY_DEPTH)
        props = copy.deepcopy(properties)
        info = props.get("qInfo")
        if info is None:
            info = props["qInfo"] = {}
        if not isinstance(info, dict):
            raise RpcError(INVALID_PARAMETERS, "qInfo", "must be an object")
        object_type = info.get("qType", "")
        if not isinstance(object_type, str):
            raise RpcError(INVALID_PARAMETERS, "qInfo.qType", "must be a string")
        info["qId"], info["qType"] = object_id, object_type
        definitions: dict[str, Any] = {}
        _definitions(props, "", definitions)
        return cls(object_id, object_type, props, definitions)

    def definition(self, path: str, kind: str) -> Any:
        """The definition of `kind` at `path` (error 2 when there is none)."""
        found = self.definitions.get(path if path.startswith("/") else "/" + path)
        expected = ListObjectDef if kind == LIST_DEF else HyperCubeDef
        if not isinstance(found, expected):
            raise RpcError(GENERIC_NOT_FOUND, path, f"no {kind} at this path")
        return found

    def layout(self, facts: AppFacts, session: assoc.Session) -> dict[str, Any]:
        """GenericObjectLayout: the properties with every definition replaced by its result."""

        def computed(value: Any, path: str) -> Any:
            if not isinstance(value, dict):
                return value
            out: dict[str, Any] = {}
            for key, item in value.items():
                here = f"{path}/{key}"
                if key in COMPUTED and here in self.definitions:
                    out[COMPUTED[key]] = self._compute(self.definitions[here], facts, session)
                elif key == "qInfo":
                    out[key] = dict(item)
                else:
                    out[key] = computed(item, here)
            return out

        layout: dict[str, Any] = computed(self.properties, "")
        layout["qSelectionInfo"] = {}
        layout.setdefault("qMeta", {})
        return layout

    @staticmethod
    def _compute(definition: Any, facts: AppFacts, session: assoc.Session) -> dict[str, Any]:
        if isinstance(definition, ListObjectDef):
            return ListObjectView(definition, facts, session).layout()
        if isinstance(definition, HyperCubeDef):
            return HyperCubeView(definition, facts, session).layout()
        return field_list(facts, definition)
