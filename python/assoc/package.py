"""App packages: a ZIP with app.json, one QVD per table and media/**, read as untrusted input."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import json
import os
import re
import stat
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

from assoc import _core, attributes
from assoc._core import Error
from assoc.annotations import Annotations
from assoc.script.numbers import DEFAULTS
from assoc.sources import load_model

PACKAGE_FORMAT = "assoc-app"
FORMAT_VERSION = 1
MANIFEST_NAME = "app.json"
MEDIA_PREFIX = "media/"
MAX_MANIFEST_BYTES = 64 << 20
# The longest file name (one path part) Linux filesystems hold: NAME_MAX of ext4, xfs, btrfs.
NAME_MAX_BYTES = 255

_APP_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_COPY_CHUNK = 1 << 20
# Failures of the disk written to, not of the package read.
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})


@dataclass(frozen=True)
class PackageLimits:
    """Bounds on an untrusted package, checked on its directory before anything is extracted."""

    max_entries: int = 10_000
    max_unpacked_bytes: int = 16 << 30
    # Tables are loaded into memory whole: the service lowers this to what it can give one
    # import (AppStore.import_limits).
    max_table_bytes: int = 16 << 30
    # Deflate reaches ~1000:1 on constant data; real tables and media stay far below this.
    max_ratio: float = 250.0
    ratio_floor_bytes: int = 1 << 20


@dataclass
class TableEntry:
    """One table of a package: its name and the file that holds it."""

    name: str
    file: str


@dataclass
class Manifest:
    """The content of app.json: attributes, tables and objects."""

    tables: list[TableEntry]
    attributes: dict[str, Any] = field(default_factory=dict)
    objects: list[dict[str, Any]] = field(default_factory=list)
    script: str = ""  # the load script DoReload runs
    connections: list[dict[str, str]] = field(default_factory=list)  # {name, path} folders
    # The library: "dimensions", "measures", "variables", "bookmarks", each a list of
    # {id, properties, …} (keys left out when empty).
    library: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    states: list[str] = field(default_factory=list)  # the app's alternate states (QIX)
    # Tags and comments of fields and tables (the load script's TAG, UNTAG, COMMENT).
    annotations: Annotations = field(default_factory=Annotations)
    # The number interpretation variables the app's script left (DateFormat, …): its charts
    # read and write numbers and dates by them.
    interpretation: dict[str, str] = field(default_factory=dict)
    # The app's properties a client set (QIX SetAppProperties): NxAppProperties members and
    # its own, such as a theme; "qTitle" is the app's name once saved.
    properties: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, data: bytes) -> Manifest:
        """A checked manifest from app.json bytes; raises assoc.Error when it is not valid."""
        if len(data) > MAX_MANIFEST_BYTES:
            raise Error(f"{MANIFEST_NAME} is larger than {MAX_MANIFEST_BYTES} bytes")
        try:
            doc = json.loads(data.decode("utf-8"))
            # A lone surrogate ("\ud800") parses but can never be written back as UTF-8.
            json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except (ValueError, RecursionError) as exc:
            # ValueError: bad UTF-8 or JSON, an integer over the digit limit, a lone
            # surrogate; RecursionError: arrays or objects nested too deep.
            reason = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
            raise Error(f"{MANIFEST_NAME} is not valid UTF-8 JSON: {reason}") from None
        if not isinstance(doc, dict):
            raise Error(f"{MANIFEST_NAME} must hold a JSON object")
        if doc.get("format") != PACKAGE_FORMAT:
            raise Error(f'{MANIFEST_NAME}: "format" must be "{PACKAGE_FORMAT}"')
        version = doc.get("formatVersion")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise Error(f'{MANIFEST_NAME}: "formatVersion" must be a positive integer')
        if version > FORMAT_VERSION:
            raise Error(
                f"{MANIFEST_NAME}: formatVersion {version} is newer than this engine reads "
                f"({FORMAT_VERSION})"
            )
        return cls(
            tables=_parse_tables(doc.get("tables")),
            attributes=normalize_attributes(doc.get("attributes", {})),
            objects=_parse_objects(doc.get("objects", [])),
            script=_parse_script(doc.get("script", "")),
            connections=_parse_connections(doc.get("connections", [])),
            library={
                key: _parse_items(doc.get(key, []), key) for key in LIBRARY_KEYS if doc.get(key)
            },
            states=_parse_states(doc.get("states", [])),
            properties=_parse_properties(doc.get("properties", {})),
            interpretation=_parse_interpretation(doc.get("interpretation", {})),
            annotations=Annotations.from_json(
                doc.get("annotations", {}), f"{MANIFEST_NAME}: annotations"
            ),
        )

    def to_json(self) -> bytes:
        """app.json bytes for this manifest."""
        doc = {
            "format": PACKAGE_FORMAT,
            "formatVersion": FORMAT_VERSION,
            "attributes": self.attributes,
            "tables": [{"name": t.name, "file": t.file} for t in self.tables],
            "objects": self.objects,
        }
        if self.script:
            doc["script"] = self.script
        if self.connections:
            doc["connections"] = self.connections
        for key in LIBRARY_KEYS:
            if self.library.get(key):
                doc[key] = self.library[key]
        if self.states:
            doc["states"] = self.states
        if self.properties:
            doc["properties"] = self.properties
        if self.annotations:
            doc["annotations"] = self.annotations.to_json()
        if self.interpretation:
            doc["interpretation"] = self.interpretation
        return json.dumps(doc, ensure_ascii=False, indent=1).encode("utf-8")


def _parse_tables(raw: Any) -> list[TableEntry]:
    if not isinstance(raw, list):  # empty: an app without data (QIX CreateApp makes them)
        raise Error(f'{MANIFEST_NAME}: "tables" must be an array')
    tables: list[TableEntry] = []
    names: set[str] = set()
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise Error(f"{MANIFEST_NAME}: tables[{i}] must be an object")
        name, file = item.get("name"), item.get("file")
        if not isinstance(name, str) or not name:
            raise Error(f'{MANIFEST_NAME}: tables[{i}] needs a "name"')
        if not isinstance(file, str) or not file:
            raise Error(f'{MANIFEST_NAME}: tables[{i}] needs a "file"')
        check_entry_name(file)
        if name in names:
            raise Error(f"{MANIFEST_NAME}: table {name!r} is listed twice")
        names.add(name)
        tables.append(TableEntry(name, file))
    return tables


LIBRARY_KEYS = ("dimensions", "measures", "variables", "bookmarks")
_ITEM_MEMBERS = {
    "id": str,
    "properties": dict,
    "scriptCreated": bool,
    "selections": dict,
    "created": str,
    "modified": str,
}


def _parse_items(raw: Any, key: str) -> list[dict[str, Any]]:
    """A library list: objects with a unique string "id" and a "properties" object (and,
    as their kind has them, "scriptCreated", "selections", "created", "modified")."""
    if not isinstance(raw, list):
        raise Error(f'{MANIFEST_NAME}: "{key}" must be an array')
    ids: set[str] = set()
    out: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise Error(f"{MANIFEST_NAME}: {key}[{i}] must be an object")
        item_id = item.get("id")
        if not isinstance(item_id, str) or not item_id:
            raise Error(f'{MANIFEST_NAME}: {key}[{i}] needs an "id"')
        if item_id in ids:
            raise Error(f"{MANIFEST_NAME}: {key} {item_id!r} is listed twice")
        if not isinstance(item.get("properties"), dict):
            raise Error(f'{MANIFEST_NAME}: {key}[{i}] needs a "properties" object')
        kept: dict[str, Any] = {}
        for member, kind in _ITEM_MEMBERS.items():
            if member not in item:
                continue
            value = item[member]
            if not isinstance(value, kind):
                raise Error(f'{MANIFEST_NAME}: {key}[{i}] "{member}" has the wrong type')
            kept[member] = value
        selections = kept.get("selections", {})
        if not all(isinstance(v, list) for v in selections.values()):
            raise Error(f'{MANIFEST_NAME}: {key}[{i}] "selections" must hold arrays')
        ids.add(item_id)
        out.append(kept)
    return out


def _parse_objects(raw: Any, where: str = "objects") -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise Error(f'{MANIFEST_NAME}: "{where}" must be an array')
    objects: list[dict[str, Any]] = []
    ids: set[str] = set()
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise Error(f"{MANIFEST_NAME}: {where}[{i}] must be an object")
        obj_id, obj_type = item.get("id"), item.get("type", "")
        approved, properties = item.get("approved", False), item.get("properties", {})
        if not isinstance(obj_id, str) or not obj_id:
            raise Error(f'{MANIFEST_NAME}: {where}[{i}] needs an "id"')
        if obj_id in ids:
            raise Error(f"{MANIFEST_NAME}: object {obj_id!r} is listed twice")
        if not isinstance(obj_type, str):
            raise Error(f'{MANIFEST_NAME}: {where}[{i}] "type" must be a string')
        if not isinstance(approved, bool):
            raise Error(f'{MANIFEST_NAME}: {where}[{i}] "approved" must be true or false')
        if not isinstance(properties, dict):
            raise Error(f'{MANIFEST_NAME}: {where}[{i}] "properties" must be an object')
        ids.add(obj_id)
        entry = {"id": obj_id, "type": obj_type, "approved": approved, "properties": properties}
        if "children" in item:  # child objects (CreateChild), saved with their parent
            entry["children"] = _parse_objects(item["children"], f"{where}[{i}].children")
        objects.append(entry)
    return objects


def _parse_script(raw: Any) -> str:
    if not isinstance(raw, str):
        raise Error(f'{MANIFEST_NAME}: "script" must be a string')
    return raw


def _parse_interpretation(raw: Any) -> dict[str, str]:
    """The interpretation variables: names among the ones an app keeps, texts as values."""
    if not isinstance(raw, dict):
        raise Error(f'{MANIFEST_NAME}: "interpretation" must be an object')
    for name, value in raw.items():
        if name not in DEFAULTS:
            raise Error(f'{MANIFEST_NAME}: interpretation has no variable "{name[:64]}"')
        if not isinstance(value, str) or len(value.encode("utf-8")) > 4096:
            raise Error(
                f'{MANIFEST_NAME}: interpretation "{name}" must be a text of at most 4096 bytes'
            )
    return dict(raw)


def saved_title(properties: dict[str, Any]) -> str:
    """The app name a saved app's properties give (their non-blank "qTitle"), else ""."""
    title = properties.get("qTitle")
    return title if isinstance(title, str) and title.strip() else ""


