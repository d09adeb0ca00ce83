"""`assoc import`, `assoc export` and `assoc pack`: apps moved to and from a service, and
folders of tables made into app packages."""

from __future__ import annotations

import argparse
import zipfile
from pathlib import Path
from typing import Any

from assoc.cli_client import DEFAULT_SERVER, ServiceClient, add_server_option, replacing
from assoc.cli_console import CommandFailed, progress_step, stdout_console
from assoc.package import MANIFEST_NAME, MEDIA_PREFIX, Manifest, TableEntry, iter_media_files
from assoc.sources import load_model

TABLE_SUFFIXES = (".qvd", ".csv")
SCRIPT_NAME = "script.qvs"
_CHUNK = 1 << 20


def add_parsers(commands: Any) -> None:
    """Registers `assoc import`, `assoc export` and `assoc pack`."""
    imp = commands.add_parser(
        "import",
        help="import a package, QVD or CSV file into a service",
        description="Uploads a file as a new app and prints its id. The environment variable "
        "ASSOC_TOKEN, when set, is sent as the bearer token.",
    )
    imp.add_argument("file", metavar="FILE")
    add_server_option(imp, DEFAULT_SERVER)
    imp.add_argument("--name", help="the app's name (a CSV file's table too)")
    imp.add_argument(
        "--mode",
        type=str.upper,
        choices=["NEW", "AUTOREPLACE"],
        help="NEW (default) or AUTOREPLACE (the service needs EFEMode=1)",
    )
    imp.add_argument("--json", action="store_true", help="print the app's NxApp as JSON")
    imp.set_defaults(run=run_import)

    exp = commands.add_parser(
        "export",
        help="download an app as a package",
        description="Writes an app of a service as a package file that imports back to the "
        "same data, attributes, objects and media.",
    )
    exp.add_argument("app_id", metavar="APPID")
    exp.add_argument("-o", "--output", required=True, metavar="FILE", help="the package to write")
    add_server_option(exp, DEFAULT_SERVER)
    exp.set_defaults(run=run_export)

    pack = commands.add_parser(
        "pack",
        help="make an app package of a folder",
        description="Packs a folder into an app package: every *.qvd and *.csv file in it (or "
        "in its tables/ folder) is a table named after the file, media/** becomes the app's "
        f"media, and {SCRIPT_NAME} (when present) its load script. The tables are loaded once "
        "to check that they read and link.",
    )
    pack.add_argument("folder", metavar="DIR")
    pack.add_argument("-o", "--output", required=True, metavar="FILE", help="the package to write")
    pack.add_argument("--name", help="the app's name (default: the folder's name)")
    pack.set_defaults(run=run_pack)


def run_import(args: argparse.Namespace) -> int:
    """Runs `assoc import`."""
    path = Path(args.file)
    if not path.is_file():
        raise CommandFailed(f"{args.file!r} is not a file")
    with ServiceClient(args.server) as client:
        nx_app = client.import_file(path, args.name, args.mode)
    if args.json:
        import json

        print(json.dumps(nx_app, indent=1, ensure_ascii=False))
    else:
        attributes = nx_app["attributes"]
        stdout_console().print(attributes["id"], highlight=False)
    return 0


def run_export(args: argparse.Namespace) -> int:
    """Runs `assoc export`: the package is written beside the target, then renamed onto it."""
    with ServiceClient(args.server) as client, replacing(Path(args.output), ".export-") as out:
        client.export(args.app_id, out)
    return 0


def table_files(folder: Path) -> list[Path]:
    """The table files a folder packs: *.qvd and *.csv in tables/ when it exists, else in DIR."""
    where = folder / "tables" if (folder / "tables").is_dir() else folder
    return sorted(
        (p for p in where.iterdir() if p.is_file() and p.suffix.lower() in TABLE_SUFFIXES),
        key=lambda p: p.name,
    )


def run_pack(args: argparse.Namespace) -> int:
    """Runs `assoc pack`."""
    folder = Path(args.folder)
    if not folder.is_dir():
        raise CommandFailed(f"{args.folder!r} is not a folder")
    files = table_files(folder)
    if not files:
        raise CommandFailed(f"{args.folder!r} holds no *.qvd or *.csv table files")
    names = [p.stem for p in files]
    with progress_step(f"checking {len(files)} tables"):
        load_model([(p, n) for p, n in zip(files, names, strict=True)])
    entries = [TableEntry(n, f"tables/{p.name}") for p, n in zip(files, names, strict=True)]
    manifest = Manifest(tables=entries, attributes={"name": args.name or folder.resolve().name})
    script = folder / SCRIPT_NAME
    total = sum(p.stat().st_size for p in files)
    with (
        replacing(Path(args.output), ".pack-") as out,
        zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive,
        progress_step(f"packing {folder.name}", total) as step,
    ):
        archive.writestr(MANIFEST_NAME, manifest.to_json())
        for path, entry in zip(files, entries, strict=True):
            archive.write(path, entry.file)
            step.advance(path.stat().st_size)
        for media_path, rel in iter_media_files(folder / "media"):
            if rel.endswith("/"):
                archive.writestr(zipfile.ZipInfo(MEDIA_PREFIX + rel), b"")
            else:
                archive.write(media_path, MEDIA_PREFIX + rel)
        if script.is_file():
            archive.write(script, SCRIPT_NAME)
    return 0
