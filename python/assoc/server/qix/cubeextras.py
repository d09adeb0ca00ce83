"""Straight-cube options beyond dimensions and measures: Others and totals rows
(qOtherTotalSpec), calculation conditions (qCalcCondition) and the hidden measures that sort
by expression and fill attribute expressions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from assoc.server.qix.members import flag, member_object
from assoc.server.qix.rpc import INVALID_PARAMETERS, RpcError

if TYPE_CHECKING:
    from assoc.server.qix.hypercube import HyperCubeView

OTHER_MODES = (
    "OTHER_OFF",
    "OTHER_COUNTED",
    "OTHER_ABS_LIMITED",
    "OTHER_REL_LIMITED",
    "OTHER_ABS_ACC_TARGET",
    "OTHER_REL_ACC_TARGET",
)
LIMIT_MODES = ("OTHER_GE_LIMIT", "OTHER_LE_LIMIT", "OTHER_GT_LIMIT", "OTHER_LT_LIMIT")
OTHERS_CODE, TOTAL_CODE = -3, -4  # row codes of an Others cell and a totals cell
# The selection state Others rows are evaluated in (made and removed within one request).
_OTHERS_STATE = "\x1fassoc-others"


def string_expr(raw: Any, name: str, default: str = "") -> str:
    """The text of a StringExpr {qv} (or a plain string)."""
    if raw is None:
        return default
    if isinstance(raw, dict):
        raw = raw.get("qv", default)
    if raw is None:
        return default
    if not isinstance(raw, str):
        raise RpcError(INVALID_PARAMETERS, name, "must be a text ({qv: text})")
    return raw


def _number_expr(raw: Any, name: str, default: float) -> float:
    text = string_expr(raw, name, "").strip().lstrip("=").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise RpcError(INVALID_PARAMETERS, name, f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise RpcError(INVALID_PARAMETERS, name, "must be a finite number")
    return value


@dataclass(frozen=True)
class OtherSpec:
    """A checked qOtherTotalSpec."""

    mode: str = "OTHER_OFF"
    counted: int = 10
    limit: float = 0.0
    limit_mode: str = "OTHER_GE_LIMIT"
    ascending: bool = False  # qOtherSortMode OTHER_SORT_ASCENDING: the lowest are kept
    suppress_other: bool = False
    keep_bad: bool = True  # qForceBadValueKeeping: NULL values are never folded
    total: bool = False  # qTotalMode TOTAL_EXPR
    reference: int = 0  # the measure that ranks the values (qReferencedExpression)
    other_label: str = "Others"
    total_label: str = "Totals"

    @property
    def folds(self) -> bool:
        """True when values may be folded into an Others row."""
        return self.mode != "OTHER_OFF"

    @classmethod
    def parse(cls, raw: Any, labels: list[str]) -> OtherSpec:
        """Checks a qOtherTotalSpec; `labels` are the cube's measure labels and expressions."""
        spec = member_object(raw, "qOtherTotalSpec")
        mode = spec.get("qOtherMode", "OTHER_OFF")
        if mode not in OTHER_MODES:
            raise RpcError(INVALID_PARAMETERS, "qOtherMode", f"one of {', '.join(OTHER_MODES)}")
        limit_mode = spec.get("qOtherLimitMode", "OTHER_GE_LIMIT")
        if limit_mode not in LIMIT_MODES:
            raise RpcError(
                INVALID_PARAMETERS, "qOtherLimitMode", f"one of {', '.join(LIMIT_MODES)}"
            )
        sort_mode = spec.get("qOtherSortMode", "OTHER_SORT_DESCENDING")
        if sort_mode not in ("OTHER_SORT_DESCENDING", "OTHER_SORT_ASCENDING"):
            raise RpcError(
                INVALID_PARAMETERS, "qOtherSortMode", "OTHER_SORT_DESCENDING or _ASCENDING"
            )
        total = spec.get("qTotalMode", "TOTAL_OFF")
        if total not in ("TOTAL_OFF", "TOTAL_EXPR"):
            raise RpcError(INVALID_PARAMETERS, "qTotalMode", "TOTAL_OFF or TOTAL_EXPR")
        counted = _number_expr(spec.get("qOtherCounted"), "qOtherCounted", 10)
        if counted < 0 or counted != int(counted):
            raise RpcError(INVALID_PARAMETERS, "qOtherCounted", "must be a whole number ≥ 0")
        reference = string_expr(spec.get("qReferencedExpression"), "qReferencedExpression")
        index = 0
        if reference.strip():
            ref = reference.strip()
            if ref.isdigit():
                index = int(ref)
            elif ref in labels:
                index = labels.index(ref) % max(len(labels) // 2, 1)
            else:
                raise RpcError(INVALID_PARAMETERS, "qReferencedExpression", f"no measure {ref!r}")
        return cls(
            mode,
            int(counted),
            _number_expr(spec.get("qOtherLimit"), "qOtherLimit", 0.0),
            limit_mode,
            sort_mode == "OTHER_SORT_ASCENDING",
            flag(spec, "qSuppressOther"),
            bool(spec.get("qForceBadValueKeeping", True)),
            total == "TOTAL_EXPR",
            index,
            string_expr(spec.get("qOtherLabel"), "qOtherLabel", "Others") or "Others",
            string_expr(spec.get("qTotalLabel"), "qTotalLabel", "Totals") or "Totals",
        )

    def _passes(self, values: np.ndarray) -> np.ndarray:
        limit = self.limit
        with np.errstate(invalid="ignore"):
            if self.limit_mode == "OTHER_GE_LIMIT":
                return values >= limit
            if self.limit_mode == "OTHER_LE_LIMIT":
                return values <= limit
            if self.limit_mode == "OTHER_GT_LIMIT":
                return values > limit
            return values < limit

    def _first_counted(self, scores: np.ndarray) -> np.ndarray:
        """Where the `counted` best of `scores` (no NaN) are: the ranking's first ones,
        found without ranking them all (a partition, then the ties at the cut in order)."""
        n = min(self.counted, len(scores))
        if n == len(scores):
            return np.arange(n)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        cost = scores if self.ascending else -scores  # the best first: the lowest cost
        cut = np.partition(cost, n - 1)[n - 1]
        better = np.flatnonzero(cost < cut)
        ties = np.flatnonzero(cost == cut)[: n - len(better)]
        return np.concatenate([better, ties])

    def kept_mask(self, scores: np.ndarray) -> np.ndarray:
        """Of one group's values (their scores, in the order the cube shows them), those that
        keep their own rows; the rest go to Others. Values are ranked by score (highest first
        unless ascending, ties in their order); a value without a score (NaN) is kept when
        bad values are. Sums run in rank order, one value after the other."""
        bad = np.isnan(scores)
        keep = bad.copy() if self.keep_bad else np.zeros(len(scores), dtype=bool)
        good = np.flatnonzero(~bad)
        if self.mode == "OTHER_COUNTED":
            keep[good[self._first_counted(scores[good])]] = True
            return keep
        ranked = good[np.argsort(scores[good] if self.ascending else -scores[good], kind="stable")]
        ordered = scores[ranked].astype(np.float64)
        sums = np.cumsum(ordered)
        total = float(sums[-1]) if len(sums) else 0.0
        with np.errstate(invalid="ignore", divide="ignore"):
            share = ordered / total if total else np.full(len(ordered), np.nan)
        mode = self.mode
        if mode == "OTHER_ABS_LIMITED":
            keep[ranked[self._passes(ordered)]] = True
        elif mode == "OTHER_REL_LIMITED":
            keep[ranked[~np.isnan(share) & self._passes(share)]] = True
        else:  # accumulate until the target is reached (the value reaching it is kept)
            steps = ordered if mode == "OTHER_ABS_ACC_TARGET" else share
            before = np.concatenate([[0.0], np.cumsum(steps)[:-1]])
            stops = np.flatnonzero(np.isnan(steps) | (before >= self.limit))
            keep[ranked[: stops[0] if len(stops) else len(ranked)]] = True
        return keep


def calc_condition(raw: dict[str, Any]) -> tuple[str, str] | None:
    """(condition, message) of qCalcCondition {qCond, qMsg} (or the older qCalcCond)."""
    cond = raw.get("qCalcCondition")
    if cond is not None:
        cond = member_object(cond, "qCalcCondition")
        text = string_expr(cond.get("qCond"), "qCond")
        message = string_expr(cond.get("qMsg"), "qMsg")
    else:
        text, message = string_expr(raw.get("qCalcCond"), "qCalcCond"), ""
    text = text.strip()
    text = text[1:].strip() if text.startswith("=") else text
    return (text, message) if text else None


def condition_holds(view: HyperCubeView, condition: str) -> bool:
    """True when a calculation condition is a non-zero number in the cube's state."""
    value = view.session.hypercube([], [condition]).totals
    found = value[condition] if isinstance(value, dict) else value[0]
    return found is not None and not math.isnan(float(found)) and float(found) != 0


# ---- Others and totals rows ---------------------------------------------------------------


def _totals_of(cube: Any, measures: list[str]) -> list[float]:
    totals = cube.totals
    if isinstance(totals, dict):
        return [float(totals[m]) for m in measures]
    return [math.nan if t is None else float(t) for t in totals]


def _evaluate_others(
    view: HyperCubeView, picks: list[tuple[str, list[int] | np.ndarray]]
) -> list[float]:
    """The engine measures over the records of the picked values (every field's selection
    in the cube's state kept otherwise), in a selection state made for that."""
    session, base = view.session.session, view.session.state
    session.add_state(_OTHERS_STATE)
    try:
        for field in session.selections(base):
            codes = session.indices(field, "selected", in_state=base).tolist()
            session.select_indices(field, codes, state=_OTHERS_STATE)
        for field, codes in picks:
            session.select_indices(field, codes, state=_OTHERS_STATE)
        cube = session.hypercube([], view.engine_measures, state=_OTHERS_STATE)
        return _totals_of(cube, view.engine_measures)
    finally:
        session.remove_state(_OTHERS_STATE)


def _groups(codes: list[np.ndarray], k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each of the `n` rows' group (its first `k` codes), groups numbered in the order the
    rows first show them; and each group's codes (a row of k codes per group)."""
    if k == 0:
        return np.zeros(n, dtype=np.int64), np.zeros((1, 0), dtype=np.int64)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, k), dtype=np.int64)
    stacked = np.stack([c.astype(np.int64) for c in codes[:k]], axis=1)
    keys, first, inverse = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    number = np.empty(len(order), dtype=np.int64)
    number[order] = np.arange(len(order))
    return number[inverse.reshape(-1)], keys[order]


