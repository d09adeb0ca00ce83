"""Pivot hypercubes (qMode P): the cube's rows grouped into a left and a top tree of dimension
values, with the measures' values where a left row meets a top column.

Each side's tree comes from a hypercube of that side's dimensions (sorted as they ask), so a
node exists when its values are associated. A cell's value is the measure over the cube of
the dimensions its row and column name: a collapsed node's or a total's value is the
expression over all of its records (an Avg stays an average), never a sum of its children.
Those cubes are computed once per depth pair a view needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

import assoc
from assoc.field_order import value_text
from assoc.server.qix.facts import AppFacts
from assoc.server.qix.pages import Page, page_area
from assoc.server.qix.rpc import INVALID_PARAMETERS, RpcError, json_number
from assoc.server.qix.states import InState

if TYPE_CHECKING:
    from assoc.server.qix.hypercube import HyperCubeDef

PSEUDO = -1
TOTAL_TEXT = "Totals"


@dataclass
class SideState:
    """Which nodes of one side are expanded: single paths (dimension values from the root),
    and whole levels (qAll) with the paths collapsed since."""

    expanded: set[tuple[int, ...]] = field(default_factory=set)
    collapsed: set[tuple[int, ...]] = field(default_factory=set)
    levels: set[int] = field(default_factory=set)

    def is_expanded(self, path: tuple[int, ...]) -> bool:
        if path in self.expanded:
            return True
        return len(path) - 1 in self.levels and path not in self.collapsed

    def expand(self, path: tuple[int, ...], every: bool) -> None:
        if every:
            self.levels.add(len(path) - 1)
            self.collapsed = {p for p in self.collapsed if len(p) != len(path)}
        else:
            self.expanded.add(path)
            self.collapsed.discard(path)

    def collapse(self, path: tuple[int, ...], every: bool) -> None:
        if every:
            self.levels.discard(len(path) - 1)
            self.expanded = {p for p in self.expanded if len(p) != len(path)}
        else:
            self.expanded.discard(path)
            self.collapsed.add(path)


@dataclass
class PivotState:
    """A pivot cube's expansion, per object and definition path."""

    left: SideState = field(default_factory=SideState)
    top: SideState = field(default_factory=SideState)


class _Tree:
    """A node of dimension values: its code and the cube's rows [start, end) below it (the
    cube sorts by its dimensions in order, so rows sharing a prefix are adjacent), `row` the
    first of them in the cube's own rows (`positions` maps them when NULLs were left out).
    Its children, the next dimension's values, are found when first asked for: a side shows
    the nodes of its expanded paths only."""

    __slots__ = ("_children", "_codes", "_positions", "code", "end", "level", "row", "start")

    def __init__(
        self,
        codes: list[np.ndarray],
        positions: np.ndarray | None,
        level: int,
        span: tuple[int, int, int, int],
    ) -> None:
        self._codes = codes
        self._positions = positions
        self.level = level
        self.start, self.end, self.code, self.row = span
        self._children: list[_Tree] | None = None

    @property
    def children(self) -> list[_Tree]:
        if self._children is None:
            below = self.level + 1
            self._children = _runs(self._codes, self._positions, below, self.start, self.end)
        return self._children


@dataclass(slots=True)
class Node:
    """A shown node: kind N (a value), P (a measure), T (a total); its path of dimension
    codes, its measure (P), its children and the leaves it spans [start, end)."""

    kind: str
    level: int
    path: tuple[int, ...]
    code: int
    measure: int | None
    can_expand: bool = False
    can_collapse: bool = False
    children: list[Node] = field(default_factory=list)
    start: int = 0
    end: int = 0
    row: int = -1  # a value node of the side's every dimension: its row in the side's cube


def _runs(
    codes: list[np.ndarray], positions: np.ndarray | None, level: int, start: int, end: int
) -> list[_Tree]:
    """The nodes of dimension `level` among rows [start, end): one per run of equal codes."""
    if level >= len(codes) or start >= end:
        return []
    part = codes[level][start:end]
    firsts = np.flatnonzero(part[1:] != part[:-1]) + 1
    firsts = np.concatenate(([0], firsts))
    starts = (firsts + start).tolist()
    ends = [*starts[1:], end]
    values = part[firsts].tolist()
    rows = starts if positions is None else positions[firsts + start].tolist()
    return [
        _Tree(codes, positions, level, span)
        for span in zip(starts, ends, values, rows, strict=True)
    ]


