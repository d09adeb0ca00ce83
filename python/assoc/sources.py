"""Table sources: QVD and CSV files (paths or bytes), told apart by content, loaded into one
model by the one loader that `App.from_*`, app packages and the service's imports share."""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterable, Iterator, Mapping
from enum import Enum

from assoc import _core
from assoc._core import Error

Source = str | os.PathLike[str] | bytes | bytearray | memoryview
# A table source: a file, or a QVD table read as it arrived (assoc.qvd_stream).
TableSource = Source | _core.QvdTable
DEFAULT_CSV_TABLE = "Table1"

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
HEAD_BYTES = 4096


class SourceKind(Enum):
    """What a file holds, told by its content."""

    PACKAGE = "package"
    QVD = "qvd"
    CSV = "csv"


class UnsupportedFile(Error):
    """A file whose content is no kind of app source the engine reads."""


def detect_kind(head: bytes) -> SourceKind:
    """Package, QVD or CSV from the first bytes of a file; raises assoc.Error for anything else."""
    if not head:
        raise Error("the file is empty")
    if head.startswith(_ZIP_MAGIC):
        return SourceKind.PACKAGE
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    # An XML prolog is never CSV: a QVD whose header is damaged still gets the QVD reader's error.
    if text.startswith((b"<?xml", b"<QvdTableHeader")):
        return SourceKind.QVD
    if b"\x00" in head:
        raise UnsupportedFile("the file is neither an app package, a QVD file nor CSV text")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character may be cut at the end of the sample.
        if exc.start < len(head) - 4:
            raise UnsupportedFile(
                "the file is not UTF-8 CSV text, a QVD file or a package"
            ) from None
    return SourceKind.CSV


def read_source(source: Source) -> bytes:
    """The bytes of a bytes-like source (paths go through file_bytes)."""
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source)
    raise TypeError(f"expected a path or bytes, not {type(source).__name__}")


# Files below this size are read into memory: mapping one costs more than copying it (the
# mapping's page faults, and unmapping it flushes the TLB of every core the process ran on).
_READ_BELOW = 256 << 10
# Larger files are mapped; up to _POPULATE_BELOW with their pages entered up front, in one
# call, which costs less than the page faults of the parse (one per 64 KB). Past it the parse's
# threads fault the pages in side by side, where one call would enter them on one thread.
_POPULATE_BELOW = 32 << 20
_MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0)


def file_bytes(path: str | os.PathLike[str], whole: bool = True) -> bytes | mmap.mmap:
    """A file's bytes: read when small (or empty, which cannot be mapped), else mapped
    read-only (the caller closes the map). `whole`: all of it will be read, so a mapping of
    a mid-sized file has its pages brought in at once. OSError when the file cannot be read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    try:
        size = os.fstat(fd).st_size
        if size >= _READ_BELOW:
            populate = whole and size < _POPULATE_BELOW
            flags = mmap.MAP_SHARED | (_MAP_POPULATE if populate else 0)
            return mmap.mmap(fd, 0, flags=flags, prot=mmap.PROT_READ)
        chunks = []  # the size the file had (a special file's 0 reads nothing)
        while size > 0 and (chunk := os.read(fd, size)):
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


@contextlib.contextmanager
def source_bytes(source: Source) -> Iterator[bytes | mmap.mmap]:
    """A source's bytes: a path's file read or memory-mapped (the engine then reads it from
    the page cache, no copy), bytes as they are."""
    if not isinstance(source, str | os.PathLike):
        yield read_source(source)
        return
    try:
        data = file_bytes(source)
    except OSError as exc:
        raise Error(f"cannot read {os.fspath(source)!r}: {exc.strerror}") from exc
    if isinstance(data, bytes):
        yield data
        return
    with data:
        yield data


def add_table(
    builder: _core.ModelBuilder,
    source: TableSource,
    name: str | None,
    kind: SourceKind | None = None,
) -> None:
    """Adds one QVD or CSV table to a builder; `kind` None tells it by content.

    A QVD table is named `name` or by its header, a CSV table `name` or Table1.
    """
    if isinstance(source, _core.QvdTable):
        builder.add_qvd_table(source, name)
        return
    with source_bytes(source) as data:
        if kind is None:
            kind = detect_kind(bytes(data[:HEAD_BYTES]))
        if kind is SourceKind.QVD:
            builder.add_qvd(data, name)
        elif kind is SourceKind.CSV:
            builder.add_csv(data, name or DEFAULT_CSV_TABLE)
        else:
            raise Error(f"table {name!r}: an app package is not a table file")


def load_model(
    tables: Iterable[tuple[TableSource, str | None]],
    kind: SourceKind | None = None,
    interpretation: Mapping[str, str] | None = None,
) -> _core.DataModel:
    """A model of (source, table name) pairs, linked; each source must hold one table. The
    model keeps `interpretation`, the number interpretation variables of its app."""
    builder = _core.ModelBuilder()
    if interpretation:
        builder.set_interpretation(dict(interpretation))
    listed: list[str | None] = []
    for source, name in tables:
        add_table(builder, source, name, kind)
        listed.append(name)
        if builder.table_count != len(listed):
            raise Error(
                f"table {name!r}: the file holds {builder.table_count - len(listed) + 1} "
                "tables, not one"
            )
    model = builder.build()
    # The model adds synthetic key tables of its own; every listed table must be there too.
    missing = [n for n in listed if n is not None and n not in model.table_names()]
    if missing:
        raise Error(f"the files hold tables {model.table_names()}, not {missing}")
    return model
