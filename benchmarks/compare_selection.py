"""Selections side by side: assoc against polars and duckdb on the same data, in one run.

    PYTHONPATH=python python benchmarks/compare_selection.py [--repeat N]

Sizes follow ASSOC_BENCH_SCALE (benchmarks/conftest.py). Every answer is checked against
the others' before it is timed. Every timing is the best of N rounds, and each round runs
every contender once, in turn, so ratios are taken within one run under the same load.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

import duckdb
import numpy as np
import polars as pl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assoc
import selection_data
from harness import Measure, Run, column_bytes, interleaved_times
from selection_data import possible_values

Times = dict[str, Any]  # a path's every time (list of seconds), or a figure (float)


def best_interleaved(runs: dict[str, Run], repeat: int) -> dict[str, float]:
    """Best wall time (seconds) of each run over `repeat` rounds; each round runs every one
    once, in turn, so that all see the same load from other processes."""
    return {k: min(v) for k, v in interleaved_times(runs, repeat).items()}


def best(times: Times) -> dict[str, float]:
    """The best of each path's times (figures as they are)."""
    return {k: min(v) if isinstance(v, list) else v for k, v in times.items()}


def one_table(repeat: int) -> Times:
    """10M rows: select 10 of 1,000 categories, get the possible values of a 100K-value field;
    one category alone (a click); and 300 of them."""
    data = selection_data.one_table()
    n, app, df = data["n"], data["app"], data["df"]
    chosen, chosen_labels = data["chosen"], data["chosen_labels"]

    def polars_query() -> pl.Series:
        return df.filter(pl.col("Cat").is_in(chosen_labels)).get_column("Val").unique()

    def polars_click() -> pl.Series:
        return df.filter(pl.col("Cat") == chosen_labels[0]).get_column("Val").unique()

    many = [c for c in range(1000) if c % 10 < 3]  # 300 categories: a set too big to compare
    many_labels = [f"c{i}" for i in many]

    def polars_many() -> pl.Series:
        return df.filter(pl.col("Cat").is_in(many_labels)).get_column("Val").unique()

    session = app.session()

    def assoc_query() -> np.ndarray:
        session.select("Cat", chosen)
        return session.indices("Val", "possible")

    def assoc_click() -> np.ndarray:
        session.select("Cat", chosen[:1])
        return session.indices("Val", "possible")

    def assoc_many() -> np.ndarray:
        session.select("Cat", many)
        return session.indices("Val", "possible")

    # Same answers first.
    assoc_click()
    assert possible_values(app, session, "Val") == set(polars_click().to_list())
    assoc_many()
    assert possible_values(app, session, "Val") == set(polars_many().to_list())
    assoc_query()
    assert possible_values(app, session, "Val") == set(polars_query().to_list())

    def on_threads(threads: int) -> Callable[[], None]:
        def before() -> None:
            assoc.set_threads(threads)
            session.clear()

        return before

    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)  # every timed selection computes
    try:
        out: Times = interleaved_times(
            {
                "polars": (polars_query, None),
                "assoc_1": (assoc_query, on_threads(1)),
                "assoc_2": (assoc_query, on_threads(2)),
                "polars_click": (polars_click, None),
                "assoc_click": (assoc_click, on_threads(2)),
                "polars_many": (polars_many, None),
                "assoc_many": (assoc_many, on_threads(2)),
            },
            repeat,
        )
    finally:
        assoc.set_threads(0)
        assoc.set_cache_limit(limit)
    out["rows"] = float(n)

    # A cached repeat of the same selection state, through the Python API.
    session.select("Cat", chosen)
    session.counts("Val")
    k = 1000

    def repeats() -> None:
        for _ in range(k):
            session.select("Cat", chosen)
            session.counts("Val")

    out["cached"] = [t / k for t in interleaved_times({"cached": (repeats, None)}, 5)["cached"]]
    out["bytes"] = column_bytes(app, "T", ["Cat", "Val"])
    session.close()
    return out


def fact_dimension(repeat: int) -> Times:
    """10M fact rows linked to 100K dimension rows: select in the dimension, get a fact field's
    possible values; and back: select in the fact table, get a dimension field's."""
    data = selection_data.star()
    n_fact, n_dim, app = data["n_fact"], data["n_dim"], data["app"]
    fact, dim, con = data["fact"], data["dim"], data["con"]
    regions, products = data["regions"], data["products"]
    region_list = ", ".join(map(str, regions))
    product_list = ", ".join(map(str, products))

    def polars_forward() -> pl.Series:
        keys = dim.filter(pl.col("Region").is_in(regions)).get_column("DimKey")
        return fact.filter(pl.col("DimKey").is_in(keys.implode())).get_column("Product").unique()

    def polars_back() -> pl.Series:
        keys = fact.filter(pl.col("Product").is_in(products)).get_column("DimKey").unique()
        return dim.filter(pl.col("DimKey").is_in(keys.implode())).get_column("Region").unique()

    def duckdb_forward() -> list[tuple[int]]:
        return con.execute(
            "SELECT DISTINCT Product FROM fact WHERE DimKey IN "
            f"(SELECT DimKey FROM dim WHERE Region IN ({region_list}))"
        ).fetchall()

    def duckdb_back() -> list[tuple[int]]:
        return con.execute(
            "SELECT DISTINCT Region FROM dim WHERE DimKey IN "
            f"(SELECT DimKey FROM fact WHERE Product IN ({product_list}))"
        ).fetchall()

    session = app.session()

    def assoc_forward() -> np.ndarray:
        session.select("Region", regions)
        return session.indices("Product", "possible")

    def assoc_back() -> np.ndarray:
        session.select("Product", products)
        return session.indices("Region", "possible")

    assoc_forward()
    want = set(polars_forward().to_list())
    assert possible_values(app, session, "Product") == want == {r[0] for r in duckdb_forward()}
    session.clear()
    assoc_back()
    want = set(polars_back().to_list())
    assert possible_values(app, session, "Region") == want == {r[0] for r in duckdb_back()}

    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)
    try:
        out: Times = interleaved_times(
            {
                "polars_forward": (polars_forward, None),
                "duckdb_forward": (duckdb_forward, None),
                "assoc_forward": (assoc_forward, session.clear),
                "polars_back": (polars_back, None),
                "duckdb_back": (duckdb_back, None),
                "assoc_back": (assoc_back, session.clear),
            },
            repeat,
        )
    finally:
        assoc.set_cache_limit(limit)
    out["rows"] = float(n_fact)
    out["dim_rows"] = float(n_dim)
    # Both directions read the key and the selected/asked field in both tables.
    out["bytes"] = column_bytes(app, "Fact", ["DimKey", "Product"]) + column_bytes(
        app, "Dim", ["DimKey", "Region"]
    )
    session.close()
    con.close()
    return out


