"""An independent model of associative inference, in plain Python sets, for the tests.

It follows the definition rather than the engine's message passing: the tables that the
selections' part of the link tree (its Steiner tree) touches are joined naturally and a row
is possible when it takes part in that join; tables outside are then reduced, one link at a
time, outward from that part; loose tables only receive.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

Tables = Mapping[str, Mapping[str, Sequence[Any]]]
Node = tuple[str, str]  # ("T", table) or ("F", field)


def _rows(columns: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    names = list(columns)
    n = len(columns[names[0]]) if names else 0
    return [{f: columns[f][i] for f in names} for i in range(n)]


def _agrees(row: Mapping[str, Any], selections: Mapping[str, set[Any]]) -> bool:
    return all(row[f] is not None and row[f] in sel for f, sel in selections.items() if f in row)


class ReferenceModel:
    """Tables (as read back from an app, synthetic key tables included) and their loose ones."""

    def __init__(self, tables: Tables, loose: set[str]) -> None:
        self.rows = {t: _rows(cols) for t, cols in tables.items()}
        self.fields = {t: list(cols) for t, cols in tables.items()}
        self.loose = set(loose)
        self.linked = [t for t in tables if t not in self.loose]
        self.adjacent: dict[Node, list[Node]] = {}
        for t in self.linked:
            self.adjacent.setdefault(("T", t), [])
            for f in self.fields[t]:
                self.adjacent[("T", t)].append(("F", f))
                self.adjacent.setdefault(("F", f), []).append(("T", t))

    def _component(self, start: Node) -> set[Node]:
        seen = {start}
        todo = [start]
        while todo:
            for n in self.adjacent[todo.pop()]:
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return seen

    def _steiner(self, component: set[Node], targets: set[Node]) -> set[Node]:
        nodes = set(component)
        degree = {n: sum(1 for m in self.adjacent[n] if m in nodes) for n in nodes}
        leaves = [n for n in nodes if degree[n] <= 1 and n not in targets]
        while leaves:
            n = leaves.pop()
            if n not in nodes:
                continue
            nodes.remove(n)
            for m in self.adjacent[n]:
                if m in nodes:
                    degree[m] -= 1
                    if degree[m] <= 1 and m not in targets:
                        leaves.append(m)
        return nodes

    def possible_rows(self, selections: Mapping[str, set[Any]]) -> dict[str, set[int]]:
        """Per table, the indexes of its possible rows."""
        possible: dict[str, set[int]] = {}
        allowed: dict[str, set[Any] | None] = {}  # per linked field: what the link graph allows
        done: set[Node] = set()
        for start in list(self.adjacent):
            if start in done:
                continue
            component = self._component(start)
            done |= component
            targets = {("F", f) for f in selections if ("F", f) in component}
            if not targets:
                for kind, name in component:
                    if kind == "T":
                        possible[name] = set(range(len(self.rows[name])))
                    else:
                        allowed[name] = None
                continue
            steiner = self._steiner(component, targets)
            self._join(steiner, selections, possible, allowed)
            self._reduce_outward(component, steiner, possible, allowed)
        for t in self.loose:
            keep = set()
            for i, row in enumerate(self.rows[t]):
                ok = _agrees(row, selections)
                for f, v in row.items():
                    graph = allowed.get(f)
                    if graph is not None and (v is None or v not in graph):
                        ok = False
                if ok:
                    keep.add(i)
            possible[t] = keep
        return possible

    def _join(
        self,
        steiner: set[Node],
        selections: Mapping[str, set[Any]],
        possible: dict[str, set[int]],
        allowed: dict[str, set[Any] | None],
    ) -> None:
        tables = [name for kind, name in steiner if kind == "T"]
        if not tables:  # only one selected key field: it allows its selection
            ((_, field),) = steiner
            allowed[field] = set(selections[field])
            return
        # Join order: each next table touches the tables joined so far.
        order = [tables[0]]
        while len(order) < len(tables):
            joined_fields = {f for t in order for f in self.fields[t]}
            order.append(
                next(t for t in tables if t not in order and joined_fields & set(self.fields[t]))
            )
        partial: list[tuple[dict[str, Any], dict[str, int]]] = [({}, {})]
        for t in order:
            grown = []
            for values, picks in partial:
                for i, row in enumerate(self.rows[t]):
                    if not _agrees(row, selections):
                        continue
                    shared = [f for f in row if f in values]
                    if all(row[f] is not None and row[f] == values[f] for f in shared):
                        grown.append(({**values, **row}, {**picks, t: i}))
            partial = grown
        for t in tables:
            possible[t] = {picks[t] for _, picks in partial}
        for kind, name in steiner:
            if kind == "F":
                allowed[name] = {values[name] for values, _ in partial}

    def _reduce_outward(
        self,
        component: set[Node],
        steiner: set[Node],
        possible: dict[str, set[int]],
        allowed: dict[str, set[Any] | None],
    ) -> None:
        seen = set(steiner)
        todo = deque(steiner)
        while todo:
            node = todo.popleft()
            kind, name = node
            for nxt in self.adjacent[node]:
                if nxt in seen or nxt not in component:
                    continue
                seen.add(nxt)
                todo.append(nxt)
                if kind == "T":  # a field beyond a table: the values on its possible rows
                    allowed[nxt[1]] = {
                        self.rows[name][i][nxt[1]]
                        for i in possible[name]
                        if self.rows[name][i][nxt[1]] is not None
                    }
                else:  # a table beyond a field: rows whose value the field allows
                    graph = allowed[name]
                    assert graph is not None
                    possible[nxt[1]] = {
                        i
                        for i, row in enumerate(self.rows[nxt[1]])
                        if row[name] is not None and row[name] in graph
                    }

    def values_on(self, field: str, possible: Mapping[str, set[int]]) -> set[Any]:
        """Values of a field on possible rows of any table holding it."""
        out = set()
        for t, idx in possible.items():
            if field in self.fields[t]:
                out |= {self.rows[t][i][field] for i in idx if self.rows[t][i][field] is not None}
        return out

    def states(
        self, field: str, all_values: Sequence[Any], selections: Mapping[str, set[Any]]
    ) -> dict[str, set[Any]]:
        """A field's values by state under `selections` (values that exist in the field only)."""
        values = set(all_values)
        selected = set(selections.get(field, set())) & values
        possible = self.values_on(field, self.possible_rows(selections)) - selected
        alternative: set[Any] = set()
        if selected:
            others = {f: s for f, s in selections.items() if f != field}
            alternative = self.values_on(field, self.possible_rows(others)) - selected
        return {
            "selected": selected,
            "possible": possible,
            "alternative": alternative,
            "excluded": values - selected - possible - alternative,
        }
