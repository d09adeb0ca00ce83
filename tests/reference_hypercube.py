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

    def _part(self, node: Node) -> set[Node]:
        """The part of the forest (its nodes) that holds a node."""
        seen = {node}
        todo = [node]
        while todo:
            for m in self.adjacent[todo.pop()]:
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        return seen

    def cube(
        self, dims: list[str], aggs: list[tuple[str, str]]
    ) -> tuple[dict[tuple[Any, ...], list[Any]], list[Any]]:
        """Rows (dimension tuple -> each aggregation's value) and each aggregation's total.

        The dimensions fall into the parts of the forest that hold them; each part's
        combinations are (1) the inner join of its least tree and (2) the tuples that the
        records of each aggregation in that part reach by left outer joins; the rows are the
        cross product of the parts' combinations. An aggregation reads, for a row, the
        records that reach the row's values of its own part's dimensions."""
        dim_nodes = [self.node_of(d) for d in dims]
        # The parts holding dimensions, as the sets of their nodes and their dimensions' indexes.
        parts: list[tuple[set[Node], list[int]]] = []
        for i, n in enumerate(dim_nodes):
            for nodes, members in parts:
                if n in nodes:
                    members.append(i)
                    break
            else:
                parts.append((self._part(n), [i]))

        def project(row: tuple[Any, ...], members: list[int]) -> tuple[Any, ...]:
            return tuple(row[i] for i in members)

        # Per aggregation: the records of its node, left outer joined to its part's dimensions.
        reached: list[dict[tuple[Any, ...], list[Any]]] = []
        agg_part: list[int | None] = []
        totals = []
        for func, field in aggs:
            node = self.node_of(field)
            at = next((p for p, (nodes, _) in enumerate(parts) if node in nodes), None)
            agg_part.append(at)
            members = parts[at][1] if at is not None else []
            tree = self._tree(node, set(dim_nodes))
            per_tuple: dict[tuple[Any, ...], list[Any]] = {}
            records = self._records(node)
            for rec in records:
                out = {
                    tuple(r.get(dims[i]) for i in members)
                    for r in self._join(tree, [rec], inner=False)
                }
                for t in out:
                    per_tuple.setdefault(t, []).append(rec[field])
            reached.append(per_tuple)
            totals.append(aggregate(func, [rec[field] for rec in records]))
        # Each part's combinations: (1) its inner join, (2) what its aggregations reach.
        combos_of: list[set[tuple[Any, ...]]] = []
        for p, (_, members) in enumerate(parts):
            targets = {dim_nodes[i] for i in members}
            tree = self._tree(dim_nodes[members[0]], targets)
            tables = [m for m in tree if m[0] == "T"]
            if not tables:  # a key field alone: its possible values
                combos = {(v,) * len(members) for v in self._possible_values(dims[members[0]])}
            else:
                tree = self._tree(tables[0], targets)
                joined = self._join(tree, self._records(tables[0]), inner=True)
                combos = {tuple(r.get(dims[i]) for i in members) for r in joined}
            for a in range(len(aggs)):
                if agg_part[a] == p:
                    combos |= set(reached[a])
            combos_of.append(combos)
        rows_out: list[tuple[Any, ...]] = [tuple(None for _ in dims)]
        for (_, members), combos in zip(parts, combos_of, strict=True):
            grown = []
            for row in rows_out:
                for c in combos:
                    filled = list(row)
                    for i, v in zip(members, c, strict=True):
                        filled[i] = v
                    grown.append(tuple(filled))
            rows_out = grown
        rows = {
            t: [
                aggregate(
                    func,
                    reached[a].get(
                        project(t, parts[agg_part[a]][1]) if agg_part[a] is not None else (), []
                    ),
                )
                for a, (func, _) in enumerate(aggs)
            ]
            for t in rows_out
        }
        return rows, totals


def nan_to_none(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v
