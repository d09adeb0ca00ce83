"""Load scripts side by side in one run: LOAD * FROM a CSV and a QVD against App.from_csv and
App.from_qvd, and a RESIDENT load of three expressions against polars.

    python benchmarks/compare_script.py [--repeat 3] [--keep DIR]

Rows: 10,000,000 x ASSOC_BENCH_SCALE; columns id (unique int), Name (1,000 texts),
Amount (2-decimal numbers, up to 1,000,000 distinct), OrderDate (M/D/YYYY, 3,653 days).
Contenders alternate; each one's best time counts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import assoc
from assoc import App
from assoc.script import FolderConnections, ScriptRunner
from conftest import scaled
from harness import Measure, column_bytes, model_bytes, symbol_bytes

ROWS = scaled(10_000_000)
N_NAMES = 1000
N_DAYS = 3653
FIRST_DAY = dt.date(2015, 1, 1)
EXPRESSIONS = "Upper(Name) AS U, Amount * 2 AS A2, Year(OrderDate) AS Y"


def write_data(folder: Path, rows: int, seed: int = 7) -> None:
    """orders.csv and orders.qvd (the same table)."""
    import polars as pl

    rng = np.random.default_rng(seed)
    names = np.array([f"name {k:04d} {'abcdefg'[k % 7] * (1 + k % 5)}" for k in range(N_NAMES)])
    days = [FIRST_DAY + dt.timedelta(k) for k in range(N_DAYS)]
    date_texts = np.array([f"{d.month}/{d.day}/{d.year}" for d in days])
    pl.DataFrame(
        {
            "id": np.arange(1, rows + 1, dtype=np.int64),
            "Name": names[rng.integers(0, N_NAMES, rows)],
            "Amount": rng.integers(1, 1_000_000, rows) / 100,
            "OrderDate": date_texts[rng.integers(0, N_DAYS, rows)],
        }
    ).write_csv(folder / "orders.csv")
    App.from_csv(folder / "orders.csv", "orders").write_qvd("orders", folder / "orders.qvd")


def script_app(folder: Path, text: str) -> Any:
    """An app from a script over the folder."""
    return ScriptRunner(text, FolderConnections({"data": folder})).run()


def check_orders(model: Any, table: str) -> None:
    assert model.table_rows(table) == ROWS


def time_once(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


CSV_SCRIPT = (
    "orders: LOAD * FROM [lib://data/orders.csv] (txt, utf8, embedded labels, delimiter is ',');"
)
QVD_SCRIPT = "orders: LOAD * FROM [lib://data/orders.qvd] (qvd);"


def run(folder: Path, repeat: int) -> dict[str, Any]:
    """Every time (seconds) of each contender over `repeat` alternating rounds, the best
    reload CPU of each load, results checked, and the bytes each path reads and writes."""
    import polars as pl

    times: dict[str, list[float]] = {}

    def record(key: str, seconds: float) -> None:
        times.setdefault(key, []).append(seconds)

    loads: list[tuple[str, Callable[[], Any]]] = [
        ("App.from_csv", lambda: App.from_csv(folder / "orders.csv", "orders")._impl),
        ("LOAD * FROM csv", lambda: script_app(folder, CSV_SCRIPT).model),
        ("App.from_qvd", lambda: App.from_qvd(folder / "orders.qvd")._impl),
        ("LOAD * FROM qvd", lambda: script_app(folder, QVD_SCRIPT).model),
    ]
    cpu_ms: dict[str, float] = {}
    for _ in range(repeat):
        for key, load in loads:
            t, model = time_once(load)
            check_orders(model, "orders")
            ms = model.metadata()["reload_meta"]["cpu_time_spent_ms"]
            cpu_ms[key] = min(cpu_ms.get(key, float("inf")), ms)
            del model
            record(key, t)

    # RESIDENT: the statement's own time (its columns computed and packed) vs polars over
    # the same table in memory (Name as String, OrderDate as Date).
    resident = f"{QVD_SCRIPT}\nR: LOAD {EXPRESSIONS} RESIDENT orders;\nDROP TABLE orders;"
    df = pl.read_csv(folder / "orders.csv").with_columns(
        pl.col("OrderDate").str.to_date("%m/%d/%Y")
    )
    expected = None
    resident_bytes = 0
    for _ in range(repeat):
        result = script_app(folder, resident)
        record("LOAD … RESIDENT", dict(result.statement_seconds)[2])
        if expected is None:
            model = result.model
            u = model.symbols("U")
            expected = df.select(
                pl.col("Name").str.to_uppercase().alias("U"),
                (pl.col("Amount") * 2).alias("A2"),
                pl.col("OrderDate").dt.year().alias("Y"),
            )
            assert sorted(u) == sorted(expected["U"].unique().to_list())
            assert sorted(model.symbols("Y")) == sorted(expected["Y"].unique().to_list())
            head = [model.column("R", f)[:1000] for f in ("U", "A2", "Y")]
            assert head[0] == expected["U"][:1000].to_list()
            assert np.allclose(head[1], expected["A2"][:1000].to_numpy())
            assert head[2] == expected["Y"][:1000].to_list()
            resident_bytes = model_bytes(model)
        del result
        t, out = time_once(
            lambda: df.select(
                pl.col("Name").str.to_uppercase().alias("U"),
                (pl.col("Amount") * 2).alias("A2"),
                pl.col("OrderDate").dt.year().alias("Y"),
            )
        )
        assert out.height == ROWS
        record("polars select", t)
    source = App.from_qvd(folder / "orders.qvd")
    fields = ["Name", "Amount", "OrderDate"]
    return {
        "times": times,
        "cpu_ms": cpu_ms,
        "csv_bytes": (folder / "orders.csv").stat().st_size + model_bytes(source),
        "qvd_bytes": (folder / "orders.qvd").stat().st_size + model_bytes(source),
        "resident_bytes": column_bytes(source, "orders", fields)
        + symbol_bytes(source, fields)
        + resident_bytes,
    }


def measures(repeat: int) -> list[Measure]:
    """The three script comparisons as measures for run_all.py."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_data(folder, ROWS)
        r = run(folder, repeat)
    t, cpu = r["times"], r["cpu_ms"]
    rows = f"{ROWS:,} rows x 4"
    return [
        Measure(
            "script.load_csv",
            f"{rows}: LOAD * FROM csv vs App.from_csv",
            t["LOAD * FROM csv"],
            {"App.from_csv": t["App.from_csv"]},
            r["csv_bytes"],
            "the CSV file, and the indexes and symbols written",
            "<= 1.05x App.from_csv",
            {"cpu_ratio": cpu["LOAD * FROM csv"] / max(1.0, cpu["App.from_csv"])},
        ),
        Measure(
            "script.load_qvd",
            f"{rows}: LOAD * FROM qvd vs App.from_qvd",
            t["LOAD * FROM qvd"],
            {"App.from_qvd": t["App.from_qvd"]},
            r["qvd_bytes"],
            "the QVD file, and the indexes and symbols written",
            "<= 1.1x App.from_qvd",
            {"cpu_ratio": cpu["LOAD * FROM qvd"] / max(1.0, cpu["App.from_qvd"])},
        ),
        Measure(
            "script.resident",
            f"{ROWS:,} rows: LOAD {EXPRESSIONS} RESIDENT vs polars",
            t["LOAD … RESIDENT"],
            {"polars": t["polars select"]},
            r["resident_bytes"],
            "packed Name, Amount, OrderDate and their symbols; the new table written",
            "<= 1.0x polars",
        ),
    ]


