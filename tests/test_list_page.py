"""Session.list_page: a list object's page as an Arrow producer (values, symbol indexes and
states, sorted and paged), read by pyarrow, polars and DuckDB; section access keeps other
users' values out; bad arguments are errors."""

from __future__ import annotations

import functools
import random
from typing import Any

import numpy as np
import pytest

import assoc
from assoc.field_order import FieldOrder, state_counts

pa = pytest.importorskip("pyarrow")
pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")

RANK = {"S": 0, "O": 1, "A": 2, "XS": 3, "X": 4}


@pytest.fixture(scope="module")
def app() -> assoc.App:
    return assoc.App.from_tables(
        {
            "Orders": {
                "Customer": ["b", "a", "B", "c", "a", "10", "9", "d"],
                "Amount": [5, 1, 2, 2, 7, 3, 3, None],
                "When": [assoc.Dual(45322, "1/31/2024")] * 4 + [assoc.Dual(45323, "2/1/2024")] * 4,
            },
            "Customers": {"Customer": ["a", "b", "c", "e"], "Region": ["N", "S", "N", "W"]},
        }
    )


def page_rows(page: Any) -> list[tuple[Any, int, str]]:
    table = pa.table(page)
    return list(zip(*(table.column(i).to_pylist() for i in range(3)), strict=True))


def test_values_states_and_symbol_indexes(app: assoc.App) -> None:
    with app.session() as s:
        s.select("Region", ["N"])
        page = s.list_page("Customer", sort={"state": 1, "ascii": 1}, show_alternatives=True)
        assert page.column_names == ["Customer", "elem", "state"]
        assert (page.top, page.size, page.num_rows, len(page)) == (0, 8, 8, 8)
        symbols = app.symbols("Customer")
        rows = page_rows(page)
        assert [r[1] for r in rows] == [symbols.index(r[0]) for r in rows]
        # a and c are possible in the north; the others have no row there; texts sort as texts
        assert [(r[0], r[2]) for r in rows] == [
            ("a", "O"), ("c", "O"),
            ("10", "X"), ("9", "X"), ("B", "X"), ("b", "X"), ("d", "X"), ("e", "X"),
        ]  # fmt: skip
        s.select("Customer", ["b"])  # b: selected, but the north excludes it
        states = {r[0]: r[2] for r in page_rows(s.list_page("Customer", show_alternatives=True))}
        assert (states["b"], states["a"], states["c"]) == ("XS", "A", "A")
        hidden = {r[0]: r[2] for r in page_rows(s.list_page("Customer"))}
        assert hidden["a"] == "X"  # alternatives show as excluded unless asked for
        s.clear()
        s.select("Customer", ["a", "c"])
        first = page_rows(s.list_page("Customer", sort={"state": 1, "load": 1}))
        assert [r[:1] + r[2:] for r in first[:3]] == [("a", "S"), ("c", "S"), ("b", "X")]


def expected_order(
    texts: list[str], numbers: list[float | None], states: list[str], sort: dict[str, int]
) -> list[int]:
    """The order a list shows, worked out here from Qlik's rules: state, then numbers before
    texts by value, then text (case-insensitive, then by case), then load order."""

    def compare(i: int, j: int) -> int:
        keys: list[tuple[Any, Any, int]] = []
        if sort.get("state"):
            keys.append((RANK[states[i]], RANK[states[j]], sort["state"]))
        if sort.get("numeric"):
            ni, nj = numbers[i], numbers[j]
            keys.append((ni is None, nj is None, 1))
            keys.append((ni or 0.0, nj or 0.0, sort["numeric"]))
        if sort.get("ascii"):
            ti, tj = texts[i], texts[j]
            keys.append(((ti.casefold(), ti), (tj.casefold(), tj), sort["ascii"]))
        keys.append((i, j, sort.get("load") or 1))
        for a, b, direction in keys:
            if a != b:
                return direction if a > b else -direction
        return 0

    return sorted(range(len(texts)), key=functools.cmp_to_key(compare))


def texts_and_numbers(symbols: list[Any]) -> tuple[list[str], list[float | None]]:
    """Each symbol's text as a list shows it, and its number (None for a text)."""
    texts = [v.text if isinstance(v, assoc.Dual) else str(v) for v in symbols]
    texts = [t[:-2] if t.endswith(".0") else t for t in texts]
    numbers = [
        None if isinstance(v, str) else float(v.number if isinstance(v, assoc.Dual) else v)
        for v in symbols
    ]
    return texts, numbers


