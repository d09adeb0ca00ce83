"""What QIX reports about an app's model: field values as cells, tables and keys, field
descriptions; computed once per loaded app and shared by its sessions."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

import assoc
from assoc import _core
from assoc.field_order import STATE_NAMES, FieldOrder, MadeOnce, SymbolTexts
from assoc.server.qix.rpc import GENERIC_NOT_FOUND, RpcError, encode_json, json_number
from assoc.session import Reduction

# Fields with more values make each page's cells as asked rather than keeping all of them.
CACHED_PREFIXES_MAX = 100_000
# Calculated dimensions' values kept per app for the layouts after the first: the latest
# this many, of at most KEPT_CALCULATED_VALUES values together (the latest one whatever its
# size, as a field's values are).
KEPT_CALCULATED = 8
KEPT_CALCULATED_VALUES = 4_000_000
NULL_CELL_PREFIX = '{"qText":"-","qNum":"NaN","qElemNumber":-2,"qIsNull":true,"qState":"'


class FieldValues(FieldOrder):
    """A field's symbols as cells need them: texts, numbers, sort ranks and look-ups."""

    def __init__(self, symbols: list[Any] | SymbolTexts) -> None:
        super().__init__(symbols)
        self.max_glyphs = max(map(len, self.texts), default=0)
        numeric = self.numbers[self.is_numeric]
        self.minimum = float(numeric.min()) if numeric.size else float("nan")
        self.maximum = float(numeric.max()) if numeric.size else float("nan")
        self._cell_prefixes: list[str] | None = None
        self._by_text: dict[str, int] | None = None
        self._by_number: dict[float, int] | None = None

    def _prefix(self, code: int) -> str:
        """The JSON of symbol `code`'s NxCell up to the state's text."""
        number = json_number(float(self.numbers[code]))
        return (
            f'{{"qText":{encode_json(self.texts[code])},"qNum":{encode_json(number)},'
            f'"qElemNumber":{code},"qState":"'
        )

    def cell_prefixes(self) -> list[str]:
        """Per symbol, the JSON of its NxCell up to the state's text (made on first use)."""
        prefixes = self._cell_prefixes
        if prefixes is None:
            prefixes = [self._prefix(i) for i in range(len(self.texts))]
            self._cell_prefixes = prefixes
        return prefixes

    def made_prefixes(self) -> list[str] | None:
        """Every symbol's cell prefix (cell_prefixes) when they are kept: a field of at most
        CACHED_PREFIXES_MAX values, or one whose prefixes were made already; else None."""
        if len(self.texts) <= CACHED_PREFIXES_MAX or self._cell_prefixes is not None:
            return self.cell_prefixes()
        return None

    def cells_json(self, codes: np.ndarray, states: np.ndarray, wrap: bool = False) -> list[str]:
        """NxCell JSON texts of symbols (negative: NULL), each in its state (an index into
        STATE_NAMES); `wrap`: each in a row. Written by the engine in one call. A large field's
        cells are made for the codes asked (a page is a few thousand cells at most): keeping
        every symbol's would hold hundreds of MB for a field of millions."""
        codes = np.asarray(codes, dtype=np.int64)
        made = self.made_prefixes()
        if made is not None:
            prefixes = made
        else:
            asked, codes = np.unique(codes, return_inverse=True)
            prefixes = [self._prefix(c) if c >= 0 else NULL_CELL_PREFIX for c in asked.tolist()]
        return _core.cells_json(prefixes, NULL_CELL_PREFIX, codes, states, STATE_NAMES, wrap)

    def field_value(self, index: int) -> dict[str, Any]:
        """FieldValue {qText, qIsNumeric, qNumber} of symbol `index` (-1: NULL)."""
        if index < 0:
            return {"qText": "", "qIsNumeric": False, "qNumber": 0}
        number = float(self.numbers[index])
        numeric = not np.isnan(number)
        return {
            "qText": self.texts[index],
            "qIsNumeric": numeric,
            "qNumber": number if numeric else 0,
        }

    def find_text(self, text: str) -> int | None:
        """The symbol with this exact text."""
        if self._by_text is None:
            by_text: dict[str, int] = {}
            for i, t in enumerate(self.texts):
                by_text.setdefault(t, i)
            self._by_text = by_text
        return self._by_text.get(text)

    def find_number(self, number: float) -> int | None:
        """The symbol with this numeric part."""
        if self._by_number is None:
            by_number: dict[float, int] = {}
            for i in np.flatnonzero(self.is_numeric).tolist():
                by_number.setdefault(float(self.numbers[i]), i)
            self._by_number = by_number
        return self._by_number.get(float(number))


