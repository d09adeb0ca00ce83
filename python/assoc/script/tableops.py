"""Table operations of load scripts over symbol codes with numpy: value keys shared by several
columns, joins and keeps, CROSSTABLE, and the aggregations of LOAD … GROUP BY."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from assoc import _core
from assoc.script.tables import Column, Frame
from assoc.script.values import NAN, Values, concatenate


def _dense_ranks(nums: np.ndarray) -> tuple[np.ndarray, int] | None:
    """np.unique's inverse and count for whole numbers in a range not much wider than their
    number (keys, codes, years: the common case), by a table over the range instead of a
    sort; None for other numbers."""
    if not len(nums):
        return None
    low, high = float(nums.min()), float(nums.max())
    if high - low > 4 * len(nums) + 1024 or not np.isfinite(low) or not np.isfinite(high):
        return None
    at = (nums - low).astype(np.int64)
    if not np.array_equal(at + low, nums):
        return None  # a fraction: positions would not tell values apart
    seen = np.zeros(int(high - low) + 1, dtype=bool)
    seen[at] = True
    rank = np.cumsum(seen) - 1
    return rank[at], int(rank[-1]) + 1


def value_keys(parts: Sequence[Values]) -> tuple[list[np.ndarray], int]:
    """An id for each value of each list, equal values sharing one: a value with a number is
    its number (`007` and `7` are one value), else its text (case counts); NULL is -1. Ids
    run over the numbers ascending, then the texts in order of first appearance. Also how
    many ids there are."""
    nums = np.concatenate([p.nums for p in parts]) if parts else np.empty(0)
    ids = np.full(len(nums), -1, dtype=np.int64)
    numeric = ~np.isnan(nums)
    present = nums[numeric]
    dense = _dense_ranks(present)
    if dense is not None:
        ids[numeric], count = dense
    else:
        uniq, inverse = np.unique(present, return_inverse=True)
        ids[numeric] = inverse
        count = len(uniq)
    if not numeric.all():
        texts: dict[str, int] = {}
        at = 0
        for p in parts:
            if p.texts is not None:
                for i in np.flatnonzero(np.isnan(p.nums)).tolist():
                    t = p.texts[i]
                    if t is not None:
                        ids[at + i] = texts.setdefault(t, count + len(texts))
            at += len(p)
        count += len(texts)
    out, at = [], 0
    for p in parts:
        out.append(ids[at : at + len(p)])
        at += len(p)
    return out, count


def row_keys(columns: Sequence[Column]) -> tuple[list[np.ndarray], int]:
    """Each row's key id in each column (value_keys of their symbols; NULL rows -1)."""
    per_symbol, count = value_keys([c.symbols for c in columns])
    out = []
    for col, ids in zip(columns, per_symbol, strict=True):
        codes = col.codes
        if not len(ids):
            out.append(np.full(len(codes), -1, dtype=np.int64))
            continue
        out.append(np.where(codes < 0, -1, ids[np.maximum(codes, 0)]))
    return out, count


def combined_keys(
    per_field: Sequence[tuple[np.ndarray, ...]], counts: Sequence[int]
) -> tuple[tuple[np.ndarray, ...], int]:
    """Rows' keys over several fields made one key per row (-1 where any field is NULL), the
    same in every table; `per_field[k]` holds field k's key arrays, one per table."""
    tables = len(per_field[0]) if per_field else 0
    keys = [np.zeros(len(per_field[0][t]), dtype=np.int64) for t in range(tables)]
    size = 1
    for arrays, count in zip(per_field, counts, strict=True):
        if size * max(count, 1) >= 2**62:
            # Renumber the keys so far before they overflow.
            allkeys = np.concatenate([k[k >= 0] for k in keys])
            uniq = np.unique(allkeys)
            keys = [np.where(k >= 0, np.searchsorted(uniq, np.maximum(k, 0)), -1) for k in keys]
            size = len(uniq)
        keys = [
            np.where((k >= 0) & (a >= 0), k * max(count, 1) + a, -1)
            for k, a in zip(keys, arrays, strict=True)
        ]
        size *= max(count, 1)
    return tuple(keys), size


