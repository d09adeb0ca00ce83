"""Hypercubes side by side: assoc against polars and duckdb on the same data, in one run.

    PYTHONPATH=python python benchmarks/compare_hypercube.py [--repeat N]

Sizes follow ASSOC_BENCH_SCALE (benchmarks/conftest.py). Every answer is checked against
the others' before it is timed. Timings are the best of N rounds, each round running every
contender once, in turn; assoc runs with the result cache off, so every timed cube computes.
The session holds its selection's possible rows (computed when the selection is made, as
in Qlik); "select + cube" times making the selection too.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assoc
from compare_selection import Times, best, start
from conftest import scaled
from harness import Measure, Run, column_bytes, interleaved_times, symbol_bytes
from selection_data import duckdb_holding


def memory_kb(field: str) -> int:
    """A memory figure of this process from /proc/self/status (VmRSS, VmHWM), in kB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def peak_growth_bytes(fn: Any) -> int:
    """How far the resident size peaks above where it was while fn runs (Linux: the peak is
    reset through /proc/self/clear_refs first)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = memory_kb("VmRSS")
    fn()
    return max(0, memory_kb("VmHWM") - before) * 1024


def one_table_data() -> dict[str, Any]:
    """10M rows: Category (1,000 values), Customer (100K), Amount (cents), Sel (1,000 values),
    Channel (10 values)."""
    rng = np.random.default_rng(11)
    n = scaled(10_000_000)
    cat = rng.integers(0, 1000, n)
    customer = rng.integers(0, 100_000, n)
    amount = rng.integers(100, 100_000, n) / 100
    sel = rng.integers(0, 1000, n)
    chosen = [int(x) for x in rng.choice(1000, 10, replace=False)]
    channel = rng.integers(0, 10, n)
    labels = pl.Series([f"c{i}" for i in range(1000)])
    df = pl.DataFrame(
        {
            "Category": labels.gather(cat).cast(pl.Categorical),
            "CategoryNo": cat,
            "Customer": customer,
            "Amount": amount,
            "Sel": sel,
            "Channel": channel,
        }
    )
    con = duckdb_holding(t=df.drop("Category"))
    app = assoc.App.from_tables(
        {
            "T": {
                "Category": cat,
                "Customer": customer,
                "Amount": amount,
                "Sel": sel,
                "Channel": channel,
            }
        }
    )
    return {"n": n, "df": df, "con": con, "app": app, "chosen": chosen}


def one_table(repeat: int) -> Times:
    """Cube by Category of Sum(Amount) and Count(distinct Customer), without and with a
    selection of 10 values in another field."""
    data = one_table_data()
    df, con, app, chosen = data["df"], data["con"], data["app"], data["chosen"]
    chosen_sql = ", ".join(map(str, chosen))
    measures = ["Sum(Amount)", "Count(distinct Customer)"]
    session = app.session()
    out: Times = {"rows": float(data["n"])}
    # Extra memory while computing: how far the resident size peaks above where it was, on
    # the first cube of this shape (later ones may reuse memory the allocator kept).
    out["extra_bytes_per_row"] = peak_growth_bytes(
        lambda: session.hypercube(["Category"], measures)
    ) / float(data["n"])

    for case in ("all", "selected"):
        frame = df if case == "all" else df.filter(pl.col("Sel").is_in(chosen))
        where = "" if case == "all" else f"WHERE Sel IN ({chosen_sql})"

        def polars_query(frame: pl.DataFrame = df, case: str = case) -> pl.DataFrame:
            f = frame if case == "all" else frame.filter(pl.col("Sel").is_in(chosen))
            return f.group_by("Category").agg(pl.col("Amount").sum(), pl.col("Customer").n_unique())

        def duckdb_query(where: str = where) -> list[tuple[Any, ...]]:
            return con.execute(
                "SELECT CategoryNo, SUM(Amount), COUNT(DISTINCT Customer) "
                f"FROM t {where} GROUP BY CategoryNo"
            ).fetchall()

        def assoc_query() -> assoc.Hypercube:
            return session.hypercube(["Category"], measures)

        session.clear()
        if case == "selected":
            session.select("Sel", chosen)
        # Same answer first.
        cube = assoc_query()
        want = {r[0]: (r[1], r[2]) for r in duckdb_query()}
        got = {int(c): (s, d) for c, s, d in cube.rows}
        assert got.keys() == want.keys()
        for k, (s, d) in got.items():
            assert abs(s - want[k][0]) < 1e-6 * max(1.0, abs(s)), k
            assert d == want[k][1], k
        p = polars_query().sort("Category")
        assert p.height == len(cube)
        assert int(p.get_column("Customer").sum()) == int(sum(d for _, _, d in cube.rows))
        del frame

        def on_threads(threads: int) -> Run:
            return (assoc_query, lambda: assoc.set_threads(threads))

        def select_and_cube() -> assoc.Hypercube:
            session.clear()
            session.select("Sel", chosen)
            return assoc_query()

        runs = {
            "polars": (polars_query, None),
            "duckdb": (duckdb_query, None),
            "assoc_1": on_threads(1),
            "assoc_2": on_threads(2),
        }
        if case == "selected":
            runs["assoc_with_selection"] = (select_and_cube, None)
        limit = assoc.cache_info()["limit"]
        assoc.set_cache_limit(0)
        try:
            times = interleaved_times(runs, repeat)
        finally:
            assoc.set_threads(0)
            assoc.set_cache_limit(limit)
        out.update({f"{case}_{k}": v for k, v in times.items()})

    out.update(chart_cube(data, session, repeat))
    out.update(stacked_cube(data, session, repeat))
    out.update(by_share(data, session, repeat))

    # A repeated cube for the same state, through the Python API (served from the cache).
    session.hypercube(["Category"], measures)
    k = 1000

    def repeats() -> None:
        for _ in range(k):
            session.hypercube(["Category"], measures)

    out["cached"] = [t / k for t in interleaved_times({"cached": (repeats, None)}, 5)["cached"]]
    # The cube reads Category, Amount and Customer for every row (Sel too when selected),
    # and Amount's numbers.
    cube = column_bytes(app, "T", ["Category", "Amount", "Customer"])
    out["all_bytes"] = cube + symbol_bytes(app, ["Amount"])
    out["selected_bytes"] = out["all_bytes"] + column_bytes(app, "T", ["Sel"])
    session.close()
    con.close()
    return out


def checked_times(
    polars_query: Any, duckdb_query: Any, assoc_query: Any, repeat: int, n_dims: int = 1
) -> dict[str, list[float]]:
    """Each side's times over `repeat` interleaved rounds (assoc with the result cache off),
    once the three agree: per group (its `n_dims` dimensions numbered as in duckdb), the Sum
    and the second measure (a Count) of assoc equal duckdb's, and polars has as many groups."""
    want = {tuple(r[:n_dims]): tuple(r[n_dims:]) for r in duckdb_query()}
    got = {tuple(int(c) for c in r[:n_dims]): tuple(r[n_dims:]) for r in assoc_query().rows}
    assert got.keys() == want.keys()
    for k, (total, n) in got.items():
        assert abs(total - want[k][0]) < 1e-6 * max(1.0, abs(total)), k
        assert n == want[k][1], k
    assert polars_query().height == len(got)
    return times_cache_off(polars_query, duckdb_query, assoc_query, repeat)