@pytest.mark.parametrize("seed", range(6))
def test_sort_and_paging_match_the_rules(seed: int) -> None:
    rng = random.Random(seed)
    pool: list[Any] = ["x", "X", "y", "Äb", "ab", "AB", 3, 12, 2.5, -1, "7", assoc.Dual(4, "four")]
    values = [rng.choice(pool) for _ in range(60)]
    app = assoc.App.from_tables({"T": {"F": values, "G": [rng.randrange(4) for _ in values]}})
    sort = {k: rng.choice((-1, 0, 1)) for k in ("state", "numeric", "ascii", "load")}
    with app.session() as s:
        s.select("G", [rng.randrange(4)])
        whole = page_rows(s.list_page("F", sort=sort))
        symbols = app.symbols("F")
        texts, numbers = texts_and_numbers(symbols)
        states = ["X"] * len(symbols)
        for code in s.indices("F", "possible"):
            states[code] = "O"
        for code in s.indices("F", "selected"):
            states[code] = "S"
        order = expected_order(texts, numbers, states, sort)
        assert [r[1] for r in whole] == order
        assert [r[2] for r in whole] == [states[i] for i in order]
        top, height = rng.randrange(len(order)), rng.randrange(1, 8)
        part = s.list_page("F", top, height, sort=sort)
        assert (part.top, part.size) == (top, len(order))
        assert page_rows(part) == whole[top : top + height]
        assert s.list_page("F", len(order) + 5, 3, sort=sort).num_rows == 0


def test_a_field_asked_in_many_orders_keeps_the_latest_right() -> None:
    """A field keeps its latest sort orders for the next layout; asked in eight orders and
    then again backwards (the oldest no longer kept), each page follows its own rules."""
    rng = random.Random(7)
    pool: list[Any] = ["x", "X", "Äb", "ab", 3, 12, 2.5, -1, "7", assoc.Dual(4, "four")]
    values = [rng.choice(pool) if i % 3 else f"v{rng.randrange(500)}" for i in range(400)]
    app = assoc.App.from_tables({"T": {"F": values}})
    symbols = app.symbols("F")
    texts, numbers = texts_and_numbers(symbols)
    sorts = [
        {"numeric": n, "ascii": a, "load": load}
        for n in (1, -1)
        for a in (1, 0)
        for load in (1, -1)
    ]
    with app.session() as s:
        for sort in [*sorts, *reversed(sorts), sorts[0]]:
            order = expected_order(texts, numbers, ["O"] * len(symbols), sort)
            assert [r[1] for r in page_rows(s.list_page("F", sort=sort))] == order, sort


@pytest.mark.parametrize("size", [0, 7, 65_536, 200_001])
def test_state_counts_of_short_and_long_fields(size: int) -> None:
    """A list's qStateCounts: how many values are in each state, whatever the field's size
    (long fields count state by state)."""
    states = np.random.default_rng(size).integers(0, 5, size).astype(np.int8)
    counts = state_counts(states)
    assert counts == [int((states == code).sum()) for code in range(5)]
    assert sum(counts) == size


def test_numbers_duals_and_consumers(app: assoc.App) -> None:
    with app.session() as s:
        amounts = pa.table(s.list_page("Amount", sort={"numeric": -1}))
        assert amounts.schema.field("Amount").type == pa.int64()
        assert amounts.column("Amount").to_pylist() == [7, 5, 3, 2, 1]
        when = s.list_page("When", duals="text")
        assert pa.table(when).column("When").to_pylist() == ["1/31/2024", "2/1/2024"]
        assert pa.table(s.list_page("When")).column("When").to_pylist() == [45322, 45323]
        frame = pl.DataFrame(s.list_page("Region"))
        assert frame["Region"].to_list() == ["N", "S", "W"]
        assert frame["state"].dtype == pl.Categorical
        page = s.list_page("Customer", 0, 3)  # noqa: F841 - DuckDB finds it by name
        assert duckdb.sql("select count(*) from page where state = 'O'").fetchall() == [(3,)]
        # the dictionary holds the page's values only (in symbol order)
        column = pa.table(s.list_page("Customer", 2, 2)).column("Customer").combine_chunks()
        assert column.to_pylist() == ["a", "B"]
        assert column.dictionary.to_pylist() == ["a", "B"]


def test_a_field_named_like_a_column() -> None:
    app = assoc.App.from_tables({"T": {"state": ["b", "a"], "elem": [1, 2]}})
    with app.session() as s:
        assert s.list_page("state").column_names == ["state", "_elem", "_state"]
        assert pa.table(s.list_page("state")).column("state").to_pylist() == ["a", "b"]


def test_alternate_state(app: assoc.App) -> None:
    with app.session() as s:
        s.add_state("Other")
        s.select("Region", ["W"], state="Other")
        assert {r[2] for r in page_rows(s.list_page("Region"))} == {"O"}
        states = {r[0]: r[2] for r in page_rows(s.list_page("Region", state="Other"))}
        assert states == {"N": "X", "S": "X", "W": "S"}
        with pytest.raises(assoc.Error, match="no alternate state 'Nope'"):
            s.list_page("Region", state="Nope")