def measures(repeat: int) -> list[Measure]:
    """The selections as measures for run_all.py."""
    a = one_table(repeat)
    read_ab = "packed indexes of Cat and Val (all rows)"
    out = [
        Measure(
            "selection.one_table",
            f"{int(a['rows']):,} rows: select 10 of 1,000 Cat, possible Val (cache off)",
            a["assoc_2"],
            {"polars": a["polars"]},
            a["bytes"],
            read_ab,
            "<= 0.25x polars, <= 2.5x floor",
        ),
        Measure(
            "selection.one_table_1_thread",
            "the same on 1 thread",
            a["assoc_1"],
            {"polars": a["polars"]},
            a["bytes"],
            read_ab,
        ),
        Measure(
            "selection.one_value",
            f"{int(a['rows']):,} rows: select 1 of 1,000 Cat (a click), possible Val",
            a["assoc_click"],
            {"polars": a["polars_click"]},
            a["bytes"],
            read_ab,
        ),
        Measure(
            "selection.many_values",
            f"{int(a['rows']):,} rows: select 300 of 1,000 Cat, possible Val",
            a["assoc_many"],
            {"polars": a["polars_many"]},
            a["bytes"],
            read_ab,
        ),
        Measure("selection.cached", "cached repeat: select + counts", a["cached"]),
    ]
    b = fact_dimension(repeat)
    for d in ("forward", "back"):
        out.append(
            Measure(
                f"selection.star_{d}",
                f"{int(b['rows']):,} fact rows, {int(b['dim_rows']):,} dim rows, {d}",
                b[f"assoc_{d}"],
                {"polars": b[f"polars_{d}"], "duckdb": b[f"duckdb_{d}"]},
                b["bytes"],
                "packed indexes of Fact DimKey, Product and Dim DimKey, Region",
                "<= 1.0x best peer",
            )
        )
    return out


def start(description: str, default_repeat: int) -> argparse.Namespace:
    """Parses --repeat and prints the load average, threads and the peers' versions."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--repeat", type=int, default=default_repeat, help="runs per timing (best one counts)"
    )
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(
        f"threads: {assoc.threads()}, logical cores: {assoc.logical_cores()}, "
        f"polars {pl.__version__}, duckdb {duckdb.__version__}\n"
    )
    return args


def main() -> int:
    """Runs both comparisons and prints a Markdown table."""
    args = start(__doc__.splitlines()[0], 30)
    ms = 1000.0

    a = best(one_table(args.repeat))
    print(
        f"One table, {int(a['rows']):,} rows: select 10 of 1,000 categories, "
        "possible values of a 100K-value field\n"
    )
    print("| engine | ms | vs polars |")
    print("|---|---:|---:|")
    print(f"| polars (Categorical) | {a['polars'] * ms:.2f} | 1.00 |")
    for threads in (1, 2):
        t = a[f"assoc_{threads}"]
        name = f"assoc, {threads} thread{'s' if threads > 1 else ''}"
        print(f"| {name} | {t * ms:.2f} | {t / a['polars']:.2f} |")
    click, polars_click = a["assoc_click"], a["polars_click"]
    print(
        f"| one value selected (a click): polars | {polars_click * ms:.2f} | 1.00 |\n"
        f"| one value selected (a click): assoc, 2 threads | {click * ms:.2f} | "
        f"{click / polars_click:.2f} |"
    )
    many, polars_many = a["assoc_many"], a["polars_many"]
    print(
        f"| 300 values selected: polars | {polars_many * ms:.2f} | 1.00 |\n"
        f"| 300 values selected: assoc, 2 threads | {many * ms:.2f} | "
        f"{many / polars_many:.2f} |"
    )
    print(f"\nassoc speed-up from 1 to 2 threads: {a['assoc_1'] / a['assoc_2']:.2f}x")
    print(
        f"Cached repeat of the same selection state (select + counts): {a['cached'] * 1e6:.1f} us\n"
    )

    b = best(fact_dimension(args.repeat))
    print(f"Fact {int(b['rows']):,} rows linked to a dimension of {int(b['dim_rows']):,} rows\n")
    print("| direction | polars ms | duckdb ms | assoc ms | assoc vs best |")
    print("|---|---:|---:|---:|---:|")
    for d, label in (
        ("forward", "select in dimension, fact field's values"),
        ("back", "select in fact, dimension field's values"),
    ):
        p, q, r = b[f"polars_{d}"], b[f"duckdb_{d}"], b[f"assoc_{d}"]
        print(f"| {label} | {p * ms:.2f} | {q * ms:.2f} | {r * ms:.2f} | {r / min(p, q):.2f} |")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
