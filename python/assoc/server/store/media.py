"""An app's media folder: resolving paths inside it, listing, storing and deleting files.

Callers hold the app's lock; no path ever leaves the media root or follows a link.
"""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path

from assoc import Error
from assoc.package import check_entry_name, iter_media_files
from assoc.server.store.errors import BadMediaPath, MediaNotFound
from assoc.server.store.files import fsync_dir

MEDIA_DIR = "media"


class ListForm(Enum):
    """The three forms of a media listing."""

    FLAT = "flat"  # files and empty folders of the one folder
    RECURSIVE = "recursive"  # files of the whole tree
    ALL = "all"  # files and empty folders of the whole tree


def media_path(root: Path, path: str) -> Path:
    """The file or folder `path` names under root; never outside it, never through a link."""
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


def media_file(root: Path, path: str) -> Path:
    """The path of a media file on disk."""
    target = media_path(root, path)
    if not target.is_file() or path.endswith("/"):
        raise MediaNotFound(f"no media file {path!r}")
    return target


def list_media(root: Path, path: str, form: ListForm) -> list[str]:
    """Media names under a folder, relative to the media root; folders end in '/'."""
    folder = media_path(root, path)
    if not folder.is_dir():
        raise MediaNotFound(f"no media folder {path!r}")
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


def put_media(root: Path, path: str, source: Path) -> None:
    """Moves a file (flushed first) to `path` under root, replacing any file there."""
    target = media_path(root, path)
    if path.endswith("/") or target == root or target.is_dir():
        raise BadMediaPath(f"media path {path!r} names a folder")
    parent = root
    for part in path.split("/")[:-1]:
        parent = parent / part
        if parent.exists() and not parent.is_dir():
            raise BadMediaPath(f"{parent.relative_to(root)} is a file")
        if not parent.exists():
            parent.mkdir()
            fsync_dir(parent.parent)
    with open(source, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(source, target)
    fsync_dir(target.parent)


def delete_media(root: Path, path: str) -> Path | None:
    """Deletes a media file; for a folder, returns it for the caller to discard."""
    target = media_path(root, path)
    if target == root:
        raise BadMediaPath("the media root itself cannot be deleted")
    if target.is_file():
        target.unlink()
        fsync_dir(target.parent)
        return None
    if target.is_dir():
        return target
    raise MediaNotFound(f"no media {path!r}")
