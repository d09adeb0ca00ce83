"""Apps as Python programs use them: load, inspect, write."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from assoc import _core
from assoc.access import ACCESS_TABLE, DENIED, AccessTable, ValueCodes, hidden_name
from assoc.annotations import Annotations
from assoc.arrow import ArrowExport, Duals, check_duals, is_arrow_stream, read_arrow
from assoc.field_order import FieldOrder, MadeOnce, SymbolTexts
from assoc.session import Reduction, Session
from assoc.sources import Source, SourceKind, TableSource, load_model

_REDUCTIONS_KEPT = 1024  # users' section access reductions an app keeps computed
_SYSTEM_TABLES = ("$$SysTable 1", "$$SysTable 2")


class Table:
    """One table of an app: its fields and its rows, as it was loaded (its source view: a field
    that moved into a synthetic key is read through that key)."""

    def __init__(self, model: _core.DataModel, name: str) -> None:
        self._model = model
        self.name = name
        self.num_rows: int = model.table_rows(name)

    @property
    def fields(self) -> list[str]:
        """The fields the table was loaded with, in load order."""
        return self._model.source_fields(self.name)

    @property
    def model_fields(self) -> list[str]:
        """The table's columns in the model: a synthetic key (`$Syn N`) in place of the fields
        it links, which its `$Syn N Table` holds."""
        return self._model.table_fields(self.name)

    @property
    def is_synthetic(self) -> bool:
        """True for a synthetic key table (`$Syn N Table`)."""
        return self._model.table_is_synthetic(self.name)

    def column(self, field: str) -> list[Any]:
        """The column's values in row order: int, float, str or Dual; None for NULL. Any field
        of `fields` or `model_fields`."""
        return self._model.column(self.name, field)

    def column_indices(self, field: str) -> np.ndarray:
        """The column's symbol indexes in row order (-1 for NULL), as an int64 array."""
        return self._model.column_indices(self.name, field)

    def to_arrow(self, duals: Duals = "number") -> ArrowExport:
        """The table for Arrow consumers (pyarrow.table, polars.DataFrame, DuckDB): text fields
        as dictionary arrays, numbers as int64/float64; fields of duals as their number, their
        text, or a struct of both."""
        return self._model.arrow(self.name, check_duals(duals))

    def __arrow_c_schema__(self) -> object:
        """The Arrow schema of to_arrow() as a PyCapsule."""
        return self.to_arrow().__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        """The rows of to_arrow() as an Arrow stream PyCapsule."""
        return self.to_arrow().__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        return f"<assoc.Table {self.name!r}: {self.num_rows} rows x {len(self.fields)} fields>"


class _AccessLayout:
    """What section access reads of an app's model for every user's reduction: the data
    fields, the access table's fields, each table's fields (the system tables' too), the data
    tables' rows, and the $Table / $Field values that name the access table or its fields."""

    def __init__(self, model: _core.DataModel, fields: list[str]) -> None:
        self.fields = fields
        self.names = frozenset(model.field_names())
        self.access_fields = frozenset(model.source_fields(ACCESS_TABLE))
        data_tables = [t for t in model.table_names() if t != ACCESS_TABLE]
        self.table_rows = {t: model.table_rows(t) for t in data_tables}
        names = model.table_names()
        if "$Table" in self.names:  # the system tables are there
            names += _SYSTEM_TABLES
        self.tables = {t: model.source_fields(t) for t in names}
        self._system = {
            name: [str(v) for v in model.symbols(name)]
            for name in ("$Table", "$Field")
            if name in self.names
        }
        self._hidden: dict[frozenset[str], dict[str, list[int]]] = {}  # by omitted fields

    def hidden_system(self, omit: frozenset[str]) -> dict[str, list[int]]:
        """The system fields' values that name neither the access table, its fields nor a
        field the user is not given (the row mask keeps only their rows)."""
        found = self._hidden.get(omit)
        if found is not None:
            return found
        out: dict[str, list[int]] = {}
        for name, values in self._system.items():
            gone = omit if name == "$Field" else frozenset()
            out[name] = [i for i, v in enumerate(values) if not (hidden_name(v) or v in gone)]
        if len(self._hidden) < _REDUCTIONS_KEPT:
            self._hidden[omit] = out
        return out


