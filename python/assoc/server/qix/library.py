"""The app's library: master dimensions and measures, variables and bookmarks; their
properties, layouts, the lists that show them, and `qLibraryId` references resolved in cubes
and list objects."""

from __future__ import annotations

import copy
import datetime
import math
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import assoc
from assoc.expansion import value_text
from assoc.script.numbers import DEFAULTS as RESERVED_VARIABLES
from assoc.server.qix.lists import item_data
from assoc.server.qix.rpc import (
    GENERIC_NOT_FOUND,
    INVALID_PARAMETERS,
    INVALID_PARAMS,
    MAX_PROPERTY_DEPTH,
    RpcError,
    check_tree,
)

DIMENSION, MEASURE, VARIABLE, BOOKMARK = "dimension", "measure", "variable", "bookmark"
KINDS = (DIMENSION, MEASURE, VARIABLE, BOOKMARK)
QIX_TYPES = {
    DIMENSION: "GenericDimension",
    MEASURE: "GenericMeasure",
    VARIABLE: "GenericVariable",
    BOOKMARK: "GenericBookmark",
}
# app.json keys of each kind (docs/http.md, "Package format").
MANIFEST_KEYS = {
    DIMENSION: "dimensions",
    MEASURE: "measures",
    VARIABLE: "variables",
    BOOKMARK: "bookmarks",
}


def now_iso() -> str:
    """The time now as Qlik writes it (UTC, milliseconds, Z)."""
    now = datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


@dataclass(eq=False)
class LibraryItem:
    """One library item: its kind, id, properties and, for bookmarks, the selections it
    keeps (field -> selected values)."""

    kind: str
    item_id: str
    properties: dict[str, Any]
    handle: int = 0
    session_only: bool = False  # CreateSessionVariable: never saved
    script_created: bool = False  # a variable the load script SET or LET
    selections: dict[str, list[Any]] = field(default_factory=dict)
    created: str = field(default_factory=now_iso)
    modified: str = ""

    @property
    def info(self) -> dict[str, str]:
        """NxInfo {qId, qType}."""
        return {"qId": self.item_id, "qType": self.kind}

    @property
    def name(self) -> str:
        """A variable's name (qName)."""
        return str(self.properties.get("qName", ""))

    def meta(self) -> dict[str, Any]:
        """NxMeta: the qMetaDef members and the item's dates."""
        meta_def = self.properties.get("qMetaDef")
        meta = dict(meta_def) if isinstance(meta_def, dict) else {}
        meta.setdefault("createdDate", self.created)
        meta.setdefault("modifiedDate", self.modified or self.created)
        return meta

    def layout(self, session: assoc.Session | None = None) -> dict[str, Any]:
        """The item's layout: its properties with qInfo and qMeta (qMetaDef left out) and what
        its kind computes (a variable's value, a bookmark's selections)."""
        out = {k: copy.deepcopy(v) for k, v in self.properties.items() if k != "qMetaDef"}
        out["qInfo"], out["qMeta"] = self.info, self.meta()
        if self.kind == DIMENSION:
            qdim = out.get("qDim", {})
            fields = qdim.get("qFieldDefs", []) if isinstance(qdim, dict) else []
            out["qDimInfos"] = [{"qGrouping": "N", "qTags": []} for _ in fields]
        elif self.kind == VARIABLE:
            definition = str(self.properties.get("qDefinition", ""))
            if definition.lstrip().startswith("=") and session is not None:
                text, number = calculated_value(definition, session)
            else:
                text, number = variable_value(definition)
            out.update(
                qText=text,
                qNum=number,
                qIsScriptCreated=self.script_created,
            )
        elif self.kind == BOOKMARK:
            out["qBookmark"] = {
                "qStateData": [
                    {
                        "qStateName": "$",
                        "qFieldItems": [
                            {
                                "qDef": {"qName": name, "qType": "PRESENT"},
                                "qSelectInfo": {"qTextSearch": "", "qNumberFormat": {}},
                                "qValues": [_bookmark_value(v) for v in values],
                                "qExcludedValues": [],
                                "qAndMode": False,
                                "qOneAndOnlyOne": False,
                            }
                            for name, values in self.selections.items()
                        ],
                    }
                ],
                "qUtcModifyTime": 0,
                "qVariableItems": [],
                "qPatches": [],
            }
            out["qFieldInfos"] = [
                {"qFieldName": name, "qValuesCount": len(values), "qExcludedValuesCount": 0}
                for name, values in self.selections.items()
            ]
        return out

    def record(self) -> dict[str, Any]:
        """The item as app.json keeps it."""
        out: dict[str, Any] = {"id": self.item_id, "properties": copy.deepcopy(self.properties)}
        if self.kind == VARIABLE and self.script_created:
            out["scriptCreated"] = True
        if self.kind == BOOKMARK:
            out["selections"] = copy.deepcopy(self.selections)
        out["created"] = self.created
        if self.modified:
            out["modified"] = self.modified
        return out