def _last_rows(group: np.ndarray, count: int) -> np.ndarray:
    """The last row of each of `count` groups (every group has one)."""
    out = np.full(count, -1, dtype=np.int64)
    np.maximum.at(out, group, np.arange(len(group), dtype=np.int64))
    return out


def _rows_of(keys: np.ndarray, table: np.ndarray) -> np.ndarray:
    """For each row of `keys` (codes), the row of `table` holding the same codes (the last
    one when several do; -1 for none)."""
    if len(keys) == 0 or len(table) == 0:
        return np.full(len(keys), -1, dtype=np.int64)
    both = np.concatenate([keys, table]).astype(np.int64)
    _, ids = np.unique(both, axis=0, return_inverse=True)
    ids = ids.reshape(-1)
    where = np.full(int(ids.max()) + 1, -1, dtype=np.int64)
    table_ids = ids[len(keys) :]
    _, last_from_end = np.unique(table_ids[::-1], return_index=True)
    where[np.unique(table_ids)] = len(table_ids) - 1 - last_from_end
    return where[ids[: len(keys)]]


def _rebuild(
    codes: list[np.ndarray],
    columns: dict[str, np.ndarray],
    kept: np.ndarray,
    after: np.ndarray,
    new_codes: list[np.ndarray],
    new_values: dict[str, np.ndarray],
) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """The rows `kept` (a mask over them) with new rows added, new row j right after row
    after[j] (-1: before the first), those after one row in their order."""
    at = np.concatenate([[0], np.cumsum(kept, dtype=np.int64)])[after + 1]
    out_codes = [
        np.insert(c[kept].astype(np.int64), at, new.astype(np.int64))
        for c, new in zip(codes, new_codes, strict=True)
    ]
    out_columns = {
        e: np.insert(a[kept].astype(np.float64), at, new_values[e].astype(np.float64))
        for e, a in columns.items()
    }
    return out_codes, out_columns


