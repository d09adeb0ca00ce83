"""QVD files read while their bytes arrive, as from an upload."""

from __future__ import annotations

import os

from assoc import _core
from assoc._core import QvdTable

__all__ = ["QvdStream", "QvdTable"]


class QvdStream:
    """A QVD file of a declared size, parsed part by part as its bytes are fed.

    `finish()` gives the table that reading the whole file gives (for `App.from_qvd`, or
    `load_model` as a source), or raises the same `assoc.Error`.

    With `file`, the bytes are also written to that new file by a thread of the stream's own
    (never making `feed` wait for the disk; direct I/O for whole pages where the file system
    takes it), and the file is complete when `finish()` returns; with `sync` also flushed to
    disk (while the parsing ends), else that is the caller's fsync. Creating it raises OSError
    (FileExistsError if it exists), as does a disk without room for `size` bytes; `finish()`
    raises OSError when a write failed.
    """

    def __init__(
        self, size: int, file: str | os.PathLike[str] | None = None, sync: bool = False
    ) -> None:
        if size < 0:
            raise ValueError("a QVD stream's size cannot be negative")
        self._impl = _core.QvdStream(size, None if file is None else os.fspath(file), sync)

    def feed(self, chunk: bytes | bytearray | memoryview) -> None:
        """Appends the file's next bytes (copied)."""
        self._impl.feed(chunk)

    def finish(self) -> QvdTable:
        """Waits for the parsing of every byte fed (and the file's writing) and returns the
        table; once only."""
        return self._impl.finish()

    @property
    def received(self) -> int:
        """Bytes fed so far."""
        return self._impl.received

    @property
    def table_name(self) -> str | None:
        """The header's TableName once the stream has read the header (soon after it has
        arrived), else None (also when the header is bad: `finish()` says why)."""
        return self._impl.table_name