def _compact(keys: Sequence[np.ndarray], size: int) -> tuple[list[np.ndarray], int]:
    """Keys renumbered 0..k-1 over the values present (bincount when the key space is small)."""
    valid = [k[k >= 0] for k in keys]
    if size <= 4 * sum(len(v) for v in valid) + 1024:
        present = np.zeros(size, dtype=bool)
        for v in valid:
            present[v] = True
        remap = np.cumsum(present) - 1
        return [np.where(k >= 0, remap[np.maximum(k, 0)], -1) for k in keys], int(present.sum())
    uniq = np.unique(np.concatenate(valid)) if valid else np.empty(0, dtype=np.int64)
    return [np.where(k >= 0, np.searchsorted(uniq, np.maximum(k, 0)), -1) for k in keys], len(uniq)


def shared_keys(
    left: Frame, right: Frame, fields: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, int]:
    """Each row's key over `fields` in two tables, equal where all those values are equal
    (-1 where one is NULL: it matches nothing), and the number of keys. No field: one key."""
    if not fields:
        return np.zeros(left.rows, dtype=np.int64), np.zeros(right.rows, dtype=np.int64), 1
    per_field, counts = [], []
    for f in fields:
        (kl, kr), count = row_keys([left.column(f), right.column(f)])
        per_field.append((kl, kr))
        counts.append(count)
    if len(fields) == 1:
        return per_field[0][0], per_field[0][1], counts[0]
    (kl, kr), size = combined_keys(per_field, counts)
    (kl, kr), size = _compact([kl, kr], size)
    return kl, kr, size


def join_rows(
    kl: np.ndarray, kr: np.ndarray, size: int, how: str
) -> tuple[np.ndarray | None, np.ndarray]:
    """The row pairs of a join (`how`: left, right, inner, outer): left rows (None: each left
    row once, in order) and right rows, -1 where a side has no row. Left rows come in their
    order, each with its matches in the right's order; then right rows without a match."""
    nl = len(kl)
    valid_r = kr >= 0
    counts_r = np.bincount(kr[valid_r], minlength=size) if size else np.zeros(0, np.int64)
    kl_at = np.maximum(kl, 0)
    rep = np.where(kl >= 0, counts_r[kl_at] if size else 0, 0)
    if how in ("left", "inner") and (not size or counts_r.max(initial=0) <= 1):
        first_r = np.full(max(size, 1), -1, dtype=np.int64)
        first_r[kr[valid_r]] = np.flatnonzero(valid_r)
        ri = np.where(kl >= 0, first_r[kl_at], -1)
        if how == "left":
            return None, ri
        keep = np.flatnonzero(ri >= 0)
        return keep, ri[keep]
    order_r = np.flatnonzero(valid_r)[np.argsort(kr[valid_r], kind="stable")]
    starts = np.cumsum(counts_r) - counts_r
    rep_out = np.maximum(rep, 1) if how in ("left", "outer") else rep
    li = np.repeat(np.arange(nl), rep_out)
    within = np.arange(len(li)) - np.repeat(np.cumsum(rep_out) - rep_out, rep_out)
    matched = np.repeat(rep, rep_out) > 0
    base = np.repeat(starts[kl_at] if size else np.zeros(nl, np.int64), rep_out)
    ri = np.where(matched, order_r[np.where(matched, base + within, 0)] if len(order_r) else 0, -1)
    if how in ("right", "outer"):
        counts_l = np.bincount(kl[kl >= 0], minlength=size) if size else np.zeros(0, np.int64)
        lonely = np.flatnonzero(
            (kr < 0) | (counts_l[np.maximum(kr, 0)] == 0 if size else np.ones(len(kr), bool))
        )
        li = np.concatenate([li, np.full(len(lonely), -1, dtype=np.int64)])
        ri = np.concatenate([ri, lonely])
    return li, ri


