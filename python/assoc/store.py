"""The durable app store: apps on disk under a data dir, loaded lazily, evicted over a budget.

Layout of the data dir:

    apps/<appId>/CURRENT          name of the committed version directory
    apps/<appId>/<version>/       app.json, table files, media/**
    tmp/                          uploads and staged imports (emptied at start-up)
    trash/                        deleted apps and replaced versions (emptied at start-up)
    .lock                         locked by the one store that has the data dir open

Every change is staged beside its target, flushed with fsync, then made visible by one
rename (and an fsync of the directory that holds it), so a crash leaves the old state
or the new one.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime
import fcntl
import json
import os
import shutil
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, BinaryIO

from assoc._core import Error
from assoc.app import App
from assoc.package import (
    MANIFEST_NAME,
    AppPackage,
    Manifest,
    PackageLimits,
    SourceKind,
    TableEntry,
    build_model,
    check_entry_name,
    detect_kind,
    is_valid_app_id,
    iter_media_files,
    normalize_attributes,
    write_package,
)

CURRENT_NAME = "CURRENT"
MEDIA_DIR = "media"
_COPY_CHUNK = 1 << 20


class AppNotFound(Error):
    """No app has the id asked for."""


class MediaNotFound(Error):
    """No media file or folder has the path asked for."""


class BadMediaPath(Error):
    """A media path that is not a plain relative path (absolute, '..', backslashes)."""


class ImportMode(Enum):
    """How an import treats the source app's id and attributes."""

    NEW = "NEW"
    AUTOREPLACE = "AUTOREPLACE"

    @classmethod
    def parse(cls, text: str | None) -> ImportMode:
        """NEW or AUTOREPLACE, any case; None means NEW; anything else raises ValueError."""
        if text is None:
            return cls.NEW
        return cls(text.upper())


class ListForm(Enum):
    """The three forms of a media listing."""

    FLAT = "flat"  # files and empty folders of the one folder
    RECURSIVE = "recursive"  # files of the whole tree
    ALL = "all"  # files and empty folders of the whole tree

    @classmethod
    def parse(cls, show: str | None) -> ListForm:
        """r/recursive, a/all, anything else the flat form."""
        if show in ("r", "recursive"):
            return cls.RECURSIVE
        if show in ("a", "all"):
            return cls.ALL
        return cls.FLAT


class AppLease:
    """A loaded app held for a long-lived user (a QIX session): never evicted until released."""

    def __init__(self, store: AppStore, entry: _Entry, app: App) -> None:
        self.app = app
        self._store: AppStore | None = store
        self._entry = entry

    def release(self) -> None:
        """Lets the store evict the app again; a second call does nothing."""
        store, self._store = self._store, None
        if store is not None:
            store._release(self._entry)


StoreListener = Callable[[str, str], None]


@dataclass(frozen=True)
class DocUsage:
    """Which apps are in use, held by the store, and alive in memory."""

    active: list[str]
    loaded: list[str]
    in_memory: list[str]


def utc_now_iso() -> str:
    """The current time as ISO 8601 UTC with milliseconds, like 2026-11-22T04:35:00.000Z."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def fsync_dir(path: Path) -> None:
    """Flushes a directory's entries (new, renamed or removed names) to disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_flush_pool: concurrent.futures.ThreadPoolExecutor | None = None
_flush_pool_lock = threading.Lock()


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


def _fsync_tree(root: Path) -> None:
    """Flushes every file and folder under root (root included)."""
    paths: list[str | Path] = []
    for dirpath, _dirnames, filenames in os.walk(root):
        paths.append(dirpath)
        paths += [os.path.join(dirpath, name) for name in filenames]
    fsync_paths(paths)


