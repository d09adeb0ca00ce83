"""Hypercubes through the Python API, checked against an independent model by explicit joins."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import assoc
from assoc import App
from reference_hypercube import ReferenceCube, nan_to_none, number_of
from reference_inference import ReferenceModel
from without_simd import assert_pass_without_simd

FUNCS = {
    "sum": "Sum({})",
    "count": "Count({})",
    "countdistinct": "Count(distinct {})",
    "avg": "Avg({})",
    "min": "Min({})",
    "max": "Max({})",
    "only": "Only({})",
}


def read_back(app: App) -> tuple[dict[str, dict[str, list[Any]]], set[str]]:
    tables = {t: {f: app.table(t).column(f) for f in app.table(t).model_fields} for t in app.tables}
    loose = {t["name"] for t in app.metadata()["tables"] if t["is_loose"]}
    return tables, loose


def reference_for(app: App, session: assoc.Session) -> ReferenceCube:
    tables, loose = read_back(app)
    selections = {f: set(v) for f, v in session.selections().items()}
    possible = ReferenceModel(tables, loose).possible_rows(selections)
    return ReferenceCube(tables, loose, possible)


def key_fields(app: App) -> set[str]:
    return {f["name"] for f in app.metadata()["fields"] if "$key" in f["tags"]}


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float | int) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b or (a is None and b is None)


def check_cube(
    app: App, session: assoc.Session, dims: list[str], aggs: list[tuple[str, str]]
) -> None:
    """The engine's cube equals the reference's, rows, values and totals."""
    measures = [FUNCS[func].format(f"[{field}]") for func, field in aggs]
    cube = session.hypercube(dims, measures)
    want_rows, want_totals = reference_for(app, session).cube(dims, aggs)
    got = {row[: len(dims)]: list(row[len(dims) :]) for row in cube.rows}
    assert len(got) == len(cube) == len(cube.rows), "a tuple shows twice"
    assert set(got) == set(want_rows), (dims, measures)
    for t, values in want_rows.items():
        for m, (g, w) in enumerate(zip(got[t], values, strict=True)):
            if aggs[m][0] != "only":
                w = number_of(w) if w is not None else None
            assert same(g, w), (dims, measures[m], t, g, w)
    for m, (g, w) in enumerate(zip(cube.totals, want_totals, strict=True)):
        if aggs[m][0] != "only":
            w = number_of(w) if w is not None else None
        assert same(g, w), ("total", measures[m], g, w)


def random_app(rng: random.Random, snowflake: bool) -> dict[str, dict[str, list[Any]]]:
    """A fact table linked to 1-3 dimensions (sub-dimensions for a snowflake), with NULLs,
    texts in number fields, orphan keys, duplicate dimension keys, and now and then a
    synthetic key (two shared fields) or a loose table (a cycle)."""
    n_fact = rng.randint(3, 25)
    fact: dict[str, list[Any]] = {}
    tables: dict[str, dict[str, list[Any]]] = {}
    for d in range(rng.randint(1, 3)):
        key = f"K{d}"
        keys: list[Any] = [f"k{d}.{i}" if d % 2 else i for i in range(rng.randint(2, 6))]
        fact[key] = [None if rng.random() < 0.1 else rng.choice([*keys, 99]) for _ in range(n_fact)]
        dim_keys = rng.sample(keys, rng.randint(1, len(keys)))
        if rng.random() < 0.3:
            dim_keys.append(rng.choice(dim_keys))
        n = len(dim_keys)
        dim: dict[str, list[Any]] = {
            key: dim_keys,
            f"Attr{d}": [None if rng.random() < 0.1 else rng.choice("abc") for _ in range(n)],
            f"Num{d}": [rng.choice([None, 1, 2, 2.5, "t", 7]) for _ in range(n)],
        }
        if snowflake and rng.random() < 0.8:
            sub = f"S{d}"
            n_sub = rng.randint(1, 4)
            dim[sub] = [None if rng.random() < 0.15 else rng.randrange(n_sub + 1) for _ in range(n)]
            sub_keys = rng.sample(range(n_sub + 1), rng.randint(1, n_sub + 1))
            tables[f"Sub{d}"] = {
                sub: sub_keys,
                f"Cat{d}": [rng.choice(["x", "y", 3]) for _ in sub_keys],
            }
        tables[f"Dim{d}"] = dim
    fact["Amount"] = [rng.choice([None, 1, 2, 3.5, -4, "n/a", 10]) for _ in range(n_fact)]
    fact["Tag"] = [rng.choice(["p", "q", None]) for _ in range(n_fact)]
    if rng.random() < 0.3:  # a synthetic key: two fields shared with the fact table
        tables["Plan"] = {
            "Tag": [rng.choice(["p", "q"]) for _ in range(3)],
            "K0": [rng.choice([*fact["K0"], 0]) for _ in range(3)],
            "Target": [rng.randint(1, 9) for _ in range(3)],
        }
    if rng.random() < 0.3:  # a cycle: the largest table on it becomes loose
        tables["Bridge"] = {
            "K0": [rng.choice(fact["K0"]) for _ in range(4)],
            "Attr0": [rng.choice("abc") for _ in range(4)],
        }
    return {"Fact": fact, **tables}


def add_islands(rng: random.Random, tables: dict[str, dict[str, list[Any]]]) -> list[str]:
    """One or two parts that no key links to the rest, with NULLs and duplicates: a what-if
    table of one field and a number, and now and then two tables linked by a key of their
    own. Their fields' names."""
    n = rng.randint(1, 4)
    tables["WhatIf"] = {
        "P0": [None if rng.random() < 0.2 else rng.choice([0.1, 0.2, 0.5, "z"]) for _ in range(n)],
        "W0": [rng.choice([None, 1, 2, "w", 4.5]) for _ in range(n)],
    }
    if rng.random() < 0.5:
        m = rng.randint(1, 4)
        tables["Isle"] = {
            "IK": [None if rng.random() < 0.15 else rng.randrange(4) for _ in range(m)],
            "Q1": [rng.choice([None, 3, 5, "q"]) for _ in range(m)],
        }
        keys = rng.sample(range(5), rng.randint(1, 4))
        tables["IsleDim"] = {
            "IK": keys,
            "R1": [None if rng.random() < 0.15 else rng.choice("rs") for _ in keys],
        }
    return [f for t in ("WhatIf", "Isle", "IsleDim") for f in tables.get(t, {})]


