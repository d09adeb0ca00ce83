"""An independent model of hypercubes (DESIGN.md §2b) by explicit joins of rows, for the tests."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import assoc

Tables = Mapping[str, Mapping[str, Sequence[Any]]]
Node = tuple[str, str]
Row = dict[str, Any]


def number_of(v: Any) -> float | None:
    """The numeric part of a value as the engine reads it back, or None."""
    if isinstance(v, assoc.Dual):
        return v.number
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v)
    return None


def aggregate(func: str, values: list[Any]) -> Any:
    """One aggregation over the values of the records that reach a row (None for NULL)."""
    present = [v for v in values if v is not None]
    numbers = [n for n in map(number_of, present) if n is not None]
    if func == "sum":
        return float(sum(numbers))
    if func == "count":
        return float(len(present))
    if func == "countdistinct":
        return float(len(set(present)))
    if func == "avg":
        return sum(numbers) / len(numbers) if numbers else None
    if func == "min":
        return min(numbers) if numbers else None
    if func == "max":
        return max(numbers) if numbers else None
    if func == "only":
        distinct = set(present)
        return next(iter(distinct)) if len(distinct) == 1 else None
    raise ValueError(func)


class ReferenceCube:
    """Hypercubes over tables as read back from an app, given each table's possible rows."""

    def __init__(self, tables: Tables, loose: set[str], possible: Mapping[str, set[int]]) -> None:
        self.rows: dict[str, list[Row]] = {}
        for t, cols in tables.items():
            n = len(next(iter(cols.values()))) if cols else 0
            self.rows[t] = [{f: cols[f][i] for f in cols} for i in range(n)]
        self.fields = {t: list(cols) for t, cols in tables.items()}
        self.possible = possible
        self.loose = loose
        holders: dict[str, list[str]] = {}
        for t in tables:
            if t not in loose:
                for f in self.fields[t]:
                    holders.setdefault(f, []).append(t)
        self.keys = {f for f, ts in holders.items() if len(ts) >= 2}
        self.adjacent: dict[Node, list[Node]] = {("T", t): [] for t in tables}
        for f in self.keys:
            self.adjacent[("F", f)] = [("T", t) for t in holders[f]]
            for t in holders[f]:
                self.adjacent[("T", t)].append(("F", f))

    def node_of(self, field: str) -> Node:
        if field in self.keys:
            return ("F", field)
        holders = [t for t in self.rows if field in self.fields[t]]
        linked = [t for t in holders if t not in self.loose]
        return ("T", (linked or holders)[0])

    def _tree(self, root: Node, targets: set[Node]) -> dict[Node, Node | None]:
        """The least part of the forest holding root and the targets it reaches (node -> parent)."""
        parent: dict[Node, Node | None] = {root: None}
        order = [root]
        for n in order:
            for m in self.adjacent[n]:
                if m not in parent:
                    parent[m] = n
                    order.append(m)
        keep: dict[Node, Node | None] = {root: None}
        for t in targets:
            n: Node | None = t
            while n is not None and n in parent and n not in keep:
                keep[n] = parent[n]
                n = parent[n]
        return keep

    def _join(self, tree: dict[Node, Node | None], start: list[Row], inner: bool) -> list[Row]:
        """Joins rows of the tree's tables onto `start` table by table outwards from the root."""
        rows = start
        pending = [n for n in tree if n[0] == "T" and tree[n] is not None]
        done = {n for n in tree if tree[n] is None}
        while pending:
            table = next(n for n in pending if tree[tree[n]] in done or tree[n] in done)  # type: ignore[index]
            pending.remove(table)
            done.add(tree[table])  # type: ignore[arg-type]
            done.add(table)
            key = tree[table][1]  # type: ignore[index]
            partners = [self.rows[table[1]][i] for i in sorted(self.possible[table[1]])]
            joined = []
            for r in rows:
                matches = [p for p in partners if r.get(key) is not None and p[key] == r[key]]
                if matches:
                    joined.extend({**r, **p} for p in matches)
                elif not inner:
                    joined.append(r)
            rows = joined
        return rows

    def _possible_values(self, field: str) -> set[Any]:
        out = set()
        for t, rows in self.rows.items():
            if t in self.loose or field not in self.fields[t]:
                continue
            out |= {rows[i][field] for i in self.possible[t]} - {None}
        return out

    def _records(self, node: Node) -> list[Row]:
        if node[0] == "F":
            return [{node[1]: v} for v in self._possible_values(node[1])]
        return [self.rows[node[1]][i] for i in sorted(self.possible[node[1]])]

    def cube(
        self, dims: list[str], aggs: list[tuple[str, str]]
    ) -> tuple[dict[tuple[Any, ...], list[Any]], list[Any]]:
        """Rows (dimension tuple -> each aggregation's value) and each aggregation's total."""
        dim_nodes = [self.node_of(d) for d in dims]
        tuples: set[tuple[Any, ...]] = set()
        # (1) the inner join of the part linking the dimensions (parts apart: every combination)
        parts: list[set[tuple[Any, ...]]] = []
        seen: set[Node] = set()
        for n in dim_nodes:
            if n in seen:
                continue
            tree = self._tree(n, set(dim_nodes))
            seen |= set(tree)
            tables = [m for m in tree if m[0] == "T"]
            if not tables:
                part = self._possible_values(n[1])
                parts.append(
                    {
                        tuple(v if dim_nodes[i] == n else None for i in range(len(dims)))
                        for v in part
                    }
                )
                continue
            tree = self._tree(tables[0], set(dim_nodes))
            joined = self._join(tree, self._records(tables[0]), inner=True)
            parts.append(
                {
                    tuple(r.get(d) if dim_nodes[i] in tree else None for i, d in enumerate(dims))
                    for r in joined
                }
            )
        combos: set[tuple[Any, ...]] = {tuple(None for _ in dims)}
        for part in parts:
            combos = {
                tuple(a if a is not None else b for a, b in zip(c, p, strict=True))
                for c in combos
                for p in part
            }
        tuples |= combos
        # (2) per aggregation: each record of its node, left outer joined to the dimensions
        reached: list[dict[tuple[Any, ...], list[Any]]] = []
        totals = []
        for func, field in aggs:
            node = self.node_of(field)
            tree = self._tree(node, set(dim_nodes))
            per_tuple: dict[tuple[Any, ...], list[Any]] = {}
            records = self._records(node)
            for rec in records:
                out = {
                    tuple(r.get(d) if dim_nodes[i] in tree else None for i, d in enumerate(dims))
                    for r in self._join(tree, [rec], inner=False)
                }
                for t in out:
                    per_tuple.setdefault(t, []).append(rec[field])
            tuples |= set(per_tuple)
            reached.append(per_tuple)
            totals.append(aggregate(func, [rec[field] for rec in records]))
        rows = {
            t: [aggregate(func, reached[a].get(t, [])) for a, (func, _) in enumerate(aggs)]
            for t in tuples
        }
        return rows, totals


def nan_to_none(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v
