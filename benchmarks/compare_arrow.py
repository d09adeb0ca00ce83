"""Arrow in and out side by side, in one run on the same data.

    python benchmarks/compare_arrow.py [--rows N] [--repeat K]

The table has 10,000,000 rows (scaled by ASSOC_BENCH_SCALE): Small (text, 1,000 values),
Large (text, 100,000 values), Qty (int) and Price (float). Measured, best of K runs:

- export: polars.DataFrame(app.table(...)) through the capsule, against pl.from_arrow of the
  same data as a pyarrow table with dictionary columns (goal <= 1.5x);
- import: App.from_arrow of that pyarrow table, against App.from_csv of the same data
  written as CSV (goal <= 0.5x).

Both results are checked against the source data; the times never gate anything.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.csv

import assoc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import scaled  # the benchmarks' shared scale knob


def make_table(rows: int, seed: int = 7) -> pa.Table:
    """The benchmark table as pyarrow, text columns dictionary-encoded."""
    rng = np.random.default_rng(seed)
    small = pa.array([f"small-{i:04d}" for i in range(1000)])
    large = pa.array([f"large-value-{i:06d}" for i in range(100_000)])
    return pa.table(
        {
            "Small": pa.DictionaryArray.from_arrays(
                pa.array(rng.integers(0, 1000, rows, dtype=np.int32)), small
            ),
            "Large": pa.DictionaryArray.from_arrays(
                pa.array(rng.integers(0, 100_000, rows, dtype=np.int32)), large
            ),
            "Qty": pa.array(rng.integers(1, 1000, rows)),
            "Price": pa.array(np.round(rng.uniform(0, 1000, rows), 2)),
        }
    )


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The best time of `repeat` runs, and the last result."""
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
        if _ != repeat - 1:
            out = None
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=scaled(10_000_000))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    source = make_table(args.rows)
    print(
        f"{args.rows:,} rows; assoc {assoc.__version__}, pyarrow {pa.__version__}, "
        f"polars {pl.__version__}, {assoc.threads()} threads"
    )

    # Import: the pyarrow table against the same data as CSV.
    with tempfile.TemporaryDirectory() as folder:
        csv_path = Path(folder) / "data.csv"
        plain = source.cast(
            pa.schema(
                [
                    ("Small", pa.string()),
                    ("Large", pa.string()),
                    ("Qty", pa.int64()),
                    ("Price", pa.float64()),
                ]
            )
        )
        pyarrow.csv.write_csv(plain, csv_path, pyarrow.csv.WriteOptions(quoting_style="none"))
        del plain
        t_csv, from_csv = best(lambda: assoc.App.from_csv(csv_path, "T"), args.repeat)
    t_in, app = best(lambda: assoc.App.from_arrow({"T": source}), args.repeat)
    assert app.table("T").num_rows == args.rows == from_csv.table("T").num_rows
    for field in ("Small", "Large"):
        assert sorted(app.symbols(field)) == sorted(from_csv.symbols(field))
    assert app.table("T").column_indices("Qty")[:1000].tolist() == [
        app.symbols("Qty").index(v) for v in source.column("Qty").to_pylist()[:1000]
    ]
    del from_csv

    # Export: the app's table to polars through the capsule, against pl.from_arrow.
    table = app.table("T")
    t_out, frame = best(lambda: pl.DataFrame(table), args.repeat)
    t_pl, reference = best(lambda: pl.from_arrow(source), args.repeat)
    assert frame.shape == reference.shape
    for column in ("Small", "Large", "Qty", "Price"):
        assert frame[column].cast(reference[column].dtype).equals(reference[column]), column

    print(
        f"import  App.from_arrow {t_in:8.3f} s   App.from_csv {t_csv:8.3f} s   "
        f"ratio {t_in / t_csv:5.2f}x (goal <= 0.5x)"
    )
    print(
        f"export  capsule->polars {t_out:7.3f} s   pl.from_arrow {t_pl:8.3f} s   "
        f"ratio {t_out / t_pl:5.2f}x (goal <= 1.5x)"
    )


if __name__ == "__main__":
    main()
