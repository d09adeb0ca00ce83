"""Delta answers: a request with `"delta": true` (enigma.js sends it by default) is answered with
`"delta": true` and, for each member of its result, JSON-Patch operations that turn the value
this socket last received for the same handle, method and member into the new one.

The operations are made for enigma.js's applier (src/json-patch.js), which differs from RFC 6902:

- the whole value is path `/` (`add` the first time, `replace` after); a number, string or
  bool there replaces the value kept, an object or array is poured into the one kept (it must
  be of the same kind: an object cannot become an array or a plain value an object), and null
  cannot be sent;
- member names are not unescaped (`~0`, `~1`), a name that reads as a number is taken as an
  array index, and `__proto__`, `constructor` and `prototype` are refused: a member with such
  a name is never on a path, its parent is replaced instead;
- `replace` of an object by an object empties the old one and copies the new one in, but keeps
  members named `_…` or `$$…`: such an object is removed and added instead.

Operations never use `move` or `copy`. Objects change by member, or whole when none of their
members stays. Arrays change by index (`replace`, `remove` from the end, `add` at the end); an
array of the same length whose changed items are objects changes each of them by member, any
other is replaced whole when fewer than half its items stay the same. Data pages' `qMatrix`
text (RawJson) changes by row.

A socket keeps, per handle, method and member, the value it sent last (`DeltaBases`): values
of at most MAX_BASES such keys and about MAX_BASE_BYTES of JSON; the least recently used give
way first, leaving a note of their kind (what the client keeps decides which first operation
it can apply). Bases of closed handles are forgotten when the socket is told of the close."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from assoc.server.qix.rpc import RawJson

MAX_BASES = 256
MAX_BASE_BYTES = 16 << 20
MAX_NOTES = 16_384  # kinds of bases let go; past this the socket answers in full
_UNSAFE_NAMES = frozenset({"__proto__", "constructor", "prototype"})
# What JavaScript's Number() turns into a number besides digits: a leading sign, dot, space
# (trimmed), and Infinity. A name starting with anything else is not a number there.
_NUMBERISH_START = frozenset("0123456789+-. \t\n\r\v\f\ufeff\xa0")
_Key = tuple[int, str, str]


class NotExpressible(Exception):
    """A value no patch can carry to what the client keeps (the answer goes in full)."""


@lru_cache(maxsize=4096)
def _safe_name(name: Any) -> bool:
    """Whether a member name can be a path segment enigma.js reads as that member."""
    return (
        type(name) is str
        and name != ""
        and name[0] not in _NUMBERISH_START
        and not name[0].isspace()
        and name != "Infinity"
        and "/" not in name
        and "~" not in name
        and name not in _UNSAFE_NAMES
    )


def _special(value: dict[Any, Any]) -> bool:
    """Whether enigma.js keeps some member of this object when it is replaced in place."""
    return any(type(k) is str and (k[:1] == "_" or k[:2] == "$$") for k in value)


# ---- snapshots: the values kept, compared with the live ones by `==` -------------------------
# A snapshot is the live value with its containers copied (so changes of the live value in
# place cannot reach it) as _Obj / _Arr, which carry their approximate JSON size, and with
# what `==` would confuse wrapped: true / false and the numbers 0 and 1 (True == 1 in Python,
# not in JSON) as _Exact, RawJson as _Raw. `snapshot == live` is then exact at C speed, and
# holds for 1 and 1.0 (the same JSON number).


class _Obj(dict[Any, Any]):
    __slots__ = ("size",)
    size: int


class _Arr(list[Any]):
    __slots__ = ("size",)
    size: int


class _Exact:
    """true, false, 0 or 1 in a snapshot: equal only to the same bool, or to the same number."""

    __slots__ = ("boolean", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.boolean = type(value) is bool

    def __eq__(self, other: object) -> bool:
        return (type(other) is bool) is self.boolean and other == self.value

    __hash__ = None  # type: ignore[assignment]


class _Raw:
    """A RawJson text in a snapshot, equal to a RawJson of the same text."""

    __slots__ = ("items", "text")

    def __init__(self, raw: RawJson) -> None:
        self.text = raw.text
        self.items = raw.items

    def __eq__(self, other: object) -> bool:
        return type(other) is RawJson and other.text == self.text

    __hash__ = None  # type: ignore[assignment]


_BOOLS = {True: _Exact(True), False: _Exact(False)}
_NUMBERS = {0: _Exact(0), 1: _Exact(1)}


def _snap(value: Any) -> Any:
    """A snapshot of a live value."""
    t = type(value)
    if t is dict:
        out = _Obj()
        size = 2
        for key, item in value.items():
            snap, item_size = _leaf(item)
            out[key] = snap
            size += _name_size(key) + item_size
        out.size = size
        return out
    if t is list or t is tuple:
        items = _Arr()
        size = 2
        for item in value:
            snap, item_size = _leaf(item)
            items.append(snap)
            size += item_size + 1
        items.size = size
        return items
    return _leaf(value)[0]


def _name_size(name: Any) -> int:
    """A member name's JSON size with its quotes, colon and comma (a number: its text's)."""
    return len(name if type(name) is str else str(name)) + 4


def _leaf(value: Any) -> tuple[Any, int]:
    """The snapshot of a value and its approximate JSON size (the common kinds first)."""
    t = type(value)
    if t is str:
        return value, len(value) + 2
    if t is bool:
        return _BOOLS[value], 5
    if t is int or t is float:
        return _NUMBERS.get(value, value), 8
    if t is dict or t is list or t is tuple:
        snap = _snap(value)
        size: int = snap.size
        return snap, size
    if t is RawJson:
        return _Raw(value), len(value.text)
    return value, 4


def _size(snap: Any) -> int:
    """The approximate JSON size of a snapshot."""
    t = type(snap)
    if t is _Obj or t is _Arr:
        size: int = snap.size
        return size
    if t is str:
        return len(snap) + 2
    if t is _Raw:
        return len(snap.text)
    return 8


def _kind(value: Any) -> str:
    """The kind enigma.js keeps for a value or snapshot: 'object', 'object_' (with members it
    keeps on replace), 'array' or 'value'."""
    if isinstance(value, dict):
        return "object_" if _special(value) else "object"
    if isinstance(value, list | tuple):
        return "array"
    if type(value) in (RawJson, _Raw):
        return {"[": "array", "{": "object_"}.get(value.text[:1], "value")
    return "value"


def _root_fits(held: str | None, new: Any) -> bool:
    """Whether enigma.js can set a whole value to `new` over one of kind `held` (None: it
    holds nothing)."""
    if new is None:
        return False
    kind = _kind(new)
    if kind == "value" or held is None:
        return True
    return held != "object_" and held == kind.rstrip("_")


def _replace(old: Any, new: Any, path: str, in_list: bool, ops: list[Any]) -> Any:
    """Appends operations that set `path` (a member of an array when `in_list`, the whole
    value when empty) from snapshot `old` to `new` whole; the snapshot of `new`."""
    if not path:
        if not _root_fits(_kind(old), new):
            raise NotExpressible
        ops.append({"op": "replace", "path": "/", "value": new})
    elif not in_list and type(old) is _Obj and type(new) is dict and _special(old):
        ops.append({"op": "remove", "path": path})
        ops.append({"op": "add", "path": path, "value": new})
    else:
        ops.append({"op": "replace", "path": path, "value": new})
    return _snap(new)


def _diff(old: Any, new: Any, path: str, in_list: bool, ops: list[Any]) -> Any:
    """Appends the operations that turn snapshot `old` into live `new` at `path`; the
    snapshot of `new` (`old` itself, or parts of it, where nothing changed)."""
    if old == new:
        return old
    tn, to = type(new), type(old)
    if tn is dict and to is _Obj:
        return _object(old, new, path, in_list, ops)
    if (tn is list or tn is tuple) and to is _Arr:
        return _array(old, new, path, in_list, ops)
    if tn is RawJson and to is _Raw:
        was, rows = old.items, new.items
        if was is not None and rows is not None:
            return _rows(old, new, was, rows, path, in_list, ops)
    return _replace(old, new, path, in_list, ops)


def _object(old: _Obj, new: dict[Any, Any], path: str, in_list: bool, ops: list[Any]) -> Any:
    sub: list[Any] = []
    snap = _Obj()
    same = present = 0
    size = old.size  # changed by what changes (the members that stay keep their share)
    for key, value in new.items():
        if key in old:
            present += 1
            was = old[key]
            if was == value:
                snap[key] = was
                same += 1
            elif _safe_name(key):
                now = snap[key] = _diff(was, value, f"{path}/{key}", False, sub)
                size += _size(now) - _size(was)
            else:  # not on a path: a change replaces this object
                return _replace(old, new, path, in_list, ops)
        elif _safe_name(key):
            sub.append({"op": "add", "path": f"{path}/{key}", "value": value})
            now = snap[key] = _snap(value)
            size += _name_size(key) + _size(now)
        else:
            return _replace(old, new, path, in_list, ops)
    if present < len(old):
        for key in old:
            if key not in new:
                if not _safe_name(key):
                    return _replace(old, new, path, in_list, ops)
                sub.append({"op": "remove", "path": f"{path}/{key}"})
                size -= _name_size(key) + _size(old[key])
    if same == 0 and len(new) > 1 and (path or not _special(old)):
        return _replace(old, new, path, in_list, ops)  # nothing stays: one operation
    ops.extend(sub)
    snap.size = size
    return snap


def _array(old: _Arr, new: Any, path: str, in_list: bool, ops: list[Any]) -> Any:
    common = min(len(old), len(new))
    longest = max(len(old), len(new))
    changed = [i for i in range(common) if old[i] != new[i]]
    objects = len(old) == len(new) and all(
        type(old[i]) is _Obj and type(new[i]) is dict for i in changed
    )  # objects changed in place: each by its members (or whole, when none stays)
    if not objects and 2 * (common - len(changed)) < longest:  # fewer than half stay
        return _replace(old, new, path, in_list, ops)
    snap = _Arr(old[:common])
    size = old.size  # changed by what changes
    for i in changed:
        now = snap[i] = _diff(old[i], new[i], f"{path}/{i}", True, ops)
        size += _size(now) - _size(old[i])
    for i in range(len(old) - 1, common - 1, -1):
        ops.append({"op": "remove", "path": f"{path}/{i}"})
        size -= _size(old[i]) + 1
    for i in range(common, len(new)):
        ops.append({"op": "add", "path": f"{path}/{i}", "value": new[i]})
        now = _snap(new[i])
        snap.append(now)
        size += _size(now) + 1
    snap.size = size
    return snap


def _rows(
    old: _Raw,
    new: RawJson,
    was: Sequence[str],
    rows: Sequence[str],
    path: str,
    in_list: bool,
    ops: list[Any],
) -> Any:
    """A matrix's text by row (`was` and `rows` its rows' texts): the rows that changed, or
    the whole."""
    common = min(len(was), len(rows))
    changed = [i for i in range(common) if was[i] != rows[i]]
    if 2 * (common - len(changed)) < max(len(was), len(rows)):
        return _replace(old, new, path, in_list, ops)
    for i in changed:
        ops.append({"op": "replace", "path": f"{path}/{i}", "value": RawJson(rows[i])})
    for i in range(len(was) - 1, common - 1, -1):
        ops.append({"op": "remove", "path": f"{path}/{i}"})
    for i in range(common, len(rows)):
        ops.append({"op": "add", "path": f"{path}/{i}", "value": RawJson(rows[i])})
    return _Raw(new)


@dataclass
class _Base:
    value: Any
    size: int


@dataclass
class Prepared:
    """A delta result made against a socket's bases, kept only once the answer goes out."""

    result: dict[str, list[Any]]
    keys: list[_Key]
    olds: list[Any]
    snaps: list[_Base]


