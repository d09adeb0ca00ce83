"""`assoc inspect`: an app's tables, fields, key fields and synthetic keys, from a file loaded by
the embedded engine or from an app on a service — one summary of DataModelMetadata for both."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.table import Table

from assoc.app import App
from assoc.cli_client import ServiceClient, add_source_arguments
from assoc.cli_console import CommandFailed, progress_step, stdout_console
from assoc.sources import HEAD_BYTES, SourceKind, detect_kind


def load_file(path: Path) -> App:
    """An App from a package, QVD or CSV file, told by content (a spinner on a terminal)."""
    if not path.is_file():
        raise CommandFailed(f"{str(path)!r} is not a file (an app on a service needs --server URL)")
    with path.open("rb") as f:
        kind = detect_kind(f.read(HEAD_BYTES))
    with progress_step(f"loading {path.name}"):
        if kind is SourceKind.PACKAGE:
            return App.from_package(path)
        if kind is SourceKind.QVD:
            return App.from_qvd(path)
        return App.from_csv(path, path.stem)


def summarise(metadata: dict[str, Any], name: str, show_system: bool = False) -> dict[str, Any]:
    """Tables, fields, keys and synthetic keys of an app, from its DataModelMetadata."""
    fields = [f for f in metadata["fields"] if show_system or not f["is_system"]]
    tables = [
        {
            "name": t["name"],
            "rows": t["no_of_rows"],
            "fields": t["no_of_fields"],
            "key_fields": t["no_of_key_fields"],
            "loose": t["is_loose"],
            "synthetic": t["name"].startswith("$Syn "),
            "bytes": t["byte_size"],
        }
        for t in metadata["tables"]
    ]
    keys = [
        {"field": f["name"], "tables": f["src_tables"], "cardinal": f["cardinal"]}
        for f in fields
        if "$key" in f["tags"] and "$syn" not in f["tags"]
    ]
    synthetic = []
    for f in fields:
        if "$syn" not in f["tags"]:
            continue
        table = f"{f['name']} Table"
        synthetic.append(
            {
                "key": f["name"],
                "table": table,
                "parts": [p["name"] for p in fields if p["src_tables"] == [table]],
                "tables": [t for t in f["src_tables"] if t != table],
            }
        )
    return {
        "name": name,
        "bytes": metadata["static_byte_size"],
        "tables": tables,
        "fields": [
            {
                "name": f["name"],
                "tables": f["src_tables"],
                "cardinal": f["cardinal"],
                "total_count": f["total_count"],
                "tags": f["tags"],
                "bytes": f["byte_size"],
            }
            for f in fields
        ],
        "keys": keys,
        "synthetic_keys": synthetic,
    }


def render(summary: dict[str, Any]) -> None:
    """Prints the summary as four tables."""
    console = stdout_console()
    tables = Table(title=f"{summary['name']}: tables ({summary['bytes']:,} bytes)")
    for column in ("table", "rows", "fields", "key fields", "bytes", ""):
        tables.add_column(column, justify="left" if column in ("table", "") else "right")
    for t in summary["tables"]:
        marks = ", ".join(
            m for m, on in (("synthetic key table", t["synthetic"]), ("loose", t["loose"])) if on
        )
        tables.add_row(
            t["name"],
            f"{t['rows']:,}",
            str(t["fields"]),
            str(t["key_fields"]),
            f"{t['bytes']:,}",
            marks,
        )
    console.print(tables)

    fields = Table(title="fields")
    for column in ("field", "tables", "cardinality", "values", "tags", "bytes"):
        numeric = column in ("cardinality", "values", "bytes")
        fields.add_column(column, justify="right" if numeric else "left")
    for f in summary["fields"]:
        fields.add_row(
            f["name"],
            ", ".join(f["tables"]),
            f"{f['cardinal']:,}",
            f"{f['total_count']:,}",
            " ".join(f["tags"]),
            f"{f['bytes']:,}",
        )
    console.print(fields)

    keys = Table(title="key fields")
    for column in ("key field", "links tables", "cardinality"):
        keys.add_column(column, justify="right" if column == "cardinality" else "left")
    for k in summary["keys"]:
        keys.add_row(k["field"], ", ".join(k["tables"]), f"{k['cardinal']:,}")
    if not summary["keys"]:
        keys.add_row("(none)", "", "")
    console.print(keys)

    if summary["synthetic_keys"]:
        syn = Table(title="synthetic keys")
        for column in ("key", "fields", "links tables"):
            syn.add_column(column)
        for s in summary["synthetic_keys"]:
            syn.add_row(s["key"], ", ".join(s["parts"]), ", ".join(s["tables"]))
        console.print(syn)


def add_parser(commands: Any) -> None:
    """Registers `assoc inspect`."""
    parser = commands.add_parser(
        "inspect",
        help="tables, fields, keys and synthetic keys of an app",
        description="Shows an app's tables (rows, fields, key fields, loose), fields "
        "(cardinality, tags, bytes), key fields and synthetic keys. A package, QVD or CSV file "
        "is loaded with the embedded engine; with --server, SOURCE is an app id on that service.",
    )
    add_source_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    parser.add_argument("--system", action="store_true", help="include the system fields")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Runs `assoc inspect`."""
    if args.server:
        with ServiceClient(args.server) as client:
            name = client.app(args.source)["attributes"].get("name") or args.source
            metadata = client.metadata(args.source)
    else:
        path = Path(args.source)
        metadata = load_file(path).metadata()
        name = path.name
    summary = summarise(metadata, name, args.system)
    if args.json:
        print(json.dumps(summary, indent=1, ensure_ascii=False))
    else:
        render(summary)
    return 0