def take_or_null(col: Column, rows: np.ndarray) -> Column:
    """A column's rows at `rows`, NULL where a row is -1."""
    codes = col.codes
    if not len(codes):
        return Column(col.symbols, np.full(len(rows), -1, dtype=np.int32))
    out = codes[np.maximum(rows, 0)]
    return Column(col.symbols, np.where(rows < 0, -1, out).astype(np.int32))


def _left_join_by_symbols(
    left: Frame, right: Frame, key: str, cpu: _core.CpuAccount | None
) -> Frame | None:
    """LEFT JOIN on one field of a table the engine holds, when each key value is on at most
    one right row: every left row stays, in place, and each right field's value follows from
    the left row's key value. So the right fields are made per key value and mapped through
    the key column in the engine, without a pass over the rows here. None when a key value
    is on several right rows (the rows multiply: the general join)."""
    native = left.native
    if native is None:
        return None
    lcol, rcol = left.column(key), right.column(key)
    (ids_l, ids_r), size = value_keys([lcol.symbols, rcol.symbols])
    codes_r = rcol.codes
    kr = np.where(codes_r < 0, -1, ids_r[np.maximum(codes_r, 0)] if len(ids_r) else -1)
    valid = kr >= 0
    if size and np.bincount(kr[valid], minlength=size).max(initial=0) > 1:
        return None
    first_r = np.full(max(size, 1), -1, dtype=np.int64)
    first_r[kr[valid]] = np.flatnonzero(valid)
    row_of = np.where(ids_l >= 0, first_r[np.maximum(ids_l, 0)], -1)  # per left key value
    # A key value no left row holds maps to NULL: the new fields get no value from it.
    codes_l = lcol.codes
    used = np.bincount(codes_l[codes_l >= 0], minlength=len(row_of)) > 0
    row_of = np.where(used, row_of, -1)
    out = native.select([(i, f) for i, f in enumerate(left.fields)])
    at = left.fields.index(key)
    for f in right.fields:
        if f == key:
            continue
        col = right.column(f)
        picked = col.codes[np.maximum(row_of, 0)] if len(col.codes) else np.zeros(0, np.int32)
        per_key = col.symbols.with_null().take(np.where(row_of >= 0, picked, -1))
        Column(per_key, origin=(native, at)).add_to(out, f, cpu)
    out.name = left.name
    return Frame.of_native(out)


def join_frames(left: Frame, right: Frame, how: str, cpu: _core.CpuAccount | None = None) -> Frame:
    """`how JOIN`: rows of `left` and `right` matched on the fields they share (all pairs when
    they share none), `left`'s fields then `right`'s others."""
    shared = [f for f in left.fields if f in right.fields]
    if how == "left" and len(shared) == 1 and right.rows:
        joined = _left_join_by_symbols(left, right, shared[0], cpu)
        if joined is not None:
            return joined
    kl, kr, size = shared_keys(left, right, shared)
    li, ri = join_rows(kl, kr, size, how)
    n = left.rows if li is None else len(li)
    columns: dict[str, Column] = {}
    for f in left.fields:
        col = left.column(f)
        if li is None:
            columns[f] = col
        elif f in shared and (li < 0).any():
            # The key from whichever side has the row.
            r = right.column(f)
            codes = np.where(
                li >= 0,
                take_or_null(col, li).codes,
                np.where(ri >= 0, take_or_null(r, ri).codes + len(col.symbols), -1),
            )
            columns[f] = Column(concatenate([col.symbols, r.symbols]), codes.astype(np.int32))
        else:
            columns[f] = take_or_null(col, li)
    for f in right.fields:
        if f not in shared:
            columns[f] = take_or_null(right.column(f), ri)
    return Frame(left.name, n, columns)


