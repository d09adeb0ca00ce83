"""Durable files: flushing files and folders to disk, removing leftovers, the data-dir lock."""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import fcntl
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from assoc.server.store.errors import DataDirInUse
from assoc.server.threads import name_os_thread

LOCK_NAME = ".lock"

_pools: dict[str, concurrent.futures.ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(name: str, workers: int) -> concurrent.futures.ThreadPoolExecutor:
    """The process's thread pool of that name, made on first use."""
    with _pools_lock:
        pool = _pools.get(name)
        if pool is None:
            pool = _pools[name] = concurrent.futures.ThreadPoolExecutor(
                workers, name, initializer=name_os_thread
            )
        return pool


def _libc_sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """Linux's sync_file_range (Python's os module lacks it), or None elsewhere."""
    try:
        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (AttributeError, OSError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_SYNC_FILE_RANGE = _libc_sync_file_range()
_SYNC_FILE_RANGE_WRITE = 2  # start writing the range's dirty pages back, without waiting


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Starts writing a file's range to disk without waiting for it (a head start for the
    fsync that makes it durable, which then has little left to wait for); Linux only."""
    if _SYNC_FILE_RANGE is not None:
        _SYNC_FILE_RANGE(fd, offset, length, _SYNC_FILE_RANGE_WRITE)


def fsync_dir(path: Path) -> None:
    """Flushes a directory's entries (new, renamed or removed names) to disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_path(path: str | Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_paths(paths: list[str | Path]) -> None:
    """Flushes files and folders to disk, all at once: the file system's journal commits
    concurrent flushes together, so ten cost about what one does."""
    if len(paths) <= 1:
        for path in paths:
            _fsync_path(path)
        return
    pool = _pool("assoc-fsync", 8)
    for future in [pool.submit(_fsync_path, path) for path in paths]:
        future.result()


def _below(root: Path) -> list[str]:
    """Every file and folder under root (root itself not)."""
    return [os.path.join(d, n) for d, dirs, files in os.walk(root) for n in dirs + files]


def fsync_tree(root: Path, flushed: frozenset[str] = frozenset()) -> None:
    """Flushes every file and folder under root (root included), but the paths in `flushed`
    (flushed already, and unchanged since)."""
    fsync_paths([p for p in (str(root), *_below(root)) if p not in flushed])


class EarlyFlush:
    """Flushes a staged version in the background while the engine parses its tables.

    The commit then flushes only what it did not: the version folder (which gets app.json
    after), and what is written since.
    """

    def __init__(self) -> None:
        self._flushing: concurrent.futures.Future[frozenset[str]] | None = None

    def start(
        self,
        root: Path,
        skip: frozenset[str] = frozenset(),
        first: Callable[[], object] | None = None,
        root_final: bool = False,
    ) -> None:
        """Starts flushing everything under root but the paths in `skip`; `first` (writing a
        last file, say) runs before, in the same background thread, and its error is join's.
        With `root_final` nothing is added to root after, so it counts as flushed too."""
        # A pool of its own: the flush waits on fsync_paths' pool, and a task waiting on the
        # pool it runs in could wait for itself.
        self._flushing = _pool("assoc-flush", 4).submit(self._flush, root, skip, first, root_final)

    @staticmethod
    def _flush(
        root: Path, skip: frozenset[str], first: Callable[[], object] | None, root_final: bool
    ) -> frozenset[str]:
        if first is not None:
            first()
        # Everything below root is staged for good; root itself may get app.json later.
        below = [p for p in _below(root) if p not in skip]
        try:
            fsync_paths([root, *below])
        except OSError:
            return frozenset()  # the commit's own flush of the same paths reports the error
        return frozenset(below) | ({str(root)} if root_final else frozenset())

    def join(self) -> frozenset[str]:
        """Waits for the flush; the paths below its root that it flushed (none if it failed
        or never started). Raises what `first` raised."""
        return self._flushing.result() if self._flushing is not None else frozenset()

    def wait(self) -> None:
        """Waits for the flush, whatever its outcome (before removing what it flushes)."""
        if self._flushing is not None:
            concurrent.futures.wait([self._flushing])


def remove(path: Path) -> None:
    """Removes a file or a whole folder; what is already gone is no error."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def lock_data_dir(data_dir: Path) -> BinaryIO:
    """An exclusive lock on the data dir, held while the returned file is open.

    Two services on one data dir would remove each other's uploads at start-up.
    """
    f = open(data_dir / LOCK_NAME, "ab")  # noqa: SIM115 - held open as the lock
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise DataDirInUse(
            f"data dir {str(data_dir)!r} is in use by another assoc process"
        ) from None
    return f


def check_data_dir(data_dir: str | os.PathLike[str]) -> None:
    """Raises DataDirInUse when another process holds the data dir (a check before start-up)."""
    path = Path(data_dir)
    path.mkdir(parents=True, exist_ok=True)
    lock_data_dir(path).close()