def random_selections(rng: random.Random, app: App) -> dict[str, list[Any]]:
    fields = [f["name"] for f in app.metadata()["fields"] if not f["is_system"]]
    out: dict[str, list[Any]] = {}
    for field in rng.sample(fields, rng.randint(0, 2)):
        symbols = app.symbols(field)
        if symbols:
            out[field] = rng.sample(symbols, rng.randint(1, min(3, len(symbols))))
    return out


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("snowflake", [False, True])
def test_random_models_match_the_reference(seed, snowflake) -> None:
    rng = random.Random(seed * 2 + snowflake)
    app = App.from_tables(random_app(rng, snowflake))
    fields = [f["name"] for f in app.metadata()["fields"] if not f["is_system"]]
    keys = key_fields(app)
    with app.session() as s:
        for _ in range(3):
            s.clear()
            for field, values in random_selections(rng, app).items():
                s.select(field, values)
            dims = rng.sample(fields, rng.randint(1, min(3, len(fields))))
            aggs = []
            for _ in range(rng.randint(1, 3)):
                field = rng.choice(fields)
                allowed = ["countdistinct", "only"] if field in keys else list(FUNCS)
                aggs.append((rng.choice(allowed), field))
            check_cube(app, s, dims, aggs)


@pytest.mark.parametrize("seed", range(40))
def test_random_models_with_islands_match_the_reference(seed) -> None:
    """Two or three parts that no key links: dimensions from several of them, measures from
    any, selections in any (an island's too)."""
    rng = random.Random(1000 + seed)
    tables = random_app(rng, snowflake=rng.random() < 0.5)
    island_fields = add_islands(rng, tables)
    app = App.from_tables(tables)
    fields = [f["name"] for f in app.metadata()["fields"] if not f["is_system"]]
    main_fields = [f for f in fields if f not in island_fields]
    keys = key_fields(app)
    with app.session() as s:
        for _ in range(4):
            s.clear()
            for field, values in random_selections(rng, app).items():
                s.select(field, values)
            if rng.random() < 0.5:
                field = rng.choice(island_fields)
                symbols = app.symbols(field)
                if symbols:
                    s.select(field, rng.sample(symbols, rng.randint(1, min(2, len(symbols)))))
            dims = [rng.choice(main_fields), rng.choice(island_fields)]
            dims += rng.sample(fields, rng.randint(0, 1))
            dims = list(dict.fromkeys(rng.sample(dims, len(dims))))
            aggs = []
            for _ in range(rng.randint(1, 3)):
                field = rng.choice(fields)
                allowed = ["countdistinct", "only"] if field in keys else list(FUNCS)
                aggs.append((rng.choice(allowed), field))
            check_cube(app, s, dims, aggs)


def sales() -> App:
    return App.from_tables(
        {
            "Sales": {
                "Category": ["a", "b", "a", "c", None, "b"],
                "Amount": [1, 2, 3, "x", 5, 4.5],
                "CustId": [1, 2, 1, 3, 3, 9],
            },
            "Customers": {"CustId": [1, 2, 3, 4], "Region": ["N", "S", "N", "E"]},
        }
    )


def test_shape_rows_totals_and_columns() -> None:
    app = sales()
    with app.session() as s:
        cube = s.hypercube(["Category"], ["Sum(Amount)", "Count(distinct CustId)"])
        assert cube.columns == ["Category", "Sum(Amount)", "Count(distinct CustId)"]
        assert cube.dimensions == ["Category"]
        assert cube.measures == ["Sum(Amount)", "Count(distinct CustId)"]
        # Customer 4 has no sale: it reaches no category, so it shows under None.
        assert cube.rows == [
            ("a", 4.0, 1.0),
            ("b", 6.5, 2.0),
            ("c", 0.0, 1.0),
            (None, 5.0, 2.0),
        ]
        assert cube.totals == [15.5, 5.0]
        assert len(cube) == 4
        assert cube.page(1, 2) == cube.rows[1:3]
        assert cube.page(3, 10) == cube.rows[3:]
        assert cube.page(10, 5) == []
        np.testing.assert_array_equal(cube.array("Sum(Amount)"), [4.0, 6.5, 0.0, 5.0])
        np.testing.assert_array_equal(cube.array(2), [1.0, 2.0, 1.0, 2.0])
        np.testing.assert_array_equal(cube.codes("Category"), [0, 1, 2, -1])
        assert [app.symbols("Category")[i] for i in cube.codes(0)[:3]] == ["a", "b", "c"]


def test_selections_and_suppression() -> None:
    app = sales()
    with app.session() as s:
        s.select("Region", ["N"])
        cube = s.hypercube(["Region", "Category"], ["Sum(Amount)", "Count(Amount)"])
        assert cube.rows == [("N", "a", 4.0, 2.0), ("N", "c", 0.0, 1.0), ("N", None, 5.0, 1.0)]
        assert cube.totals == [9.0, 4.0]
        missing = s.hypercube(["Region", "Category"], ["Sum(Amount)"], suppress_missing=True)
        assert missing.rows == [("N", "a", 4.0), ("N", "c", 0.0)]
        assert missing.totals == [9.0]  # suppression leaves totals alone
        zero = s.hypercube(["Region", "Category"], ["Sum(Amount)"], suppress_zero=True)
        assert zero.rows == [("N", "a", 4.0), ("N", None, 5.0)]


def test_dimension_values_without_records_show_with_zero_counts() -> None:
    app = sales()
    with app.session() as s:
        cube = s.hypercube(["Region"], ["Sum(Amount)", "Count(Amount)", "Avg(Amount)"])
        # E has no sale; customer 9's sale reaches no region.
        assert cube.rows == [
            ("E", 0.0, 0.0, None),
            ("N", 9.0, 4.0, 3.0),
            ("S", 2.0, 1.0, 2.0),
            (None, 4.5, 1.0, 4.5),
        ]


def test_functions_and_arithmetic() -> None:
    app = sales()
    with app.session() as s:
        measures = [
            "sum(Amount) * 2 + 1",
            "Max([Amount]) - MIN(Amount)",
            "Sum(Amount) / Count(Amount)",
            "Sum(Amount) / 0",
            "(1 + 2) * -3",
            "Only(Region)",
            "Region",
            "count(DISTINCT Region) / 2",
            "Avg(Amount) + Only(Category)",
        ]
        cube = s.hypercube(["Category"], measures)
        rows = {r[0]: r[1:] for r in cube.rows}
        assert rows["a"] == (9.0, 2.0, 2.0, None, -9.0, "N", "N", 0.5, None)
        assert rows["b"] == (14.0, 2.5, 3.25, None, -9.0, "S", "S", 0.5, None)
        assert rows["c"] == (1.0, None, 0.0, None, -9.0, "N", "N", 0.5, None)
        assert cube.totals == [32.0, 4.0, 15.5 / 6, None, -9.0, None, None, 1.5, None]


