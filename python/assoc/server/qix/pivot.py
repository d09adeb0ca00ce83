"""Pivot hypercubes (qMode P): the cube's rows grouped into a left and a top tree of dimension
values, with the measures' values where a left row meets a top column.

Each side's tree comes from a hypercube of that side's dimensions (sorted as they ask), so a
node exists when its values are associated. A cell's value is the measure over the cube of
the dimensions its row and column name: a collapsed node's or a total's value is the
expression over all of its records (an Avg stays an average), never a sum of its children.
Those cubes are computed once per depth pair a view needs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

import assoc
from assoc.field_order import value_text
from assoc.server.qix.facts import AppFacts, FieldValues
from assoc.server.qix.pages import Page, page_area, rows_keyed
from assoc.server.qix.pivot_sides import (
    PSEUDO,
    Leaves,
    Node,
    SideBuilder,
    SideState,
    meeting,
    place,
)
from assoc.server.qix.rpc import INVALID_PARAMETERS, RpcError, json_number
from assoc.server.qix.states import InState

if TYPE_CHECKING:
    from assoc.server.qix.cubedef import HyperCubeDef

TOTAL_TEXT = "Totals"


@dataclass
class PivotState:
    """A pivot cube's expansion, per object and definition path."""

    left: SideState = field(default_factory=SideState)
    top: SideState = field(default_factory=SideState)


def pivot_cube(session: InState, d: HyperCubeDef, dims: list[int], top: int = 0) -> assoc.Hypercube:
    """A pivot cube's cube over these dimensions (positions), the last `top` of them on top
    (HRank's columns), sorted by the dimensions' own sorts."""
    fields = [d.dimensions[c].field for c in dims]
    sort = [s for s in (d.dimensions[c].sort() for c in dims) if s is not None]
    return session.hypercube(
        fields,
        [m.expression for m in d.measures],
        sort=sort or None,
        suppress_zero=d.suppress_zero,
        suppress_missing=d.suppress_missing,
        pivot_top=list(range(len(dims) - top, len(dims))),
    )


def leaf_dims(d: HyperCubeDef) -> tuple[list[int], int] | None:
    """The dimensions of a pivot cube's cells (left then top) and how many are on top, when
    its whole cube is that one (dimensions in order, no hidden measure); else None."""
    left = [c for c in d.left if c != PSEUDO]
    top = [c for c in d.top if c != PSEUDO]
    dims = left + top
    if dims != list(range(len(d.dimensions))) or d.engine_measures != [
        m.expression for m in d.measures
    ]:
        return None
    return dims, len(top)


