"""Export: a committed app written as a package that imports back to the same app."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from assoc.app import App
from assoc.package import write_package
from assoc.server.store.cache import Entry


def export_app(app: App, entry: Entry, out: BinaryIO, tmp_dir: Path) -> None:
    """Writes the app's tables, attributes, objects and media to `out` (entry's lock held)."""
    write_package(
        app.stored_tables, app.write_qvd, entry.manifest, entry.media_root, out, str(tmp_dir)
    )
