"""CSV import benchmarks: App.from_csv on 1 and all threads beside pyarrow and polars."""

from __future__ import annotations

from pathlib import Path

import pytest

import assoc
from compare_csv import ROWS_NOW, load_assoc, load_polars, load_pyarrow, write_csv


@pytest.fixture(scope="session")
def csv_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The benchmark CSV: 10M x ASSOC_BENCH_SCALE rows of int, int, text, float."""
    pytest.importorskip("polars")
    path = tmp_path_factory.mktemp("csv") / "bench.csv"
    write_csv(path, ROWS_NOW)
    return path


@pytest.mark.parametrize("threads", [1, 0], ids=["1-thread", "all-threads"])
def test_assoc_from_csv(benchmark, csv_path, threads) -> None:
    benchmark.group = "csv-import"
    assoc.set_threads(threads)
    try:
        app = benchmark.pedantic(load_assoc, args=(csv_path,), rounds=3, iterations=1)
    finally:
        assoc.set_threads(0)
    assert app.table("T").num_rows == ROWS_NOW


def test_pyarrow_read_csv(benchmark, csv_path) -> None:
    pytest.importorskip("pyarrow")
    benchmark.group = "csv-import"
    table, _ = benchmark.pedantic(load_pyarrow, args=(csv_path,), rounds=3, iterations=1)
    assert table.num_rows == ROWS_NOW


def test_polars_read_csv(benchmark, csv_path) -> None:
    benchmark.group = "csv-import"
    df = benchmark.pedantic(load_polars, args=(csv_path,), rounds=3, iterations=1)
    assert df.height == ROWS_NOW
