"""Imports: an uploaded package, QVD or CSV file staged as a new version, loaded, and given the
attributes its import mode calls for."""

from __future__ import annotations

import datetime
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any

from assoc import Error
from assoc.app import App
from assoc.package import (
    MANIFEST_NAME,
    AppPackage,
    Manifest,
    PackageLimits,
    PackageTooLarge,
    TableEntry,
    normalize_attributes,
)
from assoc.qvd_stream import QvdStream
from assoc.server.store.errors import AppIdRequired, ImportTooLarge, InvalidAppFile
from assoc.server.store.files import EarlyFlush
from assoc.server.store.media import MEDIA_DIR
from assoc.sources import HEAD_BYTES, SourceKind, UnsupportedFile, detect_kind, load_model


class ImportMode(Enum):
    """How an import treats the source app's id and attributes."""

    NEW = "NEW"
    AUTOREPLACE = "AUTOREPLACE"


def utc_now_iso() -> str:
    """The current time as ISO 8601 UTC with milliseconds, like 2026-11-22T04:35:00.000Z."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


@contextmanager
def invalid_app_file() -> Iterator[None]:
    """Reports an assoc.Error raised while reading an import body as InvalidAppFile."""
    try:
        yield
    except (UnsupportedFile, InvalidAppFile, AppIdRequired):
        raise
    except PackageTooLarge as exc:
        raise ImportTooLarge(str(exc)) from exc
    except Error as exc:
        raise InvalidAppFile(str(exc)) from exc


def import_limits(memory_budget_bytes: int) -> PackageLimits:
    """Package bounds for one import: its tables (loaded whole) may unpack to no more than the
    memory budget (at least 1 MiB), or without one to half the physical memory."""
    if memory_budget_bytes > 0:
        memory = max(memory_budget_bytes, 1 << 20)
    else:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    return PackageLimits(max_table_bytes=min(PackageLimits.max_table_bytes, memory))


def source_kind(source: Path) -> SourceKind:
    """What an uploaded file holds, by its first bytes."""
    with open(source, "rb") as f, invalid_app_file():
        return detect_kind(f.read(HEAD_BYTES))


def table_stage(version_dir: Path, kind: SourceKind) -> Path:
    """The path of a QVD or CSV import's one table file in its version folder, whose folders
    (tables/, media/) this makes."""
    (version_dir / MEDIA_DIR).mkdir(exist_ok=True)
    tables = version_dir / "tables"
    tables.mkdir(exist_ok=True)
    return tables / ("table.qvd" if kind is SourceKind.QVD else "table.csv")


def stage(
    source: Path,
    kind: SourceKind,
    version_dir: Path,
    name: str | None,
    source_name: str | None,
    limits: PackageLimits,
    early_flush: EarlyFlush,
) -> tuple[Manifest, App]:
    """Writes the source's tables and media into version_dir and loads the app."""
    with invalid_app_file():
        if kind is SourceKind.PACKAGE:
            (version_dir / MEDIA_DIR).mkdir(exist_ok=True)
            with AppPackage.open(source, limits) as package:
                manifest = package.manifest
                for table in manifest.tables:
                    if table.file == MANIFEST_NAME or table.file.startswith(MEDIA_DIR + "/"):
                        raise Error(f"table {table.name!r}: {table.file!r} is not a table path")
                    target = version_dir.joinpath(*table.file.split("/"))
                    target.parent.mkdir(parents=True, exist_ok=True)
                    package.copy_entry(table.file, target)
                package.extract_media(version_dir)
            early_flush.start(version_dir)
            model = load_model(
                stored_tables(version_dir, manifest), interpretation=manifest.interpretation
            )
            app = App(model, manifest.annotations)
            if not manifest.attributes["name"]:
                manifest.attributes["name"] = name or _stem(source_name) or app.tables[0]
            return manifest, app
        table_path = table_stage(version_dir, kind)
        os.replace(source, table_path)
        early_flush.start(version_dir)
        # A bare QVD's table is named by its header, a CSV's by `name` (else Table1).
        table_name = name or None if kind is SourceKind.CSV else None
        app = App(load_model([(table_path, table_name)], kind))
        return table_manifest(app.tables[0], table_path, name, source_name), app


