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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from assoc import _core
from assoc.server.qix.rpc import RawJson

MAX_BASES = 256
MAX_BASE_BYTES = 16 << 20
MAX_NOTES = 16_384  # kinds of bases let go; past this the socket answers in full
_Key = tuple[int, str, str]


class NotExpressible(Exception):
    """A value no patch can carry to what the client keeps (the answer goes in full)."""


# The walk itself (snapshots, comparisons, operations) is the engine's (_core.JsonDelta), as
# every layout asked with "delta" goes through it. A snapshot is the value with its dicts,
# lists and tuples copied (changes of the live value in place cannot reach it) and its other
# values shared; values compare as JSON does (true is not 1, 1 is 1.0, RawJson by its text).
_WALK = _core.JsonDelta(RawJson)


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
                if old is not None:
                    made = _WALK.diff(old.value, value)
                    if made is None:
                        raise NotExpressible
                    ops, snap, size = made
                else:
                    note = self._notes.get(key)
                    if not _WALK.root_fits(note, value):
                        raise NotExpressible
                    first = "add" if note is None else "replace"
                    ops = [{"op": first, "path": "/", "value": value}]
                    snap, size = _WALK.snapshot(value)
                patched[member] = ops
                keys.append(key)
                olds.append(old)
                snaps.append(_Base(snap, size))
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
                self._notes[key] = _WALK.kind(base.value)
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