def test_only_of_a_dual_keeps_the_dual() -> None:
    d = assoc.Dual(45000.0, "2023-03-15")
    app = App.from_tables({"T": {"G": ["x", "y", "y"], "Day": [d, 1, 2]}})
    with app.session() as s:
        cube = s.hypercube(["G"], ["Only(Day)", "Only(Day) + 1"])
        assert cube.rows == [("x", d, 45001.0), ("y", None, None)]
        np.testing.assert_array_equal(cube.array("Only(Day)"), [45000.0, np.nan])


def test_default_sort_numbers_before_texts_then_none() -> None:
    app = App.from_tables({"T": {"V": ["b", 10, "a", 2, None, 2.5], "N": [1, 2, 3, 4, 5, 6]}})
    with app.session() as s:
        cube = s.hypercube(["V"], ["Sum(N)"])
        assert [r[0] for r in cube.rows] == [2, 2.5, 10, "a", "b", None]
        np.testing.assert_array_equal(cube.array("V"), [2, 2.5, 10, np.nan, np.nan, np.nan])


@pytest.mark.parametrize("seed", range(3))
def test_texts_sort_bytewise_whatever_they_share(seed: int) -> None:
    """A text dimension's values in the order their UTF-8 bytes give (Python's order of code
    points), numbers before them: texts sharing long beginnings, differing only in length or
    in NULs past eight bytes, empty, and of many scripts, among 20,000 of them."""
    rng = random.Random(seed)
    stems = ["", "a", "customer number ", "x" * 8, "x" * 8 + "\x00", "é", "日本語のテキスト"]
    stems.append("\x00")
    alphabet = ["a", "b", "z", "\x00", "\x01", "é", "ü", "日", "😀", " ", "A"]
    texts = {
        rng.choice(stems) + "".join(rng.choices(alphabet, k=rng.randint(0, 20)))
        for _ in range(20_000)
    }
    values: list[Any] = sorted(texts)
    rng.shuffle(values)
    values += [3, 1.5]
    app = App.from_tables({"T": {"V": values, "N": list(range(len(values)))}})
    few = rng.sample(values, 50)
    expected_few = sorted(few, key=lambda v: (0, v, "") if not isinstance(v, str) else (1, 0, v))
    with app.session() as s:
        # A cube over few of the values ranks those alone; one over most of them ranks the
        # whole field once, and the cubes after it read those ranks.
        s.select("V", few)
        assert [r[0] for r in s.hypercube(["V"], ["Sum(N)"]).rows] == expected_few
        s.clear()
        shown = [r[0] for r in s.hypercube(["V"], ["Sum(N)"]).rows]
        assert shown == [1.5, 3, *sorted(texts)]
        down = [r[0] for r in s.hypercube(["V"], ["Sum(N)"], sort=[("V", "desc")]).rows]
        assert down == [*sorted(texts, reverse=True), 3, 1.5]
        s.select("V", few)
        assert [r[0] for r in s.hypercube(["V"], ["Count(N)"]).rows] == expected_few


def test_sort_by_columns_and_directions() -> None:
    app = App.from_tables(
        {"T": {"G": ["b", "a", "c", "b", None], "H": [1, 2, 1, 2, 1], "N": [5, 1, 7, 1, 3]}}
    )
    with app.session() as s:
        by_sum = s.hypercube(["G"], ["Sum(N)"], sort=[("Sum(N)", "desc")])
        assert [r[0] for r in by_sum.rows] == ["c", "b", None, "a"]
        desc = s.hypercube(["G"], ["Sum(N)"], sort=[("G", "desc")])
        assert [r[0] for r in desc.rows] == ["c", "b", "a", None]
        load = s.hypercube(["G"], ["Sum(N)"], sort=[("G", "load")])
        assert [r[0] for r in load.rows] == ["b", "a", "c", None]
        two = s.hypercube(["G", "H"], ["Sum(N)"], sort=[("H", "desc")])
        # Ties are broken by the dimensions in order.
        assert [r[:2] for r in two.rows] == [("a", 2), ("b", 2), ("b", 1), ("c", 1), (None, 1)]
        with pytest.raises(assoc.Error, match="no dimension or measure"):
            s.hypercube(["G"], ["Sum(N)"], sort=[("Nope", "asc")])
        with pytest.raises(assoc.Error, match="asc, desc or load"):
            s.hypercube(["G"], ["Sum(N)"], sort=[("G", "up")])
        with pytest.raises(assoc.Error, match="for dimensions"):
            s.hypercube(["G"], ["Sum(N)"], sort=[("Sum(N)", "load")])


def test_key_fields_synthetic_keys_and_system_fields_as_dimensions() -> None:
    app = App.from_tables(
        {
            "Orders": {"Year": [2020, 2020, 2021], "Shop": ["s1", "s2", "s1"], "Qty": [1, 2, 3]},
            "Budget": {
                "Year": [2020, 2021, 2022],
                "Shop": ["s1", "s1", "s2"],
                "Plan": [10, 20, 30],
            },
        }
    )
    assert "$Syn 1" in app.fields
    with app.session() as s:
        cube = s.hypercube(["Year", "Shop"], ["Sum(Qty)", "Sum(Plan)"])
        assert cube.rows == [
            (2020, "s1", 1.0, 10.0),
            (2020, "s2", 2.0, 0.0),
            (2021, "s1", 3.0, 20.0),
            (2022, "s2", 0.0, 30.0),
        ]
        syn = s.hypercube(["$Syn 1"], ["Count(distinct [$Syn 1])"])
        assert len(syn) == 4
        tables = s.hypercube(["$Table"], ["Only($Rows)", "Count($Field)"])
        assert ("Orders", 3, 2.0) in tables.rows
        assert ("Budget", 3, 2.0) in tables.rows


def test_no_dimensions_gives_one_row_of_totals() -> None:
    app = sales()
    with app.session() as s:
        cube = s.hypercube([], ["Sum(Amount)", "Count(distinct Region)"])
        assert cube.rows == [(15.5, 3.0)]
        assert cube.totals == [15.5, 3.0]