def times_cache_off(
    polars_query: Any, duckdb_query: Any, assoc_query: Any, repeat: int
) -> dict[str, list[float]]:
    """Each side's times over `repeat` interleaved rounds, assoc with the result cache off."""
    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)
    try:
        runs: dict[str, Run] = {
            "polars": (polars_query, None),
            "duckdb": (duckdb_query, None),
            "assoc": (assoc_query, None),
        }
        return interleaved_times(runs, repeat)
    finally:
        assoc.set_cache_limit(limit)


def chart_cube(data: dict[str, Any], session: assoc.Session, repeat: int) -> Times:
    """A bar chart's cube on every row: Sum(Amount) and Count(Amount) by Category (one field
    of the table: the fused pass)."""
    df, con, app = data["df"], data["con"], data["app"]
    chart = ["Sum(Amount)", "Count(Amount)"]

    def polars_query() -> pl.DataFrame:
        amount = pl.col("Amount")
        return df.group_by("Category").agg(amount.sum(), amount.count().alias("n"))

    def duckdb_query() -> list[tuple[Any, ...]]:
        return con.execute(
            "SELECT CategoryNo, SUM(Amount), COUNT(Amount) FROM t GROUP BY CategoryNo"
        ).fetchall()

    def assoc_query() -> assoc.Hypercube:
        return session.hypercube(["Category"], chart)

    session.clear()
    times = checked_times(polars_query, duckdb_query, assoc_query, repeat)
    out: Times = {f"chart_{k}": v for k, v in times.items()}
    read = column_bytes(app, "T", ["Category", "Amount"])
    out["chart_bytes"] = read + symbol_bytes(app, ["Amount"])
    return out


