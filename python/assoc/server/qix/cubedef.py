"""A hypercube's definition (qHyperCubeDef) as QIX clients write it, checked: its
dimensions, measures, sorts, pages and modes. The view that computes it is hypercube.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assoc.server.qix.cubeextras import OtherSpec, calc_condition, string_expr
from assoc.server.qix.listobject import field_of, sort_criteria
from assoc.server.qix.members import (
    cell_limit,
    flag,
    member_object,
    member_objects,
    string_list,
)
from assoc.server.qix.pages import Page, parse_pages
from assoc.server.qix.rpc import INVALID_PARAMETERS, NOT_IMPLEMENTED, RpcError
from assoc.server.qix.states import state_name

NO_OTHERS = OtherSpec()
# The measure cells of a stacked (qMode K) cube's initial pages, unless qMaxStackedCells says.
MAX_STACKED_CELLS = 5000


@dataclass(frozen=True)
class Dimension:
    """One checked dimension: its field, label, sort and null suppression."""

    field: str
    label: str
    criteria: dict[str, int]
    null_suppression: bool
    total: bool = False  # qOtherTotalSpec.qTotalMode TOTAL_EXPR: a totals node (pivot)
    others: OtherSpec = NO_OTHERS  # qOtherTotalSpec (straight mode)
    reverse: bool = False  # qDef.qReverseSort
    sort_expression: tuple[str, int] | None = None  # qSortByExpression: (expression, ±1)
    attr_exprs: tuple[str, ...] = ()  # qAttributeExpressions
    attr_dims: tuple[str, ...] = ()  # qAttributeDimensions (fields)

    def sort(self) -> tuple[str, str] | None:
        """The engine's sort of this dimension (by field), or None."""
        c = self.criteria
        direction = (c.get("qSortByNumeric") or c.get("qSortByAscii") or 0) * (
            -1 if self.reverse else 1
        )
        if direction:
            return (self.field, "asc" if direction > 0 else "desc")
        if c.get("qSortByLoadOrder"):
            return (self.field, "load")
        return None

    def sorts(self) -> list[tuple[str, str]]:
        """The engine's sort keys of this dimension: its expression first, then its field."""
        out = []
        if self.sort_expression is not None:
            expression, direction = self.sort_expression
            direction *= -1 if self.reverse else 1
            out.append((expression, "asc" if direction > 0 else "desc"))
        by_field = self.sort()
        return out + ([by_field] if by_field is not None else [])