def _keep(kept: dict[Any, Reduction], key: Any, reduction: Reduction) -> None:
    """Keeps a reduction, letting the oldest kept go when _REDUCTIONS_KEPT are."""
    if key not in kept and len(kept) >= _REDUCTIONS_KEPT:
        kept.pop(next(iter(kept)))
    kept[key] = reduction


class App:
    """An app: linked tables held by the engine core."""

    def __init__(self, model: _core.DataModel, annotations: Annotations | None = None) -> None:
        self._impl = model
        # Tags and comments the app's script gave (TAG, UNTAG, COMMENT), shown in metadata.
        self.annotations = annotations
        # One link graph and value look-up per app, shared by its sessions and the result cache.
        self._associative = _core.AssociativeModel(model)
        # Section access: the access table the app's script loaded (kept as a hidden table).
        self.access: AccessTable | None = AccessTable.of_model(model)
        self._reductions: dict[tuple[str, frozenset[str]], Reduction] = {}  # by user, groups
        # The same by what they keep (each field's symbols, the fields omitted): users whose
        # grants reach the same values share one reduction, its row mask made once.
        self._shared_reductions: dict[tuple[Any, ...], Reduction] = {}
        # Each field's values in sort order, for list pages (made on first use, kept; it
        # reads the model, not the app, so sessions keeping it do not keep the app).
        texts = model.symbol_texts
        self._orders = MadeOnce(lambda field: FieldOrder(SymbolTexts(*texts(field))))

    @classmethod
    def from_tables(
        cls, tables: Mapping[str, Mapping[str, Iterable[Any] | np.ndarray] | Any]
    ) -> App:
        """An app from {table: {field: values}}; values are numbers, str, Dual or None. A table
        may also be any object with `__arrow_c_stream__` (see from_arrow)."""
        if not isinstance(tables, Mapping) or not tables:
            raise _core.Error("from_tables needs a non-empty mapping of table name to columns")
        builder = _core.ModelBuilder()
        for name, columns in tables.items():
            if not isinstance(name, str):
                raise _core.Error("table names must be strings")
            if is_arrow_stream(columns):
                read_arrow(columns, name).add_to(builder)
                continue
            if not isinstance(columns, Mapping) or not columns:
                raise _core.Error(
                    f"table {name!r} needs a non-empty mapping of field name to values"
                )
            builder.add_columns(name, dict(columns))
        return cls(builder.build())

    @classmethod
    def from_arrow(cls, tables: Mapping[str, Any]) -> App:
        """An app from {table: object with `__arrow_c_stream__`} (pyarrow Table, polars or pandas
        DataFrame, DuckDB relation); dates and timestamps become duals (docs/arrow.md)."""
        from assoc.arrow import build_model

        if not isinstance(tables, Mapping) or not tables:
            raise _core.Error("from_arrow needs a non-empty mapping of table name to Arrow table")
        for name in tables:
            if not isinstance(name, str):
                raise _core.Error("table names must be strings")
        return cls(build_model(dict(tables)))

    @classmethod
    def from_qvd(cls, source: TableSource, table: str | None = None) -> App:
        """An app with the one table of a QVD (path, bytes, QvdStream table); `table` renames it."""
        return cls(load_model([(source, table)], SourceKind.QVD))

    @classmethod
    def from_csv(cls, source: Source, table: str | None = None) -> App:
        """An app with the table of a CSV file (a path or bytes), named `table` or Table1."""
        return cls(load_model([(source, table)], SourceKind.CSV))

    @classmethod
    def from_package(cls, source: Source) -> App:
        """An app from an app package: a ZIP with app.json, its tables and media (path or
        bytes), with the tags and comments app.json keeps."""
        from assoc.package import AppPackage

        with AppPackage.open(source) as package:
            return cls(package.build_model(), package.manifest.annotations)

    @classmethod
    def from_script(
        cls,
        text: str,
        folders: Mapping[str, str | os.PathLike[str]] | None = None,
        variables: Mapping[str, str] | None = None,
    ) -> App:
        """An app from a load script; `folders` maps connection names to folders (lib://name/…)."""
        from assoc.script import FolderConnections, ScriptRunner

        result = ScriptRunner(text, FolderConnections(folders), variables).run()
        return cls(result.model, result.annotations)

    @property
    def interpretation(self) -> dict[str, str]:
        """The number interpretation variables the app's script left (DateFormat, …), by
        which its charts read and write numbers and dates; empty: en-US."""
        return dict(self._impl.interpretation_variables)

    @property
    def tables(self) -> list[str]:
        """Table names in load order (the hidden section access table left out)."""
        return [t for t in self._impl.table_names() if t != ACCESS_TABLE]

    @property
    def stored_tables(self) -> list[str]:
        """Every table a package of the app stores: the tables and the hidden section access
        table (it persists the app's access rules)."""
        return self._impl.table_names()

    @property
    def fields(self) -> list[str]:
        """Field names in load order (those of the section access table left out)."""
        if self.access is None:
            return self._impl.field_names()
        hidden = set(self._impl.source_fields(ACCESS_TABLE))
        return [f for f in self._impl.field_names() if f not in hidden]

    def table(self, name: str) -> Table:
        """One table by name."""
        return Table(self._impl, name)

    def symbols(self, field: str) -> list[Any]:
        """A field's distinct values, in symbol (first-occurrence) order."""
        return self._impl.symbols(field)

    def symbol_texts(self, field: str) -> SymbolTexts:
        """A field's distinct values as lists show them, in symbol order: each one's text
        (a number's in its shortest form) and number (NaN for a text)."""
        return SymbolTexts(*self._impl.symbol_texts(field))

    def write_qvd(self, table: str, path: str | os.PathLike[str]) -> None:
        """Writes one table as a QVD file that Qlik and other QVD tools read."""
        data = self._impl.write_qvd(table)
        with open(path, "wb") as f:
            f.write(data)

    def session(self, user: str = "", groups: Iterable[str] = ()) -> Session:
        """A new, independent selection state in this app (close it, or use `with`). In an app
        with section access it is `user`'s (member of `groups`), reduced to the data the access
        table gives them; assoc.Error("Access denied") when it gives them nothing."""
        if self.access is None:
            return Session(self._associative, user, orders=self._orders)
        if isinstance(groups, str) or not all(isinstance(g, str) for g in groups):
            raise _core.Error("a session's groups must be a list of strings")
        return Session(self._associative, user, self.reduction(user, groups), self._orders)

    def reduction(self, user: str, groups: Iterable[str] = ()) -> Reduction:
        """What section access leaves `user`, with its row mask (made once for each set of
        kept values and omitted fields, and shared by the sessions of every user granted
        them); assoc.Error("Access denied") when nothing."""
        if self.access is None:
            return Reduction({})
        if not isinstance(user, str):
            raise _core.Error("a session's user must be a string")
        key = (user.strip().upper(), frozenset(g.strip().upper() for g in groups))
        found = self._reductions.get(key)
        if found is not None:
            return found
        layout = self._access_layout
        rows = self.access.rows_for(user, groups)
        if not rows:
            raise _core.Error(DENIED)
        # Most users' rows each name their values: those rows' symbols, looked up once per
        # app, make the reduction; `*` and empty values need the whole grant.
        codes = self._access_codes.codes_of_rows(rows)
        if codes is None:
            grant = self.access.grant_of(rows)
            codes, granted_omit = self._access_codes.codes(grant), grant.omit
        else:
            granted_omit = self.access.omitted(rows)
        if any(not c for c in codes.values()):
            raise _core.Error(DENIED)  # strict exclusion: a reduction that reaches no data
        kept = (tuple((field, tuple(codes[field])) for field in sorted(codes)), granted_omit)
        found = self._shared_reductions.get(kept)
        if found is None:
            mask = _core.RowMask(self._associative, {**codes, **layout.hidden_system(granted_omit)})
            # The access table is nobody's data: its fields are unknown to every user, and so
            # are the system fields that would count what this one does not see.
            omit = granted_omit | layout.access_fields | self._counting_system(granted_omit, mask)
            hidden = frozenset({ACCESS_TABLE})
            found = Reduction(codes, mask, omit, tables=layout.tables, hidden=hidden)
            _keep(self._shared_reductions, kept, found)
        _keep(self._reductions, key, found)
        return found

    @functools.cached_property
    def _access_layout(self) -> _AccessLayout:
        """What every user's reduction reads of the model (made once: the model is fixed)."""
        return _AccessLayout(self._impl, self.fields)

    @functools.cached_property
    def _access_codes(self) -> ValueCodes:
        """The symbols of each value the access table lists (matched once: the model is fixed)."""
        assert self.access is not None
        return ValueCodes(self.access, self._associative, self.fields)

    def _counting_system(self, omit: frozenset[str], mask: _core.RowMask) -> frozenset[str]:
        """The system fields that would count what the user does not see, left out like
        OMIT fields: $Rows (each table's rows in the shared model) when the reduction drops
        rows, $Fields and $FieldNo (each table's columns, their positions) when it omits a
        data field."""
        layout = self._access_layout
        out: set[str] = set()
        if "$Rows" in layout.names and any(
            mask.possible_rows(t) < rows for t, rows in layout.table_rows.items()
        ):
            out.add("$Rows")
        if "$Fields" in layout.names and not omit.isdisjoint(layout.fields):
            out |= {"$Fields", "$FieldNo"}
        return frozenset(out)

    def metadata(self, reduction: Reduction | None = None) -> dict[str, Any]:
        """DataModelMetadata: fields, tables, byte sizes and reload statistics. With a
        section access `reduction` (App.reduction), of the app as that user opens it: the
        rows, values and counts of the rows it keeps, the fields it omits left out."""
        found = self._impl.metadata()
        if self.annotations:
            found = self.annotations.apply(found)
        if self.access is not None:
            hidden = set(self._impl.source_fields(ACCESS_TABLE))
            found["tables"] = [t for t in found["tables"] if t["name"] != ACCESS_TABLE]
            found["fields"] = [f for f in found["fields"] if f["name"] not in hidden]
        if reduction is not None and reduction.mask is not None:
            self._reduce_metadata(found, reduction, reduction.mask)
        return found

    def _reduce_metadata(
        self, found: dict[str, Any], reduction: Reduction, mask: _core.RowMask
    ) -> None:
        omit = reduction.omit
        kept_rows = {t["name"]: mask.rows(t["name"]) for t in found["tables"]}
        has_system = "$Table" in self._impl.field_names()  # the system tables are there
        system = list(_SYSTEM_TABLES) if has_system else []
        kept_rows.update({t: mask.rows(t) for t in system})
        keys = {f["name"] for f in found["fields"] if "$key" in f["tags"]}
        full_rows = {t["name"]: t["no_of_rows"] for t in found["tables"]}
        # Byte sizes are those of the arrays the user's app holds (DESIGN.md §3): the static
        # size swaps the model's arrays for them, bookkeeping unchanged.
        static = found["static_byte_size"]
        for table in found["tables"]:
            columns = self._impl.table_fields(table["name"])
            table["no_of_rows"] = mask.possible_rows(table["name"])
            table["no_of_fields"] = sum(1 for f in columns if f not in omit)
            table["no_of_key_fields"] = sum(1 for f in columns if f in keys and f not in omit)
            kept_columns = [f for f in columns if f not in omit]
            static -= table["byte_size"]
            table["byte_size"] = mask.table_byte_size(table["name"], kept_columns)
            static += table["byte_size"]
        fields = []
        for field in found["fields"]:
            name = field["name"]
            static -= field["byte_size"]
            if name in omit:
                continue
            field["cardinal"] = mask.cardinal(name)
            field["byte_size"] = mask.field_byte_size(name)
            static += field["byte_size"]
            total = 0
            held = field["src_tables"] or [t for t in system if name in self._impl.table_fields(t)]
            if len(held) == 1 and field["total_count"] == full_rows.get(held[0]):
                total = mask.possible_rows(held[0])  # no NULL in its one table: one per row
                held = []
            for table in held:
                codes = self._impl.column_indices(table, name)
                rows = kept_rows.get(table)
                present = codes >= 0 if rows is None else codes[rows] >= 0
                total = max(total, int(np.count_nonzero(present)))
            field["total_count"] = total
            fields.append(field)
        found["fields"] = fields
        found["static_byte_size"] = static

    def __repr__(self) -> str:
        return f"<assoc.App: {len(self.tables)} tables, {len(self.fields)} fields>"