def stacked_cube(data: dict[str, Any], session: assoc.Session, repeat: int) -> Times:
    """A stacked bar chart's cube on every row: Sum(Amount) and Count(Amount) by Category and
    Channel (two fields of the table, 10,000 groups)."""
    df, con, app = data["df"], data["con"], data["app"]
    chart = ["Sum(Amount)", "Count(Amount)"]

    def polars_query() -> pl.DataFrame:
        amount = pl.col("Amount")
        return df.group_by("Category", "Channel").agg(amount.sum(), amount.count().alias("n"))

    def duckdb_query() -> list[tuple[Any, ...]]:
        return con.execute(
            "SELECT CategoryNo, Channel, SUM(Amount), COUNT(Amount) FROM t "
            "GROUP BY CategoryNo, Channel"
        ).fetchall()

    def assoc_query() -> assoc.Hypercube:
        return session.hypercube(["Category", "Channel"], chart)

    session.clear()
    times = checked_times(polars_query, duckdb_query, assoc_query, repeat, n_dims=2)
    out: Times = {f"stacked_{k}": v for k, v in times.items()}
    out["stacked_bytes"] = column_bytes(app, "T", ["Category", "Channel", "Amount"]) + (
        symbol_bytes(app, ["Amount"])
    )
    return out


def many_groups(repeat: int) -> Times:
    """A table chart by two fields of many values: Sum(Amount) and Count(Amount) by Category
    (1,000) and Customer (100,000) over 2,000,000 rows (scaled), nearly a group per row, in
    the dimensions' order (duckdb and polars sort theirs too)."""
    rng = np.random.default_rng(13)
    n = scaled(2_000_000)
    cat = rng.integers(0, 1000, n)
    customer = rng.integers(0, 100_000, n)
    amount = rng.integers(100, 100_000, n) / 100
    df = pl.DataFrame({"Category": cat, "Customer": customer, "Amount": amount})
    con = duckdb_holding(t=df)
    app = assoc.App.from_tables({"T": {"Category": cat, "Customer": customer, "Amount": amount}})
    session = app.session()

    def polars_query() -> pl.DataFrame:
        amount = pl.col("Amount")
        by = ["Category", "Customer"]
        return df.group_by(by).agg(amount.sum(), amount.count().alias("n")).sort(by)

    def duckdb_query() -> Any:
        return con.sql(
            "SELECT Category, Customer, SUM(Amount), COUNT(Amount) FROM t "
            "GROUP BY Category, Customer ORDER BY Category, Customer"
        ).to_arrow_table()

    def assoc_query() -> assoc.Hypercube:
        return session.hypercube(["Category", "Customer"], ["Sum(Amount)", "Count(Amount)"])

    cube, want = assoc_query(), duckdb_query()
    assert len(cube) == want.num_rows == polars_query().height
    first = [tuple(r[:2]) for r in cube.rows[:1000]]
    assert first == list(zip(*(want.column(c).to_pylist()[:1000] for c in (0, 1)), strict=True))
    assert sum(r[3] for r in cube.rows) == n
    times = times_cache_off(polars_query, duckdb_query, assoc_query, repeat)
    out: Times = {f"many_{k}": v for k, v in times.items()}
    out["many_rows"] = float(n)
    out["many_groups"] = float(len(cube))
    out["many_bytes"] = column_bytes(app, "T", ["Category", "Customer", "Amount"]) + (
        symbol_bytes(app, ["Amount"])
    )
    session.close()
    con.close()
    return out


