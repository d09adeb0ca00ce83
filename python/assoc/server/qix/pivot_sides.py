"""The left and top sides of a pivot cube as shown: the nodes of each side's dimension values
(and of its measures' pseudo-dimension, its totals), which are expanded, and the leaves a page
shows. A side is made from the sorted cube of its dimensions; the nodes of its deepest level
stay arrays until a page or a selection reads them."""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, overload

import numpy as np

if TYPE_CHECKING:
    from assoc.server.qix.cubedef import HyperCubeDef

PSEUDO = -1


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


class Node:
    """A shown node: kind N (a value), P (a measure), T (a total); its path of dimension
    codes, its measure (P), its children and the leaves it spans [start, end); `row` is a
    value node's row in the side's cube when it is of the side's deepest dimension."""

    __slots__ = (
        "can_collapse", "can_expand", "children", "code", "end", "kind", "level", "measure",
        "path", "row", "start",
    )  # fmt: skip

    def __init__(
        self,
        kind: str,
        level: int,
        path: tuple[int, ...],
        code: int,
        measure: int | None,
        row: int = -1,
    ) -> None:
        self.kind = kind
        self.level = level
        self.path = path
        self.code = code
        self.measure = measure
        self.row = row
        self.can_expand = False
        self.can_collapse = False
        self.children: Sequence[Node] = ()
        self.start = 0
        self.end = 0


class Runs:
    """The values of one dimension among the side cube's rows [lo, hi): a run of equal codes
    each (the cube sorts by its dimensions in order, so rows sharing a prefix are adjacent):
    their codes, the rows each spans, and `rows`, the first of them in the cube's own rows
    (`positions` maps them when NULLs were left out). Arrays: a run of leaves reads those it
    shows."""

    __slots__ = ("codes", "hi", "rows", "starts")

    def __init__(
        self, codes: list[np.ndarray], positions: np.ndarray | None, level: int, lo: int, hi: int
    ) -> None:
        self.hi = hi
        if level >= len(codes) or lo >= hi:
            self.codes = self.starts = self.rows = np.zeros(0, dtype=np.int64)
            return
        part = codes[level][lo:hi]
        firsts = np.flatnonzero(part[1:] != part[:-1]) + 1
        firsts = np.concatenate(([0], firsts))
        self.codes = part[firsts]
        self.starts = firsts + lo
        self.rows = self.starts if positions is None else positions[self.starts]

    def __len__(self) -> int:
        return len(self.codes)

    def each(self) -> Iterator[tuple[int, int, int, int]]:
        """Each run's code, first and last row + 1 among the side's rows, and cube row."""
        starts = self.starts.tolist()
        ends = [*starts[1:], self.hi]
        return zip(self.codes.tolist(), starts, ends, self.rows.tolist(), strict=True)


class Nodes(Sequence[Node]):
    """Nodes by position, each made when asked for (`_node`)."""

    def _node(self, i: int) -> Node:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> Node: ...
    @overload
    def __getitem__(self, i: slice) -> list[Node]: ...
    def __getitem__(self, i: int | slice) -> Node | list[Node]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._node(i)


class LeafRun(Nodes):
    """The value nodes of a side's deepest dimension below one parent, with the parent's
    totals node when its dimension has one: all of them leaves, so each is made only when a
    page or a selection reads it (a side of 100,000 values shows a page of them)."""

    __slots__ = ("_made", "at", "codes", "first", "measure", "path", "rows", "start", "total")

    def __init__(
        self,
        at: int,
        path: tuple[int, ...],
        measure: int | None,
        runs: Runs,
        total: Node | None,
        total_first: bool,
    ) -> None:
        self.at = at
        self.path = path
        self.measure = measure
        self.codes = runs.codes
        self.rows = runs.rows
        self.total = total
        self.first = 1 if total is not None and total_first else 0  # the first value's index
        self.start = 0  # the leaf of the first node, once placed
        self._made: dict[int, Node] = {}

    def __len__(self) -> int:
        return len(self.codes) + (self.total is not None)

    def _node(self, i: int) -> Node:
        node = self._made.get(i)
        if node is None:
            k = i - self.first
            if self.total is not None and not 0 <= k < len(self.codes):
                node = self.total
            else:
                code = int(self.codes[k])
                row = int(self.rows[k])
                node = Node("N", self.at, (*self.path, code), code, self.measure, row)
            node.start = self.start + i
            node.end = node.start + 1
            self._made[i] = node
        return node

    def place(self, start: int) -> int:
        """Places the run's nodes from leaf `start`; returns the leaf after its last."""
        self.start = start
        self._made.clear()
        return start + len(self)

    def meeting(self, first: int, last: int) -> list[Node]:
        """The nodes on leaves [first, last)."""
        return [
            self[i] for i in range(max(0, first - self.start), min(len(self), last - self.start))
        ]


