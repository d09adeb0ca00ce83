"""CSV import side by side in one run on one file: assoc vs pyarrow and polars, 2 threads vs 1.

    python benchmarks/compare_csv.py [--repeat 3] [--keep PATH]

Rows: 10,000,000 x ASSOC_BENCH_SCALE. Each contender runs `--repeat` times; the best time counts.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import assoc
from assoc import App
from conftest import scaled
from harness import Measure, Run, interleaved_times, model_bytes

ROWS_NOW = scaled(10_000_000)
N_NAMES = 1000
N_QTY = 100_000


def write_csv(path: Path, rows: int, seed: int = 42) -> None:
    """The benchmark table: int id, int 0..99,999, text of 1,000 values, 2-decimal float."""
    import polars as pl

    rng = np.random.default_rng(seed)
    names = np.array([f"item-{k:03d}-{'xyzw'[k % 4] * (1 + k % 7)}" for k in range(N_NAMES)])
    pl.DataFrame(
        {
            "id": np.arange(1, rows + 1, dtype=np.int64),
            "qty": rng.integers(0, N_QTY, rows),
            "name": names[rng.integers(0, N_NAMES, rows)],
            "price": np.round(rng.random(rows) * 10_000, 2),
        }
    ).write_csv(path)


def load_assoc(path: Path) -> Any:
    """App.from_csv; checks rows and the text field's cardinality."""
    app = App.from_csv(path, "T")
    md = app.metadata()
    cardinal = {f["name"]: f["cardinal"] for f in md["fields"]}
    assert app.table("T").num_rows == ROWS_NOW, app.table("T").num_rows
    assert cardinal["id"] == ROWS_NOW
    assert 0 < cardinal["name"] <= N_NAMES
    assert cardinal["qty"] <= N_QTY
    return app


def load_pyarrow(path: Path) -> Any:
    """pyarrow.csv.read_csv, then the text column dictionary-encoded."""
    import pyarrow.csv as pacsv

    table = pacsv.read_csv(path)
    names = table.column("name").dictionary_encode()
    assert table.num_rows == ROWS_NOW
    assert len(names.chunk(0).dictionary) <= N_NAMES
    return table, names


def load_polars(path: Path) -> Any:
    """polars.read_csv with the text column as Categorical."""
    import polars as pl

    df = pl.read_csv(path, schema_overrides={"name": pl.Categorical})
    assert df.height == ROWS_NOW
    assert 0 < df["name"].n_unique() <= N_NAMES
    return df


def run(path: Path, repeat: int) -> dict[str, Any]:
    """Every time (seconds) of each contender over `repeat` rounds (each round runs them all,
    in turn), the CPU time of one import, the file's bytes and the app's."""

    def on_threads(threads: int) -> Run:
        def load() -> None:
            load_assoc(path)

        return load, lambda: assoc.set_threads(threads)

    try:
        times = interleaved_times(
            {
                "assoc (all threads)": on_threads(0),
                "assoc (1 thread)": on_threads(1),
                "pyarrow read_csv + dictionary_encode": (lambda: load_pyarrow(path), None),
                "polars read_csv, Categorical": (lambda: load_polars(path), None),
            },
            repeat,
        )
    finally:
        assoc.set_threads(0)
    app = App.from_csv(path, "T")
    return {
        "times": times,
        "cpu_ms": app.metadata()["reload_meta"]["cpu_time_spent_ms"],
        "file_bytes": path.stat().st_size,
        "model_bytes": model_bytes(app),
    }


def measures(repeat: int) -> list[Measure]:
    """The import as measures for run_all.py."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.csv"
        write_csv(path, ROWS_NOW)
        r = run(path, repeat)
    times = r["times"]
    peers = {k: v for k, v in times.items() if not k.startswith("assoc")}
    floor = r["file_bytes"] + r["model_bytes"]
    read = "the CSV file, and the indexes and symbols written"
    what = f"{ROWS_NOW:,} rows x 4 columns, App.from_csv"
    return [
        Measure(
            "csv.import",
            what,
            times["assoc (all threads)"],
            peers,
            floor,
            read,
            "<= 0.7x best peer",
            {"cpu_ms": float(r["cpu_ms"])},
        ),
        Measure(
            "csv.import_1_thread",
            what + ", 1 thread",
            times["assoc (1 thread)"],
            peers,
            floor,
            read,
        ),
    ]


def main() -> None:
    """Runs the comparison and prints times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the CSV here and keep it")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "bench.csv"
        if not path.exists():
            write_csv(path, ROWS_NOW)
        size_mb = path.stat().st_size / 1e6
        cores = assoc.logical_cores()
        print(f"{ROWS_NOW:,} rows x 4 columns, {size_mb:.0f} MB, {cores} logical cores")
        r = run(path, args.repeat)
        results = {k: min(v) for k, v in r["times"].items()}
        cpu_ms = r["cpu_ms"]

    for name, t in results.items():
        print(f"{name:40s} {t:8.3f} s   {size_mb / t:7.0f} MB/s")
    ours = results["assoc (all threads)"]
    peers = {k: v for k, v in results.items() if not k.startswith("assoc")}
    best_peer = min(peers, key=lambda k: peers[k])
    print(f"assoc / best peer ({best_peer}): {ours / peers[best_peer]:.2f}x  (target <= 1.5x)")
    speedup = results["assoc (1 thread)"] / ours
    print(f"assoc all threads vs 1 thread: {speedup:.2f}x faster  (target >= 1.6x)")
    print(f"assoc CPU time of one import (reload_meta.cpu_time_spent_ms): {cpu_ms} ms")


if __name__ == "__main__":
    main()