class _EarlyFlush:
    """Flushes staged table files in a background thread while the engine parses them.

    The commit flushes the whole staged tree again; by then that costs next to nothing.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    def start(self, root: Path) -> None:
        self._thread = threading.Thread(target=self._flush, args=(root,), daemon=True)
        self._thread.start()

    @staticmethod
    def _flush(root: Path) -> None:
        # Errors surface in the commit's own flush of the same files.
        with contextlib.suppress(OSError):
            _fsync_tree(root)

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()


@dataclass(eq=False)
class _Entry:
    """One committed app: what is on disk and what is in memory."""

    app_id: str
    version_dir: Path
    manifest: Manifest
    lock: threading.RLock
    app: App | None = None
    app_ref: weakref.ref[App] | None = None
    metadata_json: bytes | None = None
    byte_size: int = 0
    last_used: float = field(default_factory=time.monotonic)
    in_use: int = 0

    @property
    def media_root(self) -> Path:
        return self.version_dir / MEDIA_DIR


class AppStore:
    """Apps kept durably under a data dir; safe for concurrent imports, deletes and reads."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        memory_budget_bytes: int = 0,
        limits: PackageLimits | None = None,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.memory_budget_bytes = memory_budget_bytes
        self.limits = limits or PackageLimits()
        self._apps_dir = self.data_dir / "apps"
        self.tmp_dir = self.data_dir / "tmp"
        self._trash_dir = self.data_dir / "trash"
        self._index: dict[str, _Entry] = {}
        self._index_lock = threading.Lock()
        self._app_locks: dict[str, threading.RLock] = {}
        self._listeners: list[StoreListener] = []
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock_file = _lock_data_dir(self.data_dir)
        try:
            for d in (self._apps_dir, self.tmp_dir, self._trash_dir):
                d.mkdir(exist_ok=True)
            fsync_dir(self.data_dir)  # the folders themselves must outlive a crash
            self._recover()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Lets another store open the data dir (the apps stay on disk)."""
        self._lock_file.close()

    def __enter__(self) -> AppStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- start-up --------------------------------------------------------------------

    def _recover(self) -> None:
        """Removes what interrupted work left behind and lists the committed apps."""
        for leftovers in (self.tmp_dir, self._trash_dir):
            for child in leftovers.iterdir():
                _remove(child)
        for app_dir in sorted(self._apps_dir.iterdir()):
            if not app_dir.is_dir() or not is_valid_app_id(app_dir.name):
                continue
            current = _read_current(app_dir)
            if current is None:
                # Never committed: a first import that stopped before its rename.
                _remove(app_dir)
                continue
            for child in app_dir.iterdir():
                if child.name not in (CURRENT_NAME, current):
                    _remove(child)
            version_dir = app_dir / current
            try:
                manifest = Manifest.parse((version_dir / MANIFEST_NAME).read_bytes())
            except (OSError, Error):
                continue
            self._index[app_dir.name] = _Entry(
                app_dir.name, version_dir, manifest, self._app_lock(app_dir.name)
            )

    def _app_lock(self, app_id: str) -> threading.RLock:
        with self._index_lock:
            lock = self._app_locks.get(app_id)
            if lock is None:
                lock = self._app_locks[app_id] = threading.RLock()
            return lock

    # ---- reading ---------------------------------------------------------------------

    def app_ids(self) -> list[str]:
        """Ids of every stored app, sorted."""
        return sorted(self._index)

    def _entry(self, app_id: str) -> _Entry:
        entry = self._index.get(app_id)
        if entry is None:
            raise AppNotFound(f"no app with id {app_id!r}")
        return entry

    def attributes(self, app_id: str) -> dict[str, Any]:
        """The app's NxAttributes."""
        return dict(self._entry(app_id).manifest.attributes)

    def objects(self, app_id: str) -> list[dict[str, Any]]:
        """The app's objects (sheets, stories, …) with their approved flag."""
        return list(self._entry(app_id).manifest.objects)

    def list_attributes(self) -> list[dict[str, Any]]:
        """NxAttributes of every app, ordered by name then id."""
        entries = list(self._index.values())
        attrs = [dict(e.manifest.attributes) for e in entries]
        return sorted(attrs, key=lambda a: (a["name"].lower(), a["id"]))

    @contextlib.contextmanager
    def using(self, app_id: str) -> Iterator[App]:
        """The loaded app, loading it first when needed; it is not evicted while used."""
        lease = self.lease(app_id)
        try:
            yield lease.app
        finally:
            lease.release()

    def lease(self, app_id: str) -> AppLease:
        """The loaded app, held (never evicted) until the lease is released."""
        while True:
            with self._index_lock:
                entry = self._index.get(app_id)
                if entry is None:
                    raise AppNotFound(f"no app with id {app_id!r}")
                entry.in_use += 1
            try:
                app = self._loaded(entry)
            except BaseException:
                self._release(entry)
                raise
            if app is not None:
                break
            self._release(entry)  # replaced or deleted meanwhile: look again
        return AppLease(self, entry, app)

    def subscribe(self, listener: StoreListener) -> Callable[[], None]:
        """Calls `listener(app_id, "deleted" | "replaced")` on commit; returns unsubscribe."""
        with self._index_lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._index_lock, contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    def _notify(self, app_id: str, event: str) -> None:
        with self._index_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(app_id, event)

    def _release(self, entry: _Entry) -> None:
        with self._index_lock:
            entry.in_use -= 1
            entry.last_used = time.monotonic()

    def _loaded(self, entry: _Entry) -> App | None:
        """The entry's app, loaded if needed; None when the entry is no longer current."""
        app = entry.app
        if app is not None:
            return app
        with entry.lock:
            if self._index.get(entry.app_id) is not entry:
                return None  # its files may be gone: replaces and deletes hold this lock
            app = entry.app
            if app is None:
                version_dir = entry.version_dir

                def read(name: str) -> bytes:
                    check_entry_name(name)
                    return (version_dir / name).read_bytes()

                app = App(build_model(entry.manifest, read))
                self._hold(entry, app)
            return app

    def _hold(self, entry: _Entry, app: App) -> None:
        metadata = app.metadata()
        metadata_json = json.dumps(metadata, separators=(",", ":")).encode("utf-8")
        with self._index_lock:
            entry.app = app
            entry.app_ref = weakref.ref(app)
            entry.byte_size = int(metadata["static_byte_size"])
            entry.metadata_json = metadata_json
            entry.last_used = time.monotonic()
            self._evict_over_budget(keep=entry)

    def _evict_over_budget(self, keep: _Entry) -> None:
        # Caller holds the index lock.
        if self.memory_budget_bytes <= 0:
            return
        loaded = [e for e in self._index.values() if e.app is not None]
        total = sum(e.byte_size for e in loaded)
        for victim in sorted(loaded, key=lambda e: e.last_used):
            if total <= self.memory_budget_bytes:
                break
            if victim is keep or victim.in_use:
                continue
            victim.app = None
            victim.metadata_json = None
            total -= victim.byte_size

    def metadata_json(self, app_id: str) -> bytes:
        """DataModelMetadata as JSON, made once per loaded app (the model is immutable)."""
        cached = self.cached_metadata_json(app_id)
        if cached is not None:
            return cached
        with self.using(app_id) as app:
            # Loading made it; only an eviction right after can have dropped it.
            entry = self._index.get(app_id)
            data = entry.metadata_json if entry is not None and entry.app is app else None
            return data or json.dumps(app.metadata(), separators=(",", ":")).encode("utf-8")

    def cached_metadata_json(self, app_id: str) -> bytes | None:
        """The metadata JSON when it is at hand (no loading, no waiting), else None."""
        entry = self._index.get(app_id)
        if entry is None:
            return None
        data = entry.metadata_json
        if data is not None:
            entry.last_used = time.monotonic()
        return data

    def usage(self) -> DocUsage:
        """Apps in use by a request now, held by the store, and alive in memory."""
        with self._index_lock:
            entries = sorted(self._index.values(), key=lambda e: e.app_id)
            active = [e.app_id for e in entries if e.in_use]
            loaded = [e.app_id for e in entries if e.app is not None]
            in_memory = [
                e.app_id for e in entries if e.app_ref is not None and e.app_ref() is not None
            ]
        return DocUsage(active, loaded, in_memory)

    def loaded_bytes(self) -> int:
        """Static bytes of the apps the store holds in memory."""
        with self._index_lock:
            return sum(e.byte_size for e in self._index.values() if e.app is not None)

    # ---- imports ---------------------------------------------------------------------

    def new_upload_path(self) -> Path:
        """A fresh path under tmp/ for an upload; start-up removes any left there."""
        return self.tmp_dir / f"upload-{uuid.uuid4().hex}"

    def import_file(
        self,
        source: Path,
        *,
        name: str | None = None,
        mode: ImportMode = ImportMode.NEW,
        owner: str = "",
        source_name: str | None = None,
    ) -> dict[str, Any]:
        """Imports a package, QVD or CSV file (consumed) and commits it; returns its attributes."""
        stage = self.tmp_dir / f"stage-{uuid.uuid4().hex}"
        early_flush = _EarlyFlush()
        version = f"v-{uuid.uuid4().hex}"
        version_dir = stage / version
        (version_dir / MEDIA_DIR).mkdir(parents=True)
        try:
            if mode is ImportMode.AUTOREPLACE:
                with open(source, "rb") as f:
                    if detect_kind(f.read(4096)) is not SourceKind.PACKAGE:
                        raise Error("mode AUTOREPLACE needs an app package with attributes.id")
            manifest, app = self._stage(source, version_dir, name, source_name, early_flush)
            now = utc_now_iso()
            attrs = manifest.attributes
            if mode is ImportMode.NEW:
                attrs.update(
                    id=str(uuid.uuid4()),
                    createdDate=now,
                    modifiedDate=now,
                    lastReloadTime=now,
                    owner=owner,
                    published=False,
                    publishTime="",
                )
            else:
                if not attrs["id"]:
                    raise Error("mode AUTOREPLACE needs attributes.id in the package's app.json")
                attrs["modifiedDate"] = now
                attrs["lastReloadTime"] = attrs["lastReloadTime"] or now
                attrs["owner"] = attrs["owner"] or owner
            if name:
                attrs["name"] = name
            app_id = attrs["id"]
            with self._app_lock(app_id):
                old = self._index.get(app_id)
                if mode is ImportMode.NEW and old is not None:
                    raise Error(f"app id {app_id!r} exists")  # a UUID clash: never in practice
                if old is not None:
                    attrs["createdDate"] = (
                        attrs["createdDate"] or old.manifest.attributes["createdDate"]
                    )
                    listed = {o["id"] for o in manifest.objects}
                    manifest.objects += [
                        o
                        for o in old.manifest.objects
                        if not o["approved"] and o["id"] not in listed
                    ]
                attrs["createdDate"] = attrs["createdDate"] or now
                (version_dir / MANIFEST_NAME).write_bytes(manifest.to_json())
                entry = self._commit(app_id, stage, version, manifest, old)
                self._hold(entry, app)
            if old is not None:
                self._notify(app_id, "replaced")
            return dict(attrs)
        finally:
            early_flush.join()
            _remove(stage)
            with contextlib.suppress(FileNotFoundError):
                source.unlink()

    def _stage(
        self,
        source: Path,
        version_dir: Path,
        name: str | None,
        source_name: str | None,
        early_flush: _EarlyFlush,
    ) -> tuple[Manifest, App]:
        """Writes the source's tables and media into version_dir and loads the app."""
        with open(source, "rb") as f:
            kind = detect_kind(f.read(4096))
        if kind is SourceKind.PACKAGE:
            with AppPackage.open(source, self.limits) as package:
                manifest = package.manifest
                for table in manifest.tables:
                    if table.file == MANIFEST_NAME or table.file.startswith(MEDIA_DIR + "/"):
                        raise Error(f"table {table.name!r}: {table.file!r} is not a table path")
                    target = version_dir.joinpath(*table.file.split("/"))
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(package.read(table.file))
                package.extract_media(version_dir)
            early_flush.start(version_dir)

            def read(file: str) -> bytes:
                return version_dir.joinpath(*file.split("/")).read_bytes()

            app = App(build_model(manifest, read))
            if not manifest.attributes["name"]:
                manifest.attributes["name"] = name or _stem(source_name) or app.tables[0]
            return manifest, app
        suffix = ".qvd" if kind is SourceKind.QVD else ".csv"
        table_path = version_dir / "tables" / f"table{suffix}"
        table_path.parent.mkdir()
        os.replace(source, table_path)
        early_flush.start(table_path.parent)
        if kind is SourceKind.QVD:
            app = App.from_qvd(table_path)
        else:
            app = App.from_csv(table_path, name or None)
        table_name = app.tables[0]
        manifest = Manifest(
            tables=[TableEntry(table_name, f"tables/table{suffix}")],
            attributes=normalize_attributes({"name": name or _stem(source_name) or table_name}),
        )
        return manifest, app

    def _commit(
        self, app_id: str, stage: Path, version: str, manifest: Manifest, old: _Entry | None
    ) -> _Entry:
        # Caller holds the app's lock. Everything is flushed before the rename that
        # publishes it, and that rename is flushed before the import answers.
        app_dir = self._apps_dir / app_id
        if old is None:
            if app_dir.exists():  # an unreadable leftover that start-up did not list
                self._discard(app_dir)
            # A new app: CURRENT rides along in the staged folder, one rename publishes both.
            (stage / CURRENT_NAME).write_bytes(version.encode())
            _fsync_tree(stage)
            os.rename(stage, app_dir)
            fsync_dir(self._apps_dir)
        else:
            _fsync_tree(stage / version)
            os.rename(stage / version, app_dir / version)
            current_tmp = app_dir / f".{CURRENT_NAME}.{uuid.uuid4().hex}.tmp"
            current_tmp.write_bytes(version.encode())
            fsync_paths([current_tmp, app_dir])
            os.replace(current_tmp, app_dir / CURRENT_NAME)
            fsync_dir(app_dir)
            self._discard(old.version_dir)
        entry = _Entry(app_id, app_dir / version, manifest, self._app_lock(app_id))
        with self._index_lock:
            self._index[app_id] = entry
        return entry

    def _discard(self, path: Path) -> None:
        """Moves a path to the trash (one rename), then removes it."""
        target = self._trash_dir / f"{path.name}-{uuid.uuid4().hex}"
        os.rename(path, target)
        fsync_dir(path.parent)
        _remove(target)

    # ---- deleting --------------------------------------------------------------------

    def delete(self, app_id: str) -> None:
        """Deletes an app from disk and memory."""
        with self._app_lock(app_id):
            self._entry(app_id)
            self._discard(self._apps_dir / app_id)
            with self._index_lock:
                self._index.pop(app_id, None)
        self._notify(app_id, "deleted")

    # ---- media -----------------------------------------------------------------------

    def _media_path(self, entry: _Entry, path: str) -> Path:
        """The file or folder `path` names under the app's media root; never outside it."""
        root = entry.media_root
        if path in ("", "/"):
            return root
        try:
            check_entry_name(path)
        except Error as exc:
            raise BadMediaPath(f"bad media path: {exc}") from None
        target = root
        for part in path.rstrip("/").split("/"):
            target = target / part
            if target.is_symlink():
                raise MediaNotFound(f"no media {path!r}")
        return target

    def media_file(self, app_id: str, path: str) -> Path:
        """The path of a media file on disk (valid until the app changes)."""
        with self._app_lock(app_id):
            target = self._media_path(self._entry(app_id), path)
            if not target.is_file() or path.endswith("/"):
                raise MediaNotFound(f"no media file {path!r}")
            return target

    def open_media_file(self, app_id: str, path: str) -> BinaryIO:
        """A media file opened for reading: it stays readable whatever happens to the app."""
        with self._app_lock(app_id):
            return open(self.media_file(app_id, path), "rb")

    def open_thumbnail(self, app_id: str) -> BinaryIO:
        """The file the app's thumbnail attribute names, opened for reading."""
        with self._app_lock(app_id):
            name = self._entry(app_id).manifest.attributes["thumbnail"]
            if not name:
                raise MediaNotFound("the app has no thumbnail")
            return self.open_media_file(app_id, name)

    def media_list(self, app_id: str, path: str, form: ListForm) -> list[str]:
        """Media names under a folder, relative to the media root; folders end in '/'."""
        with self._app_lock(app_id):
            return self._media_list(self._entry(app_id), path, form)

    def _media_list(self, entry: _Entry, path: str, form: ListForm) -> list[str]:
        folder = self._media_path(entry, path)
        if not folder.is_dir():
            raise MediaNotFound(f"no media folder {path!r}")
        root = entry.media_root
        if form is ListForm.FLAT:
            out = []
            for child in sorted(folder.iterdir()):
                rel = child.relative_to(root).as_posix()
                if child.is_symlink():
                    continue
                if child.is_file():
                    out.append(rel)
                elif child.is_dir() and not any(child.iterdir()):
                    out.append(rel + "/")
            return out
        prefix = folder.relative_to(root).as_posix()
        prefix = "" if prefix == "." else prefix + "/"
        return [
            prefix + rel
            for _path, rel in iter_media_files(folder)
            if form is ListForm.ALL or not rel.endswith("/")
        ]

    def put_media(self, app_id: str, path: str, source: Path) -> None:
        """Stores an uploaded file (consumed) as a media file, replacing any file there."""
        try:
            with self._app_lock(app_id):
                entry = self._entry(app_id)
                target = self._media_path(entry, path)
                if path.endswith("/") or target == entry.media_root or target.is_dir():
                    raise BadMediaPath(f"media path {path!r} names a folder")
                parent = entry.media_root
                for part in path.split("/")[:-1]:
                    parent = parent / part
                    if parent.exists() and not parent.is_dir():
                        raise BadMediaPath(f"{parent.relative_to(entry.media_root)} is a file")
                    if not parent.exists():
                        parent.mkdir()
                        fsync_dir(parent.parent)
                with open(source, "rb+") as f:
                    os.fsync(f.fileno())
                os.replace(source, target)
                fsync_dir(target.parent)
        finally:
            with contextlib.suppress(FileNotFoundError):
                source.unlink()

    def delete_media(self, app_id: str, path: str) -> None:
        """Deletes a media file or a whole media folder."""
        with self._app_lock(app_id):
            entry = self._entry(app_id)
            target = self._media_path(entry, path)
            if target == entry.media_root:
                raise BadMediaPath("the media root itself cannot be deleted")
            if target.is_file():
                target.unlink()
                fsync_dir(target.parent)
            elif target.is_dir():
                self._discard(target)
            else:
                raise MediaNotFound(f"no media {path!r}")

    # ---- export ----------------------------------------------------------------------

    def export(self, app_id: str, out: BinaryIO) -> None:
        """Writes the app as a package that imports back to the same data, attributes and media."""
        with self.using(app_id) as app, self._entry(app_id).lock:
            entry = self._entry(app_id)
            write_package(
                app.tables, app.write_qvd, entry.manifest, entry.media_root, out, str(self.tmp_dir)
            )


LOCK_NAME = ".lock"


def _lock_data_dir(data_dir: Path) -> BinaryIO:
    """An exclusive lock on the data dir, held while the returned file is open.

    Two services on one data dir would remove each other's uploads at start-up.
    """
    f = open(data_dir / LOCK_NAME, "ab")  # noqa: SIM115 - held open as the lock
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise Error(f"data dir {str(data_dir)!r} is in use by another assoc process") from None
    return f


def check_data_dir(data_dir: str | os.PathLike[str]) -> None:
    """Raises assoc.Error when another process holds the data dir (a check before start-up)."""
    path = Path(data_dir)
    path.mkdir(parents=True, exist_ok=True)
    _lock_data_dir(path).close()


def _stem(filename: str | None) -> str:
    if not filename:
        return ""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] if "." in base[1:] else base


def _read_current(app_dir: Path) -> str | None:
    try:
        current = (app_dir / CURRENT_NAME).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not current or "/" in current or not (app_dir / current).is_dir():
        return None
    return current


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