@dataclass(frozen=True)
class ColumnFacts:
    """One column of one table: how its field's values occur there."""

    non_nulls: int
    present_distinct: int
    has_duplicates: bool


def _alive(app: weakref.ref[assoc.App]) -> assoc.App:
    found = app()
    if found is None:
        raise RpcError(GENERIC_NOT_FOUND, "app", "the app is no longer loaded")
    return found


class AppFacts:
    """Facts of one loaded app, each computed on first use (thread-safe). With a section
    access reduction, of the app as that user opens it: counts of the rows the reduction
    keeps, the fields it omits unknown (the field values are the shared facts')."""

    def __init__(
        self,
        app: assoc.App,
        reduction: Reduction | None = None,
        shared: AppFacts | None = None,
    ) -> None:
        # The app only weakly: the facts are kept per app (_FACTS, weak keys) and must not
        # keep it loaded once the store has let it go.
        self._app = weakref.ref(app)
        self.reduction = reduction
        self._shared = shared
        self._reduced: dict[int, AppFacts] = {}  # by id of the reduction (kept by the facts)
        metadata = app.metadata(reduction)
        self.fields: dict[str, dict[str, Any]] = {f["name"]: f for f in metadata["fields"]}
        self.field_numbers = {name: i for i, name in enumerate(self.fields)}
        self.tables: list[dict[str, Any]] = metadata["tables"]
        self._lock = threading.Lock()
        app_ref = self._app
        self._values = MadeOnce(lambda name: FieldValues(_alive(app_ref).symbol_texts(name)))
        self._calculated: dict[tuple[int, int], FieldValues] = {}  # oldest first
        self._columns: dict[tuple[str, str], ColumnFacts] = {}

    @property
    def app(self) -> assoc.App:
        """The app (loaded while a document holds it)."""
        return _alive(self._app)

    def field(self, name: str) -> dict[str, Any]:
        """The field's metadata; error 2 when the app has no such field."""
        found = self.fields.get(name)
        if found is None:
            raise RpcError(GENERIC_NOT_FOUND, name, "Field not found")
        return found

    def has_values(self, name: str) -> bool:
        """True when the field's values are made already."""
        return name in self._values

    def values(self, name: str) -> FieldValues:
        """The field's values as cells need them (made once: sessions asking for a field at
        the same time wait for the first to make it)."""
        self.field(name)
        if self._shared is not None:
            return self._shared.values(name)
        return self._values(name)

    def dimension_values(self, cube: assoc.Hypercube, dimension: int) -> FieldValues:
        """A cube dimension's values as cells need them: for a calculated dimension, those of
        the derived model the engine keeps for its text, made once while it keeps it (a
        dimension of a million values takes a third of a second to make)."""
        key = cube.symbols_key(dimension)
        if key is None:
            return FieldValues(cube.symbols(dimension))
        if self._shared is not None:
            return self._shared.dimension_values(cube, dimension)
        with self._lock:
            found = self._calculated.pop(key, None)
            if found is not None:
                self._calculated[key] = found  # the latest again
                return found
        made = FieldValues(cube.symbol_texts(dimension))
        with self._lock:
            kept = self._calculated
            kept[key] = made
            total = sum(len(v) for v in kept.values())
            while len(kept) > 1 and (len(kept) > KEPT_CALCULATED or total > KEPT_CALCULATED_VALUES):
                total -= len(kept.pop(next(iter(kept))))
        return made

    def column(self, table: str, field: str) -> ColumnFacts:
        """How `field` occurs in `table`."""
        key = (table, field)
        with self._lock:
            found = self._columns.get(key)
        if found is None:
            codes = self.app.table(table).column_indices(field)
            mask = self.reduction.mask if self.reduction is not None else None
            kept = None if mask is None else mask.rows(table)
            if kept is not None:
                codes = codes[kept]
            present = codes[codes >= 0]
            distinct = int(np.unique(present).size)
            found = ColumnFacts(int(present.size), distinct, distinct < present.size)
            with self._lock:
                found = self._columns.setdefault(key, found)
        return found

    def table_names(self) -> list[str]:
        """Data table names in load order."""
        return [t["name"] for t in self.tables]

    def for_session(self, session: assoc.Session) -> AppFacts:
        """The facts as a session sees them: these, or under section access those of its
        user's reduction (made once per reduction)."""
        reduction = session.reduction
        if reduction is None or not session.reduced or self._shared is not None:
            return self
        with self._lock:
            found = self._reduced.get(id(reduction))
        if found is None or found.reduction is not reduction:
            made = AppFacts(self.app, reduction, self)
            with self._lock:
                if len(self._reduced) >= 1024:
                    self._reduced.pop(next(iter(self._reduced)))
                found = self._reduced.setdefault(id(reduction), made)
                if found.reduction is not reduction:
                    found = self._reduced[id(reduction)] = made
        return found


