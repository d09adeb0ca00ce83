"""Calculated dimensions (spec chart-expressions §7): `=expr` dimensions in embedded cubes.

The Shop examples of the spec as named tests, the errors, then a comparison with a brute-force
reference written here from the spec (records scanned one by one, sharing no code with the
engine) on random small models with NULLs under random selections. The QIX side is in
tests/qix/test_qix_calculated_dimensions.py.
"""

from __future__ import annotations

import datetime
import random
from typing import Any

import numpy as np
import pytest

import assoc
from assoc import App
from shop import SHOP

BIG = "=Aggr(If(Sum(Amount)>50,'Big','Other'), Customer)"


@pytest.fixture(scope="module")
def shop() -> App:
    return App.from_tables(SHOP)


def shown(value: Any) -> Any:
    return value.text if isinstance(value, assoc.Dual) else value


def rows(
    app: App,
    dims: list[str],
    measures: list[str],
    select: dict[str, list[Any]] | None = None,
    **kw: Any,
) -> list[tuple[Any, ...]]:
    with app.session() as s:
        for field, values in (select or {}).items():
            s.select(field, values)
        return [tuple(shown(v) for v in r) for r in s.hypercube(dims, measures, **kw).rows]


def error_of(app: App, dimension: str) -> str:
    with pytest.raises(assoc.Error) as e:
        rows(app, [dimension], ["Sum(Amount)"])
    return str(e.value)


def test_shop_if_large_small(shop: App) -> None:
    assert rows(shop, ["=If(Amount>=30,'Large','Small')"], ["Sum(Amount)"]) == [
        ("Large", 120.0),
        ("Small", 60.0),
    ]


def test_shop_class_by_20(shop: App) -> None:
    assert rows(shop, ["=Class(Amount,20)"], ["Sum(Amount)"]) == [
        ("0 <= x < 20", 15.0),
        ("20 <= x < 40", 75.0),
        ("40 <= x < 60", 90.0),
    ]


def test_shop_aggr_big_other(shop: App) -> None:
    assert rows(shop, [BIG], ["Sum(Amount)"]) == [("Big", 125.0), ("Other", 55.0)]


def test_shop_aggr_follows_the_selection(shop: App) -> None:
    # Under Country=Sweden only Alice (30) and Carol (55) remain: Carol is Big, Alice Other.
    assert rows(shop, [BIG], ["Sum(Amount)"], {"Country": ["Sweden"]}) == [
        ("Big", 55.0),
        ("Other", 30.0),
    ]


def test_shop_aggr_with_its_own_set(shop: App) -> None:
    # §2.9: the Aggr's set makes its virtual rows (2020: Alice 30, Bob 70, all years summed);
    # Carol's and Eve's orders have no virtual row and land in the NULL value.
    dim = "=Aggr({<Year={2020}>} If(Sum(Amount)>50,'Big','Other'), Customer)"
    assert rows(shop, [dim], ["Sum(Amount)"]) == [("Big", 70.0), ("Other", 30.0), (None, 80.0)]


def test_null_result_is_a_null_dimension_value(shop: App) -> None:
    # Eve has no Customers row: Upper(Country) has no record for her order, and the
    # expression's NULL results land in the `None` row, which suppress_missing drops.
    dim = "=If(Amount > 20, Upper(Product))"
    assert rows(shop, [dim], ["Sum(Amount)", "Count(OrderID)"]) == [
        ("BOLT", 80.0, 2.0),
        ("NUT", 25.0, 1.0),
        ("WASHER", 40.0, 1.0),
        (None, 35.0, 3.0),
    ]
    assert rows(shop, [dim], ["Sum(Amount)"], suppress_missing=True) == [
        ("BOLT", 80.0),
        ("NUT", 25.0),
        ("WASHER", 40.0),
    ]


def test_calculated_beside_field_dimension_with_total_and_sort(shop: App) -> None:
    got = rows(
        shop,
        ["Year", "=If(Amount>=30,'Large','Small')"],
        ["Sum(Amount)", "Sum(TOTAL <Year> Amount)"],
        sort=[("=If(Amount>=30,'Large','Small')", "desc")],
    )
    assert got == [
        (2020, "Small", 10.0, 40.0),
        (2020, "Large", 30.0, 40.0),
        (2021, "Small", 50.0, 140.0),
        (2021, "Large", 90.0, 140.0),
    ] or got == [
        (2020, "Small", 10.0, 40.0),
        (2021, "Small", 50.0, 140.0),
        (2020, "Large", 30.0, 40.0),
        (2021, "Large", 90.0, 140.0),
    ]
    with shop.session() as s:
        cube = s.hypercube(["=If(Amount>=30,'Large','Small')"], ["Avg(Amount)"])
        assert cube.columns == ["=If(Amount>=30,'Large','Small')", "Avg(Amount)"]
        assert cube.totals == [pytest.approx(180 / 7)]
        assert [cube.symbols(0)[c] for c in cube.codes(0)] == ["Large", "Small"]
        field, results = cube.calculated_source(0)
        assert field == "Amount"
        amounts = shop.symbols("Amount")
        assert [cube.symbols(0)[r] for r in results] == [
            "Large" if a >= 30 else "Small" for a in amounts
        ]