def _bookmark_value(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"qText": value, "qIsNumeric": False, "qNumber": 0}
    return {"qText": _number_text(float(value)), "qIsNumeric": True, "qNumber": value}


def _number_text(number: float) -> str:
    return str(int(number)) if number.is_integer() else repr(number)


def variable_value(definition: str) -> tuple[str, Any]:
    """(qText, qNum) of a variable: its definition as text, and its number when the text is
    one ("NaN" otherwise). A definition starting with `=` is shown as it is written."""
    try:
        number = float(definition)
    except ValueError:
        return definition, "NaN"
    if not math.isfinite(number):
        return definition, "NaN"
    return definition, int(number) if number.is_integer() and abs(number) < 2**53 else number


def calculated_value(definition: str, session: assoc.Session) -> tuple[str, Any]:
    """(qText, qNum) of a variable whose definition starts with `=`: the expression's value
    under the session's selections; an expression that does not compute shows its error."""
    try:
        value = session.evaluate(definition)
    except assoc.Error as exc:
        return f"Error: {exc}", "NaN"
    number = getattr(value, "number", value)
    if isinstance(number, int | float) and math.isfinite(number):
        return value_text(value), int(number) if float(number).is_integer() else number
    return value_text(value), "NaN"


class DocVariables(Mapping[str, str]):
    """A library's variables as the name -> definition mapping `$(…)` expands (always the
    library's current ones)."""

    def __init__(self, library: Callable[[], Library]) -> None:
        self._library = library

    def __getitem__(self, name: str) -> str:
        item = self._library().variable(name)
        if item is None:
            raise KeyError(name)
        return str(item.properties.get("qDefinition", ""))

    def __iter__(self) -> Iterator[str]:
        return iter([item.name for item in self._library().of_kind(VARIABLE)])

    def __len__(self) -> int:
        return len(self._library().of_kind(VARIABLE))


def _checked(kind: str, properties: Any, item_id: str, name: str) -> dict[str, Any]:
    """A checked copy of a library item's properties, its qInfo set to (item_id, kind)."""
    if not isinstance(properties, dict):
        raise RpcError(INVALID_PARAMS, name, "Invalid Params: properties must be an object")
    check_tree(properties, name, MAX_PROPERTY_DEPTH)
    props = copy.deepcopy(properties)
    meta = props.get("qMetaDef", {})
    if not isinstance(meta, dict):
        raise RpcError(INVALID_PARAMETERS, "qMetaDef", "must be an object")
    if kind == DIMENSION:
        qdim = props.get("qDim")
        if not isinstance(qdim, dict):
            raise RpcError(INVALID_PARAMETERS, "qDim", "a dimension needs a qDim object")
        fields = qdim.get("qFieldDefs")
        if (
            not isinstance(fields, list)
            or not fields
            or not all(isinstance(f, str) for f in fields)
            or not fields[0]
        ):
            raise RpcError(INVALID_PARAMETERS, "qDim.qFieldDefs", "must name a field")
    elif kind == MEASURE:
        qmeasure = props.get("qMeasure")
        if not isinstance(qmeasure, dict):
            raise RpcError(INVALID_PARAMETERS, "qMeasure", "a measure needs a qMeasure object")
        expression = qmeasure.get("qDef")
        if not isinstance(expression, str) or not expression.strip():
            raise RpcError(INVALID_PARAMETERS, "qMeasure.qDef", "must be an expression")
    elif kind == VARIABLE:
        var_name = props.get("qName")
        if not isinstance(var_name, str) or not var_name.strip():
            raise RpcError(INVALID_PARAMETERS, "qName", "a variable needs a name")
        definition = props.setdefault("qDefinition", "")
        if not isinstance(definition, str):
            raise RpcError(INVALID_PARAMETERS, "qDefinition", "must be a string")
    props["qInfo"] = {"qId": item_id, "qType": kind}
    return props


def _new_id(taken: dict[str, Any], wanted: Any) -> str:
    """`wanted` when it is a free id, else a new one."""
    if isinstance(wanted, str) and wanted and wanted not in taken:
        return wanted
    while True:
        made = uuid.uuid4().hex[:8]
        if made not in taken:
            return made