_FACTS: weakref.WeakKeyDictionary[assoc.App, AppFacts] = weakref.WeakKeyDictionary()
_FACTS_LOCK = threading.Lock()


def app_facts(app: assoc.App) -> AppFacts:
    """The shared facts of a loaded app (made on first use)."""
    with _FACTS_LOCK:
        found = _FACTS.get(app)
    if found is None:
        made = AppFacts(app)
        with _FACTS_LOCK:
            found = _FACTS.setdefault(app, made)
    return found


# ---- Doc methods' answers -----------------------------------------------------------------


def field_description(facts: AppFacts, name: str) -> dict[str, Any]:
    """FieldDescription of one field."""
    f = facts.field(name)
    return {
        "qInternalNumber": facts.field_numbers[name],
        "qName": name,
        "qSrcTables": list(f["src_tables"]),
        "qIsSystem": f["is_system"],
        "qIsHidden": f["is_hidden"],
        "qIsSemantic": f["is_semantic"],
        "qDistinctOnly": f["distinct_only"],
        "qCardinal": f["cardinal"],
        "qTotalCount": f["total_count"],
        "qIsLocked": False,
        "qAlwaysOneSelected": f["always_one_selected"],
        "qAndMode": False,
        "qIsNumeric": f["is_numeric"],
        "qComment": f["comment"],
        "qTags": list(f["tags"]),
        "qIsDefinitionOnly": False,
        "qByteSize": f["byte_size"],
    }


def _key_type(field: dict[str, Any], holders: int, column: ColumnFacts, rows: int) -> str:
    if holders < 2:
        return "NOT_KEY"
    if column.has_duplicates or column.non_nulls < rows:
        return "ANY_KEY"
    if column.present_distinct == field["cardinal"]:
        return "PERFECT_KEY"
    return "PRIMARY_KEY"