def test_loose_table_measures_are_their_total_on_every_row() -> None:
    app = App.from_tables(
        {
            "A": {"X": [1, 2], "Y": [1, 2]},
            "B": {"Y": [1, 2], "Z": [1, 2]},
            "C": {"Z": [1, 2, 2], "X": [1, 2, 2], "V": [5, 6, 7]},
        }
    )
    loose = [t["name"] for t in app.metadata()["tables"] if t["is_loose"]]
    assert loose == ["C"]
    with app.session() as s:
        # C is a part of its own that holds no dimension: its total shows on every row.
        cube = s.hypercube(["Y"], ["Sum(V)"])
        assert cube.rows == [(1, 18.0), (2, 18.0)]


def what_if() -> App:
    """Orders and Customers linked by CustId, and a Discount table that no key links."""
    return App.from_tables(
        {
            "Orders": {
                "OrderId": [1, 2, 3, 4, 5],
                "CustId": [1, 2, 1, 3, 9],
                "Amount": [10, 20, 5, 7, 3],
            },
            "Customers": {"CustId": [1, 2, 3, 4], "Customer": ["Ann", "Bob", "Cy", "Dee"]},
            "Discount": {"Discount": [0.1, 0.2]},
        }
    )


def test_what_if_island_dimension_combines_with_every_customer() -> None:
    app = what_if()
    with app.session() as s:
        cube = s.hypercube(
            ["Customer", "Discount"],
            ["Sum(Amount)", "Sum(Amount) * (1 - Only(Discount))", "Count(OrderId)"],
        )
        # Every pair; each customer's Sum(Amount) repeated per Discount, never None for it.
        # Order 5's customer 9 has no row: its Customer is None, crossed with each Discount.
        assert [(r[0], r[1], r[2], r[4]) for r in cube.rows] == [
            ("Ann", 0.1, 15.0, 2.0),
            ("Ann", 0.2, 15.0, 2.0),
            ("Bob", 0.1, 20.0, 1.0),
            ("Bob", 0.2, 20.0, 1.0),
            ("Cy", 0.1, 7.0, 1.0),
            ("Cy", 0.2, 7.0, 1.0),
            ("Dee", 0.1, 0.0, 0.0),
            ("Dee", 0.2, 0.0, 0.0),
            (None, 0.1, 3.0, 1.0),
            (None, 0.2, 3.0, 1.0),
        ]
        # Only(Discount) is the row's discount: the what-if figure per pair.
        assert [r[3] for r in cube.rows] == pytest.approx(
            [13.5, 12.0, 18.0, 16.0, 6.3, 5.6, 0.0, 0.0, 2.7, 2.4]
        )
        # Totals: every possible record once; Only(Discount) over two values is NULL.
        assert cube.totals == [45.0, None, 5.0]
        # Suppression and sort apply to the rows of the cross product.
        shown = s.hypercube(
            ["Customer", "Discount"],
            ["Sum(Amount)"],
            sort=[("Sum(Amount)", "desc"), ("Discount", "desc")],
            suppress_zero=True,
            suppress_missing=True,
        )
        assert shown.rows == [
            ("Bob", 0.2, 20.0),
            ("Bob", 0.1, 20.0),
            ("Ann", 0.2, 15.0),
            ("Ann", 0.1, 15.0),
            ("Cy", 0.2, 7.0),
            ("Cy", 0.1, 7.0),
        ]
        assert shown.totals == [45.0]
        # The island's dimension first: the same pairs, in its order.
        flipped = s.hypercube(["Discount", "Customer"], ["Sum(Amount)"], suppress_missing=True)
        assert [r[:2] for r in flipped.rows[:4]] == [(0.1, c) for c in ("Ann", "Bob", "Cy", "Dee")]
        assert len(flipped) == 8


def test_island_measure_is_its_total_on_every_row_of_other_parts() -> None:
    app = what_if()
    with app.session() as s:
        measures = ["Sum(Amount)", "Count(Discount)", "Max(Discount)", "Only(Discount)"]
        cube = s.hypercube(["Customer"], measures)
        assert cube.rows == [
            ("Ann", 15.0, 2.0, 0.2, None),
            ("Bob", 20.0, 2.0, 0.2, None),
            ("Cy", 7.0, 2.0, 0.2, None),
            ("Dee", 0.0, 2.0, 0.2, None),
            (None, 3.0, 2.0, 0.2, None),
        ]
        assert cube.totals == [45.0, 2.0, 0.2, None]
        # A selection in the main part leaves the island's measures alone.
        s.select("Customer", ["Bob"])
        assert s.hypercube(["Customer"], measures).rows == [("Bob", 20.0, 2.0, 0.2, None)]
        # A selection in the island: its measures follow it on every row.
        s.select("Discount", [0.1])
        assert s.hypercube(["Customer"], measures).rows == [("Bob", 20.0, 1.0, 0.1, 0.1)]


def test_selection_in_the_island_restricts_the_cross_product() -> None:
    app = what_if()
    with app.session() as s:
        s.select("Discount", [0.2])
        cube = s.hypercube(["Customer", "Discount"], ["Sum(Amount)", "Count(Discount)"])
        assert cube.rows == [
            ("Ann", 0.2, 15.0, 1.0),
            ("Bob", 0.2, 20.0, 1.0),
            ("Cy", 0.2, 7.0, 1.0),
            ("Dee", 0.2, 0.0, 1.0),
            (None, 0.2, 3.0, 1.0),
        ]
        assert cube.totals == [45.0, 1.0]
        s.select("Customer", ["Ann", "Cy"])
        cube = s.hypercube(["Customer", "Discount"], ["Sum(Amount)"])
        assert cube.rows == [("Ann", 0.2, 15.0), ("Cy", 0.2, 7.0)]
        assert cube.totals == [22.0]


def test_three_parts_combine_every_way() -> None:
    app = App.from_tables(
        {
            "Orders": {"CustId": [1, 2, 2], "Amount": [1, 2, 4]},
            "Customers": {"CustId": [1, 2], "Customer": ["Ann", "Bob"]},
            "Rate": {"Rate": [1, 2, None], "Weight": [10, 20, 30]},
            "Scenario": {"Scenario": ["lo", "hi"]},
        }
    )
    with app.session() as s:
        cube = s.hypercube(["Scenario", "Customer", "Rate"], ["Sum(Amount)", "Sum(Weight)"])
        assert len(cube) == 2 * 2 * 3
        rows = {r[:3]: r[3:] for r in cube.rows}
        assert rows[("hi", "Bob", None)] == (6.0, 30.0)
        assert rows[("lo", "Ann", 2)] == (1.0, 20.0)
        # Without the island's NULL Rate when missing values are suppressed.
        dims = ["Scenario", "Customer", "Rate"]
        shown = s.hypercube(dims, ["Sum(Amount)"], suppress_missing=True)
        assert len(shown) == 8