def meeting(nodes: Sequence[Node], first: int, last: int) -> Sequence[Node]:
    """Of sibling nodes, those whose leaves meet [first, last)."""
    if isinstance(nodes, LeafRun):
        return nodes.meeting(first, last)
    return [n for n in nodes if n.end > first and n.start < last]


class Leaves(Nodes):
    """A side's leaves in order: single nodes and leaf runs, each from its first leaf."""

    def __init__(self) -> None:
        self._parts: list[Node | LeafRun] = []
        self._starts: list[int] = []
        self._count = 0

    def add(self, part: Node | LeafRun) -> None:
        if isinstance(part, LeafRun) and not part:
            return
        self._parts.append(part)
        self._starts.append(self._count)
        self._count += len(part) if isinstance(part, LeafRun) else 1

    def __len__(self) -> int:
        return self._count

    def _node(self, i: int) -> Node:
        j = bisect.bisect_right(self._starts, i) - 1
        part = self._parts[j]
        return part[i - self._starts[j]] if isinstance(part, LeafRun) else part


class SideBuilder:
    """Makes the shown nodes of one side of a pivot from its cube's sorted codes."""

    def __init__(
        self,
        definition: HyperCubeDef,
        levels: tuple[int, ...],
        codes: list[np.ndarray],
        positions: np.ndarray | None,
        state: SideState,
    ) -> None:
        self.definition = definition
        self.levels = levels
        self.codes = codes
        self.positions = positions
        self.state = state
        self.n_measures = len(definition.measures)

    def pseudo(self, at: int, path: tuple[int, ...]) -> list[Node]:
        """The measures as nodes at level `at` (leaves)."""
        return [Node("P", at, path, m, m) for m in range(self.n_measures)]

    def show(
        self,
        at: int,
        depth: int,
        lo: int,
        hi: int,
        path: tuple[int, ...] = (),
        measure: int | None = None,
    ) -> Sequence[Node]:
        """The nodes shown at display level `at` below `path`: the values of the side's
        dimension `depth` among its cube's rows [lo, hi)."""
        levels = self.levels
        if at >= len(levels):
            return []
        d = self.definition
        if levels[at] == PSEUDO:
            out = self.pseudo(at, path)
            for node in out:
                node.children = self.show(at + 1, depth, lo, hi, path, node.measure)
            return out
        runs = Runs(self.codes, self.positions, depth, lo, hi)
        below = levels[at + 1 :]
        deeper = any(c != PSEUDO for c in below)
        has_total = d.dimensions[levels[at]].total and len(runs) > 0
        if not deeper and PSEUDO not in below:  # leaves, made when read
            total = Node("T", at, path, -1, measure) if has_total else None
            return LeafRun(at, path, measure, runs, total, d.totals_above)
        pseudo_at = levels.index(PSEUDO, at + 1) if PSEUDO in below else -1
        every = d.fully_expanded
        out = []
        for code, start, end, row in runs.each():
            here = (*path, code)
            node = Node("N", at, here, code, measure, -1 if deeper else row)
            open_ = deeper and (every or self.state.is_expanded(here))
            if open_:
                node.children = self.show(at + 1, depth + 1, start, end, here, measure)
            elif pseudo_at >= 0 and measure is None:
                node.children = self.pseudo(pseudo_at, here)
            node.can_expand = deeper and not open_ and not every
            node.can_collapse = open_ and not every
            out.append(node)
        if has_total:
            total = Node("T", at, path, -1, measure)
            if PSEUDO in below and measure is None:
                total.children = self.pseudo(levels.index(PSEUDO, at + 1), path)
            out.insert(0 if d.totals_above else len(out), total)
        return out


def place(nodes: Sequence[Node], start: int, leaves: Leaves) -> int:
    """Sets the leaves each node spans, from leaf `start`; adds the leaves in order."""
    if isinstance(nodes, LeafRun):
        leaves.add(nodes)
        return nodes.place(start)
    for node in nodes:
        node.start = start
        if node.children:
            start = place(node.children, start, leaves)
        else:
            leaves.add(node)
            start += 1
        node.end = start
    return start