def main() -> None:
    """Runs the three comparisons and prints times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the data here and keep it")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / "orders.qvd").exists():
            write_data(folder, ROWS)
        csv_mb = (folder / "orders.csv").stat().st_size / 1e6
        print(
            f"{ROWS:,} rows x 4 columns, CSV {csv_mb:.0f} MB, "
            f"{assoc.logical_cores()} logical cores, load average {os.getloadavg()[0]:.2f}"
        )
        r = run(folder, args.repeat)
    best = {k: min(v) for k, v in r["times"].items()}
    cpu_ms = r["cpu_ms"]

    for key, t in best.items():
        cpu = f"   reload CPU {cpu_ms[key]:6.0f} ms" if key in cpu_ms else ""
        print(f"{key:24s} {t:8.3f} s{cpu}")
    for what, ours, theirs, target in (
        ("LOAD * FROM csv / App.from_csv", "LOAD * FROM csv", "App.from_csv", "<= 1.1x"),
        ("LOAD * FROM qvd / App.from_qvd", "LOAD * FROM qvd", "App.from_qvd", "<= 1.1x"),
        ("RESIDENT expressions / polars", "LOAD … RESIDENT", "polars select", "<= 1.0x"),
    ):
        cpu = f", CPU {cpu_ms[ours] / cpu_ms[theirs]:.2f}x" if ours in cpu_ms else ""
        print(f"{what}: {best[ours] / best[theirs]:.2f}x (target {target}){cpu}")


if __name__ == "__main__":
    main()