def test_key_field_measure_keeps_the_rows_where_the_key_is_null() -> None:
    """A key field's records are its values: rows whose key is NULL still show (their
    dimension tuples come from the inner join), with the empty aggregation."""
    app = App.from_tables(
        {
            "Isle": {"IK": [None, 1, 2], "Q1": [3, 5, 5]},
            "IsleDim": {"IK": [1, 2, 4], "R1": ["r", "s", "r"]},
        }
    )
    with app.session() as s:
        cube = s.hypercube(["IK", "Q1"], ["Count(distinct IK)"])
        assert cube.rows == [(1, 5, 1.0), (2, 5, 1.0), (4, None, 1.0), (None, 3, 0.0)]


def test_errors_name_the_position_and_the_problem() -> None:
    app = sales()
    with app.session() as s:
        cases = {
            "Sum(Amount": "expected '\\)', found the end at position 10",
            "Foo(Amount)": "unknown function 'Foo' at position 0",
            "Avg(Aggr(Sum(Amount), Nope))": "field 'Nope' as an Aggr dimension at position 22",
            "Sum(Nope)": "unknown field 'Nope' at position 4",
            "Sum(CustId)": "key field 'CustId' at position 4",
            "Count(CustId)": "key field 'CustId' at position 6",
            "1 +": "expected a value, found the end at position 3",
            "Sum([Amount)": "unclosed '\\[' at position 4",
            "Sum()": "expected a field name at position 4",
            "Sum(Amount) Sum(Amount)": "unexpected 'S' at position 12",
            "": "empty expression",
            "Min(distinct Amount)": "'distinct' is not allowed in Min at position 4",
            "2x": "after a number at position 1",
        }
        for text, message in cases.items():
            with pytest.raises(assoc.Error, match=message):
                s.hypercube(["Category"], [text])
        with pytest.raises(assoc.Error, match="unknown dimension field 'Nope'"):
            s.hypercube(["Nope"], ["Sum(Amount)"])
        with pytest.raises(assoc.Error, match="at least one dimension or measure"):
            s.hypercube([], [])
        with pytest.raises(assoc.Error, match="list of strings"):
            s.hypercube("Category", [])  # type: ignore[arg-type]
        cube = s.hypercube(["Category"], ["Sum(Amount)"])
        with pytest.raises(assoc.Error, match="no column"):
            cube.array("Nope")
        with pytest.raises(assoc.Error, match="no dimension"):
            cube.codes(1)
    with pytest.raises(assoc.Error, match="closed"):
        s.hypercube(["Category"], ["Sum(Amount)"])


def test_repeated_cubes_come_from_the_result_cache() -> None:
    app = sales()
    with app.session() as s, app.session() as t:
        before = assoc.engine_counters()["cache"]
        first = s.hypercube(["Category"], ["Sum(Amount)"])
        again = t.hypercube(["Category"], ["Sum(Amount)"])
        after = assoc.engine_counters()["cache"]
        assert again.rows == first.rows
        assert after["hits"] >= before["hits"] + 1
        s.select("Category", ["a"])
        assert s.hypercube(["Category"], ["Sum(Amount)"]).rows == [("a", 4.0)]
        assert t.hypercube(["Category"], ["Sum(Amount)"]).rows == first.rows


@pytest.fixture(params=[1, 2, 4])
def threads(request: pytest.FixtureRequest) -> Iterator[int]:
    """Runs a test with the engine on 1, 2 and 4 threads."""
    old = assoc.threads()
    assoc.set_threads(request.param)
    yield request.param
    assoc.set_threads(old)


def test_large_table_matches_numpy_on_every_thread_count(threads) -> None:
    rng = np.random.default_rng(7)
    n = 200_000
    cat = rng.integers(0, 50, n)
    cust = rng.integers(0, 3000, n)
    amount = rng.integers(0, 1000, n).astype(float) / 4
    sel = rng.integers(0, 100, n)
    app = App.from_tables({"T": {"Cat": cat, "Cust": cust, "Amount": amount, "Sel": sel}})
    with app.session() as s:
        for chosen in (None, [3, 5, 7], list(range(60))):
            s.clear()
            mask = np.ones(n, bool)
            if chosen:
                s.select("Sel", chosen)
                mask = np.isin(sel, chosen)
            cube = s.hypercube(["Cat"], ["Sum(Amount)", "Count(distinct Cust)", "Max(Amount)"])
            keys = np.unique(cat[mask])
            np.testing.assert_array_equal(cube.array("Cat"), keys)
            sums = [amount[mask & (cat == k)].sum() for k in keys]
            np.testing.assert_allclose(cube.array(1), sums)
            distinct = [len(np.unique(cust[mask & (cat == k)])) for k in keys]
            np.testing.assert_array_equal(cube.array(2), distinct)
            np.testing.assert_array_equal(
                cube.array(3), [amount[mask & (cat == k)].max() for k in keys]
            )
            assert cube.totals[1] == len(np.unique(cust[mask]))
            assert nan_to_none(cube.totals[0]) == pytest.approx(amount[mask].sum())


def test_many_groups_and_values_match_plain_python(threads) -> None:
    """Group keys beyond direct indexing and distinct counts beyond a bitset take other paths."""
    rng = np.random.default_rng(3)
    n = 60_000
    a = rng.integers(0, 400, n)
    b = rng.integers(0, 400, n)
    c = rng.integers(0, 50_000, n)
    sel = rng.integers(0, 50, n)
    app = App.from_tables({"T": {"A": a, "B": b, "C": c, "Sel": sel}})
    with app.session() as s:
        for chosen in (None, [1, 2]):
            s.clear()
            mask = np.ones(n, bool) if chosen is None else np.isin(sel, chosen)
            if chosen:
                s.select("Sel", chosen)
            for dims in (["A"], ["A", "B"]):
                cube = s.hypercube(dims, ["Count(distinct C)", "Sum(C)"])
                want: dict[tuple[int, ...], set[int]] = {}
                for i in np.flatnonzero(mask):
                    key = (int(a[i]),) if dims == ["A"] else (int(a[i]), int(b[i]))
                    want.setdefault(key, set()).add(int(c[i]))
                got = {r[: len(dims)]: r[len(dims)] for r in cube.rows}
                assert got == {k: float(len(v)) for k, v in want.items()}
                assert [r[: len(dims)] for r in cube.rows] == sorted(want)
                assert cube.totals[0] == len(np.unique(c[mask]))