def _parse_properties(raw: Any) -> dict[str, Any]:
    """The app's properties: an object whose "qTitle", when there, is a name."""
    if not isinstance(raw, dict):
        raise Error(f'{MANIFEST_NAME}: "properties" must be an object')
    title = raw.get("qTitle", "")
    if not isinstance(title, str) or len(title.encode("utf-8")) > NAME_MAX_BYTES:
        raise Error(
            f"{MANIFEST_NAME}: properties.qTitle must be a name of at most {NAME_MAX_BYTES} bytes"
        )
    return dict(raw)


def _parse_states(raw: Any) -> list[str]:
    """The alternate state names: distinct, non-empty, not "$", at most NAME_MAX_BYTES."""
    if not isinstance(raw, list):
        raise Error(f'{MANIFEST_NAME}: "states" must be an array')
    for i, name in enumerate(raw):
        if not isinstance(name, str) or name in ("", "$"):
            raise Error(f'{MANIFEST_NAME}: states[{i}] must be a name other than "" and "$"')
        if len(name.encode("utf-8")) > NAME_MAX_BYTES:
            raise Error(f"{MANIFEST_NAME}: states[{i}] is longer than {NAME_MAX_BYTES} bytes")
    if len(set(raw)) != len(raw):
        raise Error(f'{MANIFEST_NAME}: a state is listed twice in "states"')
    return list(raw)