# Shares of Sel's 1,000 values selected (and so of the rows) in the sweep below.
SHARES = (0.1, 0.3, 0.6)


def by_share(data: dict[str, Any], session: assoc.Session, repeat: int) -> Times:
    """The cube of `one_table` and the bar chart's (Sum and Count of Amount) by Category
    under selections of 10 %, 30 % and 60 % of the rows: most chunks of rows then hold
    selected rows among others (the selection made before the timing; polars and duckdb
    filter on Sel within theirs)."""
    df, con = data["df"], data["con"]
    out: Times = {}
    for share in SHARES:
        picked = list(range(round(1000 * share)))
        picked_sql = ", ".join(map(str, picked))
        session.clear()
        session.select("Sel", picked)
        for name, measures, sql in (
            ("cube", ["Sum(Amount)", "Count(distinct Customer)"], "COUNT(DISTINCT Customer)"),
            ("chart", ["Sum(Amount)", "Count(Amount)"], "COUNT(Amount)"),
        ):
            distinct = name == "cube"

            def polars_query(picked: list[int] = picked, distinct: bool = distinct) -> Any:
                amount = pl.col("Amount")
                second = pl.col("Customer").n_unique() if distinct else amount.count().alias("n")
                frame = df.filter(pl.col("Sel").is_in(picked))
                return frame.group_by("Category").agg(amount.sum(), second)

            def duckdb_query(where: str = picked_sql, sql: str = sql) -> list[tuple[Any, ...]]:
                return con.execute(
                    f"SELECT CategoryNo, SUM(Amount), {sql} FROM t WHERE Sel IN ({where}) "
                    "GROUP BY CategoryNo"
                ).fetchall()

            def assoc_query(measures: list[str] = measures) -> assoc.Hypercube:
                return session.hypercube(["Category"], measures)

            times = checked_times(polars_query, duckdb_query, assoc_query, repeat)
            out.update({f"share_{share}_{name}_{k}": v for k, v in times.items()})
    session.clear()
    return out


