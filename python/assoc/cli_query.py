"""`assoc query`: a hypercube under selections, printed as a table or CSV — computed by the
embedded engine for a file, or by a service over QIX for an app id."""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from assoc.cli_client import ServiceClient, add_source_arguments
from assoc.cli_console import CommandFailed, stdout_console
from assoc.cli_inspect import load_file


def selection_arg(text: str) -> tuple[str, list[str]]:
    """`Field=v1,v2` as (field, [values])."""
    field, sep, values = text.partition("=")
    if not sep or not field.strip() or not values:
        raise argparse.ArgumentTypeError(f"{text!r} is not Field=value[,value…]")
    return field.strip(), values.split(",")


def add_parser(commands: Any) -> None:
    """Registers `assoc query`."""
    parser = commands.add_parser(
        "query",
        help="a hypercube (dimensions and measures) under selections",
        description="Selects values, then prints one row per combination of the dimensions' "
        "values with each measure aggregated over the possible records, and a totals row. "
        "A package, QVD or CSV file is queried with the embedded engine; with --server, "
        "SOURCE is an app id on that service (queried over QIX).",
    )
    add_source_arguments(parser)
    parser.add_argument(
        "--select",
        type=selection_arg,
        action="append",
        default=[],
        metavar="Field=v1,v2",
        help="select these values of a field (repeat for more fields)",
    )
    parser.add_argument(
        "--dimension", action="append", default=[], metavar="FIELD", help="a dimension (repeat)"
    )
    parser.add_argument(
        "--measure",
        action="append",
        default=[],
        metavar="EXPR",
        help='a measure such as "Sum(Sales)" or "Count(distinct Id)" (repeat)',
    )
    parser.add_argument("--csv", action="store_true", help="print CSV (no totals row)")
    parser.add_argument(
        "--user",
        default="",
        help="open a file's app as this user (section access; with --server the token's)",
    )
    parser.add_argument(
        "--group", action="append", default=[], help="a group of --user (repeat for more)"
    )
    parser.set_defaults(run=run)


def match_values(symbols: Sequence[Any], field: str, texts: list[str]) -> list[Any]:
    """The field's values that typed texts name: by text, else by number."""
    by_text: dict[str, Any] = {}
    by_number: dict[float, Any] = {}
    for value in symbols:
        by_text.setdefault(value_text(value), value)
        number = getattr(value, "number", value)
        if isinstance(number, int | float) and not isinstance(number, bool):
            by_number.setdefault(float(number), value)
    found: list[Any] = []
    for text in texts:
        if text in by_text:
            found.append(by_text[text])
            continue
        try:
            found.append(by_number[float(text)])
        except (ValueError, KeyError):
            raise CommandFailed(f"field {field!r} has no value {text!r}") from None
    return found


def value_text(value: Any) -> str:
    """A value as the output shows it: a Dual's text, numbers without a needless .0."""
    if value is None:
        return ""
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return text
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.15g}"
    return str(value)


def embedded_hypercube(
    path: Path,
    selections: list[tuple[str, list[str]]],
    dimensions: list[str],
    measures: list[str],
    user: str = "",
    groups: Sequence[str] = (),
) -> tuple[list[str], list[tuple[Any, ...]], list[Any]]:
    """(columns, rows, totals) of a file's app under selections, opened by `user` (of
    `groups`): under section access only the rows the app's access table gives them."""
    app = load_file(path)
    with app.session(user, groups) as session:
        for field, texts in selections:
            if field not in app.fields:
                raise CommandFailed(f"the app has no field {field!r}")
            session.select(field, match_values(app.symbols(field), field, texts))
        cube = session.hypercube(dimensions=dimensions, measures=measures)
        return cube.columns, cube.rows, cube.totals


def run(args: argparse.Namespace) -> int:
    """Runs `assoc query`."""
    if not args.dimension and not args.measure:
        raise CommandFailed("give at least one --dimension or --measure")
    if args.server:
        if args.user or args.group:
            raise CommandFailed("--user and --group are for files: the service takes the token's")
        from assoc.cli_qix import hypercube_over_qix

        with ServiceClient(args.server) as client:
            url, token = client.websocket_url(args.source), client.token
        columns, rows, totals = hypercube_over_qix(
            url, token, args.source, args.select, args.dimension, args.measure
        )
    else:
        columns, rows, totals = embedded_hypercube(
            Path(args.source), args.select, args.dimension, args.measure, args.user, args.group
        )
    if args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([value_text(v) for v in row] for row in rows)
        return 0
    table = Table(caption=f"{len(rows):,} rows")
    n_dims = len(args.dimension)
    for i, column in enumerate(columns):
        table.add_column(column, justify="right" if i >= n_dims else "left")
    if measures_total := [value_text(t) if t is not None else "-" for t in totals]:
        table.add_row(
            *(["Totals"] + [""] * (n_dims - 1) if n_dims else []),
            *measures_total,
            style="bold",
            end_section=True,
        )
    for row in rows:
        table.add_row(*(value_text(v) if v is not None else "-" for v in row))
    stdout_console().print(table)
    return 0
