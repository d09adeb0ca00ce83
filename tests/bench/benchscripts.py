"""Smoke runs of benchmark scripts: the installed package on PYTHONPATH, the table printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def package_path() -> str:
    """The folder that holds the `assoc` these tests import."""
    return str(Path(__import__("assoc").__file__).resolve().parents[1])


def script_output(script: str, *args: str) -> str:
    """What benchmarks/`script` with `args` prints, run with this package (it must succeed)."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        env={**os.environ, "PYTHONPATH": package_path()},
        capture_output=True, text=True, timeout=300, cwd=BENCHMARKS,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def table_rows(script: str, *args: str, builds: tuple[str, ...] = ()) -> list[list[str]]:
    """Runs benchmarks/`script` with `args` (and `--build NAME=` this package for each of
    `builds`); the cells of its Markdown table's rows after the header and its rule."""
    named = [f"--build={name}={package_path()}" for name in builds]
    output = script_output(script, *args, *named)
    lines = [line for line in output.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines[1:]]