def stage_stream(
    stage_dir: Path,
    table_path: Path,
    qvd: QvdStream,
    name: str | None,
    source_name: str | None,
    owner: str,
    early_flush: EarlyFlush,
    app_id: str | None = None,
) -> tuple[Manifest, App, bytes]:
    """stage() and set_attributes() for a NEW import of a QVD file that its stream writes to
    `table_path` in a staged version (flushing it to disk itself). Once the stream has read
    the header, app.json is written and flushed with the folders (by `early_flush`, whose
    join raises a failed write) while the stream parses the rest of the file: returns the
    manifest, the app and the app.json bytes written (none if the header was not read in
    time, or named the table otherwise than the load did). `app_id`: the id chosen for the
    app already (else a new one)."""
    manifest_path = table_path.parent.parent / MANIFEST_NAME
    table_name = qvd.table_name  # the header names the table; `name` names the app
    written = b""
    if table_name:
        manifest = table_manifest(table_name, table_path, name, source_name)
        set_attributes(manifest, ImportMode.NEW, name, owner, app_id)
        written = manifest.to_json()
        early_flush.start(
            stage_dir,
            skip=frozenset({str(table_path)}),
            first=lambda: manifest_path.write_bytes(written),
            root_final=True,
        )
    with invalid_app_file():
        app = App(load_model([(qvd.finish(), None)], SourceKind.QVD))
    if app.tables[0] != table_name:
        manifest = table_manifest(app.tables[0], table_path, name, source_name)
        set_attributes(manifest, ImportMode.NEW, name, owner, app_id)
        written = b""
    return manifest, app, written


def table_manifest(
    table_name: str, table_path: Path, name: str | None, source_name: str | None
) -> Manifest:
    """The manifest of a QVD or CSV import's one table: the app is named `name`, else after
    the uploaded file, else after the table."""
    return Manifest(
        tables=[TableEntry(table_name, f"tables/{table_path.name}")],
        attributes=normalize_attributes({"name": name or _stem(source_name) or table_name}),
    )


def stored_tables(version_dir: Path, manifest: Manifest) -> list[tuple[Path, str | None]]:
    """(file, table name) of every table of a version on disk, for `load_model`."""
    return [(version_dir.joinpath(*t.file.split("/")), t.name) for t in manifest.tables]


def set_attributes(
    manifest: Manifest, mode: ImportMode, name: str | None, owner: str, app_id: str | None = None
) -> dict[str, Any]:
    """The new version's attributes as the mode calls for (before any old version is seen);
    a NEW app gets `app_id`, else a new id."""
    now = utc_now_iso()
    attrs = manifest.attributes
    if mode is ImportMode.NEW:
        attrs.update(
            id=app_id or str(uuid.uuid4()),
            createdDate=now,
            modifiedDate=now,
            lastReloadTime=now,
            owner=owner,
            published=False,
            publishTime="",
        )
    else:
        if not attrs["id"]:
            raise AppIdRequired("mode AUTOREPLACE needs attributes.id in the package's app.json")
        attrs["modifiedDate"] = now
        attrs["lastReloadTime"] = attrs["lastReloadTime"] or now
        attrs["owner"] = attrs["owner"] or owner
    if name:
        attrs["name"] = name
    return attrs


def carry_over(manifest: Manifest, old: Manifest | None) -> None:
    """What a replacement keeps of the version it replaces: the creation date and the
    objects that were not approved."""
    attrs = manifest.attributes
    if old is not None:
        attrs["createdDate"] = attrs["createdDate"] or old.attributes["createdDate"]
        listed = {o["id"] for o in manifest.objects}
        manifest.objects += [o for o in old.objects if not o["approved"] and o["id"] not in listed]
    attrs["createdDate"] = attrs["createdDate"] or utc_now_iso()


def _stem(filename: str | None) -> str:
    if not filename:
        return ""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] if "." in base[1:] else base
