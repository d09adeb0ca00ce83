"""Section access: the access table a script's `Section Access` part loads, who it lets open
an app and the data each user sees (docs/scripts.md, "Section access")."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from assoc import _core

# The access table is kept in the model as this table (its fields prefixed so that they link
# to nothing); apps hide it. Stored with the app's other tables, it survives export, import and
# store reloads as they do.
ACCESS_TABLE = "$SectionAccess"
_PREFIX = "$SA."
# Columns of the access table that say who a row is for, not what it reduces.
_SYSTEM = ("ACCESS", "USERID", "GROUP", "OMIT", "PASSWORD", "NTNAME", "SERIAL", "USER.EMAIL")
DENIED = "Access denied"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, _core.Dual):
        return value.text
    return str(value)


@dataclass(frozen=True)
class Grant:
    """What the access table gives one user: the reduction (field -> allowed texts; a field
    absent is not reduced) and the fields omitted from them."""

    reduction: dict[str, frozenset[str]]
    omit: frozenset[str]


class AccessTable:
    """The rows of an app's access table: upper-cased field names and values."""

    def __init__(self, columns: Mapping[str, Sequence[str]]) -> None:
        self.columns = {
            name.upper(): [_text(v).strip().upper() for v in vals] for name, vals in columns.items()
        }
        if "ACCESS" not in self.columns:
            raise _core.Error("the section access table needs an ACCESS field")
        if not any(k in self.columns for k in ("USERID", "GROUP", "USER.EMAIL")):
            raise _core.Error("the section access table needs a USERID or GROUP field")
        lengths = {len(v) for v in self.columns.values()}
        self.rows = lengths.pop() if lengths else 0
        for i, access in enumerate(self.columns["ACCESS"]):
            if access not in ("ADMIN", "USER"):
                raise _core.Error(
                    f"section access row {i + 1}: ACCESS must be ADMIN or USER, not {access!r}"
                )
        # The rows naming each user and group (`*`: every one), so that finding a user's rows
        # reads only theirs, however many users the table lists.
        self._users = _rows_by_value(self.columns, ("USERID", "USER.EMAIL"))
        self._groups = _rows_by_value(self.columns, ("GROUP",))
        # The rows every user gets (`*` as USERID or GROUP).
        self._everyone = tuple(sorted({*self._users.get("*", ()), *self._groups.get("*", ())}))
        self._listed: dict[str, set[str]] = {}  # per reduction field, its values (made once)
        # The columns that reduce data (all but ACCESS, USERID, GROUP, OMIT, …).
        self.reduction_fields = [f for f in self.columns if f not in _SYSTEM]

    def rows_for(self, user: str, groups: Iterable[str] = ()) -> Sequence[int]:
        """The access rows that name the user, or one of their groups (`*`: everyone), in
        order; none for an empty user."""
        who = user.strip().upper()
        if not who:  # a session without a user opens no app with section access
            return ()
        own = self._users.get(who, ())
        if not groups and not self._everyone:
            return own  # in order, each once
        found = {*own, *self._everyone}
        for group in {g.strip().upper() for g in groups}:
            found.update(self._groups.get(group, ()))
        return sorted(found)

    def grant(self, user: str, groups: Iterable[str] = ()) -> Grant:
        """The user's grant; assoc.Error("Access denied") when no row names them."""
        rows = self.rows_for(user, groups)
        if not rows:
            raise _core.Error(DENIED)
        return self.grant_of(rows)

    def grant_of(self, rows: Sequence[int]) -> Grant:
        """What some access rows (`rows_for`) grant together."""
        reduction: dict[str, frozenset[str]] = {}
        for field in self.reduction_fields:
            column = self.columns[field]
            values = {column[i] for i in rows}
            if "*" not in values and "" not in values:
                reduction[field] = frozenset(values)
                continue
            allowed: set[str] = set()
            everything = False
            for i in rows:
                value = column[i]
                if value == "*":
                    allowed |= self.listed(field)  # `*`: every value listed in this column
                elif value:
                    allowed.add(value)
                elif self.columns["ACCESS"][i] == "ADMIN":
                    everything = True  # an ADMIN row with no value sees every value
                # a USER row with no value reaches nothing in this field
            if not everything:
                reduction[field] = frozenset(allowed)
        return Grant(reduction, self.omitted(rows))

    def omitted(self, rows: Sequence[int]) -> frozenset[str]:
        """The fields some access rows omit."""
        omit_col = self.columns.get("OMIT")
        return frozenset(omit_col[i] for i in rows if omit_col and omit_col[i])

    def listed(self, field: str) -> set[str]:
        """The values a reduction column lists (not `*` nor empty)."""
        found = self._listed.get(field)
        if found is None:
            found = self._listed[field] = {v for v in self.columns[field] if v and v != "*"}
        return found

    def sees_everything(self, user: str, groups: Iterable[str] = ()) -> bool:
        """True when an ADMIN row names the user and the grant reduces and omits nothing: only
        such a user may take the whole app (its package, access table included)."""
        rows = self.rows_for(user, groups)
        if not any(self.columns["ACCESS"][i] == "ADMIN" for i in rows):
            return False
        grant = self.grant(user, groups)
        return not grant.reduction and not grant.omit

    def add_to(self, builder: _core.ModelBuilder) -> None:
        """Adds the access table to a model being built, as the hidden ACCESS_TABLE."""
        builder.add_columns(ACCESS_TABLE, {_PREFIX + k: list(v) for k, v in self.columns.items()})

    @staticmethod
    def of_model(model: _core.DataModel) -> AccessTable | None:
        """The access table a model holds, or None."""
        if ACCESS_TABLE not in model.table_names():
            return None
        fields = model.source_fields(ACCESS_TABLE)
        return AccessTable(
            {
                f[len(_PREFIX) :]: model.column(ACCESS_TABLE, f)
                for f in fields
                if f.startswith(_PREFIX)
            }
        )


