"""The data both selection benchmarks run on (compare_selection.py, test_bench_selection.py):
built once here, with fixed seeds, so that both measure the same thing."""

from __future__ import annotations

from typing import Any

import numpy as np

import assoc
from conftest import scaled


def possible_values(app: assoc.App, session: assoc.Session, field: str) -> set[Any]:
    """The possible values of a field, as a set of Python values."""
    symbols = np.asarray(app.symbols(field))
    return set(symbols[session.indices(field, "possible")].tolist())


def duckdb_holding(**tables: Any) -> Any:
    """A duckdb connection on every core holding each polars frame as a table of its name."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads TO {assoc.logical_cores()}")
    for name, frame in tables.items():
        con.register(f"{name}_view", frame.to_arrow())
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_view")
        con.unregister(f"{name}_view")
    return con


def one_table() -> dict[str, Any]:
    """10M rows of a 1,000-category field and a 100K-value field; 10 categories to select.
    `df` is the same table in polars, the categories as Categorical labels."""
    import polars as pl

    rng = np.random.default_rng(1)
    n = scaled(10_000_000)
    cat = rng.integers(0, 1000, n)
    val = rng.integers(0, 100_000, n)
    chosen = [int(x) for x in rng.choice(1000, 10, replace=False)]
    labels = pl.Series([f"c{i}" for i in range(1000)])
    return {
        "n": n,
        "cat": cat,
        "val": val,
        "chosen": chosen,
        "chosen_labels": [f"c{i}" for i in chosen],
        "app": assoc.App.from_tables({"T": {"Cat": cat, "Val": val}}),
        "df": pl.DataFrame({"Cat": labels.gather(cat).cast(pl.Categorical), "Val": val}),
    }


def star() -> dict[str, Any]:
    """10M fact rows linked by DimKey to 100K dimension rows; 2 regions and 10 products to
    select. The same tables in polars (`fact`, `dim`) and in duckdb (`con`, tables fact/dim)."""
    import polars as pl

    rng = np.random.default_rng(2)
    n_fact = scaled(10_000_000)
    n_dim = max(1000, scaled(100_000) // 100 * 100)
    dim_key = rng.permutation(n_dim)
    region = rng.integers(0, 50, n_dim)
    fact_key = rng.integers(0, n_dim, n_fact)
    product = rng.integers(0, 1000, n_fact)
    regions = [int(x) for x in rng.choice(50, 2, replace=False)]
    products = [int(x) for x in rng.choice(1000, 10, replace=False)]
    fact = pl.DataFrame({"DimKey": fact_key, "Product": product})
    dim = pl.DataFrame({"DimKey": dim_key, "Region": region})
    con = duckdb_holding(fact=fact, dim=dim)
    return {
        "n_fact": n_fact,
        "n_dim": n_dim,
        "dim_key": dim_key,
        "region": region,
        "fact_key": fact_key,
        "product": product,
        "regions": regions,
        "products": products,
        "app": assoc.App.from_tables(
            {
                "Fact": {"DimKey": fact_key, "Product": product},
                "Dim": {"DimKey": dim_key, "Region": region},
            }
        ),
        "fact": fact,
        "dim": dim,
        "con": con,
    }
