"""Hypercube benchmarks (pytest-benchmark): assoc beside polars and duckdb, same answers.

    PYTHONPATH=python python -m pytest benchmarks/test_bench_hypercube.py -p no:cacheprovider

Each benchmark asserts its answer; none gates on time (benchmarks/compare_hypercube.py
reports the ratios).
"""

from __future__ import annotations

from typing import Any

import pytest

import assoc

pl = pytest.importorskip("polars")
pytest.importorskip("duckdb")

from compare_hypercube import one_table_data, star_data  # noqa: E402 - after the skips

MEASURES = ["Sum(Amount)", "Count(distinct Customer)"]


@pytest.fixture(scope="module")
def one_table() -> dict[str, Any]:
    data = one_table_data()
    rows = data["con"].execute(
        "SELECT CategoryNo, SUM(Amount), COUNT(DISTINCT Customer) FROM t GROUP BY CategoryNo"
    )
    data["want"] = {r[0]: (r[1], r[2]) for r in rows.fetchall()}
    return data


@pytest.fixture(scope="module")
def star() -> dict[str, Any]:
    data = star_data()
    segments = ", ".join(map(str, data["segments"]))
    rows = data["con"].execute(
        "SELECT Region, SUM(Amount) FROM fact JOIN dim USING (DimKey) "
        f"WHERE Segment IN ({segments}) GROUP BY Region"
    )
    data["want"] = dict(rows.fetchall())
    return data


def check_one_table(cube: assoc.Hypercube, want: dict[int, tuple[float, int]]) -> None:
    got = {int(c): (s, d) for c, s, d in cube.rows}
    assert got.keys() == want.keys()
    for k, (s, d) in got.items():
        assert s == pytest.approx(want[k][0])
        assert d == want[k][1]


@pytest.mark.benchmark(group="one-table")
def test_polars_group_by(benchmark, one_table) -> None:
    df = one_table["df"]
    got = benchmark(
        lambda: df.group_by("Category").agg(pl.col("Amount").sum(), pl.col("Customer").n_unique())
    )
    assert got.height == len(one_table["want"])


@pytest.mark.benchmark(group="one-table")
def test_duckdb_group_by(benchmark, one_table) -> None:
    con = one_table["con"]
    sql = "SELECT CategoryNo, SUM(Amount), COUNT(DISTINCT Customer) FROM t GROUP BY CategoryNo"
    got = benchmark(lambda: con.execute(sql).fetchall())
    assert len(got) == len(one_table["want"])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.benchmark(group="one-table")
@pytest.mark.usefixtures("uncached")
def test_assoc_hypercube(benchmark, one_table, threads) -> None:
    session = one_table["app"].session()
    assoc.set_threads(threads)
    try:
        cube = benchmark(lambda: session.hypercube(["Category"], MEASURES))
    finally:
        assoc.set_threads(0)
        session.close()
    check_one_table(cube, one_table["want"])


@pytest.mark.benchmark(group="star")
def test_duckdb_star(benchmark, star) -> None:
    segments = ", ".join(map(str, star["segments"]))
    sql = (
        "SELECT Region, SUM(Amount) FROM fact JOIN dim USING (DimKey) "
        f"WHERE Segment IN ({segments}) GROUP BY Region"
    )
    got = benchmark(lambda: star["con"].execute(sql).fetchall())
    assert len(got) == len(star["want"])


@pytest.mark.benchmark(group="star")
@pytest.mark.usefixtures("uncached")
def test_assoc_star(benchmark, star) -> None:
    session = star["app"].session()
    session.select("Segment", star["segments"])
    cube = benchmark(lambda: session.hypercube(["Region"], ["Sum(Amount)"]))
    session.close()
    got = {int(r): s for r, s in cube.rows}
    assert got.keys() == star["want"].keys()
    for k, s in got.items():
        assert s == pytest.approx(star["want"][k])
