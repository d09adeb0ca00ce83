"""Committed versions on disk: the layout, start-up recovery, commits and removals.

    apps/<appId>/CURRENT          name of the committed version directory
    apps/<appId>/<version>/       app.json, table files, media/**
    tmp/                          uploads and staged imports (emptied at start-up)
    trash/                        deleted apps and replaced versions (emptied at start-up)

Every change is staged beside its target, flushed with fsync, then made visible by one
rename (and an fsync of the directory that holds it), so a crash leaves the old state
or the new one.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from assoc import Error
from assoc.package import MANIFEST_NAME, Manifest, is_valid_app_id
from assoc.server.store.files import fsync_dir, fsync_paths, fsync_tree, remove

CURRENT_NAME = "CURRENT"


class VersionDirs:
    """The apps/, tmp/ and trash/ folders of a data dir and the moves between them."""

    def __init__(self, data_dir: Path) -> None:
        self.apps_dir = data_dir / "apps"
        self.tmp_dir = data_dir / "tmp"
        self.trash_dir = data_dir / "trash"
        for d in (self.apps_dir, self.tmp_dir, self.trash_dir):
            d.mkdir(exist_ok=True)
        fsync_dir(data_dir)  # the folders themselves must outlive a crash

    def recover(self) -> Iterator[tuple[str, Path, Manifest]]:
        """Removes what interrupted work left behind; yields (id, version dir, manifest) of
        every committed app."""
        for leftovers in (self.tmp_dir, self.trash_dir):
            for child in leftovers.iterdir():
                remove(child)
        for app_dir in sorted(self.apps_dir.iterdir()):
            if not app_dir.is_dir() or not is_valid_app_id(app_dir.name):
                continue
            current = _read_current(app_dir)
            if current is None:
                # Never committed: a first import that stopped before its rename.
                remove(app_dir)
                continue
            for child in app_dir.iterdir():
                if child.name not in (CURRENT_NAME, current):
                    remove(child)
            version_dir = app_dir / current
            try:
                manifest = Manifest.parse((version_dir / MANIFEST_NAME).read_bytes())
            except (OSError, Error):
                continue
            yield app_dir.name, version_dir, manifest

    def new_stage(self, with_current: bool = False) -> tuple[Path, Path]:
        """(stage folder, version folder inside it) for a new version, both created; with
        `with_current`, also the CURRENT file that the commit of a new app publishes (made
        ahead of it)."""
        stage = self.tmp_dir / f"stage-{uuid.uuid4().hex}"
        version_dir = stage / f"v-{uuid.uuid4().hex}"
        version_dir.mkdir(parents=True)
        if with_current:
            (stage / CURRENT_NAME).write_bytes(version_dir.name.encode())
        return stage, version_dir

    def commit(
        self,
        app_id: str,
        version_dir: Path,
        old_version_dir: Path | None,
        flushed: frozenset[str] = frozenset(),
    ) -> Path:
        """Publishes a staged version as the app's current one; returns where it now lives.

        The caller holds the app's lock. Everything is flushed before the rename that
        publishes it (but the files in `flushed`, flushed already), and that rename is flushed
        before this returns.
        """
        stage, version = version_dir.parent, version_dir.name
        app_dir = self.apps_dir / app_id
        if old_version_dir is None:
            if app_dir.exists():  # an unreadable leftover that start-up did not list
                self.discard(app_dir)
            # A new app: CURRENT rides along in the staged folder, one rename publishes both.
            current = stage / CURRENT_NAME
            if not current.is_file():  # else new_stage wrote it
                current.write_bytes(version.encode())
            fsync_tree(stage, flushed)
            os.rename(stage, app_dir)
            fsync_dir(self.apps_dir)
        else:
            fsync_tree(version_dir, flushed)
            os.rename(version_dir, app_dir / version)
            current_tmp = app_dir / f".{CURRENT_NAME}.{uuid.uuid4().hex}.tmp"
            current_tmp.write_bytes(version.encode())
            fsync_paths([current_tmp, app_dir])
            os.replace(current_tmp, app_dir / CURRENT_NAME)
            fsync_dir(app_dir)
            self.discard(old_version_dir)
        return app_dir / version

    def delete(self, app_id: str) -> None:
        """Removes an app's folder (one rename into the trash first)."""
        self.discard(self.apps_dir / app_id)

    def discard(self, path: Path) -> None:
        """Moves a path to the trash (one rename), then removes it."""
        target = self.trash_dir / f"{path.name}-{uuid.uuid4().hex}"
        os.rename(path, target)
        fsync_dir(path.parent)
        remove(target)


def _read_current(app_dir: Path) -> str | None:
    try:
        current = (app_dir / CURRENT_NAME).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not current or "/" in current or not (app_dir / current).is_dir():
        return None
    return current
