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


def main() -> None:
    """Runs the three comparisons and prints times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the data here and keep it")
    args = parser.parse_args()
    import polars as pl

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

        csv_script = (
            "orders: LOAD * FROM [lib://data/orders.csv]"
            " (txt, utf8, embedded labels, delimiter is ',');"
        )
        qvd_script = "orders: LOAD * FROM [lib://data/orders.qvd] (qvd);"
        best: dict[str, float] = {}

        def record(key: str, seconds: float) -> None:
            best[key] = min(best.get(key, float("inf")), seconds)

        loads: list[tuple[str, Callable[[], Any]]] = [
            ("App.from_csv", lambda: App.from_csv(folder / "orders.csv", "orders")._impl),
            ("LOAD * FROM csv", lambda: script_app(folder, csv_script).model),
            ("App.from_qvd", lambda: App.from_qvd(folder / "orders.qvd")._impl),
            ("LOAD * FROM qvd", lambda: script_app(folder, qvd_script).model),
        ]
        cpu_ms: dict[str, float] = {}
        for _ in range(args.repeat):
            for key, load in loads:
                t, model = time_once(load)
                check_orders(model, "orders")
                ms = model.metadata()["reload_meta"]["cpu_time_spent_ms"]
                cpu_ms[key] = min(cpu_ms.get(key, float("inf")), ms)
                del model
                record(key, t)

        # RESIDENT: the statement's own time (its columns computed and packed) vs polars over
        # the same table in memory (Name as String, OrderDate as Date).
        resident = f"{qvd_script}\nR: LOAD {EXPRESSIONS} RESIDENT orders;\nDROP TABLE orders;"
        df = pl.read_csv(folder / "orders.csv").with_columns(
            pl.col("OrderDate").str.to_date("%m/%d/%Y")
        )
        expected = None
        for _ in range(args.repeat):
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
