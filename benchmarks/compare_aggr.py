"""Aggr and inter-record functions side by side with polars and duckdb, in one run.

    python benchmarks/compare_aggr.py [--rows N] [--repeat K]

Orders has 10,000,000 rows (scaled by ASSOC_BENCH_SCALE): Customer (100,000 values), Month
(120 values) and Amount; Customers maps each customer to one of 20 Regions. Measured, best of
K alternating rounds, assoc with the result cache off so every timed cube computes:

- `Avg(Aggr(Sum(Amount), Customer))` by Region against the peers' two-stage group by (sum per
  customer, join the region, mean per region; a customer without orders counts as 0, as the
  engine's virtual table has a row for every possible customer); goal <= 0.5x the best peer;
- `RangeSum(Above(Sum(Amount), 0, 12))` by Month against the plain `Sum(Amount)` by Month:
  the running total's cost on top of the cube; goal <= 1 ms. That cost does not grow with the
  rows (it works on the 120 rows of the cube), while the 10M-row scan on a loaded machine
  varies by milliseconds between rounds; so it is also timed on 100,000 rows of the same
  shape, best of 200 interleaved rounds, where it resolves to microseconds.

The results are checked against each other; the times never gate anything.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl

import assoc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import scaled  # the benchmarks' shared scale knob
from harness import Measure, column_bytes, interleaved_times, symbol_bytes

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


def run(rows: int, repeat: int) -> dict[str, Any]:
    """Every time (seconds) of each contender over `repeat` alternating rounds, results checked,
    and the bytes each assoc path reads."""
    orders, customers = make_data(rows)
    app = assoc.App.from_arrow({"Orders": orders, "Customers": customers})
    session = app.session()
    con = duckdb.connect()
    con.register("orders", orders.to_arrow())
    con.register("customers", customers.to_arrow())
    sql = (
        "select Region, avg(coalesce(s, 0)) from customers left join"
        " (select Customer, sum(Amount) s from orders group by Customer) using (Customer)"
        " group by Region order by Region"
    )

    def assoc_aggr() -> Any:
        return session.hypercube(["Region"], ["Avg(Aggr(Sum(Amount), Customer))"])

    def polars_aggr() -> pl.DataFrame:
        return (
            customers.join(
                orders.group_by("Customer").agg(pl.col("Amount").sum()), on="Customer", how="left"
            )
            .fill_null(0)
            .group_by("Region")
            .agg(pl.col("Amount").mean())
            .sort("Region")
        )

    def plain() -> Any:
        return session.hypercube(["Month"], ["Sum(Amount)"])

    def running() -> Any:
        return session.hypercube(["Month"], ["RangeSum(Above(Sum(Amount), 0, 12))"])

    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)
    try:
        # Same answers first.
        got = {r[0]: r[1] for r in assoc_aggr().rows}
        rows_sql = con.execute(sql).fetchall()
        for region, value in rows_sql:
            assert math.isclose(got[region], value, rel_tol=1e-9), (region, got[region], value)
        assert len(polars_aggr()) == len(rows_sql)
        sums = [r[1] for r in plain().rows]
        for i, row in enumerate(running().rows):
            assert math.isclose(row[1], sum(sums[max(0, i - 11) : i + 1]), rel_tol=1e-9)
        times = interleaved_times(
            {
                "assoc aggr": (assoc_aggr, None),
                "polars aggr": (polars_aggr, None),
                "duckdb aggr": (lambda: con.execute(sql).fetchall(), None),
                "assoc plain": (plain, None),
                "assoc running": (running, None),
            },
            repeat,
        )
    finally:
        assoc.set_cache_limit(limit)
        session.close()
    amount = symbol_bytes(app, ["Amount"])
    return {
        "times": times,
        "aggr_bytes": column_bytes(app, "Orders", ["Customer", "Amount"])
        + amount
        + column_bytes(app, "Customers", ["Customer", "Region"]),
        "month_bytes": column_bytes(app, "Orders", ["Month", "Amount"]) + amount,
    }


def measures(repeat: int) -> list[Measure]:
    """Aggr and the running total as measures for run_all.py."""
    rows = scaled(10_000_000)
    r = run(rows, repeat)
    t = r["times"]
    return [
        Measure(
            "aggr.avg_aggr",
            f"{rows:,} rows: Avg(Aggr(Sum(Amount), Customer)) by Region (cache off)",
            t["assoc aggr"],
            {"polars": t["polars aggr"], "duckdb": t["duckdb aggr"]},
            r["aggr_bytes"],
            "packed Orders Customer, Amount and Customers Customer, Region; Amount's symbols",
            "<= 0.5x best peer",
        ),
        Measure(
            "aggr.range_sum_above",
            f"{rows:,} rows: RangeSum(Above(Sum(Amount), 0, 12)) by Month vs Sum(Amount)",
            t["assoc running"],
            {"Sum(Amount) by Month": t["assoc plain"]},
            r["month_bytes"],
            "packed Orders Month, Amount; Amount's symbols",
            "<= plain + 1 ms",
        ),
    ]


def window_cost(rows: int = 100_000, repeat: int = 200) -> tuple[float, float]:
    """Best times (seconds) of the plain and the running-total cube on `rows` rows."""
    orders, customers = make_data(rows)
    app = assoc.App.from_arrow({"Orders": orders, "Customers": customers})
    session = app.session()
    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)
    try:
        times = interleaved_times(
            {
                "plain": (lambda: session.hypercube(["Month"], ["Sum(Amount)"]), None),
                "running": (
                    lambda: session.hypercube(["Month"], ["RangeSum(Above(Sum(Amount), 0, 12))"]),
                    None,
                ),
            },
            repeat,
        )
    finally:
        assoc.set_cache_limit(limit)
        session.close()
    return min(times["plain"]), min(times["running"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=scaled(10_000_000))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    r = run(args.rows, args.repeat)
    t = {k: min(v) for k, v in r["times"].items()}
    t_assoc, t_polars, t_duck = t["assoc aggr"], t["polars aggr"], t["duckdb aggr"]
    peer = min(t_polars, t_duck)
    print(
        f"Avg(Aggr(Sum(Amount), Customer)) by Region, {args.rows:,} rows: "
        f"assoc {t_assoc * 1e3:.1f} ms, polars {t_polars * 1e3:.1f} ms, "
        f"duckdb {t_duck * 1e3:.1f} ms, ratio {t_assoc / peer:.2f}x (goal <= 0.5x)"
    )
    t_range, t_plain = t["assoc running"], t["assoc plain"]
    print(
        f"RangeSum(Above(Sum(Amount), 0, 12)) by Month: {t_range * 1e3:.2f} ms against "
        f"Sum(Amount) {t_plain * 1e3:.2f} ms: +{(t_range - t_plain) * 1e3:.2f} ms"
        " (goal <= 1 ms)"
    )
    small_plain, small_running = window_cost()
    print(
        f"  the same on 100,000 rows, best of 200: {small_running * 1e3:.3f} ms against "
        f"{small_plain * 1e3:.3f} ms: +{(small_running - small_plain) * 1e3:.3f} ms"
    )


if __name__ == "__main__":
    main()