def tables_and_keys(facts: AppFacts, synthetic: bool = False) -> dict[str, Any]:
    """{qtr, qk}: the data tables with their fields, and the keys that link tables. The model
    view (`synthetic`): each table's columns, synthetic keys and their `$Syn N Table`s among
    them; the source view: each table with the fields it was loaded with, no key tables."""
    view: dict[str, list[str]] = {}
    for table in facts.tables:
        t = facts.app.table(table["name"])
        if synthetic:
            view[t.name] = [f for f in t.model_fields if f in facts.fields]
        elif not t.is_synthetic:
            view[t.name] = [f for f in t.fields if f in facts.fields]
    holders: dict[str, list[str]] = {}
    for name, names in view.items():
        for field_name in names:
            holders.setdefault(field_name, []).append(name)
    records = []
    for table in facts.tables:
        name, rows = table["name"], table["no_of_rows"]
        if name not in view:
            continue
        fields = []
        for field_name in view[name]:
            field = facts.fields[field_name]
            column = facts.column(name, field_name)
            total = field["cardinal"]
            fields.append(
                {
                    "qName": field_name,
                    "qOriginalFields": [],
                    "qPresent": True,
                    "qHasNull": column.non_nulls < rows,
                    "qHasWild": False,
                    "qHasDuplicates": column.has_duplicates,
                    "qIsSynthetic": "$syn" in field["tags"],
                    "qInformationDensity": column.non_nulls / rows if rows else 0,
                    "qnNonNulls": column.non_nulls,
                    "qnRows": rows,
                    "qSubsetRatio": column.present_distinct / total if total else 0,
                    "qnTotalDistinctValues": total,
                    "qnPresentDistinctValues": column.present_distinct,
                    "qKeyType": _key_type(field, len(holders[field_name]), column, rows),
                    "qComment": field["comment"],
                    "qTags": list(field["tags"]),
                    "qDerivedFields": [],
                    "qIsFieldOnTheFly": False,
                    "qReadableName": field_name,
                }
            )
        records.append(
            {
                "qName": name,
                "qLoose": table["is_loose"],
                "qNoOfRows": rows,
                "qFields": fields,
                "qPos": {"qx": 0, "qy": 0},
                "qComment": table["comment"],
                "qIsDirectDiscovery": False,
                "qIsSynthetic": facts.app.table(name).is_synthetic,
                "qTableTags": [],
            }
        )
    keys = [
        {"qKeyFields": [name], "qTables": holders[name]}
        for name, f in facts.fields.items()
        if not f["is_system"] and len(holders.get(name, ())) >= 2
    ]
    return {"qtr": records, "qk": keys}


def table_data(
    facts: AppFacts,
    table: str,
    offset: int,
    rows: int,
    synthetic: bool = False,
    session: assoc.Session | None = None,
) -> list[dict[str, Any]]:
    """Rows [offset, offset + rows) of a table as {qValue: [FieldValue per column]}: the
    columns it was loaded with, or with `synthetic` its model columns (`$Syn N` in place of
    the fields a synthetic key links)."""
    if table not in facts.table_names():
        raise RpcError(GENERIC_NOT_FOUND, table, "Table not found")
    source = facts.app.table(table)
    fields = source.model_fields if synthetic else source.fields
    # Section access: only the rows the session's reduction leaves, as if the rest were not,
    # and not the fields it omits (the facts of a reduced session do not know them).
    fields = [f for f in fields if f in facts.fields]
    kept = None if session is None else session.kept_rows(source, fields)
    end = min(source.num_rows if kept is None else kept.size, offset + rows)
    if offset >= end:
        return []
    columns = []
    for field in fields:
        codes = source.column_indices(field)
        picked = codes[offset:end] if kept is None else codes[kept[offset:end]]
        columns.append((facts.values(field), picked.tolist()))
    return [
        {"qValue": [values.field_value(codes[r]) for values, codes in columns]}
        for r in range(end - offset)
    ]


def field_list(facts: AppFacts, definition: dict[str, Any]) -> dict[str, Any]:
    """qFieldList {qItems} for a qFieldListDef."""
    show_system = bool(definition.get("qShowSystem", False))
    show_hidden = bool(definition.get("qShowHidden", False))
    show_tables = bool(definition.get("qShowSrcTables", False))
    items = []
    for name, f in facts.fields.items():
        if (f["is_system"] and not show_system) or (f["is_hidden"] and not show_hidden):
            continue
        item = {
            "qName": name,
            "qCardinal": f["cardinal"],
            "qTags": list(f["tags"]),
            "qIsSystem": f["is_system"],
            "qIsHidden": f["is_hidden"],
            "qIsSemantic": f["is_semantic"],
            "qAndMode": False,
        }
        if show_tables:
            item["qSrcTables"] = list(f["src_tables"])
        items.append(item)
    return {"qItems": items}