SECURED = """
SECTION ACCESS;
LOAD * INLINE [
ACCESS, USERID, REGION
USER, ANN, N
ADMIN, ROOT,
];
SECTION APPLICATION;
Sales:
LOAD * INLINE [
REGION, Product
N, A
N, B
S, C
];
"""


def test_section_access_shows_only_the_users_values() -> None:
    app = assoc.App.from_script(SECURED)
    with app.session("ANN") as s:
        page = s.list_page("Product", sort={"ascii": -1})
        assert page.size == 2
        table = pa.table(page)
        assert table.column("Product").to_pylist() == ["B", "A"]
        assert table.column("Product").combine_chunks().dictionary.to_pylist() == ["A", "B"]
        assert s.list_page("REGION").num_rows == 1
        with pytest.raises(assoc.Error):
            s.list_page("USERID")  # the access table is no field of any session
    with app.session("ROOT") as s:
        assert s.list_page("Product").size == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"field": "Nope"}, "no field named 'Nope'"),
        ({"sort": {"frequency": 1}}, "unknown sort key 'frequency'"),
        ({"sort": {"ascii": 2}}, "must be 1, -1 or 0"),
        ({"sort": ["ascii"]}, "sort must map"),
        ({"top": -1}, "top must be an integer >= 0"),
        ({"top": 1.5}, "top must be an integer >= 0"),
        ({"height": -2}, "height must be an integer >= 0 or None"),
        ({"duals": "both"}, "duals must be"),
    ],
)
def test_bad_arguments_are_errors(app: assoc.App, kwargs: dict[str, Any], message: str) -> None:
    args = {"field": "Customer", **kwargs}
    with app.session() as s, pytest.raises(assoc.Error, match=message):
        s.list_page(**args)


MIXED = """
SECTION ACCESS;
LOAD * INLINE [
ACCESS, USERID, REGION
USER, ANN, N
USER, BOB, S
];
SECTION APPLICATION;
Sales:
LOAD * INLINE [
REGION, Code
N, 7
S, x7
];
"""


def test_a_column_keeps_its_type_whatever_part_goes_out() -> None:
    """A field of numbers and texts goes out as text, also where the part that goes out (a
    page, a user's values) holds numbers only."""
    app = assoc.App.from_script(MIXED)
    for user, code in (("ANN", "7"), ("BOB", "x7")):
        with app.session(user) as s:
            assert pa.table(s.list_page("Code")).column("Code").to_pylist() == [code]
            assert pa.table(s.table("Sales")).column("Code").to_pylist() == [code]
            cube = s.hypercube(["Code"], ["Count(REGION)"]).to_arrow()
            assert pa.table(cube).column("Code").to_pylist() == [code]


@pytest.mark.parametrize("seed", range(3))
def test_text_order_folds_case_then_keeps_texts_and_load_order(seed: int) -> None:
    """A field's text ranks (the order of a list sorted by text): case folded first, then the
    texts themselves, then load order; for texts that differ in case or fold to the same
    (ß and ss), share long beginnings, hold NULs or are empty."""
    rng = random.Random(seed)
    pieces = ["a", "A", "b", "ß", "ss", "SS", "é", "É", "\x00", " ", "z", "日", "😀", "customer "]
    texts = ["".join(rng.choices(pieces, k=rng.randint(0, 6))) for _ in range(5_000)]
    texts += texts[:100]  # numbers' texts may repeat a text
    order = FieldOrder(texts)
    expected = sorted(range(len(texts)), key=lambda i: (texts[i].casefold(), texts[i], i))
    rank = np.empty(len(texts), dtype=np.int64)
    rank[expected] = np.arange(len(texts))
    np.testing.assert_array_equal(order.text_rank, rank)
    assert assoc._core.text_order(["b", "a", "", "ab", "a"]).tolist() == [2, 1, 4, 3, 0]
    with pytest.raises(assoc.Error, match="texts only"):
        assoc._core.text_order(["a", 1])  # type: ignore[list-item]


def test_symbol_texts_are_the_texts_and_numbers_lists_show() -> None:
    """The engine's texts and numbers of a field's symbols (App.symbol_texts) are what
    value_text and value_number make of its values: whole numbers below and above 1e15 and
    2^53, decimals, negative zero, texts and duals."""
    values: list[Any] = [
        7, -3, 0.0, -0.0, 2.5, 1 / 3, 1e15, 1e15 + 1, 2.0**53, 2.0**53 * 3, 1e300, -1e-7,
        "text", "", "日本", assoc.Dual(5, "five"),
        assoc.Dual(2.25, "2¼"), 123456789012,
    ]  # fmt: skip
    app = assoc.App.from_tables({"T": {"V": values}})
    texts, numbers = app.symbol_texts("V")
    expected = FieldOrder(app.symbols("V"))
    assert texts == expected.texts
    np.testing.assert_array_equal(numbers, expected.numbers)
    assert texts[:3] == ["7", "-3", "0"]
    assert "five" in texts
    assert "1000000000000000" in texts