@pytest.mark.parametrize(("n_regions", "n_fact"), [(5, 3000), (300, 3000), (70_000, 1_200_000)])
def test_star_lookups_of_every_width_keep_missing_partners_out(n_regions: int, n_fact: int) -> None:
    # A link's look-up holds 8, 16 or 32 bits per value as the keys need (32 only where the
    # key space exceeds 65,536, which the dense path allows with more than 1M rows); a fact
    # row without a dimension row must come out as None, and reach nothing in a join of
    # dimensions alone.
    rng = np.random.default_rng(n_regions)
    n_dim = n_regions + 50
    dim_keys = np.arange(n_dim)
    fact_keys = rng.integers(0, n_dim + 40, n_fact)  # some beyond the dimension
    amounts = rng.integers(1, 10, n_fact).astype(float)
    app = App.from_tables(
        {
            "Fact": {"DimKey": fact_keys, "Amount": amounts},
            "Dim": {"DimKey": dim_keys, "Region": dim_keys % n_regions},
        }
    )
    joined = fact_keys < n_dim
    region = fact_keys[joined] % n_regions
    sums = np.bincount(region, weights=amounts[joined], minlength=n_regions)
    want: dict[Any, float] = {r: float(v) for r, v in enumerate(sums)}
    want[None] = float(amounts[~joined].sum())
    with app.session() as s:
        cube = s.hypercube(["Region"], ["Sum(Amount)"])
        assert dict(cube.rows) == want
        # Walked from the fact table, Amount first: a key beyond the dimension reaches nothing.
        pairs = s.hypercube(["Amount", "Region"])
        assert {tuple(r) for r in pairs.rows} == set(
            zip(amounts[joined].tolist(), region.tolist(), strict=True)
        )


def test_dense_passes_count_and_sum_as_numpy_does(threads) -> None:
    """Every row, or a selection leaving a quarter of them or more (gaps in each 1,024-row
    chunk, whose rows are packed before they are summed): Sums and Counts by a dimension of the
    table (its slot read from its symbol), with NULLs in it and in the counted field, and by a
    dimension a link away (its slot read from the link)."""
    rng = np.random.default_rng(12)
    n = 300_001
    sel = rng.integers(0, 10, n)
    cat = [None if i % 97 == 0 else int(v) for i, v in enumerate(rng.integers(0, 40, n))]
    cust = rng.integers(0, 500, n)
    raw = rng.integers(0, 10_000, n) / 8
    amount: list[Any] = [None if i % 89 == 0 else float(v) for i, v in enumerate(raw)]
    region = rng.integers(0, 12, 500)
    app = App.from_tables(
        {
            "Fact": {"Sel": sel, "Cat": cat, "Cust": cust, "Amount": amount},
            "Customers": {"Cust": np.arange(500), "Region": region},
        }
    )
    number = np.array([0.0 if v is None else v for v in amount])
    with app.session() as s:
        for chosen in (None, list(range(8)), list(range(1, 10)), [2, 5, 7]):
            s.clear()
            mask = np.ones(n, bool) if chosen is None else np.isin(sel, chosen)
            if chosen is not None:
                s.select("Sel", chosen)
                assert 0.25 < mask.mean() < 1  # many rows of every chunk, not all
            for dim, group_of in (
                ("Cat", lambda i: cat[i]),
                ("Region", lambda i: int(region[cust[i]])),
            ):
                want: dict[Any, list[float]] = {}
                for i in np.flatnonzero(mask):
                    counted = want.setdefault(group_of(i), [0.0, 0.0])
                    counted[0] += amount[i] is not None
                    counted[1] += number[i]
                both = {
                    r[0]: r[1:] for r in s.hypercube([dim], ["Count(Amount)", "Sum(Amount)"]).rows
                }
                assert both.keys() == want.keys()
                for key, (count, total) in want.items():
                    assert both[key] == (count, pytest.approx(total))
                counts = dict(s.hypercube([dim], ["Count(Amount)"]).rows)
                assert counts == {key: count for key, (count, _) in want.items()}
                sums = dict(s.hypercube([dim], ["Sum(Amount)"]).rows)
                assert sums == pytest.approx({key: total for key, (_, total) in want.items()})


def test_the_portable_row_packing_agrees_too() -> None:
    # Where the CPU has AVX-512, a chunk's possible rows (their values, their positions) are
    # packed by a vector kernel; ASSOC_SIMD=0 turns it off. The checks of the passes that pack
    # them, again without it, on two threads (the kernels are the chunks' own: one, two and
    # four threads ran them in the tests' own run).
    assert_pass_without_simd(
        "test_hypercube.py",
        "random_models_match or ((dense_passes_count_and_sum or groups_reached_late) and [2])"
        " or flag",
    )


