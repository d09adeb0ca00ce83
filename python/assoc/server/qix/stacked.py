"""Stacked hypercubes (qMode K): the straight cube's rows as a tree, a root, one level per
dimension and one leaf per measure, paged over the first dimension's nodes."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from assoc.field_order import value_text
from assoc.server.qix.pages import Page
from assoc.server.qix.rpc import json_number

if TYPE_CHECKING:
    from assoc.server.qix.hypercube import HyperCubeView

_EMPTY_AREA = {"qLeft": 0, "qTop": 0, "qWidth": 0, "qHeight": 0}
_Tree = dict[int, tuple["_Tree", list[int]]]  # code -> (children, the rows under it)


def _node(view: HyperCubeView, level: int, code: int, row: int) -> dict[str, Any]:
    values = view.values[level]
    if code >= 0:
        number = float(values.numbers[code])
        text, value = values.texts[code], json_number(number) if not math.isnan(number) else "NaN"
    else:
        text, value = "-", "NaN"
    return {
        "qText": text,
        "qElemNo": code if code >= 0 else -2,
        "qValue": value,
        "qType": "N" if code >= 0 else "U",
        "qRow": row,
        "qUp": 0,
        "qDown": 0,
        "qCanExpand": False,
        "qCanCollapse": False,
    }


def _leaves(view: HyperCubeView, rows: list[int], row: int) -> list[dict[str, Any]]:
    """One leaf per measure: the measure of the row (a leaf dimension node has one row)."""
    out = []
    for m, array in enumerate(view.arrays):
        value = float(array[rows[0]]) if len(rows) == 1 else math.nan
        out.append(
            {
                "qText": "-" if math.isnan(value) else value_text(value),
                "qElemNo": m,
                "qValue": "NaN" if math.isnan(value) else json_number(value),
                "qType": "V",
                "qRow": row,
                "qSubNodes": [],
            }
        )
    return out


def _stack(node: dict[str, Any]) -> tuple[float, float]:
    """Sets qMaxPos / qMinNeg of a node: the sums of its positive and negative leaf values
    (a measure node's own value); answers them."""
    if node["qType"] == "V":
        value = node["qValue"]
        number = float(value) if not isinstance(value, str) else math.nan
        if math.isnan(number):
            return 0.0, 0.0
        return (number, 0.0) if number >= 0 else (0.0, number)
    positive = negative = 0.0
    for child in node["qSubNodes"]:
        p, n = _stack(child)
        positive, negative = positive + p, negative + n
    node["qMaxPos"], node["qMinNeg"] = positive, negative
    return positive, negative


def _tree(view: HyperCubeView, rows: np.ndarray) -> _Tree:
    """The cube's `rows` grouped by each dimension in turn, groups in the order the cube
    sorts."""
    root: _Tree = {}
    columns = [c[rows].tolist() for c in view.codes]
    for i, row in enumerate(rows.tolist()):
        level = root
        for column in columns:
            children, under = level.setdefault(column[i], ({}, []))
            under.append(row)
            level = children
    return root


def _shown_rows(view: HyperCubeView) -> np.ndarray:
    return view.rows if view.rows is not None else np.arange(len(view))


def outer_size(view: HyperCubeView) -> int:
    """How many nodes the first dimension has (what stack pages page over)."""
    if view.error is not None or not view.codes:
        return 0
    return len(np.unique(view.codes[0][_shown_rows(view)]))


def stack_page(view: HyperCubeView, page: Page, max_cells: int) -> dict[str, Any]:
    """NxStackPage: the root node with the first dimension's nodes `page.top` … (qHeight of
    them) and everything under them, as many of those nodes as hold at most `max_cells`
    measure cells (at least the first, cut at that many cells)."""
    if view.error is not None or not view.codes:
        return {"qData": [], "qArea": _EMPTY_AREA}
    shown = _shown_rows(view)
    # Each row's first-dimension node, numbered in the order the cube first shows them.
    codes, first_at, node_of = np.unique(
        view.codes[0][shown], return_index=True, return_inverse=True
    )
    number = np.empty(len(codes), dtype=np.int64)
    number[np.argsort(first_at, kind="stable")] = np.arange(len(codes))
    node_of = number[node_of.reshape(-1)]
    top = min(page.top, len(codes))
    end = min(top + page.height, len(codes))
    in_page = (node_of >= top) & (node_of < end)
    per_cell = max(1, len(view.arrays))
    cells = np.cumsum(np.bincount(node_of[in_page] - top, minlength=end - top) * per_cell)
    taken = max(1, int(np.searchsorted(cells, max_cells, side="right"))) if end > top else 0
    rows = np.flatnonzero(in_page & (node_of < top + taken))[: max(1, max_cells // per_cell)]
    tree = _tree(view, shown[rows])
    chosen = list(tree.items())
    counter = [0]

    def build(level: int, code: int, children: _Tree, rows: list[int]) -> dict[str, Any]:
        node = _node(view, level, code, counter[0])
        if level + 1 < len(view.codes):
            node["qSubNodes"] = [
                build(level + 1, c, grand, under) for c, (grand, under) in children.items()
            ]
        else:
            node["qSubNodes"] = _leaves(view, rows, counter[0])
            counter[0] += 1
        return node

    root: dict[str, Any] = {
        "qText": "",
        "qElemNo": -1,
        "qValue": "NaN",
        "qType": "R",
        "qRow": 0,
        "qUp": top,
        "qDown": len(codes) - top - len(chosen),
        "qSubNodes": [build(0, c, children, rows) for c, (children, rows) in chosen],
    }
    _stack(root)
    return {
        "qData": [root],
        "qArea": {"qLeft": 0, "qTop": top, "qWidth": view.width, "qHeight": len(chosen)},
    }