def test_expression_over_several_fields_of_one_table(shop: App) -> None:
    assert rows(shop, ["=Product & '-' & Year"], ["Sum(Amount)"], {"Customer": ["Bob"]}) == [
        ("Bolt-2020", 30.0),
        ("Washer-2021", 40.0),
    ]


def test_errors_name_the_position_after_the_equals_sign(shop: App) -> None:
    assert error_of(shop, "=Sum(Amount)") == (
        "calculated dimension '=Sum(Amount)': an aggregation (Sum) outside Aggr; "
        "a calculated dimension is computed per record at position 1"
    )
    assert error_of(shop, "=If(Amount > 1, Country)") == (
        "calculated dimension '=If(Amount > 1, Country)': fields of more than one table "
        "('Amount' and 'Country'); a calculated dimension reads the records of one table "
        "at position 16"
    )
    assert error_of(shop, "=If(Amount>1") == (
        "calculated dimension '=If(Amount>1': expected ')', found the end at position 12"
    )
    assert error_of(shop, "=Upper(Nope)") == (
        "calculated dimension '=Upper(Nope)': unknown field 'Nope' at position 7"
    )
    assert error_of(shop, "=Aggr(Sum(Amount), Nope)") == (
        "calculated dimension '=Aggr(Sum(Amount), Nope)': unknown field 'Nope' at position 19"
    )
    # An error inside the Aggr's expression names its position in the whole dimension.
    assert error_of(shop, "=If(Aggr(Sum(Nope), Customer) > 1, 1)") == (
        "calculated dimension '=If(Aggr(Sum(Nope), Customer) > 1, 1)': "
        "unknown field 'Nope' at position 13"
    )
    assert error_of(shop, "=Rank(Amount)") == (
        "calculated dimension '=Rank(Amount)': an inter-record function (Rank) outside Aggr; "
        "a calculated dimension is computed per record at position 1"
    )
    assert error_of(shop, "=") == "calculated dimension '=': empty expression at position 1"


def test_aggr_inside_an_expression_top_n(shop: App) -> None:
    # The classic top-N idiom (spec §7): customers ranked 1 and 2 by Sum(Amount), others NULL.
    dim = "=If(Aggr(Rank(Sum(Amount)), Customer) <= 2, Customer)"
    assert rows(shop, [dim], ["Sum(Amount)"]) == [("Bob", 70.0), ("Carol", 55.0), (None, 55.0)]


# ---- brute-force reference ------------------------------------------------------------------

EPOCH = datetime.date(1899, 12, 30)
DIMS = {
    "if": "=If(Amount > 100, 'big', 'small')",
    "class": "=Class(Amount, 50)",
    "year": "=Year(Date)",
    "aggr": "=Aggr(If(Sum(Amount) > 150, 'big', 'small'), Customer)",
}


def random_shop(rng: random.Random) -> dict[str, dict[str, list[Any]]]:
    customers = [f"c{i}" for i in range(rng.randint(2, 6))]
    n = rng.randint(1, 25)
    orders = {
        "OrderID": list(range(1, n + 1)),
        "Customer": [rng.choice([*customers, None, "ghost"]) for _ in range(n)],
        "Date": [rng.choice([43831 + rng.randint(0, 800), None]) for _ in range(n)],
        "Amount": [rng.randint(0, 200) for _ in range(n)],
    }
    listed = [c for c in customers if rng.random() < 0.8]
    country = {
        "Customer": listed or customers[:1],
        "Country": [rng.choice(["N", "S", None]) for _ in listed or customers[:1]],
    }
    return {"Orders": orders, "Customers": country}


