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

Operations never use `move` or `copy`; arrays change by index (`replace`, `remove` from the end,
`add` at the end), or are replaced whole when fewer than half their items stay the same.
Data pages' `qMatrix` text (RawJson) changes by row.

A socket keeps, per handle, method and member, the value it sent last (`DeltaBases`): values
of at most MAX_BASES such keys and about MAX_BASE_BYTES of JSON; the least recently used give
way first, leaving a note of their kind (what the client keeps decides which first operation
it can apply). Bases of closed handles are forgotten when the socket is told of the close."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
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
_SCALARS = (str, int, float, bool)
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


def _kind(value: Any) -> str:
    """The kind enigma.js keeps: 'object', 'object_' (with members it keeps on replace),
    'array' or 'value'."""
    if type(value) is dict:
        return "object_" if _special(value) else "object"
    if type(value) in (list, tuple):
        return "array"
    if type(value) is RawJson:
        return {"[": "array", "{": "object_"}.get(value.text[:1], "value")
    return "value"


def _same(old: Any, new: Any) -> bool:
    """Whether two values are the same JSON (true is not 1; 1 and 1.0 are the same number)."""
    tn, to = type(new), type(old)
    if tn is dict:
        return (
            to is dict
            and old.keys() == new.keys()
            and all(_same(old[k], v) for k, v in new.items())
        )
    if tn is list or tn is tuple:
        return (
            to is list
            and len(old) == len(new)
            and all(_same(a, b) for a, b in zip(old, new, strict=True))
        )
    if tn is RawJson:
        return to is RawJson and old.text == new.text
    if tn in (int, float) and to in (int, float):
        return bool(old == new)
    return tn is to and bool(old == new)


def _root_fits(held: str | None, new: Any) -> bool:
    """Whether enigma.js can set a whole value to `new` over one of kind `held` (None: it
    holds nothing)."""
    if new is None:
        return False
    kind = _kind(new)
    if kind == "value" or held is None:
        return True
    return held != "object_" and held == kind.rstrip("_")


def _rows(value: RawJson) -> list[RawJson] | None:
    items = value.items
    return None if items is None else [RawJson(item) for item in items]


class _Differ:
    """One diff: the operations, and the snapshot of the new value to keep (unchanged parts
    shared with the old snapshot, the rest copied: a later change of the live value in place
    cannot reach it) with its approximate JSON size."""

    def __init__(self) -> None:
        self.size = 0

    def copy(self, value: Any) -> Any:
        """A snapshot of a value (containers copied, scalars and RawJson shared)."""
        t = type(value)
        if t is dict:
            self.size += 2 * len(value)
            return {k: self.copy(v) for k, v in value.items()}
        if t is list or t is tuple:
            self.size += len(value) + 2
            return [self.copy(v) for v in value]
        if t is str:
            self.size += len(value) + 2
        elif t is RawJson:
            self.size += len(value.text)
        else:
            self.size += 8
        return value

    def diff(self, old: Any, new: Any, path: str, in_list: bool, ops: list[Any]) -> Any:
        """Appends the operations that turn `old` (a snapshot) into `new` at `path` (a member
        of an array when `in_list`); the snapshot of `new`."""
        tn, to = type(new), type(old)
        if tn is dict and to is dict:
            return self._object(old, new, path, in_list, ops)
        if (tn is list or tn is tuple) and to is list:
            return self._array(old, list(new), path, in_list, ops)
        if tn is RawJson and to is RawJson:
            if old.text == new.text:
                self.size += len(old.text)
                return old
            rows_new, rows_old = _rows(new), _rows(old)
            if rows_new is not None and rows_old is not None:
                before = len(ops)
                self._array(rows_old, rows_new, path, in_list, ops)
                if len(ops) == before + 1 and ops[-1]["path"] == (path or "/"):
                    ops[-1]["value"] = new  # replaced whole: the text as it is
                return new
        elif (tn is to and tn in _SCALARS) or (old is None and new is None):
            if old == new:
                self.size += len(new) + 2 if tn is str else 8
                return old
        elif tn in (int, float) and to in (int, float) and old == new:
            self.size += 8  # 1 and 1.0: the same JSON number
            return old
        return self.replace(old, new, path, in_list, ops)

    def replace(self, old: Any, new: Any, path: str, in_list: bool, ops: list[Any]) -> Any:
        """Appends operations that set `path` to `new` whole; its snapshot."""
        if not path:
            if not _root_fits(_kind(old), new):
                raise NotExpressible
            ops.append({"op": "replace", "path": "/", "value": new})
        elif not in_list and type(old) is dict and type(new) is dict and _special(old):
            ops.append({"op": "remove", "path": path})
            ops.append({"op": "add", "path": path, "value": new})
        else:
            ops.append({"op": "replace", "path": path, "value": new})
        return self.copy(new)

    def _object(
        self, old: dict[Any, Any], new: dict[Any, Any], path: str, in_list: bool, ops: list[Any]
    ) -> Any:
        sub: list[Any] = []
        snap: dict[Any, Any] = {}
        same = 0
        for key, value in new.items():
            if key in old:
                if not _safe_name(key):  # not on a path: a change replaces this object
                    if not _same(old[key], value):
                        return self.replace(old, new, path, in_list, ops)
                    snap[key] = self.copy(value)
                    same += 1
                    continue
                before = len(sub)
                snap[key] = self.diff(old[key], value, f"{path}/{key}", False, sub)
                if len(sub) == before:
                    same += 1
            elif _safe_name(key):
                sub.append({"op": "add", "path": f"{path}/{key}", "value": value})
                snap[key] = self.copy(value)
            else:
                return self.replace(old, new, path, in_list, ops)
        for key in old:
            if key not in new:
                if not _safe_name(key):
                    return self.replace(old, new, path, in_list, ops)
                sub.append({"op": "remove", "path": f"{path}/{key}"})
        if sub and same == 0 and len(new) > 1 and (path or not _special(old)):
            return self.replace(old, new, path, in_list, ops)  # nothing stays: one operation
        self.size += 2 * len(new)
        ops.extend(sub)
        return snap

    def _array(
        self, old: list[Any], new: list[Any], path: str, in_list: bool, ops: list[Any]
    ) -> Any:
        common = min(len(old), len(new))
        longest = max(len(old), len(new))
        sub: list[Any] = []
        snap: list[Any] = []
        changed = 0
        for i in range(common):
            before = len(sub)
            snap.append(self.diff(old[i], new[i], f"{path}/{i}", True, sub))
            if len(sub) != before:
                changed += 1
                if 2 * (common - changed) < longest:  # fewer than half can stay the same
                    return self.replace(old, new, path, in_list, ops)
        if 2 * (common - changed) < longest:
            return self.replace(old, new, path, in_list, ops)
        for i in range(len(old) - 1, common - 1, -1):
            sub.append({"op": "remove", "path": f"{path}/{i}"})
        for i in range(common, len(new)):
            sub.append({"op": "add", "path": f"{path}/{i}", "value": new[i]})
            snap.append(self.copy(new[i]))
        self.size += len(new) + 2
        ops.extend(sub)
        return snap


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
                differ = _Differ()
                if old is not None:
                    snap = differ.diff(old.value, value, "", False, ops)
                else:
                    note = self._notes.get(key)
                    if not _root_fits(note, value):
                        raise NotExpressible
                    ops.append({"op": "add" if note is None else "replace", "path": "/",
                                "value": value})  # fmt: skip
                    snap = differ.copy(value)
                patched[member] = ops
                keys.append(key)
                olds.append(old)
                snaps.append(_Base(snap, differ.size))
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
