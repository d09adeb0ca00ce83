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
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

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
    builds = dict(b.split("=", 1) for b in args.build) or {"this": os.pathsep.join(sys.path)}
    medians: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="assoc-csv-shapes-") as tmp:
        files = {}
        for n, shape in enumerate(SHAPES):
            files[shape] = Path(tmp) / f"{n}.csv"
            write_shape(files[shape], shape, args.rows)
        for _ in range(args.rounds):
            for shape, path in files.items():
                for name, package in builds.items():
                    out = subprocess.run(
                        [sys.executable, "-c", WORKER, str(path), "7"],
                        env={**os.environ, "PYTHONPATH": package},
                        capture_output=True, text=True, check=True,
                    )  # fmt: skip
                    ours, theirs = json.loads(out.stdout)
                    medians.setdefault((shape, name), []).append(
                        (statistics.median(ours), statistics.median(theirs))
                    )
    print(f"{args.rows:,} rows, one column")
    print("| shape | build | assoc | polars read_csv | ratio per round |")
    print("|---|---|---:|---:|---|")
    for (shape, name), pairs in medians.items():
        ours_ms = statistics.median(p[0] for p in pairs) * 1e3
        theirs_ms = statistics.median(p[1] for p in pairs) * 1e3
        ratios = ", ".join(f"{a / b:.2f}" for a, b in pairs)
        print(f"| {shape} | {name} | {ours_ms:.1f} ms | {theirs_ms:.1f} ms | {ratios} |")


if __name__ == "__main__":
    main()
