"""Statements and LOAD prefixes that reshape or annotate loaded tables: NullAsValue /
NullAsNull, AUTONUMBER, TAG / UNTAG / COMMENT, BINARY, INTERVALMATCH and GENERIC."""

from __future__ import annotations

import fnmatch

import numpy as np

from assoc import _core
from assoc.access import _PREFIX as ACCESS_PREFIX
from assoc.access import ACCESS_TABLE, hidden_name
from assoc.annotations import FIXED_TAGS, Annotations
from assoc.script import syntax as ast
from assoc.script.connections import FolderConnections
from assoc.script.errors import ScriptError
from assoc.script.functions import numbers_of
from assoc.script.numbers import Interpretation
from assoc.script.tableops import group_rows, row_keys
from assoc.script.tables import Column, Frame
from assoc.script.values import Values
from assoc.script.values import concatenate as concatenate_values


def _matches(name: str, patterns: tuple[str, ...] | list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


class Reshaping:
    """The statements of this module, mixed into the script runner."""

    tables: dict[str, Frame]
    maps: dict[str, tuple[Values, Values]]
    variables: dict[str, str]
    connections: FolderConnections
    cpu: _core.CpuAccount
    _autonumbers: dict[str, dict[object, int]]
    _null_as: list[tuple[str, bool]]
    _annotations: list[ast.Annotate]
    _binary_annotations: Annotations  # those of the app a BINARY statement loaded
    access_tables: dict[str, Frame]

    # --- NullAsValue / NullAsNull
    def _null_as_value(self, frame: Frame) -> Frame:
        """A LOAD's fields under NullAsValue (and not NullAsNull after it): NULL rows become
        the text of the NullValue variable (empty when it is not set)."""
        picked = []
        for f in frame.fields:
            as_value = False
            for pattern, value in self._null_as:
                if fnmatch.fnmatchcase(f, pattern):
                    as_value = value
            if as_value:
                picked.append(f)
        if not picked or not frame.rows:
            return frame
        text = self.variables.get("NullValue", "")
        columns = {}
        for f in frame.fields:
            col = frame.column(f)
            if f in picked and (col.codes < 0).any():
                symbols = col.symbols.with_null()
                texts = np.empty(len(symbols), dtype=object)
                texts[:] = symbols.text_list()
                texts[-1] = text
                nums = symbols.nums.copy()
                codes = np.where(col.codes < 0, len(symbols) - 1, col.codes).astype(np.int32)
                col = Column(Values(nums, texts), codes)
            columns[f] = col
        return Frame(frame.name, frame.rows, columns)

    # --- AUTONUMBER
    def _autonumber_fields(self, stmt: ast.AutoNumberFields) -> None:
        """Each matching field's values replaced by 1, 2, … in the order the values first
        appear (tables in load order, rows in order): per field, or one numbering for all
        fields with `USING namespace` (shared with AutoNumber(x, namespace))."""
        found = False
        for name, frame in list(self.tables.items()):
            picked = [f for f in frame.fields if _matches(f, stmt.patterns)]
            if not picked:
                continue
            found = True
            columns = {}
            for f in frame.fields:
                col = frame.column(f)
                if f in picked:
                    key = stmt.namespace if stmt.namespace is not None else f"\0field {f}"
                    seen = self._autonumbers.setdefault(key, {})
                    codes = col.codes
                    used, first = np.unique(codes[codes >= 0], return_index=True)
                    numbers = np.full(len(col.symbols), np.nan)
                    nums, texts = col.symbols.nums.tolist(), col.symbols.text_list()
                    for k in used[np.argsort(first)].tolist():
                        x, t = nums[k], texts[k]
                        value_key: object = x if x == x else t
                        numbers[k] = seen.setdefault(value_key, len(seen) + 1)
                    col = col.mapped(Values(numbers))
                columns[f] = col
            self.tables[name] = Frame(name, frame.rows, columns).packed(self.cpu)
        if not found:
            raise ScriptError(
                f"AUTONUMBER: no field matches {', '.join(stmt.patterns)}", stmt.line, stmt.column
            )

    # --- TAG / UNTAG / COMMENT
    def _annotate(self, stmt: ast.Annotate) -> None:
        if stmt.map is not None and stmt.map not in self.maps:
            raise ScriptError(f"no mapping table named {stmt.map}", stmt.line, stmt.column)
        self._annotations.append(stmt)

    def annotations(self) -> Annotations:
        """The tags and comments of the script's TAG / UNTAG / COMMENT statements, in order,
        over the fields and tables the script ends with (after those of a BINARY app)."""
        fields = list(dict.fromkeys(f for t in self.tables.values() for f in t.fields))
        out = self._binary_annotations.only(set(fields), set(self.tables))
        for stmt in self._annotations:
            names = list(self.tables) if stmt.what == "table comment" else fields
            mapping: dict[str, str] = {}
            if stmt.map is not None:
                keys, values = self.maps[stmt.map]
                for k, v in zip(keys.text_list(), values.text_list(), strict=True):
                    if k is not None and v is not None:
                        mapping.setdefault(k, v)
            for name in names:
                if not _matches(name, stmt.names):
                    continue
                text = stmt.text if stmt.map is None else mapping.get(name)
                if text is None:
                    continue
                if stmt.what == "tag":
                    tags = out.field_tags.setdefault(name, [])
                    if text not in tags:
                        tags.append(text)
                    if text in out.field_untags.get(name, ()):
                        out.field_untags[name].remove(text)
                elif stmt.what == "untag":
                    out.field_tags[name] = [t for t in out.field_tags.get(name, []) if t != text]
                    untags = out.field_untags.setdefault(name, [])
                    if text not in FIXED_TAGS and text not in untags:
                        untags.append(text)  # also off what the data carries
                elif stmt.what == "field comment":
                    out.field_comments[name] = text
                else:
                    out.table_comments[name] = text
        return out

    # --- BINARY
    def _binary(self, stmt: ast.BinaryLoad) -> None:
        """The data tables of a stored app (an app package), as if loaded here, its section
        access and its fields' and tables' tags and comments."""
        from assoc.app import App

        path = self.connections.resolve(stmt.path, stmt.line, stmt.column)
        if not path.is_file():
            raise ScriptError(
                f"cannot open file {stmt.path!r}: no such file", stmt.line, stmt.column
            )
        try:
            app = App.from_package(str(path))
            for name in app.tables:
                if app.table(name).is_synthetic:
                    continue
                data = app._impl.write_qvd(name)
                self.tables[name] = Frame.of_native(
                    _core.ScriptTable.read_qvd(data, name, self.cpu)
                )
            if app.annotations:
                self._binary_annotations = app.annotations
            if ACCESS_TABLE in app._impl.table_names():
                # The stored app's section access comes along, as in Qlik: its rules hold.
                data = app._impl.write_qvd(ACCESS_TABLE)
                stored = Frame.of_native(_core.ScriptTable.read_qvd(data, ACCESS_TABLE, self.cpu))
                rules = stored.with_fields(
                    [(f, f[len(ACCESS_PREFIX) :]) for f in stored.fields if hidden_name(f)]
                )
                rules.name = ACCESS_TABLE
                self.access_tables[ACCESS_TABLE] = rules
        except (_core.Error, OSError) as exc:
            raise ScriptError(
                f"cannot read the app {stmt.path!r}: {exc}", stmt.line, stmt.column
            ) from None

    # --- INTERVALMATCH
    def _interval_match(self, stmt: ast.Load, frame: Frame, interp: Interpretation) -> Frame:
        """The loaded intervals (low, high[, keys…]) with the match field: one row per interval
        and value of the match field (with equal keys) inside it, ends included; intervals
        with a bound that is no number match nothing."""
        match, keys = stmt.interval_match[0], list(stmt.interval_match[1:])
        if len(frame.fields) != 2 + len(keys):
            raise ScriptError(
                f"INTERVALMATCH needs a LOAD of the low and high bounds"
                f"{' and the key fields' if keys else ''}: {2 + len(keys)} fields",
                stmt.line,
                stmt.column,
            )
        if keys and frame.fields[2:] != keys:
            raise ScriptError(
                f"INTERVALMATCH: the LOAD's fields after the bounds must be {', '.join(keys)}",
                stmt.line,
                stmt.column,
            )
        wanted = [match, *keys]
        holders = [t for t in self.tables.values() if all(f in t.fields for f in wanted)]
        if not holders:
            raise ScriptError(
                f"INTERVALMATCH: no table loaded so far holds {', '.join(wanted)}",
                stmt.line,
                stmt.column,
            )
        # The distinct (match, keys…) combinations loaded so far.
        points: list[Column] = []
        for f in wanted:
            parts = [t.column(f) for t in holders]
            points.append(_stacked(parts))
        _, reps = group_rows(points)
        combos = [
            Column(p.symbols, rep.astype(np.int32)) for p, rep in zip(points, reps, strict=True)
        ]
        values = _row_numbers(combos[0], interp)
        low = _row_numbers(frame.column(frame.fields[0]), interp)
        high = _row_numbers(frame.column(frame.fields[1]), interp)
        if keys:
            ids, _ = row_keys(
                [
                    c
                    for pair in zip(combos[1:], [frame.column(k) for k in keys], strict=True)
                    for c in pair
                ]
            )
            both = np.concatenate(
                [
                    np.stack([ids[2 * j] for j in range(len(keys))], axis=1),
                    np.stack([ids[2 * j + 1] for j in range(len(keys))], axis=1),
                ]
            )
            _, inverse = np.unique(both, axis=0, return_inverse=True)
            key = np.where((both < 0).any(axis=1), -1, inverse.reshape(-1))
            point_key, interval_key = key[: len(values)], key[len(values) :]
        else:
            point_key = np.zeros(len(values), dtype=np.int64)
            interval_key = np.zeros(frame.rows, dtype=np.int64)
        order = np.lexsort((values, point_key))
        sorted_keys, sorted_values = point_key[order], values[order]
        ok = ~np.isnan(low) & ~np.isnan(high) & (interval_key >= 0)
        rows, at = [], []
        for r in np.flatnonzero(ok).tolist():
            k = interval_key[r]
            begin = np.searchsorted(sorted_keys, k, "left")
            end = np.searchsorted(sorted_keys, k, "right")
            segment = sorted_values[begin:end]
            lo = begin + np.searchsorted(segment, low[r], "left")
            hi = begin + np.searchsorted(segment, high[r], "right")
            if hi > lo:
                rows.append(np.full(hi - lo, r))
                at.append(order[lo:hi])
        row_index = np.concatenate(rows) if rows else np.empty(0, dtype=np.int64)
        point_index = np.concatenate(at) if at else np.empty(0, dtype=np.int64)
        columns = {f: frame.column(f).take(row_index) for f in frame.fields}
        columns[match] = combos[0].take(point_index)
        return Frame(frame.name, len(row_index), columns)

    # --- GENERIC
    def _generic(self, stmt: ast.Load, name: str, frame: Frame) -> list[Frame]:
        """GENERIC LOAD key…, attribute, value: one table `name.attribute` per attribute value,
        with the key fields and a field named after the attribute holding the values."""
        if len(frame.fields) < 3:
            raise ScriptError(
                "GENERIC LOAD needs key fields, an attribute field and a value field",
                stmt.line,
                stmt.column,
            )
        *keys, attribute, value = frame.fields
        attr = frame.column(attribute)
        texts = attr.symbols.text_list()
        codes = attr.codes
        used, first = np.unique(codes[codes >= 0], return_index=True)
        out = []
        for k in used[np.argsort(first)].tolist():
            label = texts[k] or ""
            rows = np.flatnonzero(codes == k)
            columns = {f: frame.column(f).take(rows) for f in keys}
            columns[label] = frame.column(value).take(rows)
            out.append(Frame(f"{name}.{label}", len(rows), columns))
        return out


def _stacked(parts: list[Column]) -> Column:
    """Columns one after the other (the symbols of each kept apart)."""
    if len(parts) == 1:
        return parts[0]
    symbols = concatenate_values([p.symbols for p in parts])
    offsets = np.cumsum([0] + [len(p.symbols) for p in parts[:-1]])
    codes = np.concatenate(
        [np.where(p.codes < 0, -1, p.codes + off) for p, off in zip(parts, offsets, strict=True)]
    )
    return Column(symbols, codes.astype(np.int32))


def _row_numbers(col: Column, interp: Interpretation) -> np.ndarray:
    nums = numbers_of(col.symbols.with_null(), interp)
    out: np.ndarray = nums[np.where(col.codes < 0, len(nums) - 1, col.codes)]
    return out


__all__ = ["Annotations", "Reshaping"]
