"""Folder connections: `lib://name/path` resolved inside folders the operator allowed."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from assoc.script.errors import ScriptError


class FolderConfinement:
    """The folders connections may point into (AllowedFolders); anything outside is refused."""

    def __init__(self, allowed: Iterable[str | os.PathLike[str]]) -> None:
        self.allowed: list[Path] = []
        for folder in allowed:
            p = Path(folder)
            if not p.is_absolute():
                raise ScriptError(
                    f"allowed folders must be absolute paths, not {os.fspath(folder)!r}"
                )
            self.allowed.append(Path(os.path.realpath(p)))

    def check_folder(self, folder: str | os.PathLike[str]) -> Path:
        """The folder's real path, when it lies inside an allowed folder; else ScriptError."""
        p = Path(folder)
        if not p.is_absolute():
            raise ScriptError(
                f"a folder connection needs an absolute path, not {os.fspath(folder)!r}"
            )
        real = Path(os.path.realpath(p))
        if not any(real == a or real.is_relative_to(a) for a in self.allowed):
            raise ScriptError(
                f"folder {os.fspath(folder)!r} is outside the folders connections may use"
            )
        return real


class FolderConnections:
    """Named folder connections; resolves `lib://name/path` to a file inside the named folder."""

    def __init__(
        self,
        folders: Mapping[str, str | os.PathLike[str]] | None = None,
        confinement: FolderConfinement | None = None,
    ) -> None:
        self._folders: dict[str, Path] = {}
        self._confinement = confinement
        for name, path in (folders or {}).items():
            self.add(name, path)

    def add(self, name: str, folder: str | os.PathLike[str]) -> None:
        """Adds (or replaces) a connection named `name` to a folder."""
        if not name or "/" in name:
            raise ScriptError(f"bad connection name {name!r}")
        if self._confinement is not None:
            real = self._confinement.check_folder(folder)
        else:
            if not Path(folder).is_absolute():
                raise ScriptError(
                    f"a folder connection needs an absolute path, not {os.fspath(folder)!r}"
                )
            real = Path(os.path.realpath(folder))
        self._folders[name.casefold()] = real

    def has(self, name: str) -> bool:
        """True when a connection of that name (any case) exists."""
        return name.casefold() in self._folders

    def names(self) -> list[str]:
        """Connection names (case-folded)."""
        return list(self._folders)

    def resolve(self, path: str, line: int = 0, column: int = 0) -> Path:
        """The file a script path names; only `lib://connection/…` paths inside the folder."""
        if not path.lower().startswith("lib://"):
            raise ScriptError(
                f"file paths must be lib://<connection>/<path>, not {path!r}", line, column
            )
        rest = path[len("lib://") :]
        name, _, inner = rest.partition("/")
        folder = self._folders.get(name.casefold())
        if folder is None:
            raise ScriptError(f"no connection named {name!r}", line, column)
        if not inner or inner.startswith(("/", "\\")) or ":" in inner:
            raise ScriptError(
                f"path {path!r} must name a file inside the connection's folder", line, column
            )
        target = Path(os.path.realpath(folder / inner))
        if not target.is_relative_to(folder):
            raise ScriptError(f"path {path!r} leads outside the connection's folder", line, column)
        return target