class Library:
    """The library items of an open document, by id; `version` counts the changes that can
    change a resolved `qLibraryId`."""

    def __init__(self) -> None:
        self.items: dict[str, LibraryItem] = {}
        self.version = 0

    # ---- items ------------------------------------------------------------------------

    def of_kind(self, kind: str) -> list[LibraryItem]:
        """Every item of one kind, in the order they were made."""
        return [item for item in self.items.values() if item.kind == kind]

    def get(self, kind: str, item_id: str) -> LibraryItem | None:
        """The item of `kind` with this id, or None."""
        item = self.items.get(item_id)
        return item if item is not None and item.kind == kind else None

    def find(self, kind: str, item_id: str) -> LibraryItem:
        """The item of `kind` with this id; error 2 when there is none."""
        item = self.get(kind, item_id)
        if item is None:
            raise RpcError(GENERIC_NOT_FOUND, item_id, f"no {kind} with this id")
        return item

    def variable(self, name: str) -> LibraryItem | None:
        """The variable of this name (exact case), or None."""
        for item in self.of_kind(VARIABLE):
            if item.name == name:
                return item
        return None

    def create(self, kind: str, properties: Any, name: str = "qProp") -> LibraryItem:
        """A new item from properties (its qInfo.qId when free, else a new id)."""
        info = properties.get("qInfo") if isinstance(properties, dict) else None
        wanted = info.get("qId") if isinstance(info, dict) else None
        item_id = _new_id(self.items, wanted)
        props = _checked(kind, properties, item_id, name)
        if kind == VARIABLE and self.variable(props["qName"]) is not None:
            raise RpcError(INVALID_PARAMETERS, props["qName"], "a variable of this name exists")
        item = LibraryItem(kind, item_id, props)
        self.items[item_id] = item
        self.version += 1
        return item

    def set_properties(self, item: LibraryItem, properties: Any, name: str = "qProp") -> None:
        """Replaces an item's properties (its id and kind stay)."""
        props = _checked(item.kind, properties, item.item_id, name)
        if item.kind == VARIABLE:
            other = self.variable(props["qName"])
            if other is not None and other is not item:
                raise RpcError(INVALID_PARAMETERS, props["qName"], "a variable of this name exists")
        item.properties, item.modified = props, now_iso()
        self.version += 1

    def destroy(self, item: LibraryItem) -> None:
        """Forgets an item."""
        self.items.pop(item.item_id, None)
        self.version += 1

    def set_script_variables(self, variables: dict[str, str]) -> None:
        """The variables a reload's script left: they replace the script's earlier ones and
        the definitions of variables of the same names."""
        for item in [i for i in self.of_kind(VARIABLE) if i.script_created]:
            if item.name not in variables:
                self.destroy(item)
        for var_name, definition in variables.items():
            found = self.variable(var_name)
            if found is None:
                found = self.create(VARIABLE, {"qName": var_name, "qDefinition": definition})
            else:
                found.properties["qDefinition"] = definition
            found.script_created = True
        self.version += 1

    # ---- app.json -----------------------------------------------------------------------

    def records(self) -> dict[str, list[dict[str, Any]]]:
        """The items as app.json keeps them, by manifest key (session variables left out)."""
        return {
            MANIFEST_KEYS[kind]: [i.record() for i in self.of_kind(kind) if not i.session_only]
            for kind in KINDS
        }

    @classmethod
    def from_records(cls, records: dict[str, list[dict[str, Any]]]) -> Library:
        """The library an app.json holds (items that do not fit are left out)."""
        library = cls()
        for kind in KINDS:
            for record in records.get(MANIFEST_KEYS[kind], []):
                try:
                    props = _checked(kind, record["properties"], record["id"], "properties")
                except RpcError:
                    continue
                if record["id"] in library.items:
                    continue
                item = LibraryItem(kind, record["id"], props)
                item.script_created = bool(record.get("scriptCreated", False))
                selections = record.get("selections", {})
                if isinstance(selections, dict):
                    item.selections = {
                        str(k): list(v) for k, v in selections.items() if isinstance(v, list)
                    }
                item.created = str(record.get("created", item.created))
                item.modified = str(record.get("modified", ""))
                library.items[item.item_id] = item
        return library

    # ---- lists ---------------------------------------------------------------------------

    def list_layout(
        self, definition_key: str, raw: dict[str, Any], session: assoc.Session
    ) -> dict[str, Any]:
        """qDimensionList / qMeasureList / qBookmarkList / qVariableList: the items of the
        kind, each with qInfo, qMeta and qData read from its layout by the list's qData
        pointers (variables also qName, qDefinition, qIsScriptCreated, …)."""
        kind = LIST_KINDS[definition_key]
        spec = raw.get("qData")
        items = []
        for item in self.of_kind(kind):
            layout = item.layout(session)
            entry: dict[str, Any] = {
                "qInfo": item.info,
                "qMeta": item.meta(),
                "qData": item_data(spec, layout),
            }
            if kind == VARIABLE:
                reserved = item.name in RESERVED_VARIABLES
                if reserved and not raw.get("qShowReserved"):
                    continue
                entry.update(
                    qName=item.name,
                    qDefinition=item.properties.get("qDefinition", ""),
                    qDescription=item.properties.get("qComment", ""),
                    qIsScriptCreated=item.script_created,
                    qIsReserved=reserved,
                    qIsConfig=False,
                )
            items.append(entry)
        return {"qItems": items}