def star_data() -> dict[str, Any]:
    """10M fact rows (DimKey, Amount) linked to 100K dimension rows (DimKey, Region of 20,
    Segment of 10), and 3 segments to select; in polars, duckdb and assoc."""
    rng = np.random.default_rng(12)
    n_fact = scaled(10_000_000)
    n_dim = max(1000, scaled(100_000) // 100 * 100)
    dim_key = rng.permutation(n_dim)
    region = rng.integers(0, 20, n_dim)
    segment = rng.integers(0, 10, n_dim)
    fact_key = rng.integers(0, n_dim, n_fact)
    amount = rng.integers(100, 100_000, n_fact) / 100
    segments = [int(x) for x in rng.choice(10, 3, replace=False)]
    fact = pl.DataFrame({"DimKey": fact_key, "Amount": amount})
    dim = pl.DataFrame({"DimKey": dim_key, "Region": region, "Segment": segment})
    con = duckdb_holding(fact=fact, dim=dim)
    app = assoc.App.from_tables(
        {
            "Fact": {"DimKey": fact_key, "Amount": amount},
            "Dim": {"DimKey": dim_key, "Region": region, "Segment": segment},
        }
    )
    return {
        "n_fact": n_fact,
        "fact": fact,
        "dim": dim,
        "con": con,
        "app": app,
        "segments": segments,
    }


def star(repeat: int) -> Times:
    """The star: select 3 segments, cube by Region of Sum(Amount); and a bar chart's cube
    across it, Sum(Amount) and Count(Amount) by Region."""
    data = star_data()
    fact, dim, con, app = data["fact"], data["dim"], data["con"], data["app"]
    n_fact, segments = data["n_fact"], data["segments"]
    segment_sql = ", ".join(map(str, segments))

    def polars_query() -> pl.DataFrame:
        d = dim.filter(pl.col("Segment").is_in(segments))
        return fact.join(d, on="DimKey").group_by("Region").agg(pl.col("Amount").sum())

    def duckdb_query() -> list[tuple[Any, ...]]:
        return con.execute(
            "SELECT Region, SUM(Amount) FROM fact JOIN dim USING (DimKey) "
            f"WHERE Segment IN ({segment_sql}) GROUP BY Region"
        ).fetchall()

    session = app.session()
    session.select("Segment", segments)

    def assoc_query() -> assoc.Hypercube:
        return session.hypercube(["Region"], ["Sum(Amount)"])

    cube = assoc_query()
    want = dict(duckdb_query())
    got = {int(r): s for r, s in cube.rows}
    assert got.keys() == want.keys()
    assert all(abs(got[k] - want[k]) < 1e-6 * abs(want[k]) for k in got)
    assert polars_query().height == len(cube)

    def select_and_cube() -> assoc.Hypercube:
        session.clear()
        session.select("Segment", segments)
        return assoc_query()

    def polars_bar() -> pl.DataFrame:
        d = dim.filter(pl.col("Segment").is_in(segments))
        joined = fact.join(d, on="DimKey")
        amount = pl.col("Amount")
        return joined.group_by("Region").agg(amount.sum().alias("sum"), amount.count().alias("n"))

    def duckdb_bar() -> list[tuple[Any, ...]]:
        return con.execute(
            "SELECT Region, SUM(Amount), COUNT(Amount) FROM fact JOIN dim USING (DimKey) "
            f"WHERE Segment IN ({segment_sql}) GROUP BY Region"
        ).fetchall()

    def assoc_bar() -> assoc.Hypercube:
        return session.hypercube(["Region"], ["Sum(Amount)", "Count(Amount)"])

    bar_want = {r: (total, n) for r, total, n in duckdb_bar()}
    bar_got = {int(r): (total, n) for r, total, n in assoc_bar().rows}
    assert bar_got.keys() == bar_want.keys()
    for k, (total, n) in bar_got.items():
        assert abs(total - bar_want[k][0]) < 1e-6 * abs(bar_want[k][0])
        assert n == bar_want[k][1]
    assert polars_bar().height == len(bar_got)

    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)
    try:
        out: Times = interleaved_times(
            {
                "polars": (polars_query, None),
                "duckdb": (duckdb_query, None),
                "assoc": (assoc_query, None),
                "assoc_with_selection": (select_and_cube, None),
                "bar_polars": (polars_bar, None),
                "bar_duckdb": (duckdb_bar, None),
                "bar_assoc": (assoc_bar, None),
            },
            repeat,
        )
    finally:
        assoc.set_cache_limit(limit)
    out["rows"] = float(n_fact)
    # The cube reads the fact's DimKey and Amount for every row, Amount's numbers, and the
    # dimension's DimKey and Region.
    out["bytes"] = (
        column_bytes(app, "Fact", ["DimKey", "Amount"])
        + symbol_bytes(app, ["Amount"])
        + column_bytes(app, "Dim", ["DimKey", "Region"])
    )
    out["selection_bytes"] = out["bytes"] + column_bytes(app, "Dim", ["Segment"])
    session.close()
    con.close()
    return out


