"""What a load script reads of the tables it has loaded so far: mapping tables (ApplyMap,
MAP … USING), Exists, Peek, FieldValue, NoOfRows and the other table functions, AutoNumber."""

from __future__ import annotations

import fnmatch

import numpy as np

from assoc.script.errors import ScriptError
from assoc.script.functions import CallContext, numbers_of
from assoc.script.tableops import value_keys
from assoc.script.tables import Column, Frame
from assoc.script.values import NAN, Values, booleans
from assoc.script.values import concatenate as concatenate_values


class LoadedTables:
    """The script runner's tables so far, and the script functions that read them."""

    def __init__(self) -> None:
        self.tables: dict[str, Frame] = {}
        self.maps: dict[str, tuple[Values, Values]] = {}  # mapping tables: keys, values
        self._map_using: list[tuple[str, str | None]] = []
        self._autonumbers: dict[str, dict[object, int]] = {}
        self._last_table: str | None = None

    def _loaded_before(self, field_name: str, value: Column) -> np.ndarray:
        """Which rows' values are among the values field `field_name` holds in the tables."""
        columns = self._field_columns(field_name)
        if not columns:
            return np.zeros(len(value.codes), dtype=bool)
        per_symbol, count = value_keys([value.symbols] + [c.symbols for c in columns])
        loaded = np.zeros(count + 1, dtype=bool)
        for col, ids in zip(columns, per_symbol[1:], strict=True):
            used = np.zeros(len(ids), dtype=bool)
            codes = col.codes
            used[codes[codes >= 0]] = True
            loaded[ids[used & (ids >= 0)]] = True
        ids = per_symbol[0]
        codes = value.codes
        if not len(ids):
            return np.zeros(len(codes), dtype=bool)
        at = np.where(codes < 0, count, ids[np.maximum(codes, 0)])
        result: np.ndarray = loaded[np.where(at < 0, count, at)]
        return result

    def _map_values(self, map_name: str, values: Values, default: Values | None) -> Values:
        """Values through a mapping table: a value found maps to its value; others to
        `default` (each value's default), or stay as they are."""
        mapping = self.maps.get(map_name)
        if mapping is None:
            raise ValueError(f"no mapping table named {map_name}")
        keys, mapped = mapping
        (vid, kid), count = value_keys([values, keys])
        at = np.full(count + 1, -1, dtype=np.int64)
        at[kid[kid >= 0]] = np.flatnonzero(kid >= 0)
        pos = np.where(vid >= 0, at[np.where(vid >= 0, vid, count)], -1)
        fallback = values if default is None else default.broadcast(len(values))
        both = concatenate_values([mapped, fallback])
        return both.take(np.where(pos >= 0, pos, len(mapped) + np.arange(len(values))))

    def apply_map(self, args: list[Values], ctx: CallContext) -> Values:
        """ApplyMap(map, value [, default])."""
        map_name = args[0].text_list()[0] or ""
        values = args[1].broadcast(ctx.n)
        default = args[2].broadcast(len(values)) if len(args) > 2 else None
        return self._map_values(map_name, values, default)

    def _mapped(self, frame: Frame) -> Frame:
        """The fields MAP … USING names, through their mapping tables."""
        picks = {}
        for f in frame.fields:
            using = None
            for pattern, map_name in self._map_using:
                if fnmatch.fnmatchcase(f, pattern):
                    using = map_name
            if using is not None:
                picks[f] = using
        if not picks:
            return frame
        columns = {}
        for f in frame.fields:
            col = frame.column(f)
            if f in picks:
                try:
                    col = col.mapped(self._map_values(picks[f], col.symbols, None))
                except ValueError as exc:
                    raise ScriptError(str(exc)) from None
            columns[f] = col
        return Frame(frame.name, frame.rows, columns)

    def _field_columns(self, field_name: str) -> list[Column]:
        return [t.column(field_name) for t in self.tables.values() if field_name in t.fields]

    def _field_values(self, field_name: str) -> Values:
        """A field's distinct values over all tables, in the order they were loaded."""
        parts = []
        for col in self._field_columns(field_name):
            codes = col.codes
            used, first = np.unique(codes[codes >= 0], return_index=True)
            parts.append(col.symbols.take(used[np.argsort(first)]))
        if not parts:
            return Values(np.empty(0))
        allv = concatenate_values(parts)
        (ids,), _ = value_keys([allv])
        valid = np.flatnonzero(ids >= 0)
        _, first = np.unique(ids[valid], return_index=True)
        return allv.take(valid[np.sort(first)])

    def exists(self, args: list[Values], ctx: CallContext) -> Values:
        """Exists(F, value) outside a LOAD: whether F holds the value."""
        field_name = args[0].text_list()[0] or ""
        values = args[1].broadcast(ctx.n) if len(args) > 1 else Values.nulls(ctx.n)
        found = self._loaded_before(field_name, Column(values, np.arange(len(values))))
        return booleans(found)

    def peek(self, args: list[Values], ctx: CallContext) -> Values:
        """Peek(F [, row [, table]]): F's value in a row of a table (rows from 0, negative
        from the end; the last row of the last loaded table by default); NULL past the end."""
        field_name = args[0].text_list()[0] or ""
        table = args[2].text_list()[0] if len(args) > 2 else self._last_table
        frame = self.tables.get(table or "")
        if frame is None:
            raise ValueError(f"table not found: {table}")
        if field_name not in frame.fields:
            raise ValueError(f"field not found: {field_name}")
        n = max(ctx.n, 1) if len(args) > 1 and len(args[1]) > 1 else 1
        rows = (
            numbers_of(args[1].broadcast(n), ctx.interpretation)
            if len(args) > 1
            else np.array([-1.0])
        )
        rows = np.where(rows < 0, rows + frame.rows, rows)
        ok = (rows >= 0) & (rows < frame.rows) & (rows == np.floor(rows))
        col = frame.column(field_name)
        at = np.where(ok, np.nan_to_num(rows), 0).astype(np.int64)
        codes = np.where(ok, col.codes[at] if frame.rows else -1, -1)
        symbols = col.symbols.with_null()
        return symbols.take(np.where(codes < 0, len(symbols) - 1, codes))

    def field_value(self, args: list[Values], ctx: CallContext) -> Values:
        """FieldValue(F, n): F's n-th distinct value (from 1, in load order), NULL past the end."""
        values = self._field_values(args[0].text_list()[0] or "").with_null()
        k = numbers_of(args[1].broadcast(ctx.n), ctx.interpretation)
        ok = (k >= 1) & (k <= len(values) - 1) & (k == np.floor(k))
        return values.take(np.where(ok, np.nan_to_num(k) - 1, len(values) - 1).astype(np.int64))

    def field_value_count(self, args: list[Values], ctx: CallContext) -> Values:
        """FieldValueCount(F): how many distinct values F has."""
        name = args[0].text_list()[0] or ""
        if not self._field_columns(name):
            return Values.nulls(1)
        return Values(np.array([float(len(self._field_values(name)))]))

    def _table_arg(self, v: Values) -> Frame | None:
        return self.tables.get(v.text_list()[0] or "")

    def no_of_rows(self, args: list[Values], ctx: CallContext) -> Values:
        """NoOfRows(T): T's rows (NULL for no such table)."""
        t = self._table_arg(args[0])
        return Values(np.array([NAN if t is None else float(t.rows)]))

    def no_of_fields(self, args: list[Values], ctx: CallContext) -> Values:
        """NoOfFields(T): T's fields (NULL for no such table)."""
        t = self._table_arg(args[0])
        return Values(np.array([NAN if t is None else float(len(t.fields))]))

    def field_name(self, args: list[Values], ctx: CallContext) -> Values:
        """FieldName(n, T): T's n-th field (from 1), NULL past the end."""
        t = self._table_arg(args[1])
        k = numbers_of(args[0], ctx.interpretation)[0]
        if t is None or k != k or not 1 <= k <= len(t.fields):
            return Values.nulls(1)
        return Values.of_texts([t.fields[int(k) - 1]])

    def table_name(self, args: list[Values], ctx: CallContext) -> Values:
        """TableName(n): the n-th table (from 0, in load order), NULL past the end."""
        k = numbers_of(args[0], ctx.interpretation)[0]
        names = list(self.tables)
        if k != k or not 0 <= k < len(names):
            return Values.nulls(1)
        return Values.of_texts([names[int(k)]])

    def no_of_tables(self, args: list[Values], ctx: CallContext) -> Values:
        """NoOfTables(): how many tables are loaded."""
        return Values(np.array([float(len(self.tables))]))

    def auto_number(self, args: list[Values], ctx: CallContext) -> Values:
        """AutoNumber(v [, counter]): 1, 2, … for each distinct value in the order met, one
        numbering per counter for the whole script."""
        values = args[0].broadcast(ctx.n)
        counter = args[1].text_list()[0] or "" if len(args) > 1 else ""
        seen = self._autonumbers.setdefault(counter, {})
        out = np.full(len(values), NAN)
        for i, (x, t) in enumerate(zip(values.nums.tolist(), values.text_list(), strict=True)):
            if t is None:
                continue
            key: object = x if x == x else t
            out[i] = seen.setdefault(key, len(seen) + 1)
        return Values(out)