def _others(
    view: HyperCubeView, k: int, codes: list[np.ndarray], columns: dict[str, np.ndarray]
) -> tuple[list[np.ndarray], dict[str, np.ndarray], bool]:
    """Dimension k's values folded into an Others row per group of the dimensions before
    (each group's values ranked by the reference measure: OtherSpec.kept_mask), after the
    group's last row."""
    d = view.definition
    spec = d.dimensions[k].others
    fields = [dim.field for dim in d.dimensions]
    n_rows = len(codes[0])
    ref = d.measures[spec.reference].expression if spec.reference < len(d.measures) else ""
    if not ref or not n_rows:
        return codes, columns, False
    group, parents = _groups(codes, k, n_rows)
    values = codes[k].astype(np.int64)
    # The (group, value) pairs of the rows with a value, in the order the rows first show
    # them; each pair's score.
    valid = np.flatnonzero(values >= 0)
    if k == len(fields) - 1:
        # A cube's rows are distinct tuples (Others rows of earlier dimensions have no value
        # here): each row with a value is its own pair, scored by the row's own measure.
        pair_rows = valid
        position = np.arange(len(valid))
        pair_of = position
        scores = columns[ref][valid].astype(np.float64)
    else:
        width = int(values.max()) + 1 if len(valid) else 1
        pair = group[valid] * width + values[valid]
        _, first, pair_of = np.unique(pair, return_index=True, return_inverse=True)
        pair_of = pair_of.reshape(-1)
        # The pairs in the order of their first rows (distinct rows: a scatter, not a sort).
        number = np.full(n_rows, -1, dtype=np.int64)
        number[valid[first]] = np.arange(len(first))
        appear = number[number >= 0]
        position = np.empty(len(appear), dtype=np.int64)  # each pair's place in that order
        position[appear] = np.arange(len(appear))
        pair_rows = valid[first][appear]
    pair_group, pair_value = group[pair_rows], values[pair_rows]
    if k < len(fields) - 1:
        sub = view.session.hypercube(fields[: k + 1], [ref])
        table = np.stack([sub.codes(f).astype(np.int64) for f in fields[: k + 1]], axis=1)
        keys = np.column_stack([parents[pair_group], pair_value]) if k else pair_value[:, None]
        at = _rows_of(keys.reshape(len(pair_rows), k + 1), table.reshape(-1, k + 1))
        sub_values = np.append(sub.array(ref).astype(np.float64), np.nan)
        scores = sub_values[at]  # -1, no row of the sub-cube: the NaN appended
    # Each group's pairs in their order: the values it keeps, the rest folded.
    by_group = np.argsort(pair_group, kind="stable") if k else np.arange(len(pair_group))
    starts = np.flatnonzero(np.diff(pair_group[by_group], prepend=-1))
    ends = [*starts[1:].tolist(), len(by_group)] if len(starts) else []
    folded_pair = np.zeros(len(pair_rows), dtype=bool)
    folded_of: dict[int, np.ndarray] = {}  # a folded group's folded values
    for start, end in zip(starts.tolist(), ends, strict=True):
        members = by_group[start:end]
        g = int(pair_group[members[0]])
        if (parents[g] < 0).any():  # a NULL, Others or totals parent is not folded
            continue
        keep = spec.kept_mask(scores[members])
        if not keep.all():
            folded_pair[members[~keep]] = True
            folded_of[g] = pair_value[members[~keep]]
    folded_groups = list(folded_of)
    if not folded_groups:
        return codes, columns, False
    folded_row = np.zeros(n_rows, dtype=bool)  # every row of a folded pair
    folded_row[valid] = folded_pair[position[pair_of]]
    kept = ~folded_row
    if spec.suppress_other:
        empty = [np.zeros(0, dtype=np.int64) for _ in codes]
        none = {e: np.zeros(0) for e in columns}
        rebuilt = _rebuild(codes, columns, kept, np.zeros(0, dtype=np.int64), empty, none)
        return *rebuilt, False
    last = _last_rows(group, len(parents))
    folded_groups.sort(key=lambda g: int(last[g]))
    new_rows: list[list[int]] = []
    new_values: dict[str, list[float]] = {e: [] for e in columns}
    for g in folded_groups:
        parent = parents[g].tolist()
        picks: list[tuple[str, list[int] | np.ndarray]] = [
            (fields[j], [parent[j]]) for j in range(k)
        ]
        picks.append((fields[k], np.sort(folded_of[g])))
        totals = _evaluate_others(view, picks)
        new_rows.append(parent + [OTHERS_CODE] * (len(fields) - k))
        for e, t in zip(view.engine_measures, totals, strict=True):
            new_values[e].append(t)
    rows = np.array(new_rows, dtype=np.int64).reshape(len(new_rows), len(fields))
    return (
        *_rebuild(
            codes,
            columns,
            kept,
            last[folded_groups],
            [rows[:, j] for j in range(len(fields))],
            {e: np.array(v, dtype=np.float64) for e, v in new_values.items()},
        ),
        True,
    )