def _rows_by_value(
    columns: Mapping[str, list[str]], names: Sequence[str]
) -> dict[str, tuple[int, ...]]:
    """The rows of each non-empty value of some columns, in order, each once."""
    out: dict[str, set[int]] = {}
    for name in names:
        for i, value in enumerate(columns.get(name, ())):
            if value:
                out.setdefault(value, set()).add(i)
    return {value: tuple(sorted(rows)) for value, rows in out.items()}


def hidden_name(name: str) -> bool:
    """True for the name of the access table or one of its fields."""
    return name == ACCESS_TABLE or name.startswith(_PREFIX)


class ValueCodes:
    """The symbol indexes of the values an access table lists, per reduction field of the data
    (a field the data lacks reduces nothing): a field's symbols whose text is the value, a
    number without a stored text by its canonical text. Matched once per app and field, in one
    pass over the field's symbols; a user's reduction then only looks its values up."""

    def __init__(self, access: AccessTable, model: _core.AssociativeModel, fields: Sequence[str]):
        self._access = access
        self._model = model
        self._present = frozenset(fields)
        self._by_field: dict[str, dict[str, list[int]]] = {}
        # Per reduction field, each access row's symbols; None for a row whose value is `*`
        # or empty (what those grant depends on the other rows: `grant_of`).
        self._by_row: dict[str, list[tuple[int, ...] | None]] = {}

    def codes(self, grant: Grant) -> dict[str, list[int]]:
        """Per reduced field of the grant, the symbols it keeps, sorted."""
        out: dict[str, list[int]] = {}
        for field, allowed in grant.reduction.items():
            if field not in self._present:
                continue
            by_value = self._values_of(field)
            kept: list[int] = []
            for value in allowed:
                kept += by_value.get(value, ())
            kept.sort()
            out[field] = kept
        return out

    def codes_of_rows(self, rows: Sequence[int]) -> dict[str, list[int]] | None:
        """`codes` of what the access rows `rows` grant, read from each row's symbols: when
        each of those rows names a value in every reduction field; None otherwise."""
        out: dict[str, list[int]] = {}
        for field in self._access.reduction_fields:
            by_row = self._by_row.get(field)
            if by_row is None:
                by_row = self._by_row[field] = self._row_symbols(field)
            picked = [by_row[r] for r in rows]
            if None in picked:
                return None
            if field in self._present:
                named = cast("list[tuple[int, ...]]", picked)  # no None among them
                out[field] = sorted(set(itertools.chain.from_iterable(named)))
        return out

    def _row_symbols(self, field: str) -> list[tuple[int, ...] | None]:
        by_value = self._values_of(field) if field in self._present else {}
        return [
            None if value in ("", "*") else tuple(by_value.get(value, ()))
            for value in self._access.columns[field]
        ]

    def _values_of(self, field: str) -> dict[str, list[int]]:
        by_value = self._by_field.get(field)
        if by_value is None:
            by_value = self._by_field[field] = self._match(field)
        return by_value

    def _match(self, field: str) -> dict[str, list[int]]:
        texts = sorted(self._access.listed(field))
        symbols, which = self._model.symbols_with_texts(field, texts)
        by_value: dict[str, list[int]] = {}
        for symbol, i in zip(symbols.tolist(), which.tolist(), strict=True):
            by_value.setdefault(texts[i], []).append(symbol)
        return by_value