def test_groups_reached_late_or_never_and_paired_terms(threads) -> None:
    """The dense pass stops marking groups reached once every value of the dimension has been
    reached: a value whose rows all come last, and NULL, must still be groups; a value of a
    field shared with another table that this table never holds is a row of zeros, as Qlik
    shows a possible value no fact reaches. Sum and Count of one column go in one pair, in
    either order, beside other terms (NULLs and texts counted as Qlik counts them: Count takes
    texts, Sum their 0)."""
    rng = np.random.default_rng(13)
    n = 200_003
    cat = rng.integers(0, 50, n).astype(object)
    cat[-1500:] = 99  # rows of value 99 only in the last chunks
    cat[::101] = None
    amount: list[Any] = [
        None if i % 61 == 0 else "n/a" if i % 59 == 0 else float(v) if i < n - 700 else 5000.0
        for i, v in enumerate(rng.integers(0, 1000, n) / 4)
    ]
    other = rng.integers(0, 100, n)
    number = np.array([v if isinstance(v, float) else 0.0 for v in amount])
    want: dict[Any, list[float]] = {}
    for i in range(n):
        w = want.setdefault(cat[i], [0.0, 0.0, 0.0])
        w[0] += number[i]
        w[1] += amount[i] is not None
        w[2] += float(other[i])
    rows_of = {key: sum(1 for v in cat if v == key) for key in want}
    # Every (Cat, Parity) pair occurs in earlier chunks but (99, 1), whose rows all lie in the
    # last chunk (rows n - 323 on).
    parity = np.arange(n) % 2
    parity[n - 1500 : n - 300] = 0
    parity[n - 300 :] = 1
    want_two: dict[tuple[Any, int], list[float]] = {}
    for i in range(n):
        w = want_two.setdefault((cat[i], int(parity[i])), [0.0, 0.0])
        w[0] += number[i]
        w[1] = max(w[1], number[i])
    # Two dimensions of one table, no other table, terms other than Sums and Counts: the
    # general pass, its last pair reached in the last chunk.
    alone = App.from_tables({"Fact": {"Cat": list(cat), "Parity": parity, "Amount": amount}})
    with alone.session() as s:
        cube = s.hypercube(["Cat", "Parity"], ["Sum(Amount)", "Max(Amount)"])
        got_two = {r[:2]: list(r[2:]) for r in cube.rows}
        assert got_two.keys() == want_two.keys()
        for key, (total, most) in want_two.items():
            assert got_two[key][0] == pytest.approx(total), key
            if most > 0:  # Max takes the numbers only (texts and NULL are none)
                assert got_two[key][1] == most, key
    # Every Cat value in Fact; then also 77, which no Fact row holds.
    for names in ([99, 1], [77, 99, 1]):
        app = App.from_tables(
            {
                "Fact": {"Cat": list(cat), "Amount": amount, "Other": other},
                "CatNames": {"Cat": names, "Name": [str(v) for v in names]},
            }
        )
        with app.session() as s:
            for measures, order in (
                (["Sum(Amount)", "Count(Amount)"], (0, 1)),
                (["Count(Amount)", "Sum(Amount)"], (1, 0)),
                (["Sum(Amount)", "Count(Amount)", "Sum(Other)", "Count(Other)"], (0, 1, 2)),
            ):
                got = {row[0]: row[1:] for row in s.hypercube(["Cat"], measures).rows}
                assert got.keys() == {*want, *names}
                if 77 in names:
                    assert list(got[77]) == [0.0] * len(measures)
                for key, w in want.items():
                    values = [w[k] for k in order]
                    assert list(got[key][: len(order)]) == pytest.approx(values), key
                    if len(measures) == 4:
                        assert got[key][3] == rows_of[key]
            # A Count of a column that stores no NULL counts the rows, its codes unread.
            counted = dict(s.hypercube(["Cat"], ["Count(Other)"]).rows)
            assert counted == {**rows_of, **({77: 0} if 77 in names else {})}
            # Aggr over Cat reads Fact by its Cat column: the late group's sum is the largest.
            (top,) = s.hypercube([], ["Max(Aggr(Sum(Amount), Cat))"]).rows[0]
            assert top == pytest.approx(want[99][0])
            assert top == pytest.approx(max(w[0] for w in want.values()))


def test_a_sum_beside_a_count_of_another_column_counts_what_qlik_counts(threads) -> None:
    """Sum(X) beside Count(Y) of a column Y that stores no NULL go in one pair per group: the
    count is every row's, whatever X holds on it (NULL, text); Count of a column with NULLs
    beside Sum(X) counts only its values. Every group, every selection, either order, chunks
    read ahead past the table's last row, and a dimension of few values (whose sums the pass
    keeps in several copies) as well as one of many. Avg of a column of numbers and NULLs
    takes the same pass (a sum and a count of its own), beside a Count of its column too;
    Avg of a column with texts counts only the numbers."""
    rng = np.random.default_rng(29)
    n = 70_001  # 68 chunks and a row
    few = rng.integers(0, 30, n)
    many = rng.integers(0, 700, n)
    sel = rng.integers(0, 10, n)
    amount: list[Any] = [
        None if i % 37 == 0 else "n/a" if i % 41 == 0 else float(v)
        for i, v in enumerate(rng.integers(0, 1000, n) / 4)
    ]
    order_id = np.arange(n)  # no NULL
    price: list[Any] = [None if i % 13 == 0 else float(v) for i, v in enumerate(rng.random(n))]
    note: list[Any] = [None if i % 7 == 0 else f"t{i % 5}" for i in range(n)]
    number = np.array([v if isinstance(v, float) else 0.0 for v in amount])
    fact = {
        "Few": few,
        "Many": many,
        "Sel": sel,
        "Amount": amount,
        "OrderId": order_id,
        "Price": price,
    }
    app = App.from_tables({"Fact": {**fact, "Note": note}})
    has_note = np.array([v is not None for v in note])
    has_price = np.array([v is not None for v in price])
    prices = np.array([0.0 if v is None else v for v in price])
    is_number = np.array([isinstance(v, float) for v in amount])
    with app.session() as s:
        for (dim, cat), chosen in itertools.product(
            (("Few", few), ("Many", many)), (None, [1, 2, 3, 4, 5, 6, 7], [3])
        ):
            s.clear()
            mask = np.ones(n, bool) if chosen is None else np.isin(sel, chosen)
            if chosen is not None:
                s.select("Sel", chosen)
            groups = np.unique(cat[mask])
            sums = {int(g): number[mask & (cat == g)].sum() for g in groups}
            rows = {int(g): int((mask & (cat == g)).sum()) for g in groups}
            notes = {int(g): int((mask & (cat == g) & has_note).sum()) for g in groups}
            for measures in (
                ["Sum(Amount)", "Count(OrderId)"],
                ["Count(OrderId)", "Sum(Amount)"],
                ["Sum(Amount)", "Count(Note)"],
                ["Sum(OrderId)", "Sum(Amount)", "Count(OrderId)"],
                ["Avg(Price)", "Sum(Amount)"],
                ["Count(Price)", "Avg(Price)", "Sum(Amount)", "Count(OrderId)"],
                ["Avg(Amount)", "Sum(Amount)"],
            ):
                cube = s.hypercube([dim], measures)
                got = {r[0]: dict(zip(measures, r[1:], strict=True)) for r in cube.rows}
                assert got.keys() == sums.keys(), (chosen, measures)
                for g, row in got.items():
                    assert row["Sum(Amount)"] == pytest.approx(sums[g]), (chosen, measures, g)
                    if "Count(OrderId)" in row:
                        assert row["Count(OrderId)"] == rows[g], (chosen, measures, g)
                    if "Count(Note)" in row:
                        assert row["Count(Note)"] == notes[g], (chosen, measures, g)
                    here = mask & (cat == g)
                    if "Avg(Price)" in row:
                        want_avg = prices[here].sum() / has_price[here].sum()
                        assert row["Avg(Price)"] == pytest.approx(want_avg), (chosen, measures, g)
                    if "Count(Price)" in row:
                        assert row["Count(Price)"] == has_price[here].sum(), (chosen, measures, g)
                    if "Avg(Amount)" in row:
                        want_avg = number[here].sum() / is_number[here].sum()
                        assert row["Avg(Amount)"] == pytest.approx(want_avg), (chosen, measures, g)
                    if "Sum(OrderId)" in row:
                        want = float(order_id[mask & (cat == g)].sum())
                        assert row["Sum(OrderId)"] == want, (chosen, measures, g)


