"""Aggr and inter-record functions side by side with polars and duckdb, in one run.

    python benchmarks/compare_aggr.py [--rows N] [--repeat K]

Orders has 10,000,000 rows (scaled by ASSOC_BENCH_SCALE): Customer (100,000 values), Month
(120 values) and Amount; Customers maps each customer to one of 20 Regions. Measured, best of
K runs, assoc with the result cache off so every timed cube computes:

- `Avg(Aggr(Sum(Amount), Customer))` by Region against the peers' two-stage group by (sum per
  customer, join the region, mean per region; a customer without orders counts as 0, as the
  engine's virtual table has a row for every possible customer); goal <= 0.5x the best peer;
- `RangeSum(Above(Sum(Amount), 0, 12))` by Month against the plain `Sum(Amount)` by Month:
  the running total's cost on top of the cube; goal <= 1 ms.

The results are checked against each other; the times never gate anything.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl

import assoc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import scaled  # the benchmarks' shared scale knob

CUSTOMERS = 100_000
REGIONS = 20
MONTHS = 120


def make_data(rows: int, seed: int = 11) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    orders = pl.DataFrame(
        {
            "Customer": rng.integers(0, CUSTOMERS, rows),
            "Month": rng.integers(1, MONTHS + 1, rows),
            "Amount": np.round(rng.uniform(0, 100, rows), 2),
        }
    )
    customers = pl.DataFrame(
        {
            "Customer": np.arange(CUSTOMERS),
            "Region": [f"R{i % REGIONS:02d}" for i in range(CUSTOMERS)],
        }
    )
    return orders, customers


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=scaled(10_000_000))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    orders, customers = make_data(args.rows)
    app = assoc.App.from_arrow({"Orders": orders, "Customers": customers})
    session = app.session()
    con = duckdb.connect()
    con.register("orders", orders.to_arrow())
    con.register("customers", customers.to_arrow())
    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)
    try:
        # 1. Avg(Aggr(Sum(Amount), Customer)) by Region.
        t_assoc, cube = best(
            lambda: session.hypercube(["Region"], ["Avg(Aggr(Sum(Amount), Customer))"]), args.repeat
        )
        t_polars, frame = best(
            lambda: (
                customers.join(
                    orders.group_by("Customer").agg(pl.col("Amount").sum()),
                    on="Customer",
                    how="left",
                )
                .fill_null(0)
                .group_by("Region")
                .agg(pl.col("Amount").mean())
                .sort("Region")
            ),
            args.repeat,
        )
        sql = (
            "select Region, avg(coalesce(s, 0)) from customers left join"
            " (select Customer, sum(Amount) s from orders group by Customer) using (Customer)"
            " group by Region order by Region"
        )
        t_duck, rows = best(lambda: con.execute(sql).fetchall(), args.repeat)
        got = {r[0]: r[1] for r in cube.rows}
        for region, value in rows:
            assert math.isclose(got[region], value, rel_tol=1e-9), (region, got[region], value)
        assert len(frame) == len(rows)
        peer = min(t_polars, t_duck)
        print(
            f"Avg(Aggr(Sum(Amount), Customer)) by Region, {args.rows:,} rows: "
            f"assoc {t_assoc * 1e3:.1f} ms, polars {t_polars * 1e3:.1f} ms, "
            f"duckdb {t_duck * 1e3:.1f} ms, ratio {t_assoc / peer:.2f}x (goal <= 0.5x)"
        )

        # 2. RangeSum(Above(Sum(Amount), 0, 12)) by Month on top of Sum(Amount) by Month.
        t_plain, plain = best(lambda: session.hypercube(["Month"], ["Sum(Amount)"]), args.repeat)
        t_range, running = best(
            lambda: session.hypercube(["Month"], ["RangeSum(Above(Sum(Amount), 0, 12))"]),
            args.repeat,
        )
        sums = [r[1] for r in plain.rows]
        for i, row in enumerate(running.rows):
            assert math.isclose(row[1], sum(sums[max(0, i - 11) : i + 1]), rel_tol=1e-9)
        print(
            f"RangeSum(Above(Sum(Amount), 0, 12)) by Month: {t_range * 1e3:.2f} ms against "
            f"Sum(Amount) {t_plain * 1e3:.2f} ms: +{(t_range - t_plain) * 1e3:.2f} ms"
            " (goal <= 1 ms)"
        )
    finally:
        assoc.set_cache_limit(limit)
        session.close()


if __name__ == "__main__":
    main()
