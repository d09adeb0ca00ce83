"""DoSave: an app's objects and library stored as its next version, the data unchanged."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from assoc.package import MANIFEST_NAME, Manifest, saved_title
from assoc.server.store.cache import Entry
from assoc.server.store.imports import utc_now_iso


def _link_or_copy(source: str, target: str) -> None:
    """A hard link to an unchanged file (its bytes are not written twice), else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def stage_unchanged(old: Entry, version_dir: Path) -> None:
    """Every file of the old version but its app.json (tables, media) into version_dir."""
    for root, dirs, files in os.walk(old.version_dir):
        rel = Path(root).relative_to(old.version_dir)
        (version_dir / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            if rel == Path(".") and name == MANIFEST_NAME:
                continue
            _link_or_copy(os.path.join(root, name), str(version_dir / rel / name))
        for name in dirs:
            path = Path(root) / name
            if path.is_symlink():  # media never holds links; copy none
                dirs.remove(name)


def saved_manifest(
    old: Entry,
    objects: list[dict[str, Any]],
    library: dict[str, list[dict[str, Any]]],
    states: list[str],
    properties: dict[str, Any],
) -> Manifest:
    """The new version's manifest: the old one with these objects, library, states and app
    properties (a "qTitle" among them names the app)."""
    attributes = dict(old.manifest.attributes, modifiedDate=utc_now_iso())
    attributes["name"] = saved_title(properties) or attributes["name"]
    return Manifest(
        tables=list(old.manifest.tables),
        attributes=attributes,
        objects=objects,
        script=old.manifest.script,
        connections=[dict(c) for c in old.manifest.connections],
        library={k: v for k, v in library.items() if v},
        states=list(states),
        annotations=old.manifest.annotations,
        interpretation=dict(old.manifest.interpretation),
        properties=dict(properties),
    )
