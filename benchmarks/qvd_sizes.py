"""QVD loads of several sizes against pyarrow's read of the same table, for one or more builds.

    python benchmarks/qvd_sizes.py [--rows 100,5000,100000,1000000] [--rounds 3]
                                   [--build NAME=PYTHONPATH ...]

The table is compare_qvd.py's (Id, Amount with 2 decimals, Category of 1,000 texts) at each
size, written once. Each round runs, for each size and each build, one new process that loads
the QVD (`App.from_qvd(path)`) and reads the Arrow IPC file in turn, many times (fewer for
larger files); it prints per build and size the median of each side's per-round medians and
each round's ratio. `--build old=/path/to/old/python` compares a package built from another
revision with this one (default: the `assoc` this interpreter imports, as "this"). Results are
checked by compare_qvd.py; the times never gate anything.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from builds import parse_builds, per_build_medians, print_table
from compare_qvd import make_columns, write_files

HERE = Path(__file__).resolve().parent

WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[4])
from compare_qvd import read_arrow
from assoc import App
qvd, arrow, loads = sys.argv[1], sys.argv[2], int(sys.argv[3])
for _ in range(5):
    App.from_qvd(qvd); read_arrow(arrow)
ours, theirs = [], []
for _ in range(loads):
    t = time.perf_counter(); app = App.from_qvd(qvd); ours.append(time.perf_counter() - t)
    app = None
    t = time.perf_counter(); table = read_arrow(arrow); theirs.append(time.perf_counter() - t)
    table = None
print(json.dumps([ours, theirs]))
"""


def loads_for(rows: int) -> int:
    """Loads per process: about 0.2-0.5 s of loading at each size."""
    return max(40, min(2000, 200_000_000 // max(rows * 100, 1)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="100,5000,100000,1000000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build", action="append", default=[], metavar="NAME=PYTHONPATH")
    args = parser.parse_args()
    sizes = [int(r) for r in args.rows.split(",")]
    with tempfile.TemporaryDirectory(prefix="assoc-qvd-sizes-") as tmp:
        cases = {}
        for rows in sizes:
            folder = Path(tmp) / str(rows)
            folder.mkdir()
            qvd, arrow = write_files(folder, make_columns(rows))
            cases[f"{rows:,}"] = [str(qvd), str(arrow), str(loads_for(rows)), str(HERE)]
        medians = per_build_medians(cases, parse_builds(args.build), args.rounds, WORKER)
    print_table(medians, "rows", "arrow IPC read", 3)


if __name__ == "__main__":
    main()
