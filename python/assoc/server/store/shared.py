"""The data dir as a cache of an object store (`AppStore=s3://…`): the store's pointers say
which version of each app is current; the data dir holds the versions this node has used.

Every read revalidates the app's pointer first (a conditional GET: 304 when unchanged), so a
commit on any node is what every node serves next. Commits upload the new version, swap the
pointer, and only then publish the version in the data dir. When the store does not answer,
cached apps keep serving reads; writes and apps not cached fail with StoreUnavailable.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assoc.package import MANIFEST_NAME, Manifest
from assoc.server.store.cache import Entry
from assoc.server.store.errors import AppNotFound, StoreUnavailable
from assoc.server.store.files import remove
from assoc.server.store.s3 import NotModified, ObjectStore, Pointer, StreamUpload, VersionGone
from assoc.server.threads import name_os_thread

if TYPE_CHECKING:
    from assoc.server.store import AppStore

log = logging.getLogger("assoc.server.store")

_FETCH_TRIES = 3


class SharedApps:
    """What one node knows of the store's pointers, and the moves between store and cache."""

    def __init__(self, objects: ObjectStore, store: AppStore) -> None:
        self.objects = objects
        self._store = store
        # The pointer each cached app was last seen with (its version is the cached one).
        self._known: dict[str, Pointer] = {}
        # Attributes of pointers read for listings, by ETag (listing needs no version).
        self._listed: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    # ---- reading -------------------------------------------------------------------

    def refresh(self, app_id: str) -> None:
        """Makes the cached app the store's current version (fetching it if needed); drops it
        when the store has none. The store unreachable: a cached app is served as it is,
        an app not cached raises StoreUnavailable."""
        store = self._store
        events: list[str] = []
        with store._app_lock(app_id):
            for _ in range(_FETCH_TRIES):
                if self._refresh_once(app_id, events):
                    break
        for event in events:
            store._notify(app_id, event)

    def _refresh_once(self, app_id: str, events: list[str]) -> bool:
        """One revalidation; False when the version read was removed meanwhile (try again)."""
        store = self._store
        cache = store._cache
        entry = cache.entries.get(app_id)
        known = self._known.get(app_id) if entry is not None else None
        try:
            pointer = self.objects.read_pointer(app_id, known.etag if known else None)
        except NotModified:
            return True
        except StoreUnavailable:
            if entry is not None:
                return True  # the cached version keeps serving reads
            raise
        if pointer is None:
            self._known.pop(app_id, None)
            if entry is not None:
                store._dirs.delete(app_id)
                with cache.lock:
                    cache.entries.pop(app_id, None)
                events.append("deleted")
            return True
        if entry is not None and entry.version_dir.name == pointer.version:
            self._known[app_id] = pointer
            return True
        stage = store.tmp_dir / f"fetch-{uuid.uuid4().hex}"
        try:
            version_dir = stage / pointer.version
            try:
                self.objects.download_version(app_id, pointer.version, version_dir)
            except VersionGone:
                return False
            except StoreUnavailable:
                if entry is not None:
                    return True
                raise
            manifest = Manifest.parse((version_dir / MANIFEST_NAME).read_bytes())
            committed = store._dirs.commit(
                app_id, version_dir, entry.version_dir if entry is not None else None
            )
        finally:
            remove(stage)
        fetched = Entry(app_id, committed, manifest, store._app_lock(app_id))
        with cache.lock:
            cache.entries[app_id] = fetched
        self._known[app_id] = pointer
        if entry is not None:
            events.append("replaced")
        return True

    def app_ids(self) -> list[str]:
        """Ids of every app in the store, sorted."""
        return sorted(self.objects.list_pointers())

    def list_attributes(self) -> list[dict[str, Any]]:
        """NxAttributes of every app in the store (the cached ones' when their pointer is
        the one cached, else the pointer's), ordered by name then id."""
        listed = self.objects.list_pointers()
        out = []
        for app_id, etag in listed.items():
            known = self._known.get(app_id)
            entry = self._store._cache.entries.get(app_id)
            if known is not None and known.etag == etag and entry is not None:
                out.append(dict(entry.manifest.attributes))
                continue
            with self._lock:
                attributes = self._listed.get(etag)
            if attributes is None:
                pointer = self.objects.read_pointer(app_id)
                if pointer is None:
                    continue  # deleted since the listing
                attributes = pointer.attributes
                with self._lock:
                    self._listed[pointer.etag] = attributes
            out.append(dict(attributes))
        with self._lock:  # forget what no listing names any more
            current = set(listed.values())
            self._listed = {k: v for k, v in self._listed.items() if k in current}
        return sorted(out, key=lambda a: (a["name"].lower(), a["id"]))

    # ---- writing -------------------------------------------------------------------

    def commit(
        self,
        app_id: str,
        version_dir: Path,
        manifest: Manifest,
        old: Entry | None,
        streamed: dict[str, StreamUpload] | None = None,
    ) -> Pointer:
        """Uploads a staged version and swaps the app's pointer to it (the app's lock held);
        VersionConflict when the pointer is not the one this node last saw. `streamed`: files
        of the version (by key relative to it) uploaded as they arrived, finished here before
        the swap (given up, with the version, when the commit fails)."""
        streamed = streamed or {}
        try:
            base = self._known.get(app_id) if old is not None else None
            if old is not None and base is None:
                # A cached app whose pointer this node has not read since it started.
                self.refresh(app_id)
                base = self._known.get(app_id)
            reuse = (old.version_dir.name, old.version_dir) if old is not None else None
            self.objects.upload_version(
                app_id, version_dir.name, version_dir, reuse, frozenset(streamed)
            )
            for upload in streamed.values():
                upload.finish()
        except BaseException:
            for upload in streamed.values():
                upload.abandon()
            self._discard_version(app_id, version_dir.name)
            raise
        try:
            pointer = self.objects.swap_pointer(
                app_id, version_dir.name, dict(manifest.attributes), base.etag if base else None
            )
        except BaseException:
            self._known.pop(app_id, None)  # read the pointer again before serving
            self._discard_version(app_id, version_dir.name)
            raise
        return pointer

    def committed(self, app_id: str, pointer: Pointer | None) -> None:
        """Records the pointer of a version published in the cache (None: the cache did not
        take it, so the next read fetches it)."""
        if pointer is None:
            self._known.pop(app_id, None)
        else:
            self._known[app_id] = pointer

    def delete(self, app_id: str) -> None:
        """Removes the app's pointer, then its current version's files (older versions are
        the janitor's)."""
        known = self._known.get(app_id)
        self.objects.delete_pointer(app_id)
        self._known.pop(app_id, None)
        if known is not None:
            self._discard_version(app_id, known.version)

    def _discard_version(self, app_id: str, version: str) -> None:
        try:
            self.objects.delete_version(app_id, version)
        except StoreUnavailable as exc:  # the janitor removes it later
            log.warning("version %s of app %s left for the janitor: %s", version, app_id, exc)

    def stage_copy(self, entry: Entry) -> tuple[Path, Path]:
        """A new staged version with the same files as `entry` (hard links, but app.json),
        for a change of its media."""
        stage_dir, version_dir = self._store._dirs.new_stage()
        shutil.rmtree(version_dir)
        shutil.copytree(entry.version_dir, version_dir, symlinks=True, copy_function=_link)
        (version_dir / MANIFEST_NAME).unlink(missing_ok=True)  # rewritten by the commit
        return stage_dir, version_dir

    def collect_garbage(self, grace_seconds: float) -> list[tuple[str, str]]:
        """The janitor: removes versions no pointer names, older than the grace period."""
        return self.objects.collect_garbage(grace_seconds)

    def require(self, app_id: str) -> None:
        """refresh(), then AppNotFound when the app is not there."""
        self.refresh(app_id)
        if app_id not in self._store._cache.entries:
            raise AppNotFound(f"no app with id {app_id!r}")


def _link(src: str, dst: str) -> None:
    os.link(src, dst)


class Janitor:
    """Runs the store's janitor every `interval` seconds in a thread of its own."""

    def __init__(self, store: AppStore, grace_seconds: float, interval: float) -> None:
        self._store = store
        self._grace = grace_seconds
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="assoc-janitor", daemon=True)

    def start(self) -> None:
        """Starts the thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stops the thread (after the pass under way, if any)."""
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        name_os_thread()
        while not self._stop.wait(self._interval):
            try:
                removed = self._store.collect_garbage(self._grace)
            except Exception as exc:  # the next pass tries again
                log.warning("the app store's janitor failed: %s", exc)
                continue
            if removed:
                log.info("the app store's janitor removed %d old versions", len(removed))