class DeltaBases:
    """The values one socket last received in delta answers, by handle, method and member."""

    def __init__(self, max_bases: int = MAX_BASES, max_bytes: int = MAX_BASE_BYTES) -> None:
        self.max_bases = max_bases
        self.max_bytes = max_bytes
        self._bases: OrderedDict[_Key, _Base] = OrderedDict()
        self._notes: dict[_Key, str] = {}  # the kind kept by the client of a base let go
        self._bytes = 0
        self.full_only = False  # too many notes: answers go in full from now on
        self._lock = threading.Lock()  # layouts made ahead diff in an engine thread

    def __len__(self) -> int:
        return len(self._bases)

    @property
    def bytes(self) -> int:
        """The approximate JSON size of the values kept."""
        return self._bytes

    def prepare(self, handle: int, method: str, result: Mapping[str, Any]) -> Prepared:
        """The delta result of an answer (NotExpressible when a member cannot be patched)."""
        if self.full_only:
            raise NotExpressible
        patched: dict[str, list[Any]] = {}
        keys, olds, snaps = [], [], []
        with self._lock:
            for member, value in result.items():
                key = (handle, method, member)
                old = self._bases.get(key)
                ops: list[Any] = []
                if old is not None:
                    snap = _diff(old.value, value, "", False, ops)
                else:
                    note = self._notes.get(key)
                    if not _root_fits(note, value):
                        raise NotExpressible
                    ops.append({"op": "add" if note is None else "replace", "path": "/",
                                "value": value})  # fmt: skip
                    snap = _snap(value)
                patched[member] = ops
                keys.append(key)
                olds.append(old)
                snaps.append(_Base(snap, _size(snap)))
        return Prepared(patched, keys, olds, snaps)

    def still_fits(self, prepared: Prepared) -> bool:
        """Whether the bases a result was made against are still those kept."""
        with self._lock:
            return all(
                self._bases.get(key) is old
                for key, old in zip(prepared.keys, prepared.olds, strict=True)
            )

    def commit(self, prepared: Prepared) -> None:
        """The answer went out: its values become the bases."""
        with self._lock:
            for key, base in zip(prepared.keys, prepared.snaps, strict=True):
                self._drop(key)
                self._notes.pop(key, None)
                self._bases[key] = base
                self._bytes += base.size
            while self._bases and (
                len(self._bases) > self.max_bases or self._bytes > self.max_bytes
            ):
                key, base = self._bases.popitem(last=False)
                self._bytes -= base.size
                self._notes[key] = _kind(base.value)
            if len(self._notes) > MAX_NOTES:
                self.full_only = True
                self._notes.clear()

    def forget(self, handles: Iterable[int]) -> None:
        """The client was told these handles closed (it drops what it kept for them)."""
        closed = set(handles)
        if not closed:
            return
        with self._lock:
            for key in [k for k in self._bases if k[0] in closed]:
                self._drop(key)
            for key in [k for k in self._notes if k[0] in closed]:
                del self._notes[key]

    def _drop(self, key: _Key) -> None:
        base = self._bases.pop(key, None)
        if base is not None:
            self._bytes -= base.size
