"""Generic objects: properties as clients sent them, layouts with each definition computed."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import assoc
from assoc.server.qix.cubedef import HyperCubeDef
from assoc.server.qix.expressions import STRING_EXPRESSION, VALUE_EXPRESSION, ExpressionDef
from assoc.server.qix.facts import AppFacts, field_list
from assoc.server.qix.hypercube import HyperCubeView
from assoc.server.qix.library import LIST_KINDS, Library, resolve_library_ids
from assoc.server.qix.listobject import ListObjectDef, ListObjectView
from assoc.server.qix.lists import (
    APP_OBJECT_LIST_DEF,
    EMPTY_LISTS,
    SELECTION_OBJECT_DEF,
    app_object_list,
    item_data,
    selection_object,
)
from assoc.server.qix.patches import patched, tree_copy
from assoc.server.qix.rpc import (
    GENERIC_NOT_FOUND,
    INVALID_PARAMETERS,
    INVALID_PARAMS,
    MAX_PROPERTY_DEPTH,
    RpcError,
    check_tree,
)
from assoc.server.qix.states import InState, state_name

LIST_DEF, CUBE_DEF, FIELD_LIST_DEF = "qListObjectDef", "qHyperCubeDef", "qFieldListDef"
CHILD_LIST_DEF, LAYOUT_EXCLUDE = "qChildListDef", "qLayoutExclude"
COMPUTED = {
    LIST_DEF: "qListObject",
    CUBE_DEF: "qHyperCube",
    FIELD_LIST_DEF: "qFieldList",
    SELECTION_OBJECT_DEF: "qSelectionObject",
    APP_OBJECT_LIST_DEF: "qAppObjectList",
    **EMPTY_LISTS,
}
# Members not searched for definitions: the object's identity, what the layout leaves out,
# and the child list (its qData are paths into the children).
_NOT_WALKED = ("qInfo", LAYOUT_EXCLUDE, CHILD_LIST_DEF)


def _expression_at(definitions: dict[str, Any], path: str, value: Any) -> Any:
    """The ExpressionDef a properties member at `path` holds, or None."""
    if not isinstance(value, dict):
        return None
    for kind in (STRING_EXPRESSION, VALUE_EXPRESSION):
        if kind in value:
            found = definitions.get(f"{path}/{kind}")
            if isinstance(found, ExpressionDef):
                return found
    return None


@dataclass(frozen=True)
class ListDef:
    """A definition of one of the list kinds (field list, selections, master items, …)."""

    kind: str
    raw: dict[str, Any]


def _definitions(props: Any, path: str, out: dict[str, Any], in_list: bool = False) -> None:
    """Collects every definition in `props` by its path (`/qListObjectDef`, `/a/qHyperCubeDef`);
    inside arrays (`/a/0/…`) only qStringExpression / qValueExpression."""
    if isinstance(props, list):
        for i, value in enumerate(props):
            _definitions(value, f"{path}/{i}", out, in_list=True)
        return
    if not isinstance(props, dict):
        return
    for key, value in props.items():
        here = f"{path}/{key}"
        if key in (STRING_EXPRESSION, VALUE_EXPRESSION):
            out[here] = ExpressionDef.parse(key, value, here)
        elif in_list:
            _definitions(value, here, out, in_list)
        elif key == LIST_DEF:
            out[here] = ListObjectDef.parse(value)
        elif key == CUBE_DEF:
            out[here] = HyperCubeDef.parse(value)
        elif key in COMPUTED:
            if not isinstance(value, dict):
                raise RpcError(INVALID_PARAMETERS, here, "must be an object")
            out[here] = ListDef(key, value)
        elif key not in _NOT_WALKED:
            _definitions(value, here, out)
            if isinstance(value, list):  # alternateStates: [{qSelectionObjectDef}, …]
                for i, item in enumerate(value):
                    _definitions(item, f"{here}/{i}", out)


def _custom(qdef: Any) -> dict[str, Any]:
    """The members of a qDef a client added (not starting with q): cId, textAlign, …"""
    if not isinstance(qdef, dict):
        return {}
    return {k: copy.deepcopy(v) for k, v in qdef.items() if not k.startswith("q")}


def _copy_custom(definition: Any, computed: dict[str, Any]) -> None:
    """Copies each dimension's / measure's custom qDef members into its info entry."""
    if not isinstance(definition, dict):
        return
    if "qDimensionInfo" in computed and isinstance(computed["qDimensionInfo"], dict):
        computed["qDimensionInfo"].update(_custom(definition.get("qDef")))  # a list object
        return
    for key, infos in (("qDimensions", "qDimensionInfo"), ("qMeasures", "qMeasureInfo")):
        columns = definition.get(key)
        if isinstance(columns, list):
            for column, info in zip(columns, computed.get(infos, []), strict=False):
                if isinstance(column, dict):
                    info.update(_custom(column.get("qDef")))


@dataclass
class LayoutContext:
    """What a layout is computed for: the document's data and selections, the object in
    selection mode (its id) and whether selections were made since it began, and the app
    objects (qInfo, properties) that qAppObjectListDef lists."""

    facts: AppFacts
    session: assoc.Session
    modal_id: str | None = None
    made_selections: bool = False
    app_objects: Callable[[], list[tuple[dict[str, Any], dict[str, Any]]]] = list
    library: Library | None = None  # master items, variables, bookmarks


def parse_properties(
    properties: Any,
    name: str,
    object_id: str,
    keep_type: str | None = None,
    library: Library | None = None,
    owned: bool = False,
) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """Checked properties (a copy, qInfo.qId set to `object_id`), the object's type and its
    definitions. Properties nested deeper than MAX_PROPERTY_DEPTH or holding NaN or an
    infinity answer -32602 naming `name`; definitions that do not fit answer their errors.
    `keep_type`: the type used when the properties name none. With a `library`, the
    definitions are made with each qLibraryId resolved (an unknown id answers error 2).
    `owned`: the properties are a copy nothing else holds (patched ones), taken as they are."""
    if not isinstance(properties, dict):
        raise RpcError(INVALID_PARAMS, name, "Invalid Params: properties must be an object")
    check_tree(properties, name, MAX_PROPERTY_DEPTH)
    props = properties if owned else tree_copy(properties)
    info = props.get("qInfo")
    if info is None:
        info = props["qInfo"] = {}
    if not isinstance(info, dict):
        raise RpcError(INVALID_PARAMETERS, "qInfo", "must be an object")
    object_type = info.get("qType", "")
    if not isinstance(object_type, str):
        raise RpcError(INVALID_PARAMETERS, "qInfo.qType", "must be a string")
    state_name(props.get("qStateName"))
    if not object_type and keep_type:
        object_type = keep_type
    info["qId"], info["qType"] = object_id, object_type
    definitions: dict[str, Any] = {}
    source = resolve_library_ids(props, library)[0] if library is not None else props
    _definitions(source, "", definitions)
    child_list = props.get(CHILD_LIST_DEF)
    if child_list is not None and not isinstance(child_list, dict):
        raise RpcError(INVALID_PARAMETERS, CHILD_LIST_DEF, "must be an object")
    return props, object_type, definitions


@dataclass(eq=False)
class GenericObject:
    """A generic object: its id, type, properties (and soft patches over them), parsed
    definitions (of the effective properties), parent and children."""

    object_id: str
    object_type: str
    properties: dict[str, Any]
    definitions: dict[str, Any] = field(default_factory=dict)
    handle: int = 0
    parent: GenericObject | None = None
    children: list[GenericObject] = field(default_factory=list)
    soft_patches: list[Any] = field(default_factory=list)
    effective: dict[str, Any] | None = None  # properties with the soft patches, when any
    app_object: bool = False  # made by CreateObject (listed by qAppObjectListDef)
    # What methods set per definition path and layouts show: a list object's search, a
    # pivot cube's expanded nodes (cube_api.py).
    state: dict[str, Any] = field(default_factory=dict)
    library: Library | None = None  # resolves qLibraryId
    library_version: int = -1  # the library's version the definitions were made with

    @classmethod
    def create(
        cls,
        properties: dict[str, Any],
        object_id: str,
        name: str = "qProp",
        library: Library | None = None,
    ) -> GenericObject:
        """An object from properties (copied), with its definitions checked."""
        props, object_type, definitions = parse_properties(
            properties, name, object_id, library=library
        )
        obj = cls(object_id, object_type, props, definitions, library=library)
        obj.library_version = library.version if library is not None else -1
        return obj

    def refresh_library(self) -> None:
        """Makes the definitions again when a master item they name may have changed (a
        reference that no longer resolves keeps the definition it had)."""
        library = self.library
        if library is None or self.library_version == library.version:
            return
        self.library_version = library.version
        effective = self.effective_properties()
        resolved, used = resolve_library_ids(effective, library)
        if not used:
            return
        definitions: dict[str, Any] = {}
        with contextlib.suppress(RpcError):
            _definitions(resolved, "", definitions)
            self.definitions = definitions

    @property
    def info(self) -> dict[str, str]:
        """NxInfo {qId, qType}."""
        return {"qId": self.object_id, "qType": self.object_type}

    def effective_properties(self) -> dict[str, Any]:
        """The properties with the soft patches applied (what layouts are made of)."""
        return self.effective if self.effective is not None else self.properties

    def set_properties(self, properties: Any, name: str = "qProp", owned: bool = False) -> None:
        """Replaces the properties (the id stays; the type stays when none is given) and
        drops the soft patches; nothing changes when they do not fit. `owned`: as in
        parse_properties."""
        props, object_type, definitions = parse_properties(
            properties,
            name,
            self.object_id,
            keep_type=self.object_type,
            library=self.library,
            owned=owned,
        )
        self.properties, self.object_type, self.definitions = props, object_type, definitions
        self.soft_patches, self.effective = [], None
        self.library_version = self.library.version if self.library is not None else -1

    def apply_patches(self, patches: list[Any], soft: bool) -> None:
        """Hard patches change the properties (soft ones stay on top while they still
        apply); soft patches change only the effective properties. All or nothing."""
        if soft:
            soft_patches = self.soft_patches + list(patches)
            effective = patched(self.properties, soft_patches)
            props, _, definitions = parse_properties(
                effective, "qPatches", self.object_id, library=self.library, owned=True
            )
            props["qInfo"]["qType"] = self.object_type
            self.soft_patches, self.effective, self.definitions = soft_patches, props, definitions
            return
        kept = self.soft_patches
        self.set_properties(patched(self.properties, list(patches)), "qPatches", owned=True)
        if kept:
            # Soft patches that no longer fit the new properties are dropped.
            with contextlib.suppress(RpcError):
                self.apply_patches(kept, soft=True)

    def clear_soft_patches(self) -> None:
        """Drops the soft patches: the effective properties are the properties again."""
        if self.soft_patches:
            self.set_properties(self.properties)

    def property_tree(self) -> dict[str, Any]:
        """GenericObjectEntry: the properties and the children's entries, recursively."""
        return {
            "qProperty": copy.deepcopy(self.properties),
            "qChildren": [child.property_tree() for child in self.children],
            "qEmbeddedSnapshotRef": None,
        }

    def descendants(self) -> list[GenericObject]:
        """The children, their children, …, depth first."""
        out: list[GenericObject] = []
        stack = list(reversed(self.children))
        while stack:
            child = stack.pop()
            out.append(child)
            stack.extend(reversed(child.children))
        return out

    def definition(self, path: str, kind: str) -> Any:
        """The definition of `kind` at `path` (error 2 when there is none)."""
        self.refresh_library()
        found = self.definitions.get(path if path.startswith("/") else "/" + path)
        expected = ListObjectDef if kind == LIST_DEF else HyperCubeDef
        if not isinstance(found, expected):
            raise RpcError(GENERIC_NOT_FOUND, path, f"no {kind} at this path")
        return found

    def layout(self, ctx: LayoutContext) -> dict[str, Any]:
        """GenericObjectLayout: the effective properties with every definition replaced by
        its result, custom qDef members copied into their column's info, qLayoutExclude left
        out, the children listed (qChildListDef), qSelectionInfo and qMeta."""
        self.refresh_library()

        def computed(value: Any, path: str) -> Any:
            if isinstance(value, list):
                return [
                    found.value(ctx.session)
                    if (found := _expression_at(self.definitions, f"{path}/{i}", item))
                    else computed(item, f"{path}/{i}")
                    for i, item in enumerate(value)
                ]
            if not isinstance(value, dict):
                return value
            out: dict[str, Any] = {}
            for key, item in value.items():
                here = f"{path}/{key}"
                if key in COMPUTED and here in self.definitions:
                    definition = self.definitions[here]
                    result = self._compute(
                        definition, ctx, self.state_of(definition), self.state.get(here)
                    )
                    _copy_custom(item, result)
                    out[COMPUTED[key]] = result
                elif key == LAYOUT_EXCLUDE:
                    continue
                elif key == "qInfo":
                    out[key] = dict(item)
                elif key == CHILD_LIST_DEF and not path:
                    out["qChildList"] = self._child_list(item)
                elif (found := _expression_at(self.definitions, here, item)) is not None:
                    # {qStringExpression: …} / {qValueExpression: …}: shown as its value.
                    out[key] = found.value(ctx.session)
                else:
                    out[key] = computed(item, here)
            return out

        layout: dict[str, Any] = computed(self.effective_properties(), "")
        modal = ctx.modal_id == self.object_id
        layout["qSelectionInfo"] = {
            "qInSelections": modal,
            "qMadeSelections": modal and ctx.made_selections,
        }
        meta = self.properties.get("qMetaDef")
        layout.setdefault("qMeta", dict(meta) if isinstance(meta, dict) else {})
        return layout

    def _child_list(self, definition: Any) -> dict[str, Any]:
        spec = definition.get("qData") if isinstance(definition, dict) else None
        items = []
        for child in self.children:
            props = child.effective_properties()
            meta = props.get("qMetaDef")
            items.append(
                {
                    "qInfo": child.info,
                    "qMeta": dict(meta) if isinstance(meta, dict) else {},
                    "qData": item_data(spec, props),
                }
            )
        return {"qItems": items}

    def object_state(self) -> str:
        """The object's selection state: its qStateName, else its parent's, else $."""
        own = self.effective_properties().get("qStateName")
        if isinstance(own, str) and own:
            return own
        return self.parent.object_state() if self.parent is not None else "$"

    def state_of(self, definition: Any) -> str:
        """The selection state a definition computes in and selects in: its own qStateName,
        else the object's."""
        own = getattr(definition, "state_name", "")
        if isinstance(definition, ListDef):
            own = definition.raw.get("qStateName", "")
        return own if isinstance(own, str) and own else self.object_state()

    def selections(self, definition: Any, session: assoc.Session) -> InState:
        """The session's selections in the state of one of the object's definitions."""
        return InState(session, self.state_of(definition))

    @staticmethod
    def _compute(
        definition: Any, ctx: LayoutContext, state_name: str, state: Any = None
    ) -> dict[str, Any]:
        selections = InState(ctx.session, state_name)
        if isinstance(definition, ListObjectDef):
            return ListObjectView(definition, ctx.facts, selections, state).layout()
        if isinstance(definition, HyperCubeDef):
            return HyperCubeView(definition, ctx.facts, selections, state).layout()
        kind, raw = definition.kind, definition.raw
        if kind == FIELD_LIST_DEF:
            return field_list(ctx.facts, raw)
        if kind == SELECTION_OBJECT_DEF:
            return selection_object(ctx.facts, selections)
        if kind == APP_OBJECT_LIST_DEF:
            return app_object_list(raw, ctx.app_objects)
        if kind in LIST_KINDS and ctx.library is not None:
            return ctx.library.list_layout(kind, raw, ctx.session)
        return {"qItems": []}