def keep_rows(left: Frame, right: Frame) -> tuple[np.ndarray, np.ndarray]:
    """Which rows of each table have a match in the other (on the fields they share)."""
    shared = [f for f in left.fields if f in right.fields]
    kl, kr, size = shared_keys(left, right, shared)
    in_l = np.zeros(size, dtype=bool)
    in_l[kl[kl >= 0]] = True
    in_r = np.zeros(size, dtype=bool)
    in_r[kr[kr >= 0]] = True
    return (kl >= 0) & in_r[np.maximum(kl, 0)], (kr >= 0) & in_l[np.maximum(kr, 0)]


def filtered(frame: Frame, mask: np.ndarray) -> Frame:
    """The frame's rows where `mask` holds (the frame itself when it holds everywhere)."""
    if mask.all():
        return frame
    rows = np.flatnonzero(mask)
    return Frame(frame.name, len(rows), {f: frame.column(f).take(rows) for f in frame.fields})


def crosstable(frame: Frame, attribute: str, data: str, qualifiers: int) -> Frame:
    """CROSSTABLE: the first `qualifiers` fields kept, each other field's value a row of its
    own, its field name in `attribute` and its value in `data` (row by row, field by field)."""
    fields = frame.fields
    keep, spread = fields[:qualifiers], fields[qualifiers:]
    n, k = frame.rows, len(spread)
    columns: dict[str, Column] = {}
    rows = np.repeat(np.arange(n), k)
    for f in keep:
        columns[f] = frame.column(f).take(rows)
    columns[attribute] = Column(Values.of_texts(spread), np.tile(np.arange(k), n).astype(np.int32))
    parts, codes, offset = [], [], 0
    for f in spread:
        col = frame.column(f)
        parts.append(col.symbols)
        codes.append(np.where(col.codes < 0, -1, col.codes + offset))
        offset += len(col.symbols)
    stacked = np.stack(codes, axis=1).reshape(-1) if k else np.empty(0, dtype=np.int64)
    columns[data] = Column(concatenate(parts), stacked.astype(np.int32))
    return Frame(frame.name, n * k, columns)


class Groups:
    """Rows in groups: `ids` (each row's group, 0..count-1), and the rows ordered by group
    (stable) when a reduction needs them."""

    def __init__(self, ids: np.ndarray, count: int) -> None:
        self.ids = ids
        self.count = count
        self._order: np.ndarray | None = None

    def order(self) -> np.ndarray:
        """Row positions sorted by group, load order within a group."""
        if self._order is None:
            self._order = np.argsort(self.ids, kind="stable")
        return self._order


def _group_by_symbols(col: Column) -> tuple[Groups, list[np.ndarray]]:
    """group_rows of one column, worked out per symbol: each symbol's group, then one look-up
    per row (code -1, NULL, reads the extra last entry: the NULL group)."""
    (ids,), count = value_keys([col.symbols])
    key_of = np.where(ids < 0, count, ids)  # a NULL symbol is in the NULL group, key `count`
    codes = col.codes
    if len(codes) and codes.min() >= 0:  # no NULL row
        used, null_rows = np.bincount(codes, minlength=len(ids)) > 0, False
    else:
        per_symbol = np.bincount(codes.astype(np.int64) + 1, minlength=len(ids) + 1)
        used, null_rows = per_symbol[1:] > 0, bool(per_symbol[0])
    present = np.zeros(count + 1, dtype=bool)
    present[key_of[used]] = True
    present[count] |= null_rows
    group_of_key = np.cumsum(present) - 1
    groups = int(present.sum())
    group_of = np.append(group_of_key[key_of], group_of_key[count])
    rep = np.full(count + 1, -1, dtype=np.int64)
    valid = ids >= 0
    rep[ids[valid]] = np.flatnonzero(valid)
    keys = np.flatnonzero(present)  # each group's key, in group order
    return Groups(group_of[codes], groups), [rep[keys]]