def possible_orders(
    tables: dict[str, dict[str, list[Any]]], select: dict[str, list[Any]]
) -> list[int]:
    """Order rows under a selection of Country (through the Customer key) and/or of Amount."""
    orders, customers = tables["Orders"], tables["Customers"]
    keep = []
    for i, c in enumerate(orders["Customer"]):
        if "Amount" in select and orders["Amount"][i] not in select["Amount"]:
            continue
        if "Country" in select:
            linked = [
                k
                for k, cc in zip(customers["Customer"], customers["Country"], strict=True)
                if cc in select["Country"]
            ]
            if c is None or c not in linked:
                continue
        keep.append(i)
    return keep


def reference(
    tables: dict[str, dict[str, list[Any]]], kind: str, select: dict[str, list[Any]]
) -> dict[Any, tuple[float, float]]:
    orders = tables["Orders"]
    keep = possible_orders(tables, select)
    per_customer: dict[str, int] = {}
    for i in keep:
        c = orders["Customer"][i]
        if c is not None:
            per_customer[c] = per_customer.get(c, 0) + orders["Amount"][i]
    out: dict[Any, tuple[float, float]] = {}
    for i in keep:
        amount, date, customer = orders["Amount"][i], orders["Date"][i], orders["Customer"][i]
        if kind == "if":
            value: Any = "big" if amount > 100 else "small"
        elif kind == "class":
            low = amount // 50 * 50
            value = f"{low} <= x < {low + 50}"
        elif kind == "year":
            value = None if date is None else (EPOCH + datetime.timedelta(days=date)).year
        else:
            value = None if customer is None else "big" if per_customer[customer] > 150 else "small"
        total, count = out.get(value, (0.0, 0.0))
        out[value] = (total + amount, count + 1)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_matches_brute_force_reference(seed: int) -> None:
    rng = random.Random(seed)
    tables = random_shop(rng)
    app = App.from_tables(tables)
    select: dict[str, list[Any]] = {}
    if rng.random() < 0.5:
        select["Country"] = rng.sample(["N", "S"], rng.randint(1, 2))
    if rng.random() < 0.4:
        select["Amount"] = rng.sample(tables["Orders"]["Amount"], 2)
    with app.session() as s:
        for field, values in list(select.items()):
            present = [v for v in values if v in app.symbols(field)]
            if present:
                s.select(field, present)
            else:
                select.pop(field)
        for kind, dim in DIMS.items():
            want = reference(tables, kind, select)
            cube = s.hypercube([dim], ["Sum(Amount)", "Count(OrderID)"])
            got = {shown(r[0]): (r[1], r[2]) for r in cube.rows}
            assert got == want, (seed, kind, select)
            assert len(cube.rows) == len(want)
            total = sum(v[0] for v in want.values())
            assert cube.totals == [total, sum(v[1] for v in want.values())]
            kept = s.hypercube([dim], ["Sum(Amount)"], suppress_missing=True)
            assert {shown(r[0]) for r in kept.rows} == {k for k in want if k is not None}


@pytest.fixture(scope="module")
def batches() -> tuple[App, dict[str, list[int | None]]]:
    """A table of several of the engine's row batches (65,536 rows each) and a part one:
    Plain has no NULL, Holed one in 97 rows, Wide more values than a code set covers (an
    18-bit column); Id is the row number."""
    rng = random.Random(11)
    n = 3 * 65_536 + 4_999
    plain: list[int | None] = [rng.randrange(1_000) for _ in range(n)]
    holed: list[int | None] = [None if i % 97 == 5 else v for i, v in enumerate(plain)]
    wide: list[int | None] = [rng.randrange(1_000_000) for _ in range(n)]
    columns = {"plain": plain, "holed": holed, "wide": wide}
    tables = {"Facts": {"Id": list(range(n)), "Plain": plain, "Holed": holed, "Wide": wide}}
    return App.from_tables(tables), columns


def by_label(ids: list[int], labels: list[Any]) -> dict[Any, tuple[float, float]]:
    """Sum(Id), Count(Id) per label of the records `ids` (an Id is its row number)."""
    out: dict[Any, tuple[float, float]] = {}
    for i in ids:
        total, count = out.get(labels[i], (0.0, 0.0))
        out[labels[i]] = (total + i, count + 1)
    return out