LIST_KINDS = {
    "qDimensionListDef": DIMENSION,
    "qMeasureListDef": MEASURE,
    "qBookmarkListDef": BOOKMARK,
    "qVariableListDef": VARIABLE,
}


# ---- bookmarks ------------------------------------------------------------------------------


def capture_selections(session: assoc.Session) -> dict[str, list[Any]]:
    """The selected values of each field with a selection (numbers and texts as JSON keeps
    them)."""
    out: dict[str, list[Any]] = {}
    for name, values in session.selections().items():
        kept: list[Any] = []
        for value in values:
            if isinstance(value, bool):
                kept.append(int(value))
            elif isinstance(value, int | float | str):
                if isinstance(value, float) and not math.isfinite(value):
                    continue
                kept.append(value)
            else:  # a dual: its number
                number = getattr(value, "number", None)
                kept.append(number if number is not None else str(value))
        out[name] = kept
    return out


def apply_selections(
    session: assoc.Session, selections: dict[str, list[Any]], known: Callable[[str], bool]
) -> bool:
    """Clears the session's selections and selects a bookmark's, as one history step; fields
    the app no longer has are skipped. False (and nothing changes) when a field is locked."""
    if session.locked():
        return False
    with session.step():
        session.clear()
        for name, values in selections.items():
            if known(name):
                session.select(name, values)
    return True


# ---- qLibraryId ------------------------------------------------------------------------------


def resolve_library_ids(props: Any, library: Library) -> tuple[Any, bool]:
    """A copy of properties in which every dimension, measure and list object that names a
    qLibraryId has its definition from that master item (the members of its own qDef a
    client added are kept); and whether any did. An unknown id answers error 2."""
    used = False

    def dimension_def(library_id: str, own: Any) -> dict[str, Any]:
        item = library.get(DIMENSION, library_id)
        if item is None:
            raise RpcError(GENERIC_NOT_FOUND, library_id, "no master dimension with this id")
        qdim = item.properties["qDim"]
        out = dict(own) if isinstance(own, dict) else {}
        out["qFieldDefs"] = list(qdim["qFieldDefs"])
        labels = qdim.get("qFieldLabels")
        if isinstance(labels, list) and any(labels):
            out["qFieldLabels"] = list(labels)
        else:
            title = item.meta().get("title")
            out["qFieldLabels"] = [title] if isinstance(title, str) and title else []
        return out

    def measure_def(library_id: str, own: Any) -> dict[str, Any]:
        item = library.get(MEASURE, library_id)
        if item is None:
            raise RpcError(GENERIC_NOT_FOUND, library_id, "no master measure with this id")
        qmeasure = item.properties["qMeasure"]
        out = dict(own) if isinstance(own, dict) else {}
        out["qDef"] = qmeasure["qDef"]
        label = qmeasure.get("qLabel") or item.meta().get("title")
        if isinstance(label, str) and label:
            out["qLabel"] = label
        return out

    def walk(value: Any) -> Any:
        nonlocal used
        if isinstance(value, list):
            return [walk(v) for v in value]
        if not isinstance(value, dict):
            return value
        out = {k: walk(v) for k, v in value.items()}
        cube = out.get("qHyperCubeDef")
        if isinstance(cube, dict):
            for key, make in (("qDimensions", dimension_def), ("qMeasures", measure_def)):
                columns = cube.get(key)
                if not isinstance(columns, list):
                    continue
                for column in columns:
                    library_id = column.get("qLibraryId") if isinstance(column, dict) else None
                    if isinstance(library_id, str) and library_id:
                        column["qDef"] = make(library_id, column.get("qDef"))
                        used = True
        lst = out.get("qListObjectDef")
        if isinstance(lst, dict):
            library_id = lst.get("qLibraryId")
            if isinstance(library_id, str) and library_id:
                lst["qDef"] = dimension_def(library_id, lst.get("qDef"))
                used = True
        return out

    if not _mentions_library_id(props):
        return props, False
    resolved = walk(props)
    return resolved, used


def _mentions_library_id(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("qLibraryId"):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