def group_rows(columns: Sequence[Column]) -> tuple[Groups, list[np.ndarray]]:
    """Groups of equal values over the columns (NULL a value of its own), in the order of the
    values' keys; and for each column the symbol each group has there (-1: NULL)."""
    if not columns:
        return Groups(np.zeros(0, dtype=np.int64), 1), []
    if len(columns) == 1:
        return _group_by_symbols(columns[0])
    n = len(columns[0].codes)
    per_field, counts, reps = [], [], []
    for col in columns:
        (ids,), count = value_keys([col.symbols])
        codes = col.codes
        row_ids = np.where(codes < 0, count, ids[np.maximum(codes, 0)] if len(ids) else count)
        # NULL, and a NULL symbol, are the key `count`.
        row_ids = np.where(row_ids < 0, count, row_ids)
        rep = np.full(count + 1, -1, dtype=np.int64)
        valid = ids >= 0
        rep[ids[valid]] = np.flatnonzero(valid)
        per_field.append((row_ids,))
        counts.append(count + 1)
        reps.append(rep)
    if len(columns) == 1:
        keys, size = per_field[0][0], counts[0]
    else:
        (keys,), size = combined_keys(per_field, counts)
    (gids,), _ = _compact([keys], size)
    g = int(gids.max()) + 1 if n else 0
    # Each group's key, then each field's part of it.
    group_key = np.zeros(g, dtype=np.int64)
    group_key[gids] = keys
    symbols = []
    rest = group_key
    for count, rep in zip(reversed(counts), reversed(reps), strict=True):
        rest, part = np.divmod(rest, count) if len(columns) > 1 else (rest, rest)
        symbols.append(rep[part])
    symbols.reverse()
    return Groups(gids, g), symbols


def _row_numbers(col: Column, numbers: np.ndarray) -> np.ndarray:
    """Each row's number (NaN for NULL and texts that are no number); `numbers` per symbol."""
    codes = col.codes
    if not len(numbers):
        return np.full(len(codes), NAN)
    out: np.ndarray = np.append(numbers, NAN)[codes]  # code -1 reads the NaN after them
    return out


