"""Straight hypercubes (qHyperCubeDef): the engine's session.hypercube as QIX layouts and pages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import assoc
from assoc.server.qix.facts import AppFacts, FieldValues, value_text
from assoc.server.qix.listobject import (
    EXCLUDED,
    OPTION,
    SELECTED,
    STATE_NAMES,
    field_of,
    sort_criteria,
    value_states,
)
from assoc.server.qix.members import flag, member_object, member_objects, string_list
from assoc.server.qix.pages import Page, data_page, page_area, parse_pages
from assoc.server.qix.pivot import PivotState, PivotView
from assoc.server.qix.rpc import (
    CALC_INVALID_DEF,
    INVALID_PARAMETERS,
    NOT_IMPLEMENTED,
    RpcError,
    encode_json,
    json_number,
)


@dataclass(frozen=True)
class Dimension:
    """One checked dimension: its field, label, sort and null suppression."""

    field: str
    label: str
    criteria: dict[str, int]
    null_suppression: bool
    total: bool = False  # qOtherTotalSpec.qTotalMode TOTAL_EXPR: a totals node (pivot)

    def sort(self) -> tuple[str, str] | None:
        """The engine's sort of this dimension, or None."""
        c = self.criteria
        direction = c.get("qSortByNumeric") or c.get("qSortByAscii") or 0
        if direction:
            return (self.field, "asc" if direction > 0 else "desc")
        if c.get("qSortByLoadOrder"):
            return (self.field, "load")
        return None


@dataclass(frozen=True)
class Measure:
    """One checked measure: its expression (as given, leading `=` dropped), label and sort."""

    expression: str
    label: str
    sort_numeric: int


@dataclass(frozen=True)
class HyperCubeDef:
    """A checked qHyperCubeDef (straight mode)."""

    dimensions: list[Dimension]
    measures: list[Measure]
    column_order: list[int]
    suppress_zero: bool
    suppress_missing: bool
    initial_pages: list[Page]
    mode: str = "S"
    # Pivot mode: dimension numbers (-1 the measures' pseudo-dimension) on the left, then on
    # top; whether every node is expanded; whether totals come before their nodes.
    left: tuple[int, ...] = ()
    top: tuple[int, ...] = ()
    fully_expanded: bool = False
    totals_above: bool = False

    @classmethod
    def parse(cls, raw: Any) -> HyperCubeDef:
        """Checks a qHyperCubeDef (errors 8 / 7009 / 20 for what does not fit)."""
        raw = member_object(raw, "qHyperCubeDef")
        mode = raw.get("qMode", "S")
        if mode not in ("S", "P"):
            raise RpcError(
                NOT_IMPLEMENTED, "qMode", "straight (S) and pivot (P) hypercubes only for now"
            )
        dimensions = []
        for d in member_objects(raw.get("qDimensions"), "qDimensions"):
            qdef = member_object(d.get("qDef"), "qDef")
            field = field_of(d, "qDimensions")
            labels = string_list(qdef.get("qFieldLabels"), "qFieldLabels")
            label = labels[0] if labels and labels[0] else field
            sorts = member_objects(qdef.get("qSortCriterias"), "qSortCriterias")
            criteria = sort_criteria(sorts[0] if sorts else None)
            spec = member_object(d.get("qOtherTotalSpec"), "qOtherTotalSpec")
            total = spec.get("qTotalMode", "TOTAL_OFF")
            if total not in ("TOTAL_OFF", "TOTAL_EXPR"):
                raise RpcError(INVALID_PARAMETERS, "qTotalMode", "TOTAL_OFF or TOTAL_EXPR")
            dimensions.append(
                Dimension(
                    field,
                    str(label),
                    criteria,
                    flag(d, "qNullSuppression"),
                    total == "TOTAL_EXPR",
                )
            )
        measures = []
        for m in member_objects(raw.get("qMeasures"), "qMeasures"):
            qdef = member_object(m.get("qDef"), "qDef")
            expression = qdef.get("qDef", "")
            if not isinstance(expression, str) or not expression.strip():
                raise RpcError(INVALID_PARAMETERS, "qMeasures", "qDef.qDef must be an expression")
            expression = expression.strip()
            expression = expression[1:].strip() if expression.startswith("=") else expression
            label = qdef.get("qLabel") or expression
            sort_by = member_object(m.get("qSortBy"), "qSortBy")
            numeric = sort_by.get("qSortByNumeric", 0)
            if numeric not in (-1, 0, 1) or isinstance(numeric, bool):
                raise RpcError(INVALID_PARAMETERS, "qSortByNumeric", "must be -1, 0 or 1")
            measures.append(Measure(expression, str(label), int(numeric)))
        width = len(dimensions) + len(measures)
        order = raw.get("qInterColumnSortOrder") or list(range(width))
        lowest = -1 if mode == "P" else 0  # -1: the pivot's measures (pseudo-dimension)
        if (
            not isinstance(order, list)
            or not all(isinstance(c, int) and not isinstance(c, bool) for c in order)
            or sorted(set(order)) != sorted(order)
            or any(not lowest <= c < width for c in order)
        ):
            raise RpcError(
                INVALID_PARAMETERS, "qInterColumnSortOrder", f"must list columns 0..{width - 1}"
            )
        pivot = order if mode == "P" else []
        order = [c for c in order if c >= 0]
        order = order + [c for c in range(width) if c not in order]
        pages = parse_pages(raw.get("qInitialDataFetch"))
        left, top = _pivot_sides(raw, pivot, len(dimensions), len(measures))
        return cls(
            dimensions,
            measures,
            order,
            flag(raw, "qSuppressZero"),
            flag(raw, "qSuppressMissing"),
            pages,
            mode,
            left,
            top,
            flag(raw, "qAlwaysFullyExpanded"),
            flag(raw, "qShowTotalsAbove"),
        )

    def sort(self) -> list[tuple[str, str]]:
        """The engine's sort list, in qInterColumnSortOrder."""
        out = []
        for column in self.column_order:
            if column < len(self.dimensions):
                d = self.dimensions[column]
                c = d.criteria
                direction = c.get("qSortByNumeric") or c.get("qSortByAscii") or 0
                if direction:
                    out.append((d.field, "asc" if direction > 0 else "desc"))
                elif c.get("qSortByLoadOrder"):
                    out.append((d.field, "load"))
            else:
                m = self.measures[column - len(self.dimensions)]
                if m.sort_numeric:
                    out.append((m.expression, "asc" if m.sort_numeric > 0 else "desc"))
        return out


