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

    def _passes(self, value: float) -> bool:
        limit = self.limit
        return {
            "OTHER_GE_LIMIT": value >= limit,
            "OTHER_LE_LIMIT": value <= limit,
            "OTHER_GT_LIMIT": value > limit,
            "OTHER_LT_LIMIT": value < limit,
        }[self.limit_mode]

    def kept(self, values: list[int], scores: list[float]) -> set[int]:
        """The values (of one group) that keep their own rows; the rest go to Others."""
        bad = [v for v, s in zip(values, scores, strict=True) if math.isnan(s)]
        good = [(s, v) for v, s in zip(values, scores, strict=True) if not math.isnan(s)]
        good.sort(key=lambda p: p[0], reverse=not self.ascending)
        keep = set(bad) if self.keep_bad else set()
        total = sum(s for s, _ in good)
        share = [(s / total if total else math.nan, v) for s, v in good]
        mode = self.mode
        if mode == "OTHER_COUNTED":
            keep |= {v for _, v in good[: self.counted]}
        elif mode == "OTHER_ABS_LIMITED":
            keep |= {v for s, v in good if self._passes(s)}
        elif mode == "OTHER_REL_LIMITED":
            keep |= {v for s, v in share if not math.isnan(s) and self._passes(s)}
        else:  # accumulate until the target is reached (the value reaching it is kept)
            running = 0.0
            for s, v in good if mode == "OTHER_ABS_ACC_TARGET" else share:
                if math.isnan(s) or running >= self.limit:
                    break
                keep.add(v)
                running += s
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


def _evaluate_others(view: HyperCubeView, picks: list[tuple[str, list[int]]]) -> list[float]:
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


def _rebuild(
    codes: list[np.ndarray],
    columns: dict[str, np.ndarray],
    order: list[tuple[str, Any]],
) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """New rows: ("row", i) keeps row i; ("new", (codes, values by expression)) adds one."""
    new_codes: list[list[int]] = [[] for _ in codes]
    new_columns: dict[str, list[float]] = {e: [] for e in columns}
    for kind, item in order:
        if kind == "row":
            for j, c in enumerate(codes):
                new_codes[j].append(int(c[item]))
            for e, a in columns.items():
                new_columns[e].append(float(a[item]))
        else:
            row_codes, values = item
            for j, c in enumerate(row_codes):
                new_codes[j].append(c)
            for e in columns:
                new_columns[e].append(values[e])
    return (
        [np.array(c, dtype=np.int64) for c in new_codes],
        {e: np.array(v, dtype=np.float64) for e, v in new_columns.items()},
    )


def _others(
    view: HyperCubeView, k: int, codes: list[np.ndarray], columns: dict[str, np.ndarray]
) -> tuple[list[np.ndarray], dict[str, np.ndarray], bool]:
    d = view.definition
    spec = d.dimensions[k].others
    fields = [dim.field for dim in d.dimensions]
    n_rows = len(codes[0])
    ref = d.measures[spec.reference].expression if spec.reference < len(d.measures) else ""
    if not ref or not n_rows:
        return codes, columns, False
    parents: list[tuple[int, ...]] = (
        list(zip(*(c.tolist() for c in codes[:k]), strict=True)) if k else [()] * n_rows
    )
    values = codes[k].tolist()
    if k == len(fields) - 1:
        ranked = columns[ref].tolist()
        score = {(parents[i], values[i]): ranked[i] for i in range(n_rows)}
    else:
        sub = view.session.hypercube(fields[: k + 1], [ref])
        sub_codes = [sub.codes(f).tolist() for f in fields[: k + 1]]
        sub_values = sub.array(ref).tolist()
        score = {
            (tuple(t[:k]), t[k]): sub_values[i] for i, t in enumerate(zip(*sub_codes, strict=True))
        }
    groups: dict[tuple[int, ...], list[int]] = {}
    last: dict[tuple[int, ...], int] = {}
    for i in range(n_rows):
        groups.setdefault(parents[i], [])
        if values[i] >= 0 and values[i] not in groups[parents[i]]:
            groups[parents[i]].append(values[i])
        last[parents[i]] = i
    folded: dict[tuple[int, ...], set[int]] = {}
    for parent, vals in groups.items():
        if any(c < 0 for c in parent):  # a NULL, Others or totals parent is not folded
            continue
        kept = spec.kept(vals, [float(score.get((parent, v), math.nan)) for v in vals])
        if len(kept) < len(vals):
            folded[parent] = set(vals) - kept
    if not folded:
        return codes, columns, False
    order: list[tuple[str, Any]] = []
    for i in range(n_rows):
        parent = parents[i]
        if values[i] not in folded.get(parent, ()):
            order.append(("row", i))
        if parent in folded and last[parent] == i and not spec.suppress_other:
            picks = [(fields[j], [parent[j]]) for j in range(k)]
            picks.append((fields[k], sorted(folded[parent])))
            totals = _evaluate_others(view, picks)
            row_codes = list(parent) + [OTHERS_CODE] * (len(fields) - k)
            order.append(("new", (row_codes, dict(zip(view.engine_measures, totals, strict=True)))))
    new_codes, new_columns = _rebuild(codes, columns, order)
    return new_codes, new_columns, not spec.suppress_other


def _totals(
    view: HyperCubeView, k: int, codes: list[np.ndarray], columns: dict[str, np.ndarray]
) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    d = view.definition
    fields = [dim.field for dim in d.dimensions]
    n_rows = len(codes[0])
    sub_rows: dict[tuple[int, ...], list[float]]
    if k == 0:
        sub_rows = {(): _totals_of(view.cube, view.engine_measures)}
    else:
        sub = view.session.hypercube(fields[:k], view.engine_measures)
        sub_codes = [sub.codes(f).tolist() for f in fields[:k]]
        arrays = [sub.array(e).tolist() for e in view.engine_measures]
        sub_rows = {t: [a[i] for a in arrays] for i, t in enumerate(zip(*sub_codes, strict=True))}
    parents: list[tuple[int, ...]] = (
        list(zip(*(c.tolist() for c in codes[:k]), strict=True)) if k else [()] * n_rows
    )
    last = {p: i for i, p in enumerate(parents)}
    order: list[tuple[str, Any]] = []
    for i in range(n_rows):
        order.append(("row", i))
        parent = parents[i]
        if last[parent] == i and parent in sub_rows and all(code >= -1 for code in parent):
            values = dict(zip(view.engine_measures, sub_rows[parent], strict=True))
            order.append(("new", (list(parent) + [TOTAL_CODE] * (len(fields) - k), values)))
    if k == 0 and not n_rows:
        order.append(
            (
                "new",
                (
                    [TOTAL_CODE] * len(fields),
                    dict(zip(view.engine_measures, sub_rows[()], strict=True)),
                ),
            )
        )
    return _rebuild(codes, columns, order)


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
