"""QVD files read while their bytes arrive, as from an upload."""

from __future__ import annotations

from assoc import _core
from assoc._core import QvdTable

__all__ = ["QvdStream", "QvdTable"]


class QvdStream:
    """A QVD file of a declared size, parsed part by part as its bytes are fed.

    `finish()` gives the table that reading the whole file gives (for `App.from_qvd`, or
    `load_model` as a source), or raises the same `assoc.Error`.
    """

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError("a QVD stream's size cannot be negative")
        self._impl = _core.QvdStream(size)

    def feed(self, chunk: bytes | bytearray | memoryview) -> None:
        """Appends the file's next bytes (copied)."""
        self._impl.feed(chunk)

    def finish(self) -> QvdTable:
        """Waits for the parsing of every byte fed and returns the table; once only."""
        return self._impl.finish()

    @property
    def received(self) -> int:
        """Bytes fed so far."""
        return self._impl.received