_EMPTY_AREA = {"qLeft": 0, "qTop": 0, "qWidth": 0, "qHeight": 0}


def _pivot_sides(
    raw: dict[str, Any], order: list[int], n_dims: int, n_measures: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A pivot's dimensions on the left and on top, in qInterColumnSortOrder (dimensions it
    leaves out follow in their order; -1, the measures, comes last unless placed, and only
    with two measures or more). qNoOfLeftDims counts positions in that order; -1 puts every
    dimension on the left and a last pseudo-dimension on top."""
    tree = [c for c in order if c < n_dims]
    tree += [c for c in range(n_dims) if c not in tree]
    if n_measures >= 2 and -1 not in tree:
        tree.append(-1)
    if n_measures < 2:
        tree = [c for c in tree if c != -1]
    count = raw.get("qNoOfLeftDims", -1)
    if not isinstance(count, int) or isinstance(count, bool) or not -1 <= count <= len(tree):
        raise RpcError(INVALID_PARAMETERS, "qNoOfLeftDims", f"must be -1..{len(tree)}")
    if count == -1:
        count = len(tree) - 1 if tree and tree[-1] == -1 else len(tree)
    return tuple(tree[:count]), tuple(tree[count:])


def measure_cell(value: float, state: str = "L") -> dict[str, Any]:
    """NxCell of a measure value (NaN = NULL, shown as "-")."""
    if np.isnan(value):
        return {"qText": "-", "qNum": "NaN", "qElemNumber": 0, "qState": state, "qIsNull": True}
    return {
        "qText": value_text(value),
        "qNum": json_number(value),
        "qElemNumber": 0,
        "qState": state,
    }


def _distinct(codes: np.ndarray, size: int) -> int:
    """How many distinct codes (-1, NULL, counts as one) a column holds: a count per symbol
    rather than a sort or a hash of the whole column (seconds on millions of rows)."""
    present = codes[codes >= 0]
    seen = int(np.count_nonzero(np.bincount(present, minlength=size)))
    return seen + int(present.size < codes.size)


class HyperCubeView:
    """A hypercube computed for a session's current selections."""

    def __init__(
        self,
        definition: HyperCubeDef,
        facts: AppFacts,
        session: assoc.Session,
        state: PivotState | None = None,
    ) -> None:
        self.definition = definition
        self.facts = facts
        self.session = session
        self.state = state
        self._pivot: PivotView | None = None
        self.error: dict[str, Any] | None = None
        d = definition
        fields = [dim.field for dim in d.dimensions]
        unknown = [f for f in fields if f not in facts.fields and not f.startswith("=")]
        if unknown:
            self._fail(unknown[0], f"unknown field {unknown[0]!r}")
            return
        if d.mode == "P" and any(f.startswith("=") for f in fields):
            self._fail(fields[0], "calculated dimensions in pivot (P) cubes are not supported yet")
            return
        try:
            self.cube = session.hypercube(
                fields,
                [m.expression for m in d.measures],
                sort=d.sort() or None,
                suppress_zero=d.suppress_zero,
                suppress_missing=d.suppress_missing,
            )
        except assoc.Error as exc:
            self._fail("", str(exc))
            return
        self.codes = [self.cube.codes(f) for f in fields]
        self.arrays = [self.cube.array(m.expression) for m in d.measures]
        keep = np.ones(len(self.cube), dtype=bool)
        for dim, codes in zip(d.dimensions, self.codes, strict=True):
            if dim.null_suppression:
                keep &= codes >= 0
        self.rows = np.flatnonzero(keep) if not keep.all() else None
        self.values = [
            FieldValues(self.cube.symbols(i)) if f.startswith("=") else facts.values(f)
            for i, f in enumerate(fields)
        ]
        self.states = [
            self._calculated_states(i, len(v))
            if f.startswith("=")
            else value_states(session, f, len(v), show_alternatives=False)
            for i, (f, v) in enumerate(zip(fields, self.values, strict=True))
        ]

    def _calculated_states(self, dim: int, size: int) -> np.ndarray:
        """A calculated dimension's value states, from its source field's: selected when a
        selected source value gives it, else possible when a possible one does (every value
        possible when the expression reads several fields)."""
        source = self.cube.calculated_source(dim)
        if source is None:
            return np.full(size, OPTION, dtype=np.int8)
        field, results = source
        states = np.full(size, EXCLUDED, dtype=np.int8)
        of_source = value_states(self.session, field, len(results), show_alternatives=False)
        for state in (OPTION, SELECTED):
            picked = results[(of_source == state) & (results >= 0)]
            states[picked] = state
        return states

    def _fail(self, context: str, message: str) -> None:
        self.error = {
            "qErrorCode": CALC_INVALID_DEF,
            "qContext": context,
            "qExtendedMessage": message,
        }

    def __len__(self) -> int:
        if self.error is not None:
            return 0
        return len(self.rows) if self.rows is not None else len(self.cube)

    @property
    def width(self) -> int:
        """Columns: dimensions, then measures."""
        return len(self.definition.dimensions) + len(self.definition.measures)

    def page(self, page: Page) -> dict[str, Any]:
        """NxDataPage of one page."""
        if self.error is not None:
            return data_page([], range(0), range(0))
        rows, cols = page_area(page, len(self), self.width)
        if not rows or not cols:
            return data_page([], rows, cols)
        index = np.arange(rows.start, rows.stop)
        if self.rows is not None:
            index = self.rows[index]
        n_dims = len(self.definition.dimensions)
        columns: list[list[str]] = []
        for c in cols:
            if c < n_dims:
                codes = self.codes[c][index].tolist()
                states = self.states[c]
                names = [STATE_NAMES[states[code]] if code >= 0 else "O" for code in codes]
                columns.append(self.values[c].cells_json(codes, names))
            else:
                values = self.arrays[c - n_dims][index].tolist()
                columns.append([encode_json(measure_cell(v)) for v in values])
        row_texts = ["[" + ",".join(row) + "]" for row in zip(*columns, strict=True)]
        return data_page(row_texts if columns else [], rows, cols)

    @property
    def pivot(self) -> PivotView:
        """The pivot trees (qMode P), made on first use."""
        if self._pivot is None:
            self._pivot = PivotView(self.definition, self.facts, self.session, self.state)
        return self._pivot

    def pivot_page(self, page: Page) -> dict[str, Any]:
        """NxPivotPage of one page (an empty one when the cube has an error)."""
        if self.error is not None:
            return {"qLeft": [], "qTop": [], "qData": [], "qArea": _EMPTY_AREA}
        return self.pivot.page(page)

    def _totals(self) -> list[float]:
        totals = self.cube.totals
        if isinstance(totals, dict):
            return [float(totals[m.expression]) for m in self.definition.measures]
        return [float("nan") if t is None else float(t) for t in totals]

    def layout(self) -> dict[str, Any]:
        """qHyperCube: size, dimension and measure info, grand totals and initial pages."""
        d = self.definition
        layout: dict[str, Any] = {
            "qStateName": "$",
            "qSize": {"qcx": self.width, "qcy": len(self)},
            "qDimensionInfo": [],
            "qMeasureInfo": [],
            "qEffectiveInterColumnSortOrder": list(d.column_order),
            "qGrandTotalRow": [],
            "qDataPages": [self.page(p) for p in d.initial_pages],
            "qPivotDataPages": [],
            "qStackedDataPages": [],
            "qMode": "S",
            "qNoOfLeftDims": -1,
            "qTreeNodesOnDim": [],
            "qColumnOrder": [],
        }
        if d.mode == "P":
            layout.update(
                qMode="P",
                qDataPages=[],
                qPivotDataPages=[self.pivot_page(p) for p in d.initial_pages],
                qNoOfLeftDims=len(d.left),
                qEffectiveInterColumnSortOrder=list(d.left + d.top),
                qLastExpandedPos={"qx": 0, "qy": 0},
            )
            if self.error is None:
                layout["qSize"] = self.pivot.size
        if self.error is not None:
            layout["qError"] = self.error
            return layout
        for dim, values, states in zip(d.dimensions, self.values, self.states, strict=True):
            f = self.facts.fields.get(dim.field) or {
                "cardinal": len(values),
                "tags": [],
                "is_numeric": bool(values.is_numeric.all()) and len(values) > 0,
            }
            counts = np.bincount(states, minlength=len(STATE_NAMES))
            direction = dim.criteria.get("qSortByNumeric") or dim.criteria.get("qSortByAscii") or 0
            layout["qDimensionInfo"].append(
                {
                    "qFallbackTitle": dim.label,
                    "qApprMaxGlyphCount": values.max_glyphs,
                    "qCardinal": f["cardinal"],
                    "qSortIndicator": "A" if direction > 0 else "D" if direction < 0 else "N",
                    "qGroupFallbackTitles": [dim.label],
                    "qGroupPos": 0,
                    "qStateCounts": {
                        "qLocked": 0,
                        "qSelected": int(counts[0]),
                        "qOption": int(counts[1]),
                        "qDeselected": 0,
                        "qAlternative": int(counts[2]),
                        "qExcluded": int(counts[4]),
                        "qSelectedExcluded": int(counts[3]),
                        "qLockedExcluded": 0,
                    },
                    "qTags": list(f["tags"]),
                    "qDimensionType": "N" if f["is_numeric"] else "D",
                    "qGrouping": "N",
                    "qNumFormat": {"qType": "U", "qnDec": 0, "qUseThou": 0},
                    "qIsAutoFormat": True,
                    "qGroupFieldDefs": [dim.field],
                    "qMin": json_number(values.minimum),
                    "qMax": json_number(values.maximum),
                    "qAttrExprInfo": [],
                    "qAttrDimInfo": [],
                    "qCardinalities": {
                        "qCardinal": f["cardinal"],
                        "qHypercubeCardinal": _distinct(
                            self.codes[len(layout["qDimensionInfo"])], len(values)
                        ),
                        "qAllValuesCardinal": -1,
                    },
                }
            )
        index = self.rows if self.rows is not None else slice(None)
        for m, array, total in zip(d.measures, self.arrays, self._totals(), strict=True):
            shown = array[index]
            finite = shown[~np.isnan(shown)]
            layout["qMeasureInfo"].append(
                {
                    "qFallbackTitle": m.label,
                    "qApprMaxGlyphCount": max(
                        (len(value_text(v)) for v in finite[:1000].tolist()), default=1
                    ),
                    "qCardinal": 0,
                    "qSortIndicator": "A"
                    if m.sort_numeric > 0
                    else "D"
                    if m.sort_numeric < 0
                    else "N",
                    "qNumFormat": {"qType": "U", "qnDec": 0, "qUseThou": 0},
                    "qMin": json_number(float(finite.min())) if finite.size else "NaN",
                    "qMax": json_number(float(finite.max())) if finite.size else "NaN",
                    "qIsAutoFormat": True,
                    "qAttrExprInfo": [],
                    "qAttrDimInfo": [],
                    "qTrendLines": [],
                }
            )
            cell = measure_cell(total, "X")
            cell.update(qElemNumber=-1, qIsTotalCell=True)
            layout["qGrandTotalRow"].append(cell)
        return layout
