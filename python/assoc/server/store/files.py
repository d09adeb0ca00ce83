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

LOCK_NAME = ".lock"

_flush_pool: concurrent.futures.ThreadPoolExecutor | None = None
_flush_pool_lock = threading.Lock()


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
    global _flush_pool
    if len(paths) <= 1:
        for path in paths:
            _fsync_path(path)
        return
    with _flush_pool_lock:
        if _flush_pool is None:
            _flush_pool = concurrent.futures.ThreadPoolExecutor(8, "assoc-fsync")
        pool = _flush_pool
    for future in [pool.submit(_fsync_path, path) for path in paths]:
        future.result()


def fsync_tree(root: Path) -> None:
    """Flushes every file and folder under root (root included)."""
    paths: list[str | Path] = []
    for dirpath, _dirnames, filenames in os.walk(root):
        paths.append(dirpath)
        paths += [os.path.join(dirpath, name) for name in filenames]
    fsync_paths(paths)


class EarlyFlush:
    """Flushes staged table files in a background thread while the engine parses them.

    The commit flushes the whole staged tree again; by then that costs next to nothing.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    def start(self, root: Path) -> None:
        """Starts flushing everything under root."""
        self._thread = threading.Thread(target=self._flush, args=(root,), daemon=True)
        self._thread.start()

    @staticmethod
    def _flush(root: Path) -> None:
        # Errors surface in the commit's own flush of the same files.
        with contextlib.suppress(OSError):
            fsync_tree(root)

    def join(self) -> None:
        """Waits for the flush to finish."""
        if self._thread is not None:
            self._thread.join()


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
