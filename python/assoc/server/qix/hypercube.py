"""Hypercubes (a checked qHyperCubeDef, cubedef.py) computed for a session: the engine's
session.hypercube as QIX layouts and pages, straight, pivot (pivot.py) and stacked
(stacked.py)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import assoc
from assoc import _core
from assoc.field_order import (
    EXCLUDED,
    OPTION,
    SELECTED,
    STATE_NAMES,
    state_counts,
    value_states,
    value_text,
)
from assoc.server.qix.cubedef import Dimension, HyperCubeDef, Measure
from assoc.server.qix.cubeextras import OTHERS_CODE, TOTAL_CODE, condition_holds, fold_rows
from assoc.server.qix.expressions import expand_dimensions
from assoc.server.qix.facts import NULL_CELL_PREFIX, AppFacts
from assoc.server.qix.listobject import unknown_state
from assoc.server.qix.pages import Page, data_page, page_area, rows_keyed
from assoc.server.qix.pivot import PivotState, PivotView, leaf_dims, pivot_cube
from assoc.server.qix.rpc import (
    CALC_EVAL_CONDITION_FAILED,
    CALC_INVALID_DEF,
    encode_json,
    json_number,
)
from assoc.server.qix.stacked import outer_size, stack_page
from assoc.server.qix.states import InState

_EMPTY_AREA = {"qLeft": 0, "qTop": 0, "qWidth": 0, "qHeight": 0}


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


def measure_cells_json(values: np.ndarray | list[float]) -> list[str]:
    """encode_json(measure_cell(v)) of each value, made by the engine: a page has thousands."""
    return _core.measure_cells_json(np.asarray(values, dtype=np.float64))


class HyperCubeView:
    """A hypercube computed for a session's current selections."""

    def __init__(
        self,
        definition: HyperCubeDef,
        facts: AppFacts,
        session: InState,
        state: PivotState | None = None,
    ) -> None:
        expansion_error = ""
        try:
            # `$(…)` in qFieldDefs
            definition = expand_dimensions(definition, session.session, session.state)
        except assoc.Error as exc:
            expansion_error = str(exc)
        self.definition = definition
        self.facts = facts
        self.session = session
        self.state = state
        self._pivot: PivotView | None = None
        self.error: dict[str, Any] | None = None
        self.calc_message: str | None = None
        self._attr_dims: dict[str, dict[tuple[int, ...], int]] = {}
        if expansion_error:
            self._fail("", expansion_error)
            return
        d = definition
        if session.state not in session.session.states:
            self.error = unknown_state(session.state)
            return
        fields = [dim.field for dim in d.dimensions]
        columns: list[Dimension | Measure] = [*d.dimensions, *d.measures]
        named = fields + [f for column in columns for f in column.attr_dims]
        unknown = [f for f in named if f not in facts.fields and not f.startswith("=")]
        if unknown:
            self._fail(unknown[0], f"unknown field {unknown[0]!r}")
            return
        if d.mode == "P" and any(f.startswith("=") for f in fields):
            self._fail(fields[0], "calculated dimensions in pivot (P) cubes are not supported yet")
            return
        self.engine_measures = d.engine_measures
        try:
            if d.calc_condition is not None and not condition_holds(self, d.calc_condition[0]):
                self.calc_message = d.calc_condition[1]
                self.error = {"qErrorCode": CALC_EVAL_CONDITION_FAILED}
                return
            leaves = leaf_dims(d) if d.mode == "P" else None
            if leaves is not None:
                # The pivot's cells read this same cube (PivotView): one computation, not two.
                self.cube = pivot_cube(session, d, *leaves)
            else:
                self.cube = session.hypercube(
                    fields,
                    self.engine_measures,
                    sort=d.sort() or None,
                    suppress_zero=d.suppress_zero,
                    suppress_missing=d.suppress_missing,
                )
        except assoc.Error as exc:
            self._fail("", str(exc))
            return
        self.codes = [self.cube.codes(f) for f in fields]
        self.base_codes = self.codes
        self.columns = {e: self.cube.array(e) for e in self.engine_measures}
        # The rows shown: all but those NULL in a dimension that suppresses NULL.
        self.rows: np.ndarray | None = None
        suppressed = [
            codes
            for dim, codes in zip(d.dimensions, self.codes, strict=True)
            if dim.null_suppression
        ]
        if suppressed:
            keep = suppressed[0] >= 0
            for codes in suppressed[1:]:
                keep &= codes >= 0
            if not keep.all():
                self.rows = np.flatnonzero(keep)
        self.has_other = False
        if d.folds:
            try:
                self.has_other = fold_rows(self)
            except assoc.Error as exc:
                self._fail("", str(exc))
                return
        self.arrays = [self.columns[m.expression] for m in d.measures]
        self.values = [
            facts.dimension_values(self.cube, i) if f.startswith("=") else facts.values(f)
            for i, f in enumerate(fields)
        ]
        self.states = [
            self._calculated_states(i, len(v))
            if f.startswith("=")
            else value_states(session, f, show_alternatives=False)
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
        of_source = value_states(self.session, field, show_alternatives=False)
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
        if self.rows is not None:
            return len(self.rows)
        return len(self.codes[0]) if self.codes else len(self.cube)  # Others rows counted

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
        plain = self._plain_columns(cols)
        if plain is not None:  # no Others, totals nor attributes: each row written at once
            row_texts = _core.page_rows_json(index, plain, NULL_CELL_PREFIX, STATE_NAMES, OPTION)
            return data_page(row_texts, rows, cols)
        columns: list[list[str]] = []
        for c in cols:
            if c < n_dims:
                codes = self.codes[c][index]
                # A NULL, Others or totals row (negative codes) is in state O.
                states = np.full(len(codes), OPTION, dtype=np.int8)
                valued = codes >= 0
                states[valued] = self.states[c][codes[valued]]
                cells = self.values[c].cells_json(codes, states)
                if self.definition.folds:
                    cells = self._folded_cells(c, codes.tolist(), cells)
                dim = self.definition.dimensions[c]
                cells = self._with_attributes(dim.attr_exprs, index, cells)
                columns.append(self._with_attr_dims(dim.attr_dims, index, cells))
            else:
                measure = self.definition.measures[c - n_dims]
                cells = measure_cells_json(self.arrays[c - n_dims][index])
                cells = self._with_attributes(measure.attr_exprs, index, cells)
                columns.append(self._with_attr_dims(measure.attr_dims, index, cells))
        row_texts = ["[" + ",".join(row) + "]" for row in zip(*columns, strict=True)]
        return data_page(row_texts if columns else [], rows, cols)

    def _plain_columns(self, cols: range) -> list[Any] | None:
        """The columns as page_rows_json takes them (a dimension's codes, value states and
        cell prefixes; a measure's values), when none has Others or totals rows, attribute
        expressions or attribute dimensions and every dimension's cells are made; else None."""
        d = self.definition
        if d.folds:
            return None
        n_dims = len(d.dimensions)
        out: list[Any] = []
        for c in cols:
            column = d.dimensions[c] if c < n_dims else d.measures[c - n_dims]
            if column.attr_exprs or column.attr_dims:
                return None
            if c >= n_dims:
                out.append(self.arrays[c - n_dims])
                continue
            prefixes = self.values[c].made_prefixes()
            if prefixes is None:
                return None
            out.append((self.codes[c], self.states[c], prefixes))
        return out

    def _folded_cells(self, column: int, codes: list[int], cells: list[str]) -> list[str]:
        """Others (qElemNumber -3) and totals (-1) cells in place of the rows' codes."""
        spec = self.definition.dimensions[column].others
        out = []
        for code, cell in zip(codes, cells, strict=True):
            if code == OTHERS_CODE:
                cell = encode_json(
                    {"qText": spec.other_label, "qNum": "NaN", "qElemNumber": -3, "qState": "O"}
                )
            elif code == TOTAL_CODE:
                cell = encode_json(
                    {
                        "qText": spec.total_label,
                        "qNum": "NaN",
                        "qElemNumber": -1,
                        "qState": "O",
                        "qIsTotalCell": True,
                    }
                )
            out.append(cell)
        return out

    def _with_attributes(
        self, expressions: tuple[str, ...], index: np.ndarray, cells: list[str]
    ) -> list[str]:
        """Cells with qAttrExps {qValues: [{qText, qNum}]}, one value per expression."""
        if not expressions:
            return cells
        columns = [self.columns[e][index].tolist() for e in expressions]
        out = []
        for i, cell in enumerate(cells):
            values: list[dict[str, Any]] = []
            for column in columns:
                v = column[i]
                if np.isnan(v):
                    values.append({"qText": "-", "qNum": "NaN"})
                else:
                    values.append({"qText": value_text(v), "qNum": json_number(v)})
            attrs = encode_json({"qValues": values})
            out.append(cell[:-1] + ',"qAttrExps":' + attrs + "}")
        return out

    def _attr_dim_codes(self, field: str, keys: set[tuple[int, ...]]) -> dict[tuple[int, ...], int]:
        """The value of an attribute dimension's field of the rows with these dimension
        codes: the one value a row's records have (NULL, -1, for none or several). A small
        cube's rows are all read once and kept; a large one's, those a page asks for."""
        found = self._attr_dims.get(field)
        if found is not None:
            return found
        fields = [d.field for d in self.definition.dimensions]
        cube = self.session.hypercube([*fields, field], [])
        columns = [cube.codes(i) for i in range(len(fields) + 1)]
        rows = rows_keyed(columns[:-1], keys)
        small = rows is None
        if rows is not None:
            columns = [column[rows] for column in columns]
        found = {}
        for row in zip(*(column.tolist() for column in columns), strict=True):
            key = tuple(row[:-1])
            found[key] = row[-1] if key not in found else -1
        if small:
            self._attr_dims[field] = found
        return found

    def _with_attr_dims(
        self, fields: tuple[str, ...], index: np.ndarray, cells: list[str]
    ) -> list[str]:
        """Cells with qAttrDims {qValues: [{qText, qElemNo}]}, one value per field."""
        if not fields:
            return cells
        keys = list(zip(*(c[index].tolist() for c in self.codes), strict=True))
        per_field = []
        for field in fields:
            codes = self._attr_dim_codes(field, set(keys))
            texts = self.facts.values(field).texts
            per_field.append([(codes.get(key, -1), texts) for key in keys])
        out = []
        for i, cell in enumerate(cells):
            values = [
                {"qText": texts[code], "qElemNo": code}
                if code >= 0
                else {"qText": "-", "qElemNo": -2}
                for code, texts in (column[i] for column in per_field)
            ]
            out.append(cell[:-1] + ',"qAttrDims":' + encode_json({"qValues": values}) + "}")
        return out

    def _attr_dim_info(self, fields: tuple[str, ...]) -> list[dict[str, Any]]:
        """NxAttrDimInfo of each attribute dimension."""
        out = []
        for field in fields:
            cardinal = int(self.facts.fields[field]["cardinal"])
            out.append(
                {
                    "qCardinal": cardinal,
                    "qSize": {"qcx": 1, "qcy": cardinal},
                    "qFallbackTitle": field,
                    "qLocked": False,
                    "qIsCalculated": False,
                }
            )
        return out

    def _attr_info(self, expressions: tuple[str, ...]) -> list[dict[str, Any]]:
        """NxAttrExprInfo of each attribute expression: its min and max over the rows."""
        out = []
        for e in expressions:
            array = self.columns[e] if self.rows is None else self.columns[e][self.rows]
            finite = array[~np.isnan(array)]
            low = float(finite.min()) if finite.size else math.nan
            high = float(finite.max()) if finite.size else math.nan
            out.append(
                {
                    "qMin": json_number(low),
                    "qMax": json_number(high),
                    "qFallbackTitle": e,
                    "qMinText": value_text(low) if finite.size else "",
                    "qMaxText": value_text(high) if finite.size else "",
                    "qNumFormat": {"qType": "U", "qnDec": 0, "qUseThou": 0},
                    "qIsAutoFormat": True,
                }
            )
        return out

    def _skeleton_infos(self) -> dict[str, list[dict[str, Any]]]:
        """Dimension and measure infos with titles only (a calculation condition that does not
        hold computes nothing, yet clients count and title the columns)."""
        common = {
            "qApprMaxGlyphCount": 0,
            "qCardinal": 0,
            "qSortIndicator": "N",
            "qNumFormat": {"qType": "U", "qnDec": 0, "qUseThou": 0},
            "qIsAutoFormat": True,
            "qMin": "NaN",
            "qMax": "NaN",
            "qAttrExprInfo": [],
            "qAttrDimInfo": [],
        }
        dims = [
            {
                **common,
                "qFallbackTitle": d.label,
                "qGroupFallbackTitles": [d.label],
                "qGroupPos": 0,
                "qGroupFieldDefs": [d.field],
                "qGrouping": "N",
                "qTags": [],
                "qDimensionType": "D",
                "qCardinalities": {
                    "qCardinal": 0,
                    "qHypercubeCardinal": 0,
                    "qAllValuesCardinal": -1,
                },
            }
            for d in self.definition.dimensions
        ]
        measures = [
            {**common, "qFallbackTitle": m.label, "qTrendLines": []}
            for m in self.definition.measures
        ]
        return {"qDimensionInfo": dims, "qMeasureInfo": measures}

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
        shown = [float("nan") if t is None else float(t) for t in totals]
        return shown[: len(self.definition.measures)]  # hidden measures follow

    def layout(self) -> dict[str, Any]:
        """qHyperCube: size, dimension and measure info, grand totals and initial pages."""
        d = self.definition
        layout: dict[str, Any] = {
            "qStateName": self.session.state,
            "qSize": {"qcx": self.width, "qcy": len(self)},
            "qDimensionInfo": [],
            "qMeasureInfo": [],
            "qEffectiveInterColumnSortOrder": list(d.column_order),
            "qGrandTotalRow": [],
            "qDataPages": [self.page(p) for p in d.initial_pages] if d.mode == "S" else [],
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
                qPivotDataPages=[self.pivot_page(p) for p in d.initial_pages],
                qNoOfLeftDims=len(d.left),
                qEffectiveInterColumnSortOrder=list(d.left + d.top),
                qLastExpandedPos={"qx": 0, "qy": 0},
            )
            if self.error is None:
                layout["qSize"] = self.pivot.size
        if d.mode == "K":
            layout.update(
                qMode="K",
                qStackedDataPages=[
                    stack_page(self, p, d.max_stacked_cells) for p in d.initial_pages
                ],
                qSize={"qcx": self.width, "qcy": outer_size(self)},
                qEffectiveInterColumnSortOrder=list(range(len(d.dimensions))),
            )
        if self.calc_message is not None:
            layout.update(self._skeleton_infos(), qCalcCondMsg=self.calc_message)
        if self.error is not None:
            layout["qError"] = self.error
            return layout
        layout["qHasOtherValues"] = self.has_other
        for dim, values, states in zip(d.dimensions, self.values, self.states, strict=True):
            f = self.facts.fields.get(dim.field) or {
                "cardinal": len(values),
                "tags": [],
                "is_numeric": bool(values.is_numeric.all()) and len(values) > 0,
            }
            counts = state_counts(states)
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
                    "qAttrExprInfo": self._attr_info(dim.attr_exprs),
                    "qAttrDimInfo": self._attr_dim_info(dim.attr_dims),
                    "qReverseSort": dim.reverse,
                    "qCardinalities": {
                        "qCardinal": f["cardinal"],
                        "qHypercubeCardinal": _core.distinct_codes(
                            self.base_codes[len(layout["qDimensionInfo"])], len(values)
                        ),
                        "qAllValuesCardinal": -1,
                    },
                }
            )
        index = self.rows if self.rows is not None else slice(None)
        for m, array, total in zip(d.measures, self.arrays, self._totals(), strict=True):
            # Of the values not NULL: how many, the least, the greatest, the longest text
            # among the first thousand.
            count, low, high, glyphs = _core.number_facts(array[index], 1000)
            layout["qMeasureInfo"].append(
                {
                    "qFallbackTitle": m.label,
                    "qApprMaxGlyphCount": glyphs or 1,
                    "qCardinal": 0,
                    "qSortIndicator": "A"
                    if m.sort_numeric > 0
                    else "D"
                    if m.sort_numeric < 0
                    else "N",
                    "qNumFormat": {"qType": "U", "qnDec": 0, "qUseThou": 0},
                    "qMin": json_number(low) if count else "NaN",
                    "qMax": json_number(high) if count else "NaN",
                    "qIsAutoFormat": True,
                    "qAttrExprInfo": self._attr_info(m.attr_exprs),
                    "qAttrDimInfo": self._attr_dim_info(m.attr_dims),
                    "qTrendLines": [],
                }
            )
            cell = measure_cell(total, "X")
            cell.update(qElemNumber=-1, qIsTotalCell=True)
            layout["qGrandTotalRow"].append(cell)
        return layout