def _tree(codes: list[np.ndarray], positions: np.ndarray | None = None) -> list[_Tree]:
    """Sorted rows of codes (one array per dimension) as a tree: its roots."""
    return _runs(codes, positions, 0, 0, len(codes[0])) if codes else []


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
        self._cubes: dict[tuple[int, int], tuple[dict[tuple[int, ...], int], list[Any]]] = {}
        # The left side's cube: a cell of its deepest nodes without a top dimension is a row
        # of it (no index of the cube's rows is made for such cells); its measures read once
        # a page shows such a cell.
        self.left, self._left_cube = self._side(d.left, self.left_dims, self.state.left)
        self._left_values: dict[int, np.ndarray] = {}
        self.top, _ = self._side(d.top, self.top_dims, self.state.top)
        self.rows = self._leaves(self.left, d.left)
        self.columns = self._leaves(self.top, d.top)

    # ---- trees -------------------------------------------------------------------------

    def _cube(self, dims: list[int], top: int = 0) -> assoc.Hypercube:
        """A cube over these dimensions, the last `top` of them on top (HRank's columns)."""
        return pivot_cube(self.session, self.definition, dims, top)

    def _side(
        self, levels: tuple[int, ...], dims: list[int], state: SideState
    ) -> tuple[list[Node], assoc.Hypercube | None]:
        """A side's shown nodes, and the cube of its dimensions (None without any)."""
        cube = None
        if not dims:
            roots: list[_Tree] = []
        else:
            cube = self._cube(dims)
            codes = [cube.codes(i) for i in range(len(dims))]
            keep = np.ones(len(cube), dtype=bool)
            for c, column in zip(dims, codes, strict=True):
                if self.definition.dimensions[c].null_suppression:
                    keep &= column >= 0
            if keep.all():
                roots = _tree(codes)
            else:
                roots = _tree([column[keep] for column in codes], np.flatnonzero(keep))
        nodes = self._show(levels, 0, roots, (), None, state)
        self._span(nodes, 0)
        return nodes, cube

    def _pseudo(self, levels: tuple[int, ...], at: int, path: tuple[int, ...]) -> list[Node]:
        """The measures as nodes at level `at` (leaves)."""
        return [Node("P", at, path, m, m) for m in range(len(self.definition.measures))]

    def _show(
        self,
        levels: tuple[int, ...],
        at: int,
        trees: list[_Tree],
        path: tuple[int, ...],
        measure: int | None,
        state: SideState,
    ) -> list[Node]:
        """The nodes shown at level `at` below `path`."""
        if at >= len(levels):
            return []
        d = self.definition
        if levels[at] == PSEUDO:
            out = []
            for node in self._pseudo(levels, at, path):
                node.children = self._show(levels, at + 1, trees, path, node.measure, state)
                out.append(node)
            return out
        deeper = any(c != PSEUDO for c in levels[at + 1 :])
        pseudo_below = PSEUDO in levels[at + 1 :]
        pseudo_at = levels.index(PSEUDO) if pseudo_below else -1
        out = []
        for tree in trees:
            here = (*path, tree.code)
            node = Node("N", at, here, tree.code, measure)
            if not deeper:
                node.row = tree.row
            open_ = deeper and (d.fully_expanded or state.is_expanded(here))
            if open_:
                node.children = self._show(levels, at + 1, tree.children, here, measure, state)
            elif pseudo_below and measure is None:
                node.children = self._pseudo(levels, pseudo_at, here)
            node.can_expand = deeper and not open_ and not d.fully_expanded
            node.can_collapse = open_ and not d.fully_expanded
            out.append(node)
        if d.dimensions[levels[at]].total and trees:
            total = Node("T", at, path, -1, measure)
            if pseudo_below and measure is None:
                total.children = self._pseudo(levels, pseudo_at, path)
            out.insert(0 if d.totals_above else len(out), total)
        return out

    def _span(self, nodes: list[Node], start: int) -> int:
        for node in nodes:
            node.start = start
            start = self._span(node.children, start) if node.children else start + 1
            node.end = start
        return start

    def _leaves(self, nodes: list[Node], levels: tuple[int, ...]) -> list[Node | None]:
        """The leaves in order; one empty leaf for a side without levels (the whole cube)."""
        out: list[Node | None] = []
        stack = list(reversed(nodes))
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(reversed(node.children))
            else:
                out.append(node)
        return out if levels else [None]

    def find(self, side: str, leaf: int, level: int) -> Node:
        """The node of `side` (left: at row `leaf`, top: at column) on display `level`."""
        nodes, count = (self.left, len(self.rows)) if side == "L" else (self.top, len(self.columns))
        if not 0 <= leaf < count:
            raise RpcError(INVALID_PARAMETERS, "qRow" if side == "L" else "qCol", "no such cell")
        while nodes:
            node = next(n for n in nodes if n.start <= leaf < n.end)
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

    def _values(self, a: int, b: int) -> tuple[dict[tuple[int, ...], int], list[Any]]:
        """The cube of the first `a` left and `b` top dimensions: row by codes, measures."""
        found = self._cubes.get((a, b))
        if found is None:
            cube = self._cube(self.left_dims[:a] + self.top_dims[:b], top=b)
            width = a + b
            codes = [cube.codes(i) for i in range(width)]
            keys = zip(*(c.tolist() for c in codes), strict=True) if width else iter([()])
            index = {key: row for row, key in enumerate(keys)}
            arrays = [cube.array(width + m) for m in range(len(self.definition.measures))]
            found = (index, arrays)
            self._cubes[(a, b)] = found
        return found

    def value(self, row: Node | None, column: Node | None) -> float:
        left = row.path if row is not None else ()
        top = column.path if column is not None else ()
        measure = next(
            (n.measure for n in (row, column) if n is not None and n.measure is not None), 0
        )
        if not self.definition.measures:
            return float("nan")
        if row is not None and row.row >= 0 and not top and self._left_cube is not None:
            values = self._left_values.get(measure)
            if values is None:
                values = self._left_values[measure] = self._left_cube.array(len(left) + measure)
            return float(values[row.row])
        index, arrays = self._values(len(left), len(top))
        found = index.get((*left, *top))
        return float("nan") if found is None else float(arrays[measure][found])

    # ---- answers -------------------------------------------------------------------------

    def _cell(self, side: str, node: Node, first: int, last: int) -> dict[str, Any]:
        d = self.definition
        if node.kind == "P":
            text, number, elem = d.measures[node.code].label, float("nan"), node.code
        elif node.kind == "T":
            text, number, elem = TOTAL_TEXT, float("nan"), -1
        else:
            values = self.facts.values(self.field_of(side, node))
            elem = node.code
            text = values.texts[elem] if elem >= 0 else "-"
            number = float(values.numbers[elem]) if elem >= 0 else float("nan")
        shown = [c for c in node.children if c.end > first and c.start < last]
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

    def _cells(self, side: str, nodes: list[Node], span: range) -> list[dict[str, Any]]:
        if not span:
            return []
        cells = [
            self._cell(side, n, span.start, span.stop)
            for n in nodes
            if n.end > span.start and n.start < span.stop
        ]
        _pad_to_depth(cells)
        return cells

    def page(self, page: Page) -> dict[str, Any]:
        """NxPivotPage: the left and top nodes over the page's rows and columns, its cells."""
        rows, cols = page_area(page, len(self.rows), len(self.columns))
        if not rows or not cols:
            rows, cols = range(rows.start, rows.start), range(cols.start, cols.start)
        data = []
        for r in rows:
            line: list[dict[str, Any]] = []
            row = self.rows[r]
            for c in cols:
                column = self.columns[c]
                value = self.value(row, column)
                total = any(n is not None and n.kind == "T" for n in (row, column))
                line.append(
                    {
                        "qNum": json_number(value),
                        "qText": "-" if np.isnan(value) else value_text(value),
                        "qType": "T" if total else "V",
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
