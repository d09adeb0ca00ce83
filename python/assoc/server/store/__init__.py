"""The durable app store: apps on disk under a data dir, loaded lazily, evicted over a budget.

One concern a module: `files` (flushing, the data-dir lock), `versions` (the on-disk layout,
recovery, commits), `cache` (loaded apps, leases, eviction), `imports`, `media`, `export`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from assoc import Error
from assoc.access import DENIED
from assoc.app import App
from assoc.package import (
    MANIFEST_NAME,
    MAX_MANIFEST_BYTES,
    Manifest,
    PackageLimits,
    normalize_attributes,
)
from assoc.qvd_stream import QvdStream
from assoc.server.store import media
from assoc.server.store.admission import (
    WORK_BYTES_PER_SOURCE_BYTE,
    LoadGate,
    load_capacity,
    load_work_bytes,
)
from assoc.server.store.cache import AppCache, DocUsage, Entry, Lease, serialise
from assoc.server.store.errors import (
    AppExists,
    AppIdRequired,
    AppNotFound,
    BadMediaPath,
    DataDirInUse,
    ImportTooLarge,
    InvalidAppFile,
    MediaNotFound,
    StoredAppUnreadable,
    StoreUnavailable,
    VersionConflict,
)
from assoc.server.store.export import export_app
from assoc.server.store.files import EarlyFlush, check_data_dir, lock_data_dir, remove
from assoc.server.store.imports import (
    ImportMode,
    carry_over,
    import_limits,
    set_attributes,
    source_kind,
    stage,
    stage_stream,
    stored_tables,
    table_stage,
)
from assoc.server.store.media import MEDIA_DIR, ListForm
from assoc.server.store.reloads import reload_manifest, stage_tables
from assoc.server.store.s3 import ObjectStore, Pointer, StreamUpload
from assoc.server.store.saves import saved_manifest, stage_unchanged
from assoc.server.store.shared import SharedApps
from assoc.server.store.versions import VersionDirs
from assoc.sources import SourceKind, load_model

__all__ = [
    "AppExists",
    "AppIdRequired",
    "AppNotFound",
    "AppStore",
    "BadMediaPath",
    "DataDirInUse",
    "DocUsage",
    "ImportMode",
    "ImportTooLarge",
    "InvalidAppFile",
    "Lease",
    "ListForm",
    "MediaNotFound",
    "ObjectStore",
    "StoreUnavailable",
    "StoredAppUnreadable",
    "VersionConflict",
    "check_data_dir",
]

Listener = Callable[[str, str], None]
log = logging.getLogger("assoc.server.store")


class AppStore:
    """Apps kept durably under a data dir; safe for concurrent imports, deletes and reads.

    With `objects` (an object store), the apps live there and the data dir is this node's
    cache of them (see `shared`)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        memory_budget_bytes: int = 0,
        limits: PackageLimits | None = None,
        objects: ObjectStore | None = None,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.limits = limits or import_limits(memory_budget_bytes)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock_file = lock_data_dir(self.data_dir)
        self.load_gate = LoadGate(load_capacity(memory_budget_bytes))
        self._cache = AppCache(memory_budget_bytes, self._load)
        # Each app's lock, kept while something holds it: an app's cache entry, or a caller
        # inside it. A request naming an app that does not exist leaves nothing behind.
        self._app_locks: weakref.WeakValueDictionary[str, threading.RLock] = (
            weakref.WeakValueDictionary()
        )
        self._listeners: list[Listener] = []
        # What is staged for uploads (stage_upload), by the upload's path.
        self._staged: dict[Path, _Staged] = {}
        self._staged_lock = threading.Lock()
        self._create_lock = threading.Lock()  # one CreateApp at a time checks the names
        try:
            self._dirs = VersionDirs(self.data_dir)
            for app_id, version_dir, manifest in self._dirs.recover():
                self._cache.entries[app_id] = Entry(
                    app_id, version_dir, manifest, self._app_lock(app_id)
                )
        except BaseException:
            self.close()
            raise
        self.tmp_dir = self._dirs.tmp_dir
        self.shared = SharedApps(objects, self) if objects is not None else None

    @property
    def memory_budget_bytes(self) -> int:
        """Loaded apps beyond this many static bytes are evicted when idle (0: no budget)."""
        return self._cache.memory_budget_bytes

    def close(self) -> None:
        """Lets another store open the data dir (the apps stay on disk)."""
        self._lock_file.close()
        if self.shared is not None:
            self.shared.objects.close()

    def __enter__(self) -> AppStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fresh(self, app_id: str) -> None:
        """With an object store: the cached app revalidated against its pointer first."""
        if self.shared is not None:
            self.shared.refresh(app_id)

    def _app_lock(self, app_id: str) -> threading.RLock:
        with self._cache.lock:
            lock = self._app_locks.get(app_id)
            if lock is None:
                lock = self._app_locks[app_id] = threading.RLock()
            return lock

    # ---- change notices --------------------------------------------------------------

    def subscribe(self, callback: Listener) -> Callable[[], None]:
        """Calls callback(app_id, "deleted" | "replaced") after each delete or replacing
        import commits, from the thread that committed it; returns the unsubscribe function."""
        with self._cache.lock:
            self._listeners.append(callback)

        def unsubscribe() -> None:
            with self._cache.lock, contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return unsubscribe

    def _notify(self, app_id: str, event: str) -> None:
        with self._cache.lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(app_id, event)
            except Exception:  # the change is committed: a listener's failure cannot undo it
                log.exception("a store listener failed on %s %s", event, app_id)

    # ---- reading ---------------------------------------------------------------------

    def app_ids(self) -> list[str]:
        """Ids of every stored app, sorted (the cached ones while the object store does not
        answer)."""
        if self.shared is not None:
            try:
                return self.shared.app_ids()
            except StoreUnavailable:
                pass
        return sorted(self._cache.entries)

    def attributes(self, app_id: str) -> dict[str, Any]:
        """The app's NxAttributes."""
        self._fresh(app_id)
        return dict(self._cache.entry(app_id).manifest.attributes)

    def objects(self, app_id: str) -> list[dict[str, Any]]:
        """The app's objects (sheets, stories, …) with their approved flag."""
        self._fresh(app_id)
        return list(self._cache.entry(app_id).manifest.objects)

    def list_attributes(self) -> list[dict[str, Any]]:
        """NxAttributes of every app, ordered by name then id."""
        if self.shared is not None:
            return self.shared.list_attributes()
        attrs = [dict(e.manifest.attributes) for e in list(self._cache.entries.values())]
        return sorted(attrs, key=lambda a: (a["name"].lower(), a["id"]))

    def lease(self, app_id: str) -> Lease:
        """The loaded app (`.app`), never evicted until `.release()`; AppNotFound if unknown."""
        self._fresh(app_id)
        return self._cache.lease(app_id)

    @contextlib.contextmanager
    def using(self, app_id: str) -> Iterator[App]:
        """The loaded app for the block's duration (a lease released at its end)."""
        with self.lease(app_id) as app:
            yield app

    def metadata_json(self, app_id: str, user: str = "", groups: Sequence[str] = ()) -> bytes:
        """DataModelMetadata as JSON, made once per loaded app (the model is immutable). An
        app with section access answers the app as `user` (of `groups`) opens it, reduced;
        assoc.Error("Access denied") when its access table does not list them."""
        with self.lease(app_id) as app:
            if app.access is not None:
                return serialise(app.metadata(app.reduction(user, groups)))
            # Loading made it; only a replacement right after can have dropped it.
            return self._cache.cached_metadata_json(app_id) or serialise(app.metadata())

    def cached_metadata_json(self, app_id: str) -> bytes | None:
        """The metadata JSON when it is at hand (no loading, no waiting), else None (always
        with an object store: its pointer is to be revalidated first)."""
        if self.shared is not None:
            return None
        return self._cache.cached_metadata_json(app_id)

    def usage(self) -> DocUsage:
        """Apps leased now, held by the store, and alive in memory."""
        return self._cache.usage()

    def loaded_bytes(self) -> int:
        """Static bytes of the apps the store holds in memory."""
        return self._cache.loaded_bytes()

    @property
    def evictions(self) -> int:
        """Loaded apps evicted over the memory budget since start-up."""
        return self._cache.evictions

    def load_totals(self) -> tuple[int, float, int]:
        """Loads of stored apps since start-up: how many, their seconds and their bytes."""
        cache = self._cache
        return cache.loads, cache.load_seconds, cache.load_bytes

    # ---- imports ---------------------------------------------------------------------

    def new_upload_path(self) -> Path:
        """A fresh path under tmp/ for an upload; start-up removes any left there."""
        return self.tmp_dir / f"upload-{uuid.uuid4().hex}"

    def discard_uploads(self) -> None:
        """Removes the upload files of requests that were dropped, and what was staged for
        them (at shutdown: the requests cancelled after ShutdownTimeout may not get to remove
        their own)."""
        for path in self.tmp_dir.glob("upload-*"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        with self._staged_lock:
            staged, self._staged = self._staged, {}
        for upload in staged.values():
            upload.discard()

    def stage_upload(self) -> Path:
        """Where a QVD file that streams into a NEW import is written: its table file in the
        folders of the version it is to become, made as the file starts to arrive, so that
        less is left to do once it has. `import_file` of that path, with the stream (which
        must flush the file: `sync`), takes them over; `discard_upload` removes them.

        With an object store, the app's id is chosen now and the file is also uploaded to the
        store as it arrives (`upload_copy`), to its key in the new version."""
        stage_dir, version_dir = self._dirs.new_stage(with_current=True)
        try:
            path = table_stage(version_dir, SourceKind.QVD)
            staged = _Staged(stage_dir, version_dir)
            if self.shared is not None:
                staged.app_id = str(uuid.uuid4())
                rel = path.relative_to(version_dir).as_posix()
                key = ObjectStore.version_prefix(staged.app_id, version_dir.name) + rel
                staged.copies[rel] = self.shared.objects.stream_upload(key)
        except BaseException:
            remove(stage_dir)
            raise
        with self._staged_lock:
            self._staged[path] = staged
        return path

    def upload_copy(self, path: Path) -> StreamUpload | None:
        """Where else the bytes of a file staged by `stage_upload` go as they arrive (the
        object store's upload of it), or None."""
        with self._staged_lock:
            staged = self._staged.get(path)
        if staged is None or not staged.copies:
            return None
        return next(iter(staged.copies.values()))

    def discard_upload(self, path: Path) -> None:
        """Removes an upload's file, and what was staged for it (an upload to the object
        store is given up)."""
        with self._staged_lock:
            staged = self._staged.pop(path, None)
        if staged is not None:
            staged.discard()
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def admit_upload(self, size: int) -> contextlib.AbstractContextManager[None]:
        """Room in the load gate for importing a table file of `size` bytes, held for the block
        (taken before an upload is parsed as it arrives)."""
        return self.load_gate.admit(size * WORK_BYTES_PER_SOURCE_BYTE)

    def import_file(
        self,
        source: Path,
        *,
        name: str | None = None,
        mode: ImportMode = ImportMode.NEW,
        owner: str = "",
        source_name: str | None = None,
        qvd: QvdStream | None = None,
        admission: contextlib.AbstractContextManager[object] | None = None,
    ) -> dict[str, Any]:
        """Imports a package, QVD or CSV file (consumed) and commits it; returns its attributes.

        `qvd`: a NEW import's QVD parsed as it arrived into the path `stage_upload` gave it
        (committed in the folders staged for it), under `admission` (room that `admit_upload`
        made, released once the app is loaded)."""
        with self._staged_lock:
            popped = self._staged.pop(source, None)
        staged = popped if popped is not None else _Staged(*self._dirs.new_stage())
        stage_dir, version_dir = staged.stage_dir, staged.version_dir
        early_flush = EarlyFlush()
        try:
            if (qvd is None) != (popped is None):
                raise ValueError("a QvdStream's file, and only one, comes from stage_upload")
            streamed = qvd is not None
            kind = SourceKind.QVD if streamed else source_kind(source)
            if mode is ImportMode.AUTOREPLACE and kind is not SourceKind.PACKAGE:
                raise AppIdRequired("mode AUTOREPLACE needs an app package with attributes.id")
            # Staging is the import's working memory; the commit below needs none and waits for
            # the app's lock, which a load holds while it waits here (so no cycle).
            if admission is None:
                admission = self.load_gate.admit(load_work_bytes([source]))
            with admission:
                if qvd is not None:  # written into its stage and flushed by the stream
                    manifest, app, written = stage_stream(
                        stage_dir, source, qvd, name, source_name, owner, early_flush, staged.app_id
                    )
                    attrs = manifest.attributes
                else:
                    manifest, app = stage(
                        source, kind, version_dir, name, source_name, self.limits, early_flush
                    )
                    attrs, written = set_attributes(manifest, mode, name, owner), b""
            app_id = attrs["id"]
            with self._app_lock(app_id):
                if mode is ImportMode.AUTOREPLACE and self.shared is not None:
                    self.shared.refresh(app_id)  # the store's current version is replaced
                old = self._cache.entries.get(app_id)
                if mode is ImportMode.NEW and old is not None:
                    raise AppExists(f"app id {app_id!r} exists")  # a UUID clash: never in practice
                carry_over(manifest, old.manifest if old is not None else None)
                flushed = early_flush.join() | ({str(source)} if streamed else set())
                copies, staged.copies = staged.copies, {}  # the commit's from here on
                self._publish(app_id, version_dir, manifest, app, old, flushed, written, copies)
            if old is not None:
                self._notify(app_id, "replaced")
            return dict(attrs)
        finally:
            staged.abandon_copies()
            early_flush.wait()
            remove(stage_dir)
            with contextlib.suppress(FileNotFoundError):
                source.unlink()

    def _publish(
        self,
        app_id: str,
        version_dir: Path,
        manifest: Manifest,
        app: App | None,
        old: Entry | None,
        flushed: frozenset[str] = frozenset(),
        written: bytes = b"",
        streamed: dict[str, StreamUpload] | None = None,
    ) -> None:
        """Commits a staged version and holds its loaded app (the app's lock held); the files
        in `flushed` are on disk already, app.json too if it holds `written`; those in
        `streamed` (by key in the version) are being uploaded to the object store already."""
        manifest_path = version_dir / MANIFEST_NAME
        data = manifest.to_json()
        if len(data) > MAX_MANIFEST_BYTES:  # it would not load again: keep the old version
            raise Error(f"{MANIFEST_NAME} would be larger than {MAX_MANIFEST_BYTES} bytes")
        if data != written:
            manifest_path.write_bytes(data)
            flushed -= {str(manifest_path)}
        pointer: Pointer | None = None
        if self.shared is not None:  # the commit: the store's pointer swapped to it
            pointer = self.shared.commit(app_id, version_dir, manifest, old, streamed)
        try:
            committed = self._dirs.commit(
                app_id, version_dir, old.version_dir if old is not None else None, flushed
            )
        except BaseException:
            if self.shared is not None:
                self.shared.committed(app_id, None)
            raise
        if self.shared is not None:
            self.shared.committed(app_id, pointer)
        entry = Entry(app_id, committed, manifest, self._app_lock(app_id))
        with self._cache.lock:
            self._cache.entries[app_id] = entry
        if app is not None:
            self._cache.hold(entry, app)

    # ---- new apps ----------------------------------------------------------------------

    def create(self, name: str, script: str, owner: str = "") -> dict[str, Any]:
        """Commits a new app named `name` with no data, `script` its load script and never
        reloaded (QIX CreateApp), as durably as an import; returns its attributes. AppExists
        when an app has that name already (names are how clients open what they created)."""
        stage_dir, version_dir = self._dirs.new_stage()
        try:
            (version_dir / MEDIA_DIR).mkdir()
            manifest = Manifest(tables=[], attributes=normalize_attributes({}), script=script)
            attrs = set_attributes(manifest, ImportMode.NEW, name, owner)
            attrs["lastReloadTime"] = ""  # as Qlik shows an app never reloaded
            carry_over(manifest, None)
            app = App(load_model([]))
            app_id = attrs["id"]
            with self._create_lock:
                if any(a["name"] == name for a in self.list_attributes()):
                    raise AppExists(f"an app named {name!r} exists")
                with self._app_lock(app_id):
                    self._publish(app_id, version_dir, manifest, app, None)
            return dict(attrs)
        finally:
            remove(stage_dir)

    # ---- reloads ---------------------------------------------------------------------

    def script(self, app_id: str) -> tuple[str, list[dict[str, str]]]:
        """The app's load script and folder connections (app.json "script", "connections")."""
        self._fresh(app_id)
        manifest = self._cache.entry(app_id).manifest
        return manifest.script, [dict(c) for c in manifest.connections]

    def library(self, app_id: str) -> dict[str, list[dict[str, Any]]]:
        """The app's master items, variables and bookmarks (app.json "dimensions", …)."""
        manifest = self._cache.entry(app_id).manifest
        return {key: [dict(item) for item in items] for key, items in manifest.library.items()}

    def states(self, app_id: str) -> list[str]:
        """The app's alternate states (app.json "states")."""
        return list(self._cache.entry(app_id).manifest.states)

    def app_properties(self, app_id: str) -> dict[str, Any]:
        """The app properties a client set and saved (app.json "properties")."""
        return dict(self._cache.entry(app_id).manifest.properties)

    def commit_save(
        self,
        app_id: str,
        app: App,
        objects: list[dict[str, Any]],
        library: dict[str, list[dict[str, Any]]],
        states: list[str],
        properties: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Stores an app's objects, library, alternate states and app properties (kept as
        they were when None) as its new version (QIX DoSave), as durably as an import; the
        data files are the old version's (hard links). `app` is the loaded app, served by the
        new version. Sessions that hold the old version go on with it. Returns the new
        attributes."""
        stage_dir, version_dir = self._dirs.new_stage()
        try:
            with self._app_lock(app_id):
                old = self._cache.entry(app_id)
                stage_unchanged(old, version_dir)
                kept = old.manifest.properties if properties is None else properties
                manifest = saved_manifest(old, objects, library, states, kept)
                self._publish(app_id, version_dir, manifest, app, old)
            return dict(manifest.attributes)
        finally:
            remove(stage_dir)

    def commit_reload(
        self,
        app_id: str,
        app: App,
        script: str,
        connections: list[dict[str, str]],
        variables: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Commits a reloaded app as the app's new version, as durably as an import (the old
        version is served until then); `variables`, when given, replace the app's variables
        (the script's with the others). Returns the new attributes."""
        stage_dir, version_dir = self._dirs.new_stage()
        try:
            tables = stage_tables(app, version_dir)
            with self._app_lock(app_id):
                old = self._cache.entry(app_id)
                manifest = reload_manifest(
                    old, version_dir, tables, script, connections, app.annotations
                )
                manifest.interpretation = app.interpretation
                if variables is not None:
                    manifest.library["variables"] = variables
                self._publish(app_id, version_dir, manifest, app, old)
            self._notify(app_id, "replaced")
            return dict(manifest.attributes)
        finally:
            remove(stage_dir)

    def is_current(self, lease: Lease) -> bool:
        """True while the leased version is still the app's committed one."""
        return self._cache.entries.get(lease.entry.app_id) is lease.entry

    # ---- deleting --------------------------------------------------------------------

    def delete(self, app_id: str) -> None:
        """Deletes an app from disk and memory."""
        with self._app_lock(app_id):
            if self.shared is not None:
                self.shared.require(app_id)
                self.shared.delete(app_id)
            self._cache.entry(app_id)
            self._dirs.delete(app_id)
            with self._cache.lock:
                self._cache.entries.pop(app_id, None)
        self._notify(app_id, "deleted")

    # ---- media -----------------------------------------------------------------------

    def media_file(self, app_id: str, path: str) -> Path:
        """The path of a media file on disk (valid until the app changes)."""
        self._fresh(app_id)
        with self._app_lock(app_id):
            return media.media_file(self._cache.entry(app_id).media_root, path)

    def open_media_file(self, app_id: str, path: str) -> BinaryIO:
        """A media file opened for reading: it stays readable whatever happens to the app."""
        with self._app_lock(app_id):
            return open(self.media_file(app_id, path), "rb")

    def open_thumbnail(self, app_id: str) -> BinaryIO:
        """The file the app's thumbnail attribute names, opened for reading."""
        self._fresh(app_id)
        with self._app_lock(app_id):
            name = self._cache.entry(app_id).manifest.attributes["thumbnail"]
            if not name:
                raise MediaNotFound("the app has no thumbnail")
            return self.open_media_file(app_id, name)

    def media_list(self, app_id: str, path: str, form: ListForm) -> list[str]:
        """Media names under a folder, relative to the media root; folders end in '/'."""
        self._fresh(app_id)
        with self._app_lock(app_id):
            return media.list_media(self._cache.entry(app_id).media_root, path, form)

    def put_media(self, app_id: str, path: str, source: Path) -> None:
        """Stores an uploaded file (consumed) as a media file, replacing any file there."""
        try:
            with self._app_lock(app_id):
                if self.shared is not None:
                    self._new_media_version(
                        app_id, lambda root: media.put_media(root, path, source)
                    )
                    return
                media.put_media(self._cache.entry(app_id).media_root, path, source)
        finally:
            with contextlib.suppress(FileNotFoundError):
                source.unlink()

    def delete_media(self, app_id: str, path: str) -> None:
        """Deletes a media file or a whole media folder."""
        with self._app_lock(app_id):
            if self.shared is not None:
                self._new_media_version(app_id, lambda root: _delete_media_in(root, path))
                return
            folder = media.delete_media(self._cache.entry(app_id).media_root, path)
            if folder is not None:
                self._dirs.discard(folder)

    def _new_media_version(self, app_id: str, change: Callable[[Path], object]) -> None:
        """With an object store, where versions never change: commits a copy of the app's
        current version with `change` made to its media folder (the app's lock held)."""
        assert self.shared is not None
        self.shared.refresh(app_id)
        old = self._cache.entry(app_id)
        stage_dir, version_dir = self.shared.stage_copy(old)
        try:
            (version_dir / MEDIA_DIR).mkdir(exist_ok=True)
            change(version_dir / MEDIA_DIR)
            manifest = Manifest.parse(old.manifest.to_json())
            self._publish(app_id, version_dir, manifest, old.app, old)
        finally:
            remove(stage_dir)

    def collect_garbage(self, grace_seconds: float) -> list[tuple[str, str]]:
        """With an object store, the janitor: removes versions no pointer names that nothing
        wrote to for `grace_seconds`; returns the (app id, version) pairs removed."""
        return self.shared.collect_garbage(grace_seconds) if self.shared is not None else []

    # ---- export ----------------------------------------------------------------------

    def export(
        self, app_id: str, out: BinaryIO, user: str = "", groups: Iterable[str] = ()
    ) -> None:
        """Writes the app as a package that imports back to the same data, attributes and media.
        An app with section access goes only to a user its access table gives everything (an
        ADMIN row without reduction or OMIT); others get assoc.Error("Access denied")."""
        self._fresh(app_id)
        with self.lease(app_id) as app, self._app_lock(app_id):
            if app.access is not None and not app.access.sees_everything(user, groups):
                raise Error(DENIED)
            export_app(app, self._cache.entry(app_id), out, self.tmp_dir)

    def _load(self, entry: Entry) -> App:
        """A committed app loaded from its files, admitted by the memory the load needs."""
        tables = stored_tables(entry.version_dir, entry.manifest)
        try:
            need = load_work_bytes([path for path, _ in tables])
            with self.load_gate.admit(need, urgent=True):
                model = load_model(tables, interpretation=entry.manifest.interpretation)
                return App(model, entry.manifest.annotations)
        except Error as exc:
            raise StoredAppUnreadable(f"app {entry.app_id!r} cannot be loaded: {exc}") from exc


@dataclass
class _Staged:
    """What is staged for one import: its folders, and with an object store the app id it
    was given and the uploads of its files to the store under way (by key in the version)."""

    stage_dir: Path
    version_dir: Path
    app_id: str | None = None
    copies: dict[str, StreamUpload] = field(default_factory=dict)

    def abandon_copies(self) -> None:
        """Gives up the uploads to the store (nothing of them stays there)."""
        copies, self.copies = self.copies, {}
        for copy in copies.values():
            copy.abandon()

    def discard(self) -> None:
        """Gives up the uploads and removes the folders."""
        self.abandon_copies()
        remove(self.stage_dir)


def _delete_media_in(root: Path, path: str) -> None:
    """Deletes a media file or folder from a staged version's media folder."""
    folder = media.delete_media(root, path)
    if folder is not None:
        remove(folder)
