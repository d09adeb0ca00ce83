"""Arrow in and out side by side, in one run on the same data.

    python benchmarks/compare_arrow.py [--rows N] [--repeat K]

The table has 10,000,000 rows (scaled by ASSOC_BENCH_SCALE): Small (text, 1,000 values),
Large (text, 100,000 values), Qty (int) and Price (float). Measured, best of K alternating rounds:

- export: polars.DataFrame(app.table(...)) through the capsule, against pl.from_arrow of the
  same data as a pyarrow table with dictionary columns (goal <= 1.5x);
- import: App.from_arrow of that pyarrow table, against App.from_csv of the same data
  written as CSV (goal <= 0.5x);
- numbers: App.from_tables of numpy columns of numbers (Id: every value distinct; Amount: cents
  over 0-10,000; Qty: 1-999; Ratio: random floats, every value distinct), against pyarrow's
  dictionary_encode of each column, which makes what a load makes of a column: its distinct
  values in the order first seen, and each row's index among them.

Both results are checked against the source data; the times never gate anything.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv

import assoc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import scaled  # the benchmarks' shared scale knob
from harness import Measure, interleaved_times, model_bytes


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


def make_numbers(rows: int, seed: int = 11) -> dict[str, np.ndarray]:
    """The numeric columns of the numbers comparison."""
    rng = np.random.default_rng(seed)
    return {
        "Id": np.arange(rows, dtype=np.int64),
        "Amount": np.round(rng.uniform(0, 10_000, rows), 2),
        "Qty": rng.integers(1, 1000, rows),
        "Ratio": rng.uniform(0, 1, rows),
    }


def numbers(rows: int, repeat: int) -> dict[str, list[float]]:
    """App.from_tables of numeric columns against pyarrow's dictionary_encode of each, after
    checking that both find the same distinct values in the same order, and rows alike."""
    columns = make_numbers(rows)
    arrays = {name: pa.array(values) for name, values in columns.items()}
    app = assoc.App.from_tables({"T": columns})
    for name, array in arrays.items():
        encoded = pc.dictionary_encode(array)
        assert app.symbols(name) == encoded.dictionary.to_pylist(), name
        indices = app.table("T").column_indices(name)
        assert np.array_equal(indices, encoded.indices.to_numpy()), name
    del app
    return interleaved_times(
        {
            "App.from_tables": (lambda: assoc.App.from_tables({"T": columns}), None),
            "dictionary_encode": (
                lambda: [pc.dictionary_encode(a) for a in arrays.values()],
                None,
            ),
        },
        repeat,
    )


def run(rows: int, repeat: int) -> dict[str, Any]:
    """Every time (seconds) of import and export and their references, over `repeat`
    alternating rounds; results checked first; the bytes each path reads and writes."""
    source = make_table(rows)
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
        # Import: the pyarrow table against the same data as CSV. Same answers first.
        app = assoc.App.from_arrow({"T": source})
        from_csv = assoc.App.from_csv(csv_path, "T")
        assert app.table("T").num_rows == rows == from_csv.table("T").num_rows
        for field in ("Small", "Large"):
            assert sorted(app.symbols(field)) == sorted(from_csv.symbols(field))
        assert app.table("T").column_indices("Qty")[:1000].tolist() == [
            app.symbols("Qty").index(v) for v in source.column("Qty").to_pylist()[:1000]
        ]
        del from_csv
        imports = interleaved_times(
            {
                "App.from_arrow": (lambda: assoc.App.from_arrow({"T": source}), None),
                "App.from_csv": (lambda: assoc.App.from_csv(csv_path, "T"), None),
            },
            repeat,
        )
    # Export: the app's table to polars through the capsule, against pl.from_arrow.
    table = app.table("T")
    frame, reference = pl.DataFrame(table), pl.from_arrow(source)
    assert isinstance(reference, pl.DataFrame)
    assert frame.shape == reference.shape
    for column in ("Small", "Large", "Qty", "Price"):
        assert frame[column].cast(reference[column].dtype).equals(reference[column]), column
    exports = interleaved_times(
        {
            "capsule->polars": (lambda: pl.DataFrame(table), None),
            "pl.from_arrow": (lambda: pl.from_arrow(source), None),
        },
        repeat,
    )
    return {
        "times": {**imports, **exports, **numbers(rows, repeat)},
        "arrow_bytes": source.nbytes,
        "model_bytes": model_bytes(app),
        "frame_bytes": int(frame.estimated_size()),
    }


def measures(repeat: int) -> list[Measure]:
    """Arrow in and out as measures for run_all.py."""
    rows = scaled(10_000_000)
    r = run(rows, repeat)
    t = r["times"]
    return [
        Measure(
            "arrow.import",
            f"{rows:,} rows x 4: App.from_arrow vs App.from_csv of the same data",
            t["App.from_arrow"],
            {"App.from_csv": t["App.from_csv"]},
            r["arrow_bytes"] + r["model_bytes"],
            "the Arrow buffers, and the indexes and symbols written",
            "<= 0.5x App.from_csv",
        ),
        Measure(
            "arrow.export",
            f"{rows:,} rows x 4: the table to polars through the capsule vs pl.from_arrow",
            t["capsule->polars"],
            {"pl.from_arrow": t["pl.from_arrow"]},
            r["model_bytes"] + r["frame_bytes"],
            "the indexes and symbols, and the frame written",
            "<= 1.5x pl.from_arrow",
        ),
        Measure(
            "arrow.numbers",
            f"{rows:,} rows x 4 numeric columns: App.from_tables vs pyarrow dictionary_encode",
            t["App.from_tables"],
            {"dictionary_encode": t["dictionary_encode"]},
            rows * 4 * 8,
            "the numbers read",
            "",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=scaled(10_000_000))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{args.rows:,} rows; assoc {assoc.__version__}, pyarrow {pa.__version__}, "
        f"polars {pl.__version__}, {assoc.threads()} threads"
    )
    t = {k: min(v) for k, v in run(args.rows, args.repeat)["times"].items()}
    t_in, t_csv = t["App.from_arrow"], t["App.from_csv"]
    t_out, t_pl = t["capsule->polars"], t["pl.from_arrow"]
    print(
        f"import  App.from_arrow {t_in:8.3f} s   App.from_csv {t_csv:8.3f} s   "
        f"ratio {t_in / t_csv:5.2f}x (goal <= 0.5x)"
    )
    print(
        f"export  capsule->polars {t_out:7.3f} s   pl.from_arrow {t_pl:8.3f} s   "
        f"ratio {t_out / t_pl:5.2f}x (goal <= 1.5x)"
    )
    t_num, t_dict = t["App.from_tables"], t["dictionary_encode"]
    print(
        f"numbers App.from_tables {t_num:7.3f} s   dictionary_encode {t_dict:5.3f} s   "
        f"ratio {t_num / t_dict:5.2f}x"
    )


if __name__ == "__main__":
    main()