@pytest.mark.parametrize(
    ("dim", "column", "label"),
    [
        # every record has a result, read from a field without NULLs / with NULLs
        ("=If(Plain > 100, 'big', 'small')", "plain", lambda v: "big" if v > 100 else "small"),
        (
            "=If(IsNull(Holed), 'none', If(Holed > 100, 'big', 'small'))",
            "holed",
            lambda v: "none" if v is None else "big" if v > 100 else "small",
        ),
        # two results, a column of one bit: the rows of one matched as a selection matches
        # them; NULL's result the second (the rows of the first matched, the bits flipped)
        ("=If(IsNull(Holed), 'none', 'some')", "holed", lambda v: "none" if v is None else "some"),
        ("=If(Wide > 350000, 'hi', 'lo')", "wide", lambda v: "hi" if v > 350_000 else "lo"),
        # NULL results: the records' results are kept whole first
        ("=If(Plain > 100, 'big')", "plain", lambda v: "big" if v > 100 else None),
        # one result for every record: a column of no bits
        ("=If(IsNull(Holed), 'x', 'x')", "holed", lambda v: "x"),
        ("='x'", "plain", lambda v: "x"),  # of no field
        ("=Plain", "plain", lambda v: v),
    ],
)
def test_a_column_of_several_batches_has_every_records_result(
    batches: tuple[App, dict[str, list[int | None]]], dim: str, column: str, label: Any
) -> None:
    app, columns = batches
    labels = [label(v) for v in columns[column]]
    previous = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)  # the derived column made for this cube
    try:
        with app.session() as s:
            cube = s.hypercube([dim], ["Sum(Id)", "Count(Id)"])
            assert {shown(r[0]): (r[1], r[2]) for r in cube.rows} == by_label(
                list(range(len(labels))), labels
            )
            # Under a selection across a batch's end and of the last record: their results.
            kept = [*range(65_530, 65_545), len(labels) - 1]
            s.select("Id", kept)
            cube = s.hypercube([dim], ["Sum(Id)", "Count(Id)"])
            assert {shown(r[0]): (r[1], r[2]) for r in cube.rows} == by_label(kept, labels)
    finally:
        assoc.set_cache_limit(previous)


def test_the_derived_model_shares_the_models_columns() -> None:
    """The derived model is the model with the calculated column added; it shares the model's
    packed indexes instead of copying them. The cube reads every code of the shared columns
    as the model holds them, and the result cache counts what the derived model adds (its
    column, the copied symbol tables), not the indexes it shares."""
    rng = np.random.default_rng(5)
    n = 2_200_003  # a 17-bit column of 4.7 MB beside a 10-bit one of 2.75 MB
    amount = rng.integers(0, 131_072, n)
    other = rng.integers(0, 1_000, n)
    app = App.from_tables({"T": {"Amount": amount, "Other": other}})
    model = app._impl
    shared = sum(n * model.bit_width("T", f) // 8 for f in ("Amount", "Other"))
    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)  # emptied
    assoc.set_cache_limit(limit)
    with app.session() as s:
        cube = s.hypercube(["=If(Other > 499, 'hi', 'lo')"], ["Sum(Amount)", "Max(Amount)"])
        got = {shown(r[0]): r[1:] for r in cube.rows}
        cached = assoc.cache_info()["bytes"]
    for key, here in (("hi", other > 499), ("lo", other <= 499)):
        assert got[key] == (float(amount[here].sum()), float(amount[here].max())), key
    # Amount's symbols (131,072 numbers) and the one-bit column (275 KB) are the most of it.
    assert 0 < cached < shared / 3


def test_symbols_key_names_the_same_values_only() -> None:
    """Cubes of the same dimensions share their values' key while the engine keeps their
    derived model; another text, another app (a reload) or a field differ, and a session under
    section access, whose values depend on its user, has none."""
    app = App.from_tables(SHOP)
    with app.session() as s:
        one = s.hypercube(["=Upper(Product)"], ["Sum(Amount)"])
        again = s.hypercube(["=Upper(Product)"], ["Count(Amount)"])
        other = s.hypercube(["=Lower(Product)"], ["Sum(Amount)"])
        field = s.hypercube(["Product"], ["Sum(Amount)"])
        assert one.symbols_key(0) is not None
        assert one.symbols(0) == again.symbols(0)
        assert one.symbols_key(0) == again.symbols_key(0)
        assert one.symbols_key(0) != other.symbols_key(0)
        assert field.symbols_key(0) not in (one.symbols_key(0), other.symbols_key(0))
    with App.from_tables(SHOP).session() as s:
        reloaded = s.hypercube(["=Upper(Product)"], ["Sum(Amount)"])
        assert reloaded.symbols_key(0) != one.symbols_key(0)
    secured = App.from_script(
        "Section Access;\nLOAD * INLINE [ACCESS, USERID\nADMIN, ann\n];\nSection Application;\n"
        "T: LOAD * INLINE [A\nx\ny\n];"
    )
    with secured.session("ann") as s:
        assert s.hypercube(["=Upper(A)"], []).symbols_key(0) is None