def _parse_connections(raw: Any) -> list[dict[str, str]]:
    if not isinstance(raw, list):
        raise Error(f'{MANIFEST_NAME}: "connections" must be an array')
    out: list[dict[str, str]] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise Error(f"{MANIFEST_NAME}: connections[{i}] must be an object")
        name, path = item.get("name"), item.get("path")
        if not isinstance(name, str) or not name or not isinstance(path, str) or not path:
            raise Error(f'{MANIFEST_NAME}: connections[{i}] needs a "name" and a "path"')
        out.append({"name": name, "path": path})
    return out


def normalize_attributes(raw: Any) -> dict[str, Any]:
    """NxAttributes with every known key, checked types and defaults for the missing ones."""
    out = attributes.normalize(raw, MANIFEST_NAME)
    if out["id"] and not is_valid_app_id(out["id"]):
        raise Error(f"{MANIFEST_NAME}: attributes.id {out['id']!r} is not a valid app id")
    thumbnail = out["thumbnail"].removeprefix(MEDIA_PREFIX)
    if thumbnail:
        check_entry_name(thumbnail)
    out["thumbnail"] = thumbnail
    return out


def is_valid_app_id(app_id: str) -> bool:
    """True for ids the store accepts: letters, digits, '.', '_', '-', at most 128."""
    return _APP_ID.fullmatch(app_id) is not None