@dataclass(frozen=True)
class Measure:
    """One checked measure: its expression (as given, leading `=` dropped), label and sort."""

    expression: str
    label: str
    sort_numeric: int
    attr_exprs: tuple[str, ...] = ()  # qAttributeExpressions
    attr_dims: tuple[str, ...] = ()  # qAttributeDimensions (fields)


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
    state_name: str = ""  # qStateName ("" = the object's state)
    calc_condition: tuple[str, str] | None = None  # (condition, message)
    max_stacked_cells: int = MAX_STACKED_CELLS  # qMaxStackedCells: a stacked layout's cells

    @property
    def engine_measures(self) -> list[str]:
        """The measures the engine computes: the cube's, then the hidden ones that sort
        dimensions by expression and fill attribute expressions (each once)."""
        out = [m.expression for m in self.measures]
        columns: list[Dimension | Measure] = [*self.dimensions, *self.measures]
        for column in columns:
            hidden = list(column.attr_exprs)
            if isinstance(column, Dimension) and column.sort_expression is not None:
                hidden.append(column.sort_expression[0])
            out += [e for e in hidden if e not in out]
        return out

    @property
    def folds(self) -> bool:
        """True when a dimension has Others or totals rows (straight mode)."""
        return self.mode == "S" and any(d.others.folds or d.total for d in self.dimensions)

    @classmethod
    def parse(cls, raw: Any) -> HyperCubeDef:
        """Checks a qHyperCubeDef (errors 8 / 7009 / 20 for what does not fit)."""
        raw = member_object(raw, "qHyperCubeDef")
        mode = raw.get("qMode", "S")
        if mode not in ("S", "P", "K"):
            raise RpcError(
                NOT_IMPLEMENTED, "qMode", "straight (S), pivot (P) and stacked (K) hypercubes only"
            )
        dimensions = []
        measure_names = []
        for m in member_objects(raw.get("qMeasures"), "qMeasures"):
            qdef = member_object(m.get("qDef"), "qDef")
            measure_names.append(str(qdef.get("qLabel") or qdef.get("qDef") or ""))
        measure_names += [_expression(n) for n in measure_names]
        for d in member_objects(raw.get("qDimensions"), "qDimensions"):
            qdef = member_object(d.get("qDef"), "qDef")
            field = field_of(d, "qDimensions")
            labels = string_list(qdef.get("qFieldLabels"), "qFieldLabels")
            label = labels[0] if labels and labels[0] else field
            sorts = member_objects(qdef.get("qSortCriterias"), "qSortCriterias")
            criteria = sort_criteria(sorts[0] if sorts else None)
            others = OtherSpec.parse(d.get("qOtherTotalSpec"), measure_names)
            dimensions.append(
                Dimension(
                    field,
                    str(label),
                    criteria,
                    flag(d, "qNullSuppression"),
                    others.total,
                    others,
                    flag(qdef, "qReverseSort"),
                    _sort_expression(sorts[0] if sorts else None),
                    _attr_exprs(d),
                    _attr_dims(d),
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
            if flag(qdef, "qReverseSort"):
                numeric = -numeric
            measures.append(
                Measure(expression, str(label), int(numeric), _attr_exprs(m), _attr_dims(m))
            )
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
            state_name(raw.get("qStateName")),
            calc_condition(raw),
            cell_limit(raw.get("qMaxStackedCells"), "qMaxStackedCells", MAX_STACKED_CELLS),
        )

    def sort(self) -> list[tuple[str, str]]:
        """The engine's sort list, in qInterColumnSortOrder."""
        out = []
        for column in self.column_order:
            if column < len(self.dimensions):
                out += self.dimensions[column].sorts()
            else:
                m = self.measures[column - len(self.dimensions)]
                if m.sort_numeric:
                    out.append((m.expression, "asc" if m.sort_numeric > 0 else "desc"))
        return out


def _expression(text: str) -> str:
    text = text.strip()
    return text[1:].strip() if text.startswith("=") else text


def _sort_expression(raw: Any) -> tuple[str, int] | None:
    """(expression, direction) of qSortByExpression with qExpression {qv}, or None."""
    if not isinstance(raw, dict):
        return None
    direction = raw.get("qSortByExpression", 0)
    if direction not in (-1, 0, 1) or isinstance(direction, bool):
        raise RpcError(INVALID_PARAMETERS, "qSortByExpression", "must be -1, 0 or 1")
    expression = _expression(string_expr(raw.get("qExpression"), "qExpression"))
    if not direction or not expression:
        return None
    return expression, int(direction)


def _attr_dims(column: dict[str, Any]) -> tuple[str, ...]:
    """The fields of a column's qAttributeDimensions (NxAttrDimDef.qDef, `[F]` or `F`)."""
    out = []
    for item in member_objects(column.get("qAttributeDimensions"), "qAttributeDimensions"):
        name = item.get("qDef", "")
        if not isinstance(name, str) or not name.strip():
            raise RpcError(INVALID_PARAMETERS, "qAttributeDimensions", "qDef must name a field")
        name = _expression(name)
        if name.startswith("[") and name.endswith("]"):
            name = name[1:-1]
        out.append(name)
    return tuple(out)


def _attr_exprs(column: dict[str, Any]) -> tuple[str, ...]:
    """The expressions of a column's qAttributeExpressions (NxAttrExprDef.qExpression)."""
    out = []
    for item in member_objects(column.get("qAttributeExpressions"), "qAttributeExpressions"):
        expression = _expression(string_expr(item.get("qExpression"), "qExpression"))
        if not expression:
            raise RpcError(INVALID_PARAMETERS, "qAttributeExpressions", "qExpression is empty")
        out.append(expression)
    return tuple(out)


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
