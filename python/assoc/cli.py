"""The `assoc` command."""

from __future__ import annotations

import argparse
import sys

from assoc import __version__


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="assoc", description="assoc associative data engine")
    parser.add_argument("--version", action="version", version=f"assoc {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