def _totals(
    view: HyperCubeView, k: int, codes: list[np.ndarray], columns: dict[str, np.ndarray]
) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """A totals row after the last row of each group of the first k dimensions (NULL groups
    too, Others groups not): the measures over the group's records."""
    d = view.definition
    fields = [dim.field for dim in d.dimensions]
    measures = view.engine_measures
    n_rows = len(codes[0])
    group, parents = _groups(codes, k, n_rows)
    if k == 0:
        table_values = np.array([_totals_of(view.cube, measures)], dtype=np.float64)
        at = np.zeros(len(parents), dtype=np.int64)
    else:
        sub = view.session.hypercube(fields[:k], measures)
        table = np.stack([sub.codes(f).astype(np.int64) for f in fields[:k]], axis=1)
        table_values = np.stack([sub.array(e).astype(np.float64) for e in measures], axis=1)
        at = _rows_of(parents, table.reshape(-1, k))
    last = _last_rows(group, len(parents))
    if k == 0 and not n_rows:
        last = np.full(1, -1, dtype=np.int64)  # the totals row alone
    shown = (at >= 0) & (parents >= -1).all(axis=1)
    if k > 0 or n_rows:
        shown &= last >= 0
    chosen = np.flatnonzero(shown)
    chosen = chosen[np.argsort(last[chosen], kind="stable")]
    tail = np.full((len(chosen), len(fields) - k), TOTAL_CODE, dtype=np.int64)
    rows = np.concatenate([parents[chosen], tail], axis=1)
    values = table_values[at[chosen]].reshape(len(chosen), len(measures))
    return _rebuild(
        codes,
        columns,
        np.ones(n_rows, dtype=bool),
        last[chosen],
        [rows[:, j] for j in range(len(fields))],
        {e: values[:, i] for i, e in enumerate(measures)},
    )


def fold_rows(view: HyperCubeView) -> bool:
    """Applies the dimensions' Others and totals to the view's rows (codes and measure
    columns, NULL-suppressed rows left out); true when an Others row is shown."""
    d = view.definition
    index = view.rows if view.rows is not None else np.arange(len(view.cube))
    codes = [c[index] for c in view.codes]
    columns = {e: a[index] for e, a in view.columns.items()}
    has_other = False
    for k, dim in enumerate(d.dimensions):
        if dim.others.folds and d.measures:
            codes, columns, shown = _others(view, k, codes, columns)
            has_other = has_other or shown
    for k in reversed(range(len(d.dimensions))):
        if d.dimensions[k].others.total:
            codes, columns = _totals(view, k, codes, columns)
    view.codes, view.columns, view.rows = codes, columns, None
    return has_other