def test_a_cube_by_a_flag_sums_every_row_of_each_value(threads) -> None:
    """A dimension of two values and none NULL, or of one value and NULLs, is a column of one
    bit (decoded 16 rows a mask where the CPU has AVX-512): every row lands in its value's
    row, with no selection and under one, over a table that is not a whole number of 64-row
    blocks."""
    rng = np.random.default_rng(41)
    n = 100_003
    flag = rng.integers(0, 2, n)
    holed: list[Any] = [None if v == 0 else "yes" for v in rng.integers(0, 3, n)]
    sel = rng.integers(0, 20, n)
    amount = rng.integers(0, 1000, n) / 4
    app = App.from_tables({"T": {"Flag": flag, "Holed": holed, "Sel": sel, "Amount": amount}})
    is_yes = np.array([v is not None for v in holed])
    with app.session() as s:
        for chosen in (None, list(range(15))):
            s.clear()
            mask = np.ones(n, bool) if chosen is None else np.isin(sel, chosen)
            if chosen is not None:
                s.select("Sel", chosen)
            by_flag = {
                r[0]: r[1:] for r in s.hypercube(["Flag"], ["Sum(Amount)", "Count(Amount)"]).rows
            }
            assert by_flag.keys() == {0, 1}
            for v in (0, 1):
                here = mask & (flag == v)
                assert by_flag[v] == (pytest.approx(amount[here].sum()), here.sum()), (chosen, v)
            by_holed = {
                r[0]: r[1:] for r in s.hypercube(["Holed"], ["Sum(Amount)", "Count(Amount)"]).rows
            }
            assert by_holed.keys() == {"yes", None}
            for key, here in (("yes", mask & is_yes), (None, mask & ~is_yes)):
                assert by_holed[key] == (pytest.approx(amount[here].sum()), here.sum()), (
                    chosen,
                    key,
                )


def test_sparse_selections_sum_as_numpy_does(threads) -> None:
    """A selection leaving few of a table's rows (the last one among them, NULLs and texts in
    the summed field, a dimension in the table or one link away) sums what numpy sums."""
    rng = np.random.default_rng(11)
    n = 300_001  # not a whole number of 64-row words
    sel = rng.integers(0, 1000, n)
    sel[-1] = 7
    sel[1000:4000] = 7  # a run of selected rows (a gathered batch spans ~1,024 rows)
    sel[1000:4000:50] = 500
    cat = [None if i % 97 == 0 else int(v) for i, v in enumerate(rng.integers(0, 40, n))]
    cust = rng.integers(0, 500, n)
    raw = rng.integers(0, 10_000, n) / 8
    amount: list[Any] = [
        None if i % 89 == 0 else "n/a" if i % 83 == 0 else float(v) for i, v in enumerate(raw)
    ]
    region = rng.integers(0, 12, 500)
    app = App.from_tables(
        {
            "Fact": {"Sel": sel, "Cat": cat, "Cust": cust, "Amount": amount},
            "Customers": {"Cust": np.arange(500), "Region": region},
        }
    )
    number = np.array([v if isinstance(v, float) else 0.0 for v in amount])
    with app.session() as s:
        for chosen in ([7], [7, 8, 9], list(range(7, 50))):
            s.select("Sel", chosen)
            mask = np.isin(sel, chosen)
            assert mask.sum() * 16 <= n  # few rows: the gathering path
            by_cat = dict(s.hypercube(["Cat"], ["Sum(Amount)"]).rows)
            want: dict[Any, float] = {}
            for i in np.flatnonzero(mask):
                want[cat[i]] = want.get(cat[i], 0.0) + number[i]
            assert by_cat.keys() == want.keys()
            for key, total in want.items():
                assert by_cat[key] == pytest.approx(total)
            by_region = dict(s.hypercube(["Region"], ["Sum(Amount)"]).rows)
            want_region: dict[int, float] = {}
            for i in np.flatnonzero(mask):
                r = int(region[cust[i]])
                want_region[r] = want_region.get(r, 0.0) + number[i]
            assert by_region == pytest.approx(want_region)
            # Sums and Counts together in the fused pass, the dimension in the table or a link
            # away.
            for dim, group_of in (
                ("Cat", lambda i: cat[i]),
                ("Region", lambda i: int(region[cust[i]])),
            ):
                both = {
                    row[0]: row[1:]
                    for row in s.hypercube([dim], ["Count(Amount)", "Sum(Amount)"]).rows
                }
                want_both: dict[Any, list[float]] = {}
                for i in np.flatnonzero(mask):
                    counted = want_both.setdefault(group_of(i), [0.0, 0.0])
                    counted[0] += amount[i] is not None
                    counted[1] += number[i]
                assert both.keys() == want_both.keys()
                for key, (count, total) in want_both.items():
                    assert both[key] == (count, pytest.approx(total))
            # Many more groups than rows (customer by category): one thread's pass.
            many = {row[:2]: row[2] for row in s.hypercube(["Cust", "Cat"], ["Sum(Amount)"]).rows}
            want_many: dict[tuple[int, Any], float] = {}
            for i in np.flatnonzero(mask):
                key = (int(cust[i]), cat[i])
                want_many[key] = want_many.get(key, 0.0) + number[i]
            assert many == pytest.approx(want_many)
            # Aggr over one field reads that field's table by its column (one group a value).
            per_customer: dict[int, float] = {}
            for i in np.flatnonzero(mask):
                per_customer[int(cust[i])] = per_customer.get(int(cust[i]), 0.0) + number[i]
            (top,) = s.hypercube([], ["Max(Aggr(Sum(Amount), Cust))"]).rows[0]
            assert top == pytest.approx(max(per_customer.values()))
            # Other measures and two dimensions take the general pass.
            cube = s.hypercube(["Cat", "Region"], ["Count(Amount)", "Max(Amount)", "Avg(Amount)"])
            groups: dict[tuple[Any, int], list[float]] = {}
            for i in np.flatnonzero(mask):
                values = groups.setdefault((cat[i], int(region[cust[i]])), [])
                if amount[i] is not None:
                    values.append(number[i] if isinstance(amount[i], float) else math.nan)
            got = {row[:2]: row[2:] for row in cube.rows}
            assert got.keys() == groups.keys()
            for key, values in groups.items():
                numbers = [v for v in values if not math.isnan(v)]
                count, most, mean = got[key]
                assert count == len(values)
                assert nan_to_none(most) == (max(numbers) if numbers else None)
                mean_want = pytest.approx(sum(numbers) / len(numbers)) if numbers else None
                assert nan_to_none(mean) == mean_want