def measures(repeat: int) -> list[Measure]:
    """The cubes as measures for run_all.py."""
    a = one_table(repeat)
    n = f"{int(a['rows']):,} rows"
    what = "Sum(Amount), Count(distinct Customer) by Category"
    read = "packed indexes of Category, Amount, Customer; Amount's symbols"
    peers = {
        case: {p: a[f"{case}_{p}"] for p in ("polars", "duckdb")} for case in ("all", "selected")
    }
    out = [
        Measure(
            "hypercube.one_table",
            f"{n}: {what} (cache off)",
            a["all_assoc_2"],
            peers["all"],
            a["all_bytes"],
            read,
            "<= 0.2x best peer",
        ),
        Measure(
            "hypercube.one_table_1_thread",
            "the same on 1 thread",
            a["all_assoc_1"],
            peers["all"],
            a["all_bytes"],
            read,
        ),
        Measure(
            "hypercube.one_table_selected",
            f"{n}: the same with 10 of 1,000 Sel values selected",
            a["selected_assoc_2"],
            peers["selected"],
            a["selected_bytes"],
            read + "; Sel's index",
        ),
        Measure(
            "hypercube.one_table_select_and_cube",
            "the selection made inside the timing too",
            a["selected_assoc_with_selection"],
            peers["selected"],
            a["selected_bytes"],
            read + "; Sel's index",
        ),
        Measure(
            "hypercube.chart",
            f"{n}: Sum(Amount), Count(Amount) by Category, every row (a bar chart's cube)",
            a["chart_assoc"],
            {p: a[f"chart_{p}"] for p in ("polars", "duckdb")},
            a["chart_bytes"],
            "packed indexes of Category, Amount; Amount's symbols",
        ),
        Measure(
            "hypercube.stacked",
            f"{n}: Sum(Amount), Count(Amount) by Category and Channel, every row "
            "(a stacked bar chart's cube)",
            a["stacked_assoc"],
            {p: a[f"stacked_{p}"] for p in ("polars", "duckdb")},
            a["stacked_bytes"],
            "packed indexes of Category, Channel, Amount; Amount's symbols",
        ),
        Measure("hypercube.cached", "repeated cube for the same state", a["cached"]),
    ]
    c = many_groups(repeat)
    out.append(
        Measure(
            "hypercube.many_groups",
            f"{int(c['many_rows']):,} rows: Sum(Amount), Count(Amount) by Category and Customer, "
            f"{int(c['many_groups']):,} groups in order (a table chart)",
            c["many_assoc"],
            {p: c[f"many_{p}"] for p in ("polars", "duckdb")},
            c["many_bytes"],
            "packed indexes of Category, Customer, Amount; Amount's symbols",
        )
    )
    b = star(repeat)
    star_peers = {"polars": b["polars"], "duckdb": b["duckdb"]}
    star_read = "packed Fact DimKey, Amount and Dim DimKey, Region; Amount's symbols"
    out += [
        Measure(
            "hypercube.star",
            f"{int(b['rows']):,} fact rows: 3 of 10 segments selected, Sum(Amount) by Region",
            b["assoc"],
            star_peers,
            b["bytes"],
            star_read,
            "<= 0.3x best peer",
        ),
        Measure(
            "hypercube.star_select_and_cube",
            "the selection made inside the timing too",
            b["assoc_with_selection"],
            star_peers,
            b["selection_bytes"],
            star_read + "; Dim Segment",
        ),
        Measure(
            "hypercube.star_bar_chart",
            f"{int(b['rows']):,} fact rows: 3 of 10 segments selected, Sum(Amount) and "
            "Count(Amount) by Region",
            b["bar_assoc"],
            {"polars": b["bar_polars"], "duckdb": b["bar_duckdb"]},
            b["bytes"],
            star_read,
        ),
    ]
    return out


