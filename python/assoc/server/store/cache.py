"""The loaded-app cache: which committed apps are in memory, leases that keep them there, and
eviction of idle ones beyond the memory budget."""

from __future__ import annotations

import json
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assoc.app import App
from assoc.package import Manifest
from assoc.server.store.errors import AppNotFound
from assoc.server.store.media import MEDIA_DIR


def serialise(metadata: dict[str, Any]) -> bytes:
    """Metadata as the compact JSON the service answers."""
    return json.dumps(metadata, separators=(",", ":")).encode("utf-8")


@dataclass(eq=False)
class Entry:
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
    leases: int = 0

    @property
    def media_root(self) -> Path:
        """The folder of the app's media files."""
        return self.version_dir / MEDIA_DIR


class Lease:
    """A loaded app held in memory (never evicted) until `release()`; also a context manager."""

    def __init__(self, entry: Entry, app: App, release: Callable[[Entry], None]) -> None:
        self.app = app
        self._entry = entry
        self._release = release
        self._released = False
        self._lock = threading.Lock()

    @property
    def entry(self) -> Entry:
        """The committed version this lease holds."""
        return self._entry

    def release(self) -> None:
        """Lets the store evict the app again; a second call does nothing."""
        with self._lock:
            if self._released:
                return
            self._released = True
        self._release(self._entry)

    def __enter__(self) -> App:
        return self.app

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass(frozen=True)
class DocUsage:
    """Which apps are leased, held by the store, and alive in memory."""

    active: list[str]
    loaded: list[str]
    in_memory: list[str]


class AppCache:
    """Committed apps by id; loads them on demand and evicts idle ones over the budget."""

    def __init__(self, memory_budget_bytes: int, load: Callable[[Entry], App]) -> None:
        self.memory_budget_bytes = memory_budget_bytes
        self._load = load
        self.entries: dict[str, Entry] = {}
        self.lock = threading.Lock()
        # For the metrics: loaded apps dropped over the budget; loads of stored apps.
        self.evictions = 0
        self.loads = 0
        self.load_seconds = 0.0
        self.load_bytes = 0

    def entry(self, app_id: str) -> Entry:
        """The committed entry of an app; AppNotFound when there is none."""
        entry = self.entries.get(app_id)
        if entry is None:
            raise AppNotFound(f"no app with id {app_id!r}")
        return entry

    def lease(self, app_id: str) -> Lease:
        """The loaded app, loading it first when needed; it stays in memory until released."""
        while True:
            with self.lock:
                entry = self.entry(app_id)
                entry.leases += 1
            try:
                app = self._loaded(entry)
            except BaseException:
                self._release(entry)
                raise
            if app is not None:
                return Lease(entry, app, self._release)
            self._release(entry)  # replaced or deleted meanwhile: look again

    def _release(self, entry: Entry) -> None:
        with self.lock:
            entry.leases -= 1
            entry.last_used = time.monotonic()

    def _loaded(self, entry: Entry) -> App | None:
        """The entry's app, loaded if needed; None when the entry is no longer current."""
        app = entry.app
        if app is not None:
            return app
        with entry.lock:
            if self.entries.get(entry.app_id) is not entry:
                return None  # its files may be gone: replaces and deletes hold this lock
            app = entry.app
            if app is None:
                started = time.perf_counter()
                app = self._load(entry)
                self.hold(entry, app)
                with self.lock:
                    self.loads += 1
                    self.load_seconds += time.perf_counter() - started
                    self.load_bytes += entry.byte_size
            return app

    def hold(self, entry: Entry, app: App) -> None:
        """Keeps a loaded app in memory (and its serialised metadata), evicting others."""
        metadata = app.metadata()
        # Under section access the metadata is each user's (AppStore.metadata_json).
        metadata_json = serialise(metadata) if app.access is None else None
        with self.lock:
            entry.app = app
            entry.app_ref = weakref.ref(app)
            entry.byte_size = int(metadata["static_byte_size"])
            entry.metadata_json = metadata_json
            entry.last_used = time.monotonic()
            self._evict_over_budget(keep=entry)

    def _evict_over_budget(self, keep: Entry) -> None:
        # Caller holds the lock.
        if self.memory_budget_bytes <= 0:
            return
        loaded = [e for e in self.entries.values() if e.app is not None]
        total = sum(e.byte_size for e in loaded)
        for victim in sorted(loaded, key=lambda e: e.last_used):
            if total <= self.memory_budget_bytes:
                break
            if victim is keep or victim.leases:
                continue
            victim.app = None
            victim.metadata_json = None
            total -= victim.byte_size
            self.evictions += 1

    def cached_metadata_json(self, app_id: str) -> bytes | None:
        """The metadata JSON when it is at hand (no loading, no waiting), else None."""
        entry = self.entries.get(app_id)
        if entry is None:
            return None
        data = entry.metadata_json
        if data is not None:
            entry.last_used = time.monotonic()
        return data

    def usage(self) -> DocUsage:
        """Apps leased now, held by the cache, and alive in memory."""
        with self.lock:
            entries = sorted(self.entries.values(), key=lambda e: e.app_id)
            active = [e.app_id for e in entries if e.leases]
            loaded = [e.app_id for e in entries if e.app is not None]
            in_memory = [
                e.app_id for e in entries if e.app_ref is not None and e.app_ref() is not None
            ]
        return DocUsage(active, loaded, in_memory)

    def loaded_bytes(self) -> int:
        """Static bytes of the apps held in memory."""
        with self.lock:
            return sum(e.byte_size for e in self.entries.values() if e.app is not None)