def check_entry_name(name: str) -> None:
    """Raises assoc.Error unless `name` is a plain relative path with no way out of its root."""
    if not name or len(name) > 1024:
        raise Error(f"bad entry name {name[:80]!r}")
    if "\\" in name or "\x00" in name or name.startswith("/") or ":" in name.split("/", 1)[0]:
        raise Error(f"entry name {name[:80]!r} is not a relative path")
    parts = name.rstrip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise Error(f"entry name {name[:80]!r} has an empty, '.' or '..' part")
    for part in parts:
        try:
            size = len(part.encode("utf-8"))
        except UnicodeEncodeError:
            raise Error(f"entry name {name[:80]!r} is not UTF-8 text") from None
        if size > NAME_MAX_BYTES:
            raise Error(
                f"entry name {name[:80]!r} has a part of {size} bytes; files are named with "
                f"at most {NAME_MAX_BYTES}"
            )


class PackageTooLarge(Error):
    """A package whose entries unpack to more bytes than the reader may give it."""


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


@contextlib.contextmanager
def _entry_errors(name: str) -> Iterator[None]:
    """Reports any failure to read an entry (corrupt stream, bad CRC, …) as assoc.Error."""
    try:
        yield
    except Error:
        raise
    except OSError as exc:
        if exc.errno is not None and exc.errno in _WRITE_ERRNOS:
            raise  # the disk, not the package: the caller reports it as such
        raise Error(f"entry {name!r} cannot be read: {exc}") from None
    except Exception as exc:  # zlib.error and friends from corrupt deflate streams
        raise Error(f"entry {name!r} cannot be read: {exc}") from None


class AppPackage:
    """An opened, checked app package: its manifest, tables and media entries."""

    def __init__(self, archive: zipfile.ZipFile, limits: PackageLimits) -> None:
        self._zip = archive
        self._entries = self._check_directory(limits)
        manifest_info = self._entries.get(MANIFEST_NAME)
        if manifest_info is None:
            raise Error(f"the package has no {MANIFEST_NAME}")
        self.manifest = Manifest.parse(self.read(MANIFEST_NAME))
        table_bytes = 0
        for table in self.manifest.tables:
            if table.file not in self._entries or table.file.endswith("/"):
                raise Error(f"table {table.name!r}: the package has no file {table.file!r}")
            table_bytes += self._entries[table.file].file_size
        if table_bytes > limits.max_table_bytes:
            raise PackageTooLarge(
                f"the package's tables unpack to {table_bytes} bytes, more than the "
                f"{limits.max_table_bytes} one import may load"
            )

    @classmethod
    def open(
        cls,
        source: str | os.PathLike[str] | bytes | bytearray | memoryview,
        limits: PackageLimits | None = None,
    ) -> AppPackage:
        """Opens a package from a path or bytes and checks every entry before reading any."""
        try:
            fileobj: str | os.PathLike[str] | IO[bytes] = (
                io.BytesIO(bytes(source))
                if isinstance(source, bytes | bytearray | memoryview)
                else source
            )
            archive = zipfile.ZipFile(fileobj)
        except OSError as exc:
            raise Error(f"cannot read the package: {exc.strerror or exc}") from None
        except (zipfile.BadZipFile, NotImplementedError, ValueError, EOFError) as exc:
            # NotImplementedError: a "version needed to extract" zipfile does not read;
            # ValueError (UnicodeDecodeError): an entry name flagged UTF-8 that is not.
            raise Error(f"not a valid ZIP archive: {exc}") from None
        try:
            return cls(archive, limits or PackageLimits())
        except BaseException:
            archive.close()
            raise

    def __enter__(self) -> AppPackage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the archive."""
        self._zip.close()

    def _check_directory(self, limits: PackageLimits) -> dict[str, zipfile.ZipInfo]:
        infos = self._zip.infolist()
        if len(infos) > limits.max_entries:
            raise Error(f"the package has {len(infos)} entries, more than {limits.max_entries}")
        entries: dict[str, zipfile.ZipInfo] = {}
        total = 0
        for info in infos:
            name = info.filename
            check_entry_name(name)
            if _is_symlink(info):
                raise Error(f"entry {name!r} is a symbolic link")
            if info.flag_bits & 0x1:
                raise Error(f"entry {name!r} is encrypted")
            if name in entries or name.rstrip("/") in entries or name + "/" in entries:
                raise Error(f"entry {name!r} occurs twice")
            total += info.file_size
            if total > limits.max_unpacked_bytes:
                raise PackageTooLarge(
                    f"the package unpacks to more than {limits.max_unpacked_bytes} bytes"
                )
            if (
                info.file_size > limits.ratio_floor_bytes
                and info.file_size > limits.max_ratio * max(info.compress_size, 1)
            ):
                raise Error(
                    f"entry {name!r} is compressed more than {limits.max_ratio:g}:1 "
                    "(a decompression bomb)"
                )
            entries[name] = info
        return entries

    def _info(self, name: str) -> zipfile.ZipInfo:
        try:
            return self._entries[name]
        except KeyError:
            raise Error(f"the package has no entry {name!r}") from None

    def read(self, name: str) -> bytes:
        """One entry's bytes (at most its declared size; its CRC checked)."""
        info = self._info(name)
        with _entry_errors(name):
            return self._zip.read(info)

    def copy_entry(self, name: str, target: Path) -> None:
        """Writes one entry to a new file a megabyte at a time (never whole in memory)."""
        info = self._info(name)
        with _entry_errors(name), self._zip.open(info) as src, open(target, "xb") as dst:
            while chunk := src.read(_COPY_CHUNK):
                dst.write(chunk)

    def media_entries(self) -> list[zipfile.ZipInfo]:
        """Entries under media/ (files, and directories ending in '/')."""
        return [
            i for n, i in self._entries.items() if n.startswith(MEDIA_PREFIX) and n != MEDIA_PREFIX
        ]

    def build_model(self) -> _core.DataModel:
        """The engine model of the package's tables, each read as QVD or CSV by its content."""
        return load_model(
            ((self.read(t.file), t.name) for t in self.manifest.tables),
            interpretation=self.manifest.interpretation,
        )

    def extract_media(self, root: Path) -> None:
        """Writes media/** under root/media (checked names only); the caller flushes them."""
        for info in self.media_entries():
            target = root.joinpath(*info.filename.rstrip("/").split("/"))
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            self.copy_entry(info.filename, target)