def aggregate(
    name: str,
    col: Column,
    numbers: np.ndarray,
    groups: Groups,
    distinct: bool = False,
    extra: Sequence[Column] = (),
) -> Values:
    """An aggregation of a column's rows per group: `numbers` are its symbols' numbers;
    `extra` the delimiter and sort weight of Concat."""
    g, ids = groups.count, groups.ids
    codes = col.codes
    null_symbol = col.symbols.is_null()
    keys = None
    # Code -1 (NULL) reads the False after the symbols'.
    valid = np.append(~null_symbol, False)[codes] if null_symbol.any() else codes >= 0
    rows = None  # rows taking part (None: all valid ones, found below)
    if distinct:
        (sym_keys,), count = value_keys([col.symbols])
        keys = np.where(valid, sym_keys[np.maximum(codes, 0)] if len(sym_keys) else -1, -1)
        pairs = ids[valid] * max(count, 1) + keys[valid]
        _, first = np.unique(pairs, return_index=True)
        rows = np.flatnonzero(valid)[np.sort(first)]
    every_row = rows is None and bool(valid.all())
    if name == "COUNT":
        at = ids[rows] if rows is not None else (ids if every_row else ids[valid])
        return Values(np.bincount(at, minlength=g).astype(np.float64))
    if name in ("SUM", "AVG", "MIN", "MAX"):
        x = _row_numbers(col, numbers)
        if rows is not None:
            x, at = x[rows], ids[rows]
        else:
            at = ids
        # Every row a value whose symbol has a number: no row to test for NaN.
        numbered = every_row and not np.isnan(numbers).any()
        if name in ("SUM", "AVG"):
            has = None if numbered else ~np.isnan(x)
            weights = x if has is None else np.where(has, x, 0.0)
            total = np.bincount(at, weights=weights, minlength=g)
            if name == "SUM":
                return Values(total)
            n_has = np.bincount(at if has is None else at[has], minlength=g)
            with np.errstate(all="ignore"):
                return Values(np.where(n_has > 0, total / np.maximum(n_has, 1), NAN))
        has = ~np.isnan(x)
        out = np.full(g, NAN)
        if has.any():
            sel = np.flatnonzero(has)
            order = sel[np.lexsort((x[sel], at[sel]))]
            grp = at[order]
            starts = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1]])
            if name == "MIN":
                out[grp[starts]] = x[order][starts]
            else:
                ends = np.r_[starts[1:], len(order)] - 1
                out[grp[ends]] = x[order][ends]
        return Values(out)
    # Reductions that pick a value: first/last, min/max text, the only one, the texts joined.
    sel = np.flatnonzero(valid) if rows is None else rows
    symbols = col.symbols.with_null()
    if name in ("FIRSTVALUE", "LASTVALUE", "MINSTRING", "MAXSTRING"):
        if name in ("MINSTRING", "MAXSTRING"):
            # Text values only, ranked by their text.
            has_text = col.symbols.has_text()
            sel = sel[has_text[codes[sel]]] if len(sel) else sel
            rank = np.zeros(len(col.symbols), dtype=np.int64)
            texts = col.symbols.texts
            if texts is not None and has_text.any():
                with_text = np.flatnonzero(has_text)
                ranked = with_text[np.argsort(texts[with_text].astype(str), kind="stable")]
                rank[ranked] = np.arange(len(ranked))
            order = np.lexsort((rank[codes[sel]], ids[sel]))
        else:
            order = np.argsort(ids[sel], kind="stable")
        grp = ids[sel][order]
        bounds = np.r_[True, grp[1:] != grp[:-1]] if len(grp) else np.zeros(0, dtype=bool)
        starts = np.flatnonzero(bounds)
        at = starts if name in ("FIRSTVALUE", "MINSTRING") else np.r_[starts[1:], len(grp)] - 1
        pick = np.full(g, len(symbols) - 1, dtype=np.int64)
        pick[grp[at]] = codes[sel][order][at]
        return symbols.take(pick)
    if name == "ONLY":
        (sym_keys,), count = value_keys([col.symbols])
        at = ids[sel]
        k = sym_keys[codes[sel]]
        lo = np.full(g, np.iinfo(np.int64).max)
        hi = np.full(g, -1, dtype=np.int64)
        np.minimum.at(lo, at, k)
        np.maximum.at(hi, at, k)
        pick = np.full(g, -1, dtype=np.int64)
        pick[at] = codes[sel]
        pick[lo != hi] = -1
        return symbols.take(np.where(pick < 0, len(symbols) - 1, pick))
    if name == "CONCAT":
        labels = symbols.text_list()
        delimiter = ""
        if extra:
            d = extra[0].symbols.with_null().text_list()
            first_row = int(extra[0].codes[0]) if len(extra[0].codes) else -1
            delimiter = d[first_row] or ""
        at = ids[sel]
        if len(extra) > 1:
            w = _row_numbers(extra[1], extra[1].symbols.nums)[sel]
            order = np.lexsort((np.where(np.isnan(w), np.inf, w), at))
        else:
            order = np.argsort(at, kind="stable")
        parts: list[list[str]] = [[] for _ in range(g)]
        for grp, code in zip(at[order].tolist(), codes[sel][order].tolist(), strict=True):
            parts[grp].append(labels[code] or "")
        return Values.of_texts([delimiter.join(p) if p else None for p in parts])
    raise ValueError(f"unknown aggregation {name}")


__all__ = [
    "Groups",
    "aggregate",
    "crosstable",
    "filtered",
    "group_rows",
    "join_frames",
    "join_rows",
    "keep_rows",
    "take_or_null",
    "value_keys",
]