class PivotView:
    """The left and top trees of a pivot cube as shown, and its cells."""

    def __init__(
        self,
        definition: HyperCubeDef,
        facts: AppFacts,
        session: InState,
        state: PivotState | None,
    ) -> None:
        self.definition = definition
        self.facts = facts
        self.session = session
        self.state = state or PivotState()
        d = definition
        self.left_dims = [c for c in d.left if c != PSEUDO]
        self.top_dims = [c for c in d.top if c != PSEUDO]
        # The cubes cells read, by how many left and top dimensions: codes and measures; the
        # index of the rows the page being made reads.
        self._cubes: dict[tuple[int, int], tuple[list[np.ndarray], list[np.ndarray]]] = {}
        self._indexes: dict[tuple[int, int], dict[tuple[int, ...], int]] = {}
        # The left side's cube: a cell of its deepest nodes without a top dimension is a row
        # of it (no index of the cube's rows is made for such cells); its measures read once
        # a page shows such a cell.
        self.left, self.rows, self._left_cube = self._side(d.left, self.left_dims, self.state.left)
        self._left_values: dict[int, np.ndarray] = {}
        self._shown_values: dict[tuple[str, int], FieldValues] = {}  # by side and level
        self.top, self.columns, _ = self._side(d.top, self.top_dims, self.state.top)

    # ---- trees -------------------------------------------------------------------------

    def _cube(self, dims: list[int], top: int = 0) -> assoc.Hypercube:
        """A cube over these dimensions, the last `top` of them on top (HRank's columns)."""
        return pivot_cube(self.session, self.definition, dims, top)

    def _side(
        self, levels: tuple[int, ...], dims: list[int], state: SideState
    ) -> tuple[Sequence[Node], Sequence[Node | None], assoc.Hypercube | None]:
        """A side's shown nodes, its leaves in order (one empty leaf for a side without
        levels: the whole cube), and the cube of its dimensions (None without any)."""
        cube = None
        codes: list[np.ndarray] = []
        positions = None
        if dims:
            cube = self._cube(dims)
            codes = [cube.codes(i) for i in range(len(dims))]
            keep = np.ones(len(cube), dtype=bool)
            for c, column in zip(dims, codes, strict=True):
                if self.definition.dimensions[c].null_suppression:
                    keep &= column >= 0
            if not keep.all():
                codes = [column[keep] for column in codes]
                positions = np.flatnonzero(keep)
        rows = len(codes[0]) if codes else 0
        nodes = SideBuilder(self.definition, levels, codes, positions, state).show(0, 0, 0, rows)
        leaves = Leaves()
        place(nodes, 0, leaves)
        return nodes, leaves if levels else [None], cube

    def find(self, side: str, leaf: int, level: int) -> Node:
        """The node of `side` (left: at row `leaf`, top: at column) on display `level`."""
        nodes: Sequence[Node]
        nodes, count = (self.left, len(self.rows)) if side == "L" else (self.top, len(self.columns))
        if not 0 <= leaf < count:
            raise RpcError(INVALID_PARAMETERS, "qRow" if side == "L" else "qCol", "no such cell")
        while nodes:
            node = meeting(nodes, leaf, leaf + 1)[0]
            if node.level == level:
                return node
            nodes = node.children
        raise RpcError(
            INVALID_PARAMETERS, "qCol" if side == "L" else "qRow", "no node on this level"
        )

    def field_of(self, side: str, node: Node) -> str:
        """The field of a node's dimension."""
        levels = self.definition.left if side == "L" else self.definition.top
        return self.definition.dimensions[levels[node.level]].field

    # ---- cells ---------------------------------------------------------------------------

    def _columns(self, a: int, b: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The cube of the first `a` left and `b` top dimensions: its codes, its measures."""
        found = self._cubes.get((a, b))
        if found is None:
            cube = self._cube(self.left_dims[:a] + self.top_dims[:b], top=b)
            width = a + b
            codes = [cube.codes(i) for i in range(width)]
            arrays = [cube.array(width + m) for m in range(len(self.definition.measures))]
            found = self._cubes[(a, b)] = (codes, arrays)
        return found

    def _index(self, a: int, b: int, keys: set[tuple[int, ...]]) -> dict[tuple[int, ...], int]:
        """The rows of the (a, b) cube by their codes, for the rows whose codes `keys` could
        name (a page's cells: the cube may hold millions of rows, a page a few thousand)."""
        codes, _ = self._columns(a, b)
        if not codes:
            return {(): 0}
        rows = rows_keyed(codes, keys)
        if rows is None:  # a small cube: every row
            found = zip(*(column.tolist() for column in codes), strict=True)
            return {key: row for row, key in enumerate(found)}
        found = zip(*(column[rows].tolist() for column in codes), strict=True)
        return {key: row for row, key in zip(rows.tolist(), found, strict=True)}

    def _from_left_cube(self, row: Node | None, top: tuple[int, ...]) -> bool:
        """Whether a cell is a row of the left side's cube (no index of the cubes needed)."""
        return row is not None and row.row >= 0 and not top and self._left_cube is not None

    def _prepare(self, rows: list[Node | None], columns: list[Node | None]) -> None:
        """The indexes of the cubes the cells of these rows and columns read."""
        wanted: dict[tuple[int, int], set[tuple[int, ...]]] = {}
        for row in rows:
            left = row.path if row is not None else ()
            for column in columns:
                top = column.path if column is not None else ()
                if not self._from_left_cube(row, top):
                    wanted.setdefault((len(left), len(top)), set()).add((*left, *top))
        self._indexes = {ab: self._index(*ab, keys) for ab, keys in wanted.items()}

    def value(self, row: Node | None, column: Node | None) -> float:
        """A cell's value (its cube's index made by `_prepare`)."""
        left = row.path if row is not None else ()
        top = column.path if column is not None else ()
        if row is not None and row.measure is not None:
            measure = row.measure
        elif column is not None and column.measure is not None:
            measure = column.measure
        else:
            measure = 0
        if not self.definition.measures:
            return float("nan")
        if self._from_left_cube(row, top):
            assert row is not None
            assert self._left_cube is not None
            values = self._left_values.get(measure)
            if values is None:
                values = self._left_values[measure] = self._left_cube.array(len(left) + measure)
            return float(values[row.row])
        _, arrays = self._columns(len(left), len(top))
        found = self._indexes[(len(left), len(top))].get((*left, *top))
        return float("nan") if found is None else float(arrays[measure][found])

    # ---- answers -------------------------------------------------------------------------

    def _cell(self, side: str, node: Node, first: int, last: int) -> dict[str, Any]:
        d = self.definition
        if node.kind == "P":
            text, number, elem = d.measures[node.code].label, float("nan"), node.code
        elif node.kind == "T":
            text, number, elem = TOTAL_TEXT, float("nan"), -1
        else:
            values = self._shown_values.get((side, node.level))
            if values is None:
                values = self.facts.values(self.field_of(side, node))
                self._shown_values[side, node.level] = values
            elem = node.code
            text = values.texts[elem] if elem >= 0 else "-"
            number = float(values.numbers[elem]) if elem >= 0 else float("nan")
        shown = meeting(node.children, first, last)
        return {
            "qText": text,
            "qElemNo": elem,
            "qValue": json_number(number),
            "qCanExpand": node.can_expand,
            "qCanCollapse": node.can_collapse,
            "qType": "U" if node.kind == "N" and elem < 0 else node.kind,
            "qUp": max(0, first - node.start),
            "qDown": max(0, node.end - last),
            "qSubNodes": [self._cell(side, c, first, last) for c in shown],
            "qAttrExps": {"qValues": []},
            "qAttrDims": {"qValues": []},
        }

    def _cells(self, side: str, nodes: Sequence[Node], span: range) -> list[dict[str, Any]]:
        if not span:
            return []
        cells = [
            self._cell(side, n, span.start, span.stop)
            for n in meeting(nodes, span.start, span.stop)
        ]
        _pad_to_depth(cells)
        return cells

    def page(self, page: Page) -> dict[str, Any]:
        """NxPivotPage: the left and top nodes over the page's rows and columns, its cells."""
        rows, cols = page_area(page, len(self.rows), len(self.columns))
        if not rows or not cols:
            rows, cols = range(rows.start, rows.start), range(cols.start, cols.start)
        columns = [self.columns[c] for c in cols]
        column_totals = [n is not None and n.kind == "T" for n in columns]
        shown = [self.rows[r] for r in rows]
        if self.definition.measures:
            self._prepare(shown, columns)
        data = []
        for row in shown:
            line: list[dict[str, Any]] = []
            row_total = row is not None and row.kind == "T"
            for column, column_total in zip(columns, column_totals, strict=True):
                value = self.value(row, column)
                line.append(
                    {
                        "qNum": json_number(value),
                        "qText": "-" if math.isnan(value) else value_text(value),
                        "qType": "T" if row_total or column_total else "V",
                        "qAttrExps": {"qValues": []},
                    }
                )
            data.append(line)
        return {
            "qLeft": self._cells("L", self.left, rows),
            "qTop": self._cells("T", self.top, cols),
            "qData": data,
            "qArea": {
                "qLeft": cols.start,
                "qTop": rows.start,
                "qWidth": len(cols),
                "qHeight": len(rows),
            },
        }

    @property
    def size(self) -> dict[str, int]:
        """qSize of the grid: data columns, left rows."""
        return {"qcx": len(self.columns), "qcy": len(self.rows)}


def _empty_cell() -> dict[str, Any]:
    """An empty node (qType "E"): what stands below a collapsed node where others go deeper."""
    return {
        "qText": "",
        "qElemNo": -1,
        "qValue": "NaN",
        "qCanExpand": False,
        "qCanCollapse": False,
        "qType": "E",
        "qUp": 0,
        "qDown": 0,
        "qSubNodes": [],
        "qAttrExps": {"qValues": []},
        "qAttrDims": {"qValues": []},
    }


def _pad_to_depth(cells: list[dict[str, Any]]) -> None:
    """Gives every path of the trees the depth of the deepest one, with empty nodes below the
    collapsed ones, as the engine answers: clients read the page's levels down the first path
    (sn-pivot-table does), so a collapsed first node must still reach every shown level."""
    level = cells
    levels: list[list[dict[str, Any]]] = []
    while level:
        levels.append(level)
        level = [child for cell in level for child in cell["qSubNodes"]]
    depth = len(levels)
    for d, cells_at in enumerate(levels[:-1]):
        for cell in cells_at:
            if not cell["qSubNodes"] and cell["qType"] != "E":
                node = cell
                for _ in range(depth - d - 1):
                    node["qSubNodes"] = [_empty_cell()]
                    node = node["qSubNodes"][0]
