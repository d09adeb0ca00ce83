"""CSV columns of several shapes, one column a file, against polars reading the same file, for
one or more builds.

    python benchmarks/csv_shapes.py [--rows 1000000] [--rounds 3] [--build NAME=PYTHONPATH ...]

Shapes: ids that rise, small ints that repeat, texts of 100 values, decimals that rise (running
totals, timestamps: each above every one before), decimals at random, ints at random. Each
round runs, for each shape and each build, one new process that loads the file with
`App.from_csv(path)` and reads it with `polars.read_csv` in turn, 7 times; it prints per build
and shape the median of each side's per-round medians and each round's ratio. polars reads
numbers into plain arrays; assoc builds each column's symbol table (its distinct values) as
well. `--build old=/path/to/old/python` compares a package built from another revision with
this one (default: the `assoc` this interpreter imports, as "this"). The times never gate
anything.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from builds import parse_builds, per_build_medians, print_table

SHAPES: dict[str, Callable[[int, random.Random], str]] = {
    "ids rising": lambda i, rng: str(i),
    "ints repeating": lambda i, rng: str(i * 7 % 1000),
    "texts": lambda i, rng: f"name{i % 100}",
    "decimals rising": lambda i, rng: f"{i * 0.25:.2f}",
    "decimals at random": lambda i, rng: f"{rng.randrange(1_000_000) / 100:.2f}",
    "ints at random": lambda i, rng: str(rng.randrange(100_000)),
}

WORKER = r"""
import json, sys, time
import polars as pl
from assoc import App
path, loads = sys.argv[1], int(sys.argv[2])
for _ in range(2):
    App.from_csv(path); pl.read_csv(path)
ours, theirs = [], []
for _ in range(loads):
    t = time.perf_counter(); app = App.from_csv(path); ours.append(time.perf_counter() - t)
    app = None
    t = time.perf_counter(); frame = pl.read_csv(path); theirs.append(time.perf_counter() - t)
    frame = None
print(json.dumps([ours, theirs]))
"""


def write_shape(path: Path, shape: str, rows: int) -> None:
    """One column `x` of `rows` values of a shape (fixed seed)."""
    rng = random.Random(7)
    value = SHAPES[shape]
    with open(path, "w") as f:
        f.write("x\n")
        f.writelines(value(i, rng) + "\n" for i in range(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build", action="append", default=[], metavar="NAME=PYTHONPATH")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="assoc-csv-shapes-") as tmp:
        cases = {}
        for n, shape in enumerate(SHAPES):
            path = Path(tmp) / f"{n}.csv"
            write_shape(path, shape, args.rows)
            cases[shape] = [str(path), "7"]
        medians = per_build_medians(cases, parse_builds(args.build), args.rounds, WORKER)
    print(f"{args.rows:,} rows, one column")
    print_table(medians, "shape", "polars read_csv", 1)


if __name__ == "__main__":
    main()