def table_file_names(tables: list[str]) -> list[str]:
    """A distinct, safe file name under tables/ for every table name."""
    used: set[str] = set()
    out: list[str] = []
    for name in tables:
        stem = re.sub(r"[^A-Za-z0-9._ -]", "_", name).strip(" .") or "table"
        candidate, n = stem, 1
        while candidate.lower() in used:
            n += 1
            candidate = f"{stem}-{n}"
        used.add(candidate.lower())
        out.append(f"tables/{candidate}.qvd")
    return out


def iter_media_files(media_root: Path) -> Iterator[tuple[Path, str]]:
    """(path, name relative to media_root) of every file and empty directory, sorted."""
    if not media_root.is_dir():
        return
    found: list[tuple[Path, str]] = []
    for dirpath, dirnames, filenames in os.walk(media_root, followlinks=False):
        base = Path(dirpath)
        rel_base = base.relative_to(media_root).as_posix()
        prefix = "" if rel_base == "." else rel_base + "/"
        if not dirnames and not filenames and prefix:
            found.append((base, prefix))
        for name in filenames:
            path = base / name
            if not path.is_symlink() and path.is_file():
                found.append((path, prefix + name))
    yield from sorted(found, key=lambda item: item[1])


def write_package(
    model_tables: list[str],
    write_table: Callable[[str, str], None],
    manifest: Manifest,
    media_root: Path | None,
    out: BinaryIO,
    tmp_dir: str | None = None,
) -> None:
    """Writes a package to `out`: app.json, one QVD per table (via write_table) and media."""
    files = table_file_names(model_tables)
    # Everything the manifest holds, its tables as written here.
    tables = [TableEntry(n, f) for n, f in zip(model_tables, files, strict=True)]
    manifest = dataclasses.replace(manifest, tables=tables)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        archive.writestr(MANIFEST_NAME, manifest.to_json())
        with tempfile.TemporaryDirectory(prefix="export-", dir=tmp_dir) as tmp:
            for name, file in zip(model_tables, files, strict=True):
                table_path = os.path.join(tmp, "table.qvd")
                write_table(name, table_path)
                # Stored, not deflated: the ratio guard must never refuse our own tables.
                archive.write(table_path, file, compress_type=zipfile.ZIP_STORED)
                os.unlink(table_path)
        if media_root is not None:
            for media_path, rel in iter_media_files(media_root):
                if rel.endswith("/"):
                    archive.writestr(zipfile.ZipInfo(MEDIA_PREFIX + rel), b"")
                else:
                    archive.write(media_path, MEDIA_PREFIX + rel, compress_type=zipfile.ZIP_STORED)