def main() -> int:
    """Runs both comparisons and prints Markdown tables."""
    args = start(__doc__.splitlines()[0], 10)
    ms = 1000.0
    a = best(one_table(args.repeat))
    print(
        f"One table, {int(a['rows']):,} rows: by Category (1,000), "
        "Sum(Amount) and Count(distinct Customer) (100,000 customers)\n"
    )
    print(
        "| case | polars ms | duckdb ms | assoc 1 thread ms | assoc 2 threads ms "
        "| assoc vs best | 2 vs 1 thread |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case, label in (("all", "no selection"), ("selected", "10 values selected in Sel")):
        p, q = a[f"{case}_polars"], a[f"{case}_duckdb"]
        t1, t2 = a[f"{case}_assoc_1"], a[f"{case}_assoc_2"]
        ours = min(t1, t2)
        print(
            f"| {label} | {p * ms:.1f} | {q * ms:.1f} | {t1 * ms:.1f} | {t2 * ms:.1f} | "
            f"{ours / min(p, q):.2f} | {t1 / t2:.2f}x |"
        )
    t = a["selected_assoc_with_selection"]
    peer = min(a["selected_polars"], a["selected_duckdb"])
    print(
        f"\nWith the selection made inside the timing too (select + cube): {t * ms:.1f} ms, "
        f"{t / peer:.2f} of the best peer"
    )
    chart_peer = min(a["chart_polars"], a["chart_duckdb"])
    print(
        f"A bar chart's cube, Sum(Amount) and Count(Amount) by Category, every row: "
        f"{a['chart_assoc'] * ms:.1f} ms, polars {a['chart_polars'] * ms:.1f} ms, duckdb "
        f"{a['chart_duckdb'] * ms:.1f} ms ({a['chart_assoc'] / chart_peer:.2f} of the best peer)"
    )
    stacked_peer = min(a["stacked_polars"], a["stacked_duckdb"])
    print(
        f"A stacked bar chart's cube, the same by Category and Channel (10,000 groups): "
        f"{a['stacked_assoc'] * ms:.1f} ms, polars {a['stacked_polars'] * ms:.1f} ms, duckdb "
        f"{a['stacked_duckdb'] * ms:.1f} ms "
        f"({a['stacked_assoc'] / stacked_peer:.2f} of the best peer)"
    )
    print(f"Repeated cube for the same state (cached): {a['cached'] * 1e6:.1f} us")
    print("\nUnder selections of a share of the rows (the selection made before the timing):\n")
    print("| rows selected | cube | polars ms | duckdb ms | assoc ms | assoc vs best |")
    print("|---:|---|---:|---:|---:|---:|")
    for share in SHARES:
        for name, label in (
            ("cube", "Sum, Count(distinct Customer)"),
            ("chart", "Sum, Count of Amount"),
        ):
            key = f"share_{share}_{name}"
            p, q, r = a[f"{key}_polars"], a[f"{key}_duckdb"], a[f"{key}_assoc"]
            print(
                f"| {share:.0%} | {label} | {p * ms:.1f} | {q * ms:.1f} | {r * ms:.1f} "
                f"| {r / min(p, q):.2f} |"
            )
    print(f"Extra peak memory while computing: {a['extra_bytes_per_row']:.2f} bytes per row\n")

    c = best(many_groups(args.repeat))
    many_peer = min(c["many_polars"], c["many_duckdb"])
    print(
        f"\nA table chart by Category and Customer, {int(c['many_rows']):,} rows, "
        f"{int(c['many_groups']):,} groups in order: {c['many_assoc'] * ms:.0f} ms, polars "
        f"{c['many_polars'] * ms:.0f} ms, duckdb {c['many_duckdb'] * ms:.0f} ms "
        f"({c['many_assoc'] / many_peer:.2f} of the best peer)\n"
    )

    b = best(star(args.repeat))
    print(
        f"Star: {int(b['rows']):,} fact rows, 100,000-row dimension; 3 of 10 segments selected, "
        "by Region (20) Sum(Amount)\n"
    )
    print("| polars ms | duckdb ms | assoc ms | assoc vs best | select + cube ms | vs best |")
    print("|---:|---:|---:|---:|---:|---:|")
    p, q, r, w = b["polars"], b["duckdb"], b["assoc"], b["assoc_with_selection"]
    print(
        f"| {p * ms:.1f} | {q * ms:.1f} | {r * ms:.1f} | {r / min(p, q):.2f} "
        f"| {w * ms:.1f} | {w / min(p, q):.2f} |"
    )
    p, q, r = b["bar_polars"], b["bar_duckdb"], b["bar_assoc"]
    print(
        f"\nA bar chart's cube across the star, Sum(Amount) and Count(Amount) by Region: "
        f"{r * ms:.1f} ms, polars {p * ms:.1f} ms, duckdb {q * ms:.1f} ms "
        f"({r / min(p, q):.2f} of the best peer)"
    )
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
