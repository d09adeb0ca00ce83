"""Reloads of stored apps: a model a load script built, staged as the app's next version."""

from __future__ import annotations

import shutil
from pathlib import Path

from assoc.annotations import Annotations
from assoc.app import App
from assoc.package import Manifest, TableEntry, table_file_names
from assoc.server.store.cache import Entry
from assoc.server.store.imports import utc_now_iso
from assoc.server.store.media import MEDIA_DIR


def stage_tables(app: App, version_dir: Path) -> list[TableEntry]:
    """Writes every table of the reloaded app as a QVD under version_dir (none when its
    script loaded none: the app then holds no data, as a new one)."""
    files = table_file_names(app.stored_tables)
    for name, file in zip(app.stored_tables, files, strict=True):
        target = version_dir.joinpath(*file.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        app.write_qvd(name, target)
    return [TableEntry(name, file) for name, file in zip(app.stored_tables, files, strict=True)]


def reload_manifest(
    old: Entry,
    version_dir: Path,
    tables: list[TableEntry],
    script: str,
    connections: list[dict[str, str]],
    annotations: Annotations | None = None,
) -> Manifest:
    """The new version's manifest (old attributes and objects, reload times now, the tags
    and comments of the reload's script) and media."""
    if old.media_root.is_dir():
        shutil.copytree(old.media_root, version_dir / MEDIA_DIR, symlinks=True)
    else:
        (version_dir / MEDIA_DIR).mkdir()
    now = utc_now_iso()
    attributes = dict(old.manifest.attributes, modifiedDate=now, lastReloadTime=now)
    return Manifest(
        tables=tables,
        attributes=attributes,
        objects=list(old.manifest.objects),
        script=script,
        connections=[dict(c) for c in connections],
        library={k: list(v) for k, v in old.manifest.library.items()},
        states=list(old.manifest.states),
        annotations=annotations or Annotations(),
        properties=dict(old.manifest.properties),
    )
