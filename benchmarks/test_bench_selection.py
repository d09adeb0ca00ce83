"""Selection benchmarks (pytest-benchmark): assoc beside polars and duckdb, same answers.

    PYTHONPATH=python python -m pytest benchmarks/test_bench_selection.py -p no:cacheprovider

Each benchmark asserts its answer; none gates on time (benchmarks/compare_selection.py
reports the ratios).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import assoc

pl = pytest.importorskip("polars")
pytest.importorskip("duckdb")

import selection_data  # noqa: E402 - after the skips: it builds polars and duckdb tables
from selection_data import possible_values  # noqa: E402


@pytest.fixture(scope="module")
def one_table() -> dict[str, Any]:
    data = selection_data.one_table()
    data["want"] = set(np.unique(data["val"][np.isin(data["cat"], data["chosen"])]).tolist())
    return data


@pytest.mark.benchmark(group="one-table")
def test_polars_categorical_filter_unique(benchmark, one_table) -> None:
    df, labels = one_table["df"], one_table["chosen_labels"]
    got = benchmark(lambda: df.filter(pl.col("Cat").is_in(labels)).get_column("Val").unique())
    assert set(got.to_list()) == one_table["want"]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.benchmark(group="one-table")
@pytest.mark.usefixtures("uncached")
def test_assoc_select_and_possible_values(benchmark, one_table, threads) -> None:
    app = one_table["app"]
    session = app.session()
    assoc.set_threads(threads)
    try:

        def run() -> np.ndarray:
            session.clear()
            session.select("Cat", one_table["chosen"])
            return session.indices("Val", "possible")

        benchmark(run)
    finally:
        assoc.set_threads(0)
    assert possible_values(app, session, "Val") == one_table["want"]
    session.close()


@pytest.mark.benchmark(group="cached")
def test_assoc_cached_repeat_of_a_selection_state(benchmark, one_table) -> None:
    app = one_table["app"]
    with app.session() as session:
        session.select("Cat", one_table["chosen"])
        session.counts("Val")
        before = assoc.engine_counters()["cache"]

        def run() -> dict[str, int]:
            session.select("Cat", one_table["chosen"])
            return session.counts("Val")

        counts = benchmark(run)
        after = assoc.engine_counters()["cache"]
        assert counts["possible"] == len(one_table["want"])
        assert after["added"] == before["added"]  # every repeat was a hit
        assert after["hits"] > before["hits"]


@pytest.fixture(scope="module")
def star() -> Iterator[dict[str, Any]]:
    data = selection_data.star()
    fact_key, product, dim_key, region = (
        data[k] for k in ("fact_key", "product", "dim_key", "region")
    )
    keys_in_regions = dim_key[np.isin(region, data["regions"])]
    keys_of_products = np.unique(fact_key[np.isin(product, data["products"])])
    data["want_forward"] = set(np.unique(product[np.isin(fact_key, keys_in_regions)]).tolist())
    data["want_back"] = set(np.unique(region[np.isin(dim_key, keys_of_products)]).tolist())
    yield data
    data["con"].close()


@pytest.mark.benchmark(group="fact-dimension-forward")
def test_polars_semi_join_forward(benchmark, star) -> None:
    fact, dim, regions = star["fact"], star["dim"], star["regions"]

    def run() -> Any:
        keys = dim.filter(pl.col("Region").is_in(regions)).get_column("DimKey")
        return fact.filter(pl.col("DimKey").is_in(keys.implode())).get_column("Product").unique()

    assert set(benchmark(run).to_list()) == star["want_forward"]


@pytest.mark.benchmark(group="fact-dimension-forward")
def test_duckdb_semi_join_forward(benchmark, star) -> None:
    regions = ", ".join(map(str, star["regions"]))
    sql = (
        "SELECT DISTINCT Product FROM fact WHERE DimKey IN "
        f"(SELECT DimKey FROM dim WHERE Region IN ({regions}))"
    )
    got = benchmark(lambda: star["con"].execute(sql).fetchall())
    assert {r[0] for r in got} == star["want_forward"]


@pytest.mark.benchmark(group="fact-dimension-forward")
@pytest.mark.usefixtures("uncached")
def test_assoc_select_dimension_possible_fact_values(benchmark, star) -> None:
    app = star["app"]
    with app.session() as session:

        def run() -> np.ndarray:
            session.clear()
            session.select("Region", star["regions"])
            return session.indices("Product", "possible")

        benchmark(run)
        assert possible_values(app, session, "Product") == star["want_forward"]


@pytest.mark.benchmark(group="fact-dimension-back")
def test_polars_semi_join_back(benchmark, star) -> None:
    fact, dim, products = star["fact"], star["dim"], star["products"]

    def run() -> Any:
        keys = fact.filter(pl.col("Product").is_in(products)).get_column("DimKey").unique()
        return dim.filter(pl.col("DimKey").is_in(keys.implode())).get_column("Region").unique()

    assert set(benchmark(run).to_list()) == star["want_back"]


@pytest.mark.benchmark(group="fact-dimension-back")
def test_duckdb_semi_join_back(benchmark, star) -> None:
    products = ", ".join(map(str, star["products"]))
    sql = (
        "SELECT DISTINCT Region FROM dim WHERE DimKey IN "
        f"(SELECT DimKey FROM fact WHERE Product IN ({products}))"
    )
    got = benchmark(lambda: star["con"].execute(sql).fetchall())
    assert {r[0] for r in got} == star["want_back"]


@pytest.mark.benchmark(group="fact-dimension-back")
@pytest.mark.usefixtures("uncached")
def test_assoc_select_fact_possible_dimension_values(benchmark, star) -> None:
    app = star["app"]
    with app.session() as session:

        def run() -> np.ndarray:
            session.clear()
            session.select("Product", star["products"])
            return session.indices("Region", "possible")

        benchmark(run)
        assert possible_values(app, session, "Region") == star["want_back"]
