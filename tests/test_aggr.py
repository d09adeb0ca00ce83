"""Aggr, ranks, inter-record and range functions in measures (spec chart-expressions §4, §5).

The worked Shop examples of the spec as named tests, then a comparison with a brute-force
reference written here from the spec (rows scanned per virtual row and per chart row, sharing
no code with the engine) on random small models under random selections.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

import assoc
from assoc import App
from shop import SHOP

SWEDEN = {"Country": ["Sweden"]}


@pytest.fixture(scope="module")
def shop() -> App:
    return App.from_tables(SHOP)


def cube(
    app: App,
    dims: list[str],
    measures: list[str],
    select: dict[str, list[Any]] | None = None,
    **kw: Any,
) -> Any:
    with app.session() as s:
        for field, values in (select or {}).items():
            s.select(field, values)
        return s.hypercube(dims, measures, **kw)


def one(app: App, measure: str, select: dict[str, list[Any]] | None = None) -> Any:
    [row] = cube(app, [], [measure], select).rows
    return row[0]


def error_of(app: App, measure: str) -> str:
    with pytest.raises(assoc.Error) as e:
        cube(app, [], [measure])
    return str(e.value)


# ---------------------------------------------------------------------------------------------
# §4 Aggr


def test_avg_of_aggr_under_selection_a(shop: App) -> None:
    assert one(shop, "Avg(Aggr(Sum(Amount), Customer))", SWEDEN) == 42.5


def test_max_of_aggr_under_selection_a(shop: App) -> None:
    assert one(shop, "Max(Aggr(Sum(Amount), Customer))", SWEDEN) == 55


def test_count_of_aggr_if_under_selection_a(shop: App) -> None:
    assert one(shop, "Count(Aggr(If(Sum(Amount)>40, 1), Customer))", SWEDEN) == 1


def test_first_sorted_value_over_aggr(shop: App) -> None:
    # §3: the customer with the highest total, then the second.
    assert one(shop, "FirstSortedValue(Customer, -Aggr(Sum(Amount), Customer))") == "Bob"
    assert one(shop, "FirstSortedValue(Customer, -Aggr(Sum(Amount), Customer), 2)") == "Carol"


def test_aggr_nodistinct_on_every_order_row(shop: App) -> None:
    rows = cube(shop, ["Customer", "OrderID"], ["Aggr(NODISTINCT Sum(Amount), Customer)"]).rows
    assert rows == [
        ("Alice", 1, 30),
        ("Alice", 2, 30),
        ("Bob", 3, 70),
        ("Bob", 4, 70),
        ("Carol", 5, 55),
        ("Carol", 6, 55),
        ("Eve", 7, 25),
    ]


def test_aggr_distinct_counts_each_virtual_row_in_one_chart_row(shop: App) -> None:
    rows = cube(shop, ["Customer", "OrderID"], ["Aggr(Sum(Amount), Customer)"]).rows
    assert [r[2] for r in rows] == [30, None, 70, None, 55, None, 25]


def test_bare_aggr_on_matching_rows_and_null_total(shop: App) -> None:
    c = cube(shop, ["Customer"], ["Aggr(Sum(Amount), Customer)"], SWEDEN)
    assert c.rows == [("Alice", 30), ("Carol", 55)]


def test_aggr_over_a_chart_dimension_it_lacks(shop: App) -> None:
    rows = cube(shop, ["Country"], ["Avg(Aggr(Sum(Amount), Customer))", "Sum(Amount)"]).rows
    avg = {r[0]: r[1] for r in rows}
    assert avg["Sweden"] == 42.5
    assert avg["Norway"] == 70


def test_sorted_aggr_dimension_orders_the_virtual_table(shop: App) -> None:
    # Running total per year inside Aggr, the years descending: 2021 first (140), then 180.
    asc = "Sum(Aggr(RangeSum(Above(Sum(Amount), 0, 2)), (Year, (NUMERIC, ASCENDING))))"
    desc = "Sum(Aggr(RangeSum(Above(Sum(Amount), 0, 2)), (Year, (NUMERIC, DESCENDING))))"
    assert one(shop, asc) == 40 + 180
    assert one(shop, desc) == 140 + 180
    assert (
        one(shop, "Max(Aggr(RowNo() * 1000 + Year, (Year, (NUMERIC, DESCENDING))))") == 2000 + 2020
    )


def test_rank_inside_aggr(shop: App) -> None:
    rows = cube(shop, ["Customer"], ["Aggr(Rank(Sum(Amount)), Customer)"]).rows
    assert dict(rows)["Bob"] == 1
    assert dict(rows)["Carol"] == 2


def test_nested_aggregation_without_aggr_is_an_error_with_its_position(shop: App) -> None:
    msg = error_of(shop, "Sum(Sum(Amount))")
    assert "needs Aggr" in msg
    assert "position 4" in msg


def test_field_beside_aggr_is_an_error(shop: App) -> None:
    msg = error_of(shop, "Sum(Amount * Aggr(Sum(Amount), Customer))")
    assert "beside Aggr" in msg
    assert "position 4" in msg


def test_aggr_misuse_errors(shop: App) -> None:
    assert "at least one dimension" in error_of(shop, "Sum(Aggr(Sum(Amount)))")
    assert "unknown field 'Nope'" in error_of(shop, "Sum(Aggr(Sum(Amount), Nope))")
    assert "FREQUENCY" in error_of(shop, "Sum(Aggr(Sum(Amount), (Year, (FREQUENCY, ASCENDING))))")
    assert "same dimensions" in error_of(
        shop, "Sum(Aggr(Sum(Amount), Year) + Aggr(Sum(Amount), Customer))"
    )
    assert "NODISTINCT belongs to Aggr" in error_of(shop, "Sum(NODISTINCT Amount)")


# ---------------------------------------------------------------------------------------------
# §2.9 sets in and around Aggr, §4 TOTAL <fields> inside an aggregation


def test_section_2_9_condition_inside_and_outside_aggr(shop: App) -> None:
    assert one(shop, "Max({<Year={2021}>} Aggr(Sum({<Year={2021}>} Amount), Customer))") == 55


@pytest.mark.parametrize(
    ("measure", "everything", "sweden"),
    [
        # The Aggr's set makes the virtual rows (Alice, Bob in 2020); Sum inside reads all years.
        ("Sum(Aggr({<Year={2020}>} Sum(Amount), Customer))", 100, 30),
        # The outer set keeps the virtual rows its records reach: the same customers.
        ("Sum({<Year={2020}>} Aggr(Sum(Amount), Customer))", 100, 30),
        (
            "Sum({<Year={2020}>} Aggr({<Year={2020}>} Sum({<Year={2020}>} Amount), Customer))",
            40,
            10,
        ),
        # A virtual row with no record under the selection counts as 0 (Bob, Dave, Eve).
        ("Count(Aggr({1} Sum(Amount), Customer))", 5, 5),
        ("Sum(Aggr({1} Sum(Amount), Customer))", 180, 85),
        # Identifiers 1 in the Aggr's set and inside ignore the selection.
        ("Sum(Aggr({1<Year={2020}>} Sum({1} Amount), Customer))", 100, 100),
    ],
)
def test_which_set_applies_to_what_around_aggr(
    shop: App, measure: str, everything: float, sweden: float
) -> None:
    assert one(shop, measure) == everything
    assert one(shop, measure, SWEDEN) == sweden


def test_outer_scope_set_reaches_inside_aggr(shop: App) -> None:
    # §2.8: a set before the expression applies to every aggregation in its scope, Aggr's too.
    assert one(shop, "{<Year={2020}>} Sum(Aggr(Sum(Amount), Customer))") == 40
    assert one(shop, "{<Year={2021}>} Avg(Aggr(Sum(Amount), Customer))") == 35
    # An Aggr set with an identifier replaces the scope's for the virtual rows only.
    assert one(shop, "{<Year={2020}>} Count(Aggr({1} Sum(Amount), Customer))") == 2


def test_outer_set_around_aggr_per_chart_row(shop: App) -> None:
    # Chart by Country, which the Aggr lacks: the virtual rows reach it through the outer
    # set's records.
    rows = cube(
        shop,
        ["Country"],
        [
            "Sum({<Year={2020}>} Aggr(Sum(Amount), Customer))",
            "Sum(Aggr({<Year={2020}>} Sum(Amount), Customer))",
            "Sum(Aggr(Sum({<Year={2020}>} Amount), Customer))",
        ],
    )
    by_country = {r[0]: tuple(r[1:]) for r in rows.rows}
    assert by_country["Sweden"] == (30, 30, 10)
    assert by_country["Norway"] == (70, 70, 30)
    assert by_country["Denmark"] == (0, 0, 0)
    assert rows.totals == [100, 100, 40]
    # Chart by Customer, one of the Aggr's dimensions.
    rows = cube(shop, ["Customer"], ["Sum({<Year={2021}>} Aggr(Sum(Amount), Customer))"])
    assert dict(rows.rows) == {"Alice": 30, "Bob": 70, "Carol": 55, "Dave": 0, "Eve": 25}


def test_bare_aggr_under_an_outer_scope_set(shop: App) -> None:
    rows = cube(shop, ["Customer"], ["{<Year={2020}>} Aggr(Sum(Amount), Customer)"]).rows
    assert {k: v for k, v in rows if v is not None} == {"Alice": 10, "Bob": 30}


def test_total_with_fields_inside_an_aggregation(shop: App) -> None:
    # Per Year row, the orders that are the largest of their year (2020: 30; 2021: 50).
    largest = "Sum(If(Amount = Max(TOTAL <Year> Amount), Amount))"
    rows = cube(shop, ["Year", "Customer"], [largest]).rows
    assert [r[2] for r in rows] == [0, 30, 0, 0, 50, 0]
    # A listed field that is no dimension does not restrict: the largest of all, 50.
    assert dict(cube(shop, ["Customer"], [largest]).rows) == {
        "Alice": 0,
        "Bob": 0,
        "Carol": 50,
        "Dave": 0,
        "Eve": 0,
    }
    # By Country (another table than Amount's): the largest per country, NULL country too.
    rows = cube(shop, ["Country"], ["Sum(If(Amount = Max(TOTAL <Country> Amount), Amount))"])
    assert dict(rows.rows) == {"Denmark": 0, "Norway": 40, "Sweden": 50, None: 25}
    # The totals row has no dimension: TOTAL <Country> there is TOTAL alone.
    assert rows.totals == [50]
    # The doc table of §4 inside Aggr: each (Month, Group) row holds its month's total.
    app = App.from_tables(
        {"T": {"Month": [1, 1, 2, 2, 3, 3], "Group": ["A", "B"] * 3, "Value": [1, 2, 3, 4, 5, 6]}}
    )
    assert one(app, "Sum(Aggr(Sum(TOTAL <Month> Value), Month, Group))") == 3 + 3 + 7 + 7 + 11 + 11
    assert one(app, "Sum(Aggr(Sum(TOTAL Value), Month))") == 3 * 21
    assert one(app, "Avg(Aggr(Sum(TOTAL <Group> Value), Month, Group))") == (9 + 12) / 2


def test_total_with_fields_under_sets(shop: App) -> None:
    # The inner TOTAL <Year> reads its own set: 2021's largest is 50; 2020 has no 2021 record.
    rows = cube(
        shop, ["Year"], ["Sum(If(Amount = Max({<Year={2021}>} TOTAL <Year> Amount), Amount))"]
    )
    assert dict(rows.rows) == {2020: 0, 2021: 50}
    # Under a scope set, with a selection: Sweden's largest 2021 order is Carol's 50.
    scoped = "{<Year={2021}>} Sum(If(Amount = Max(TOTAL <Customer> Amount), Amount))"
    assert dict(cube(shop, ["Customer"], [scoped], SWEDEN).rows) == {"Alice": 20, "Carol": 50}


def test_sets_and_totals_around_aggr_misuse_errors(shop: App) -> None:
    msg = error_of(
        shop, "Sum(Aggr({<Year={2020}>} Sum(Amount), Customer) + Aggr(Sum(Amount), Customer))"
    )
    assert "same set expression at position 50" in msg
    msg = error_of(shop, "Sum(Aggr({<Year=={2020}>} Sum(Amount), Customer))")
    assert "position 16" in msg
    msg = error_of(shop, "Sum({<Yr={2020}>} Aggr(Sum(Amount), Customer))")
    assert "unknown field 'Yr'" in msg
    with pytest.raises(assoc.Error, match="TOTAL itself is not supported at position 22"):
        cube(shop, ["Year"], ["Sum(TOTAL If(Amount = Max(TOTAL <Year> Amount), Amount))"])
    with pytest.raises(assoc.Error, match="beside Aggr in Sum is not supported at position 30"):
        cube(shop, ["Year"], ["Sum(Aggr(Sum(Amount), Year) - Max(TOTAL <Year> Amount))"])
    with pytest.raises(assoc.Error, match="unknown field 'Yr' in TOTAL <…> at position 27"):
        cube(shop, ["Year"], ["Sum(If(Amount = Max(TOTAL <Yr> Amount), Amount))"])


def test_total_with_fields_of_an_unlinked_dimension_is_an_error() -> None:
    app = App.from_tables({"A": {"X": [1, 2], "V": [1, 2]}, "B": {"Y": [1, 2], "W": [3, 4]}})
    with pytest.raises(assoc.Error, match="'Y' is not linked to the records Sum reads at position"):
        cube(app, ["X", "Y"], ["Sum(If(V < Max(TOTAL <Y> W), V))"])


# ---------------------------------------------------------------------------------------------
# §5 ranks, rows and ranges: the table of the spec (no selection, dims Year, Customer)

SECTION5 = [
    "Sum(Amount)",
    "RowNo()",
    "RowNo(TOTAL)",
    "NoOfRows()",
    "Above(Sum(Amount))",
    "Above(TOTAL Sum(Amount))",
    "RangeSum(Above(Sum(Amount),0,RowNo()))",
    "Rank(Sum(Amount))",
    "Rank(TOTAL Sum(Amount))",
]


def test_section5_table(shop: App) -> None:
    rows = cube(shop, ["Year", "Customer"], SECTION5).rows
    assert rows == [
        (2020, "Alice", 10, 1, 1, 2, None, None, 10, 2, 6),
        (2020, "Bob", 30, 2, 2, 2, 10, 10, 40, 1, 3),
        (2021, "Alice", 20, 1, 3, 4, None, 30, 20, 4, 5),
        (2021, "Bob", 40, 2, 4, 4, 20, 20, 60, 2, 2),
        (2021, "Carol", 55, 3, 5, 4, 40, 40, 115, 1, 1),
        (2021, "Eve", 25, 4, 6, 4, 55, 55, 140, 3, 4),
    ]


def test_segments_follow_the_inter_field_sort_order(shop: App) -> None:
    """Sorted by Customer, then Year: a segment is the rows of one customer (every dimension
    but the last in sort order), whatever order the dimensions are given in."""
    measures = ["Sum(Amount)", "RowNo()", "NoOfRows()", "Above(Sum(Amount))", "RowNo(TOTAL)"]
    rows = cube(shop, ["Year", "Customer"], measures, sort=[("Customer", "asc")]).rows
    assert rows == [
        (2020, "Alice", 10, 1, 2, None, 1),
        (2021, "Alice", 20, 2, 2, 10, 2),
        (2020, "Bob", 30, 1, 2, None, 3),
        (2021, "Bob", 40, 2, 2, 30, 4),
        (2021, "Carol", 55, 1, 1, None, 5),
        (2021, "Eve", 25, 1, 1, None, 6),
    ]
    # Both named in the sort: its order decides (Year first: the spec's own table).
    both = cube(shop, ["Customer", "Year"], measures, sort=[("Year", "asc"), ("Customer", "asc")])
    assert [r[3:6] for r in both.rows] == [
        (1, 2, None), (2, 2, 10), (1, 4, None), (2, 4, 20), (3, 4, 40), (4, 4, 55)
    ]  # fmt: skip


def test_inter_record_functions_are_null_on_the_totals_row(shop: App) -> None:
    c = cube(shop, ["Customer"], ["RowNo()", "Above(Sum(Amount))", "Rank(Sum(Amount))"])
    assert c.totals == [None, None, None]


def test_below_top_bottom_and_column(shop: App) -> None:
    rows = cube(
        shop,
        ["Customer"],
        [
            "Sum(Amount)",
            "Below(Sum(Amount))",
            "Top(Sum(Amount))",
            "Bottom(Sum(Amount))",
            "Column(1) * 2",
        ],
    ).rows
    assert rows == [
        ("Alice", 30, 70, 30, 25, 60),
        ("Bob", 70, 55, 30, 25, 140),
        ("Carol", 55, 0, 30, 25, 110),
        ("Dave", 0, 25, 30, 25, 0),  # Dave has no orders: Sum 0
        ("Eve", 25, None, 30, 25, 50),
    ]


def test_range_sum_of_the_doc_example() -> None:
    # §5 doc example: Sum(MyField) = 10, 0, 8, 0, 0, 9 -> 10, 10, 18, 8, 8, 9.
    app = App.from_tables(
        {"T": {"K": [1, 2, 3, 4, 5, 6], "MyField": [10, "abc", 8, "def", "xyz", 9]}}
    )
    rows = cube(app, ["K"], ["RangeSum(Above(Sum(MyField), 0, 3))"]).rows
    assert [r[1] for r in rows] == [10, 10, 18, 8, 8, 9]


def test_row_no_doc_example() -> None:
    # §5 doc example: If(RowNo()=1, 0, UnitSales/Above(UnitSales)) -> 0, 2.25, 1.111… for 4, 9, 10.
    app = App.from_tables({"T": {"Customer": ["Astrida"] * 3, "UnitSales": [4, 9, 10]}})
    rows = cube(
        app, ["Customer", "UnitSales"], ["If(RowNo()=1, 0, UnitSales/Above(UnitSales))"]
    ).rows
    assert [r[2] for r in rows] == pytest.approx([0, 2.25, 10 / 9])


@pytest.mark.parametrize(
    ("values", "mode", "expected"),
    [
        ([50, 40, 40, 30], 0, [1, 2.5, 2.5, 4]),
        ([50, 40, 40, 30], 1, [1, 2, 2, 4]),
        ([50, 40, 40, 30], 2, [1, 2.5, 2.5, 4]),
        ([50, 40, 40, 30], 3, [1, 3, 3, 4]),
        ([50, 40, 40, 30], 4, [1, 2, 3, 4]),
        ([50, 50, 40, 30], 0, [1, 1, 3, 4]),
        ([50, 40, 30, 30], 0, [1, 2, 4, 4]),
    ],
)
def test_rank_modes(values: list[int], mode: int, expected: list[float]) -> None:
    app = App.from_tables({"T": {"K": [1, 2, 3, 4], "V": values}})
    rows = cube(app, ["K"], [f"Rank(Sum(V), {mode})"]).rows
    assert [r[1] for r in rows] == expected


def test_rank_text_formats() -> None:
    # The rank is a dual: tied rows show "low - high" (fmt 0), the low rank (fmt 1), or the
    # low rank on the first tied row only (fmt 2).
    app = App.from_tables({"T": {"K": [1, 2, 3, 4], "V": [50, 40, 40, 30]}})
    measures = [
        "Rank(Sum(V))",
        "Text(Rank(Sum(V)))",
        "Text(Rank(Sum(V), 0, 1))",
        "Text(Rank(Sum(V), 0, 2))",
    ]
    rows = cube(app, ["K"], measures).rows
    assert [r[1:] for r in rows] == [
        (1, "1", "1", "1"),
        (2.5, "2 - 3", "2", "2"),
        (2.5, "2 - 3", "2", ""),
        (4, "4", "4", "4"),
    ]


def test_range_functions_on_scalars(shop: App) -> None:
    assert one(shop, "RangeSum(1, 'a', Null(), 2)") == 3
    assert one(shop, "RangeAvg(1, 'a', 3)") == 2
    assert one(shop, "RangeMin(3, 'a', 1)") == 1
    assert one(shop, "RangeMax(3, 'a', 1)") == 3
    assert one(shop, "RangeCount(1, 'a', Null())") == 2
    assert one(shop, "RangeNullCount(1, Null(), Null())") == 2
    assert one(shop, "RangeNumericCount(1, 'a', 2)") == 2
    assert one(shop, "RangeTextCount(1, 'a', 2)") == 1
    assert one(shop, "RangeMissingCount(1, 'a', Null())") == 2
    assert one(shop, "RangeOnly(Null(), 'x', 'x')") == "x"
    assert one(shop, "RangeOnly(1, 2)") is None
    assert one(shop, "RangeMinString('b', 'a', 3)") == 3
    assert one(shop, "RangeMaxString('b', 'a', 3)") == "b"
    assert one(shop, "RangeMode(1, 2, 2)") == 2
    assert one(shop, "RangeSum(Null())") == 0


def test_inter_record_misuse_errors(shop: App) -> None:
    assert "inside an aggregation" in error_of(shop, "Sum(Above(Amount))")
    assert "inside a Range function" in error_of(shop, "Above(Sum(Amount), 0, 3)")
    assert "Column(n) names a measure column" in error_of(shop, "Column(2)")
    assert "mode of Rank" in error_of(shop, "Rank(Sum(Amount), 7)")
    with pytest.raises(assoc.Error, match="inter-record"):
        cube(shop, ["Customer"], ["Rank(Sum(Amount))"], sort=[("Rank(Sum(Amount))", "asc")])


def test_hrank_across_the_columns_of_a_pivot(shop: App) -> None:
    """§5: HRank is Rank across a pivot's columns (its top dimensions), per row."""
    measures = ["Sum(Amount)", "HRank(Sum(Amount))", "HRank(Sum(Amount), 1, 1)"]
    # Customer on the left, Year on top: each customer's years ranked against each other.
    rows = cube(shop, ["Customer", "Year"], measures, pivot_top=[1]).rows
    assert [r[3] for r in rows] == [2, 1, 2, 1, 1, 1]
    # Year on the left, Customer on top (the top dimension need not be the last given).
    rows = cube(shop, ["Customer", "Year"], measures, pivot_top=[0]).rows
    by_cell = {(r[0], r[1]): r[3] for r in rows}
    assert by_cell == {
        ("Alice", 2020): 2,
        ("Bob", 2020): 1,
        ("Alice", 2021): 4,
        ("Bob", 2021): 2,
        ("Carol", 2021): 1,
        ("Eve", 2021): 3,
    }
    # Two top dimensions: the row segment is the columns sharing the outer one; with TOTAL,
    # every column of the row.
    app = App.from_tables(
        {"T": {"R": ["x"] * 4, "A": [1, 1, 2, 2], "B": [1, 2, 1, 2], "V": [10, 40, 30, 20]}}
    )
    got = cube(app, ["R", "A", "B"], ["HRank(Sum(V))", "HRank(TOTAL Sum(V))"], pivot_top=[1, 2])
    assert [tuple(r[3:]) for r in got.rows] == [(2, 4), (1, 1), (1, 2), (2, 3)]
    # Ties and their text as Rank's; NULL on the totals row.
    tied = App.from_tables({"T": {"R": ["x"] * 3, "C": [1, 2, 3], "V": [5, 5, 1]}})
    got = cube(tied, ["R", "C"], ["HRank(Sum(V))"], pivot_top=[1])
    first, second, third = (r[2] for r in got.rows)
    assert (first.number, first.text, second.text, third) == (1, "1 - 2", "1 - 2", 3)
    assert got.totals == [None]


def test_hrank_outside_a_pivot_is_null(shop: App) -> None:
    rows = cube(shop, ["Customer", "Year"], ["HRank(Sum(Amount))"]).rows
    assert all(r[2] is None for r in rows)


def test_hrank_misuse_errors(shop: App) -> None:
    assert "mode of HRank is 0 to 4 at position 19" in error_of(shop, "HRank(Sum(Amount), 7)")
    assert "inter-record function (HRank) inside an aggregation" in error_of(
        shop, "Sum(HRank(Amount))"
    )
    with pytest.raises(assoc.Error, match="pivot_top: positions of the 2 dimensions"):
        cube(shop, ["Customer", "Year"], ["HRank(Sum(Amount))"], pivot_top=[2])


def number(v: Any) -> Any:
    """A cell's number (a dual rank's too), None for NULL."""
    return getattr(v, "number", v)


def test_pivot_column_segments(shop: App) -> None:
    """§5 in a pivot: the vertical functions read one column of the top dimensions (the rows
    sharing every left dimension but the last); the straight table reads each customer."""
    measures = [
        "Sum(Amount)",
        "Above(Sum(Amount))",
        "Below(Sum(Amount))",
        "Top(Sum(Amount))",
        "Bottom(Sum(Amount))",
        "RowNo()",
        "NoOfRows()",
        "Rank(Sum(Amount))",
        "RangeSum(Above(Sum(Amount), 0, 2))",
        "Column(1) + RowNo(TOTAL)",
    ]
    # Customer on the left, Year on top: the 2020 column holds Alice and Bob, 2021 four rows.
    rows = cube(shop, ["Customer", "Year"], measures, pivot_top=[1]).rows
    assert [tuple(number(v) for v in r) for r in rows] == [
        ("Alice", 2020, 10, None, 30, 10, 30, 1, 2, 2, 10, 11),
        ("Alice", 2021, 20, None, 40, 20, 25, 1, 4, 4, 20, 21),
        ("Bob", 2020, 30, 10, None, 10, 30, 2, 2, 1, 40, 32),
        ("Bob", 2021, 40, 20, 55, 20, 25, 2, 4, 2, 60, 42),
        ("Carol", 2021, 55, 40, 25, 20, 25, 3, 4, 1, 95, 58),
        ("Eve", 2021, 25, 55, None, 20, 25, 4, 4, 3, 80, 29),
    ]
    straight = cube(shop, ["Customer", "Year"], ["RowNo()", "Above(Sum(Amount))"]).rows
    assert [r[2:] for r in straight] == [
        (1, None),
        (2, 10),
        (1, None),
        (2, 30),
        (1, None),
        (1, None),
    ]


def test_pivot_row_segments(shop: App) -> None:
    """§5 across a pivot's columns: Before, After, First, Last, ColumnNo, NoOfColumns read the
    cells of a row (every left dimension, the top ones but the last); NULL outside a pivot."""
    measures = [
        "Before(Sum(Amount))",
        "After(Sum(Amount))",
        "First(Sum(Amount))",
        "Last(Sum(Amount))",
        "ColumnNo()",
        "NoOfColumns()",
        "RangeSum(Before(Sum(Amount), 0, 2))",
    ]
    rows = cube(shop, ["Customer", "Year"], measures, pivot_top=[1]).rows
    assert [r[2:] for r in rows] == [
        (None, 20, 10, 20, 1, 2, 10),
        (10, None, 10, 20, 2, 2, 30),
        (None, 40, 30, 40, 1, 2, 30),
        (30, None, 30, 40, 2, 2, 70),
        (None, None, 55, 55, 1, 1, 55),
        (None, None, 25, 25, 1, 1, 25),
    ]
    straight = cube(shop, ["Customer", "Year"], measures).rows
    assert all(r[2:8] == (None,) * 6 for r in straight)
    assert [r[8] for r in straight] == [0] * 6  # RangeSum of NULLs
    assert cube(shop, ["Customer", "Year"], ["ColumnNo()"], pivot_top=[1]).totals == [None]


def test_pivot_functions_misuse_errors(shop: App) -> None:
    assert "inside a Range function" in error_of(shop, "Before(Sum(Amount), 0, 3)")
    assert "inside an aggregation" in error_of(shop, "Sum(After(Amount))")
    assert "ColumnNo takes 0 arguments, not 1" in error_of(shop, "ColumnNo(1)")
    assert "the offset of Last must be a constant" in error_of(shop, "Last(Sum(Amount), Amount)")


def pivot_model(rng: random.Random) -> dict[str, dict[str, list[Any]]]:
    n = rng.randint(1, 25)
    return {
        "T": {
            "A": [rng.randint(1, 3) for _ in range(n)],
            "B": [rng.choice(["x", "y", "z"]) for _ in range(n)],
            "C": [rng.randint(1, 3) for _ in range(n)],
            "V": [rng.choice([None, rng.randint(-5, 30)]) for _ in range(n)],
        }
    }


PIVOT_MEASURES = [
    "Sum(V)",
    "Above(Sum(V))",
    "Below(TOTAL Sum(V))",
    "Top(Sum(V))",
    "Bottom(TOTAL Sum(V), 2)",
    "RowNo()",
    "RowNo(TOTAL)",
    "NoOfRows()",
    "Rank(Sum(V))",
    "RangeSum(Above(Sum(V), 0, 2))",
    "Before(Sum(V))",
    "After(TOTAL Sum(V))",
    "First(Sum(V))",
    "Last(TOTAL Sum(V))",
    "ColumnNo()",
    "ColumnNo(TOTAL)",
    "NoOfColumns()",
    "HRank(Sum(V))",
    "RangeSum(Before(Sum(V), 0, 2), Below(Sum(V)))",
]


def pivot_reference(
    model: dict[str, dict[str, list[Any]]],
    top: list[int] | None,
    directions: dict[int, int],
    sort_first: list[int],
) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """Each cell's PIVOT_MEASURES, scanned here: a segment's cells are listed and ordered as a
    pivot shows them (left dimensions outer first down a column, top ones outer first across
    a row, each dimension by its own direction); `top` None is a straight table (rows in the
    sort order, its dimensions first); `directions` 1 ascending, -1 descending."""
    t = model["T"]
    sums: dict[tuple[Any, ...], float] = {}
    for a, b, c, v in zip(t["A"], t["B"], t["C"], t["V"], strict=True):
        sums[(a, b, c)] = sums.get((a, b, c), 0.0) + (v or 0)
    cells = list(sums)

    def key(cell: tuple[Any, ...], dims: list[int]) -> tuple[Any, ...]:
        # B's texts sort by code point: descending by the negated rank of the value.
        out = []
        for d in dims:
            rank = sorted({x[d] for x in cells}).index(cell[d])
            out.append(directions.get(d, 1) * rank)
        return tuple(out)

    left = [d for d in range(3) if top is None or d not in top]
    tops = top or []

    def segment(cell: tuple[Any, ...], horizontal: bool, total: bool) -> tuple[list[Any], int]:
        along = tops if horizontal else left
        if top is None:  # a straight table: the display order, every dimension but the last
            along = sort_first + [d for d in range(3) if d not in sort_first]
            kept = [] if total else [0, 1]
        else:
            kept = (left if horizontal else tops) + ([] if total else along[:-1])
        members = [x for x in cells if all(x[d] == cell[d] for d in kept)]
        members.sort(key=lambda x: key(x, along))
        return members, members.index(cell)

    def at(members: list[Any], i: int) -> float | None:
        return sums[members[i]] if 0 <= i < len(members) else None

    out = {}
    for cell in cells:
        col, i = segment(cell, False, False)
        col_t, i_t = segment(cell, False, True)
        values = [sums[x] for x in col]
        row = [
            sums[cell],
            at(col, i - 1),
            at(col_t, i_t + 1),
            at(col, 0),
            at(col_t, len(col_t) - 2),
            i + 1,
            i_t + 1,
            len(col),
            rank(values, i, 0),
            sums[cell] + (at(col, i - 1) or 0),
        ]
        if top is None:
            row += [None] * 8 + [at(col, i + 1) or 0]
        else:
            line, j = segment(cell, True, False)
            line_t, j_t = segment(cell, True, True)
            row += [
                at(line, j - 1),
                at(line_t, j_t + 1),
                at(line, 0),
                at(line_t, len(line_t) - 1),
                j + 1,
                j_t + 1,
                len(line),
                rank([sums[x] for x in line], j, 0),
                sums[cell] + (at(line, j - 1) or 0) + (at(col, i + 1) or 0),
            ]
        out[cell] = tuple(row)
    return out


@pytest.mark.parametrize("seed", range(80))
def test_random_pivots_against_reference(seed: int) -> None:
    rng = random.Random(5000 + seed)
    model = pivot_model(rng)
    app = App.from_tables(model)
    dims = ["A", "B", "C"]
    top: list[int] | None = None
    if rng.random() < 0.8:
        top = rng.sample(range(3), rng.randint(0, 3))
    directions = {d: rng.choice([1, -1]) for d in range(3) if rng.random() < 0.4}
    # A pivot's segments follow its dimensions whatever the sort order between them; a
    # straight table's follow the sort order (kept here in the dimensions' order: a prefix).
    if top is not None:
        sort_first = [d for d in rng.sample(range(3), 3) if d in directions]
    else:
        sort_first = list(range(rng.randint(0, 3)))
        directions = {d: directions.get(d, 1) for d in sort_first}
    sort = [(dims[d], "asc" if directions[d] == 1 else "desc") for d in sort_first]
    expected = pivot_reference(model, top, directions, sort_first)
    got = cube(app, dims, PIVOT_MEASURES, pivot_top=top, sort=sort or None)
    cells = {tuple(r[:3]): tuple(number(v) for v in r[3:]) for r in got.rows}
    assert cells == expected, (top, sort)


# ---------------------------------------------------------------------------------------------
# Random models against a brute-force reference


def random_model(rng: random.Random) -> dict[str, dict[str, list[Any]]]:
    n_cust = rng.randint(2, 7)
    customers = [f"C{i}" for i in range(n_cust)]
    regions = ["R" + str(rng.randint(0, 2)) for _ in customers]
    n = rng.randint(1, 30)
    facts = {
        "Customer": [rng.choice([*customers, "X"]) for _ in range(n)],  # X: no Customers row
        "Month": [rng.randint(1, 6) for _ in range(n)],
        "Amount": [rng.choice([None, rng.randint(-5, 50)]) for _ in range(n)],
    }
    # Every customer of the Customers table has facts (no Dave-like value), so the possible
    # customers are those of the possible facts.
    used = sorted({c for c in facts["Customer"] if c != "X"})
    table = {"Customer": used, "Region": [regions[customers.index(c)] for c in used]}
    return {"Facts": facts, "Customers": table}


def reference(
    model: dict[str, dict[str, list[Any]]], select: dict[str, list[Any]]
) -> dict[str, Any]:
    f, c = model["Facts"], model["Customers"]
    region_of = dict(zip(c["Customer"], c["Region"], strict=True))
    rows = []
    for cust, month, amount in zip(f["Customer"], f["Month"], f["Amount"], strict=True):
        if "Month" in select and month not in select["Month"]:
            continue
        if "Region" in select and region_of.get(cust) not in select["Region"]:
            continue
        rows.append((cust, month, amount, region_of.get(cust)))

    def total(rs: list[tuple[Any, ...]]) -> float:
        return float(sum(r[2] for r in rs if r[2] is not None))

    # Aggr(Sum(Amount), Customer): one virtual row per possible customer (with a value).
    virtual = {cust: total([r for r in rows if r[0] == cust]) for cust in {r[0] for r in rows}}
    by_region: dict[Any, list[float]] = {}
    for cust, v in virtual.items():
        by_region.setdefault(region_of.get(cust), []).append(v)
    out: dict[str, Any] = {
        "avg_aggr_by_region": {k: sum(v) / len(v) for k, v in by_region.items() if k is not None},
        "avg_aggr_total": sum(virtual.values()) / len(virtual) if virtual else None,
        "max_aggr": max(virtual.values()) if virtual else None,
    }
    # By Month, sorted: running sum of 3, Below(…, 2), ranks (mode 0 and 3), row numbers.
    months = sorted({r[1] for r in rows})
    sums = [total([r for r in rows if r[1] == m]) for m in months]
    n = len(sums)
    out["by_month"] = [
        (
            m,
            sums[i],
            sum(sums[max(0, i - 2) : i + 1]),
            sums[i + 2] if i + 2 < n else None,
            rank(sums, i, 0),
            rank(sums, i, 3),
            i + 1,
        )
        for i, m in enumerate(months)
    ]
    # By Region, Month: Above per region segment (NULL region last), RowNo and RowNo(TOTAL).
    pairs = sorted({(r[3], r[1]) for r in rows}, key=lambda p: (p[0] is None, p[0] or "", p[1]))
    psums = [total([r for r in rows if (r[3], r[1]) == p]) for p in pairs]
    two = []
    for i, p in enumerate(pairs):
        first = i
        while first > 0 and pairs[first - 1][0] == p[0]:
            first -= 1
        two.append(
            (p[0], p[1], psums[i], psums[i - 1] if i > first else None, i - first + 1, i + 1)
        )
    out["by_region_month"] = two
    return out


def rank(values: list[float], i: int, mode: int) -> float:
    """Rank of values[i] among values, highest first, ties by the spec's modes 0 and 3."""
    n = len(values)
    higher = sum(1 for v in values if v > values[i])
    tied = sum(1 for v in values if v == values[i])
    low, high = higher + 1, higher + tied
    if mode == 3:
        return float(high)
    middle = (n + 1) / 2
    if high <= middle:
        return float(low)
    if low >= middle:
        return float(high)
    return (low + high) / 2


def random_case(rng: random.Random) -> tuple[dict[str, Any], App, dict[str, list[Any]]]:
    """A random model, its app, and random selections of Month and Region."""
    model = random_model(rng)
    app = App.from_tables(model)
    select: dict[str, list[Any]] = {}
    if rng.random() < 0.5:
        months = sorted(set(model["Facts"]["Month"]))
        select["Month"] = rng.sample(months, rng.randint(1, len(months)))
    regions = sorted(set(model["Customers"]["Region"]))
    if regions and rng.random() < 0.4:
        select["Region"] = rng.sample(regions, rng.randint(1, len(regions)))
    return model, app, select


@pytest.mark.parametrize("seed", range(60))
def test_random_models_against_reference(seed: int) -> None:
    rng = random.Random(seed)
    model, app, select = random_case(rng)
    ref = reference(model, select)
    with app.session() as s:
        for field, values in select.items():
            s.select(field, values)
        got = s.hypercube(["Region"], ["Avg(Aggr(Sum(Amount), Customer))"])
        region_rows = {r[0]: r[1] for r in got.rows if r[0] is not None}
        expected = ref["avg_aggr_by_region"]
        assert set(region_rows) >= set(expected)
        for k, v in expected.items():
            assert math.isclose(region_rows[k], v)
        assert close(got.totals[0], ref["avg_aggr_total"])
        [[mx]] = s.hypercube([], ["Max(Aggr(Sum(Amount), Customer))"]).rows
        assert close(mx, ref["max_aggr"])
        month = s.hypercube(
            ["Month"],
            [
                "Sum(Amount)",
                "RangeSum(Above(Sum(Amount), 0, 3))",
                "Below(Sum(Amount), 2)",
                "Rank(Sum(Amount))",
                "Rank(Sum(Amount), 3)",
                "RowNo()",
            ],
        ).rows
        assert [tuple(r) for r in month] == ref["by_month"]
        two = s.hypercube(
            ["Region", "Month"], ["Sum(Amount)", "Above(Sum(Amount))", "RowNo()", "RowNo(TOTAL)"]
        ).rows
        assert [tuple(r) for r in two] == ref["by_region_month"]


# Sets around Aggr and TOTAL <fields> inside an aggregation, on the same random models: a
# set is an identifier ("" for $, or "1") and modifiers (field -> values, or None to clear).
RandomSet = tuple[str, dict[str, list[Any] | None]]


def random_set(rng: random.Random, model: dict[str, dict[str, list[Any]]]) -> RandomSet | None:
    if rng.random() < 0.3:
        return None
    ident = rng.choice(["", "1"])
    mods: dict[str, list[Any] | None] = {}
    for field, values in (
        ("Month", sorted(set(model["Facts"]["Month"]))),
        ("Region", sorted(set(model["Customers"]["Region"]))),
    ):
        roll = rng.random()
        if values and roll < 0.4:
            mods[field] = rng.sample(values, rng.randint(1, len(values)))
        elif roll < 0.5:
            mods[field] = None
    if not ident and not mods:
        ident = "1"
    return ident, mods


def render_set(s: RandomSet | None) -> str:
    if s is None:
        return ""
    ident, mods = s
    parts = []
    for field, values in mods.items():
        if values is None:
            parts.append(f"{field}=")
        else:
            texts = ", ".join(repr(v) if isinstance(v, str) else str(v) for v in values)
            parts.append(f"{field}={{{texts}}}")
    return "{" + ident + (f"<{', '.join(parts)}>" if parts else "") + "} "


class SetReference:
    """Facts rows under a selection or a set, scanned row by row."""

    def __init__(self, model: dict[str, dict[str, list[Any]]], select: dict[str, list[Any]]):
        f, c = model["Facts"], model["Customers"]
        self.region_of = dict(zip(c["Customer"], c["Region"], strict=True))
        self.facts = list(zip(f["Customer"], f["Month"], f["Amount"], strict=True))
        self.select = select

    def rows(self, s: RandomSet | None) -> list[tuple[Any, Any, Any]]:
        sel = dict(self.select)
        if s is not None:
            ident, mods = s
            if ident == "1":
                sel = {}
            for field, values in mods.items():
                if values is None:
                    sel.pop(field, None)
                else:
                    sel[field] = values
        out = []
        for cust, month, amount in self.facts:
            if "Month" in sel and month not in sel["Month"]:
                continue
            if "Region" in sel and self.region_of.get(cust) not in sel["Region"]:
                continue
            out.append((cust, month, amount))
        return out

    def customers(self, s: RandomSet | None) -> set[Any]:
        return {r[0] for r in self.rows(s)}


def fold(func: str, values: list[float]) -> float | None:
    if func == "Sum":
        return float(sum(values))
    if func == "Count":
        return float(len(values))
    if not values:
        return None
    return sum(values) / len(values) if func == "Avg" else max(values)


def numbers(rows: list[tuple[Any, Any, Any]]) -> list[float]:
    return [r[2] for r in rows if r[2] is not None]


@pytest.mark.parametrize("seed", range(60))
def test_random_sets_around_aggr_against_reference(seed: int) -> None:
    rng = random.Random(1000 + seed)
    model, app, select = random_case(rng)
    ref = SetReference(model, select)
    func = rng.choice(["Sum", "Avg", "Count", "Max"])
    s_out, s_aggr, s_in = (random_set(rng, model) for _ in range(3))
    inside = f"Aggr({render_set(s_aggr)}Sum({render_set(s_in)}Amount), Customer)"
    measure = f"{func}({render_set(s_out)}{inside})"
    # The virtual rows: the customers of the Aggr's set, else those of the selection and of
    # the inner set; the outer set keeps those its records reach and links them to regions.
    inner = ref.rows(s_in)
    if s_aggr is not None:
        virtual = ref.customers(s_aggr)
    else:
        virtual = ref.customers(None) | {r[0] for r in inner}
    if s_out is not None:
        virtual &= ref.customers(s_out)
    value = {c: float(sum(numbers([r for r in inner if r[0] == c]))) for c in virtual}
    linked = ref.customers(s_out)
    # TOTAL <…> inside an aggregation, by Region and Month, with its own set.
    s_total = random_set(rng, model)
    largest = f"Sum(If(Amount = Max({render_set(s_total)}TOTAL <Region> Amount), Amount))"
    above = "Sum(If(Amount >= Avg(TOTAL <Month> Amount), Amount))"
    state = ref.rows(None)
    total_rows = ref.rows(s_total)

    def largest_of(rows: list[tuple[Any, Any, Any]], region: Any, by_region: bool) -> float:
        pool = [r for r in total_rows if not by_region or ref.region_of.get(r[0]) == region]
        top = max(numbers(pool), default=None)
        return float(sum(a for a in numbers(rows) if a == top))

    def above_of(rows: list[tuple[Any, Any, Any]], month: Any, by_month: bool) -> float:
        pool = numbers([r for r in state if not by_month or r[1] == month])
        mean = sum(pool) / len(pool) if pool else None
        return float(sum(a for a in numbers(rows) if mean is not None and a >= mean))

    with app.session() as s:
        for field, values in select.items():
            s.select(field, values)
        got = s.hypercube(["Region"], [measure])
        for region, v in got.rows:
            if region is None:
                continue
            members = [value[c] for c in virtual if ref.region_of.get(c) == region and c in linked]
            assert close(v, fold(func, members)), (measure, region)
        assert close(got.totals[0], fold(func, list(value.values()))), measure
        two = s.hypercube(["Region", "Month"], [largest, above])
        for region, month, v_largest, v_above in two.rows:
            rows = [r for r in state if ref.region_of.get(r[0]) == region and r[1] == month]
            assert v_largest == largest_of(rows, region, True), (largest, region, month)
            assert v_above == above_of(rows, month, True), (above, region, month)
        assert two.totals == [largest_of(state, None, False), above_of(state, None, False)]
        # Inside Aggr, TOTAL <Region> groups the virtual rows by their region.
        pairs = {(r[0], ref.region_of[r[0]]) for r in state if ref.region_of.get(r[0]) is not None}
        region_sums = [
            sum(numbers([r for r in state if ref.region_of.get(r[0]) == g])) for _, g in pairs
        ]
        [[avg]] = s.hypercube([], ["Avg(Aggr(Sum(TOTAL <Region> Amount), Customer, Region))"]).rows
        assert close(avg, sum(region_sums) / len(region_sums) if pairs else None)


def close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b)


@pytest.mark.parametrize("seed", range(8))
def test_aggr_distinct_places_a_virtual_row_in_its_first_chart_row(seed: int) -> None:
    """A customer whose orders lie in several regions counts once, in the first region by
    value (NULL last); NODISTINCT counts it in each. Checked against a count made here."""
    rng = random.Random(seed)
    n = 400
    customers = [rng.randrange(40) for _ in range(n)]
    regions = [rng.choice(["North", "South", "East", None]) for _ in range(n)]
    amounts = [rng.randrange(1, 50) for _ in range(n)]
    app = App.from_tables({"Orders": {"Customer": customers, "Region": regions, "Amount": amounts}})
    total: dict[int, int] = {}
    seen_in: dict[int, set[str | None]] = {}
    for c, r, a in zip(customers, regions, amounts, strict=True):
        total[c] = total.get(c, 0) + a
        seen_in.setdefault(c, set()).add(r)
    first: dict[str | None, int] = {}
    each: dict[str | None, int] = {}
    for c, rs in seen_in.items():
        named = sorted(r for r in rs if r is not None)
        home = named[0] if named else None
        first[home] = first.get(home, 0) + total[c]
        for r in rs:
            each[r] = each.get(r, 0) + total[c]
    with app.session() as s:
        got = s.hypercube(
            ["Region"],
            ["Sum(Aggr(Sum(Amount), Customer))", "Sum(Aggr(NODISTINCT Sum(Amount), Customer))"],
        )
        distinct = {r[0]: r[1] for r in got.rows}
        nodistinct = {r[0]: r[2] for r in got.rows}
    assert {k: v for k, v in distinct.items() if v} == {k: v for k, v in first.items() if v}
    assert nodistinct == each


# ---------------------------------------------------------------------------------------------
# Aggr over one dimension of a plain aggregation, read as is by the outer aggregation: computed
# per symbol of the dimension (docs/hypercubes.md). A customer in two regions, NULL customers
# and regions, a customer without orders (D has no Customers row, E no orders).

LINKED = {
    "Orders": {
        "Customer": ["A", "A", "B", "C", "D", None],
        "Month": [1, 2, 1, 2, 1, 2],
        "Amount": [10, 20, 30, 40, 50, 60],
    },
    "Customers": {
        "Customer": ["A", "A", "B", "C", None, "E"],
        "Region": ["North", "South", "North", None, "East", "West"],
    },
}


@pytest.fixture(scope="module")
def linked() -> App:
    return App.from_tables(LINKED)


def by_first(c: Any) -> dict[Any, Any]:
    return {r[0]: r[1:] if len(r) > 2 else r[1] for r in c.rows}


def test_dense_aggr_counts_a_customer_of_two_regions_in_the_first(linked: App) -> None:
    c = cube(
        linked,
        ["Region"],
        [
            "Sum(Aggr(Sum(Amount), Customer))",
            "Sum(Aggr(NODISTINCT Sum(Amount), Customer))",
            "Count(Aggr(Sum(Amount), Customer))",
            "Avg(Aggr(Sum(Amount), Customer))",
        ],
    )
    # A (30) in North and South: North only, both with NODISTINCT; C (40) has a NULL region;
    # D (50) links to no region; E (0, no orders) is West's; the NULL customer's 60 is nowhere.
    assert by_first(c) == {
        "East": (0, 0, 0, None),
        "North": (60, 60, 2, 30),
        "South": (0, 30, 0, None),
        "West": (0, 0, 1, 0),
        None: (40, 40, 1, 40),
    }
    assert c.totals == [150, 150, 5, 30]


def test_dense_aggr_under_selections(linked: App) -> None:
    # North leaves customers A and B (and their orders).
    c = cube(linked, ["Region"], ["Sum(Aggr(Sum(Amount), Customer))"], {"Region": ["North"]})
    assert c.rows == [("North", 60)]
    assert c.totals == [60]
    # Month 2 leaves A (20) and C (40): A still in North first, C in the NULL region.
    c = cube(linked, ["Region"], ["Sum(Aggr(Sum(Amount), Customer))"], {"Month": [2]})
    assert by_first(c) == {"North": 20, "South": 0, None: 40}
    assert c.totals == [60]
    c = cube(linked, ["Region"], ["Max(Aggr(Sum(Amount), Customer))"], {"Customer": ["B", "D"]})
    assert by_first(c) == {"North": 30}
    assert c.totals == [50]


def test_dense_aggr_by_its_own_dimension_and_bare(linked: App) -> None:
    measures = ["Aggr(Sum(Amount), Customer)", "Min(Aggr(Avg(Amount), Customer))"]
    c = cube(linked, ["Customer"], measures)
    assert by_first(c) == {
        "A": (30, 15),
        "B": (30, 30),
        "C": (40, 40),
        "D": (50, 50),
        "E": (0, None),
    }
    assert c.totals == [None, 15]
    c = cube(linked, ["Customer", "Region"], ["Sum(Aggr(Count(Amount), Customer))"])
    assert [tuple(r) for r in c.rows] == [
        ("A", "North", 2),
        ("A", "South", 0),
        ("B", "North", 1),
        ("C", None, 1),
        ("E", "West", 0),
        (None, "East", 0),
    ]


def test_outer_set_around_a_dense_shape(linked: App) -> None:
    # Month 1's orders keep A, B and D and link A to both regions through its records.
    c = cube(linked, ["Region"], ["Sum({<Month={1}>} Aggr(Sum(Amount), Customer))"])
    assert by_first(c) == {"East": 0, "North": 60, "South": 0, "West": 0, None: 0}
    assert c.totals == [110]
    # The Aggr's set makes the virtual rows (A, C); the Sum inside does not inherit it.
    c = cube(linked, ["Region"], ["Sum(Aggr({<Month={2}>} Sum(Amount), Customer))"])
    assert by_first(c) == {"East": 0, "North": 30, "South": 0, "West": 0, None: 40}
    assert c.totals == [70]


def test_aggr_by_two_dimensions_beside_the_dense_shape(linked: App) -> None:
    c = cube(linked, ["Region"], ["Count(Aggr(Sum(Amount), Customer, Month))"])
    assert by_first(c) == {"East": 0, "North": 3, "South": 0, "West": 0, None: 1}
    assert c.totals == [5]


def dense_model(rng: random.Random, one_table: bool) -> dict[str, dict[str, list[Any]]]:
    customers = [f"C{i}" for i in range(rng.randint(1, 6))]
    n = rng.randint(1, 25)
    orders = {
        "Customer": [rng.choice([*customers, "X", None]) for _ in range(n)],
        "Month": [rng.randint(1, 4) for _ in range(n)],
        "Amount": [rng.choice([None, rng.randint(-5, 50)]) for _ in range(n)],
    }
    regions = ["R1", "R2", "R3", None]
    if one_table:
        orders["Region"] = [rng.choice(regions) for _ in range(n)]
        return {"Orders": orders}
    rows = [c for c in customers for _ in range(rng.randint(0, 2))] + [None] * rng.randint(0, 1)
    table = {"Customer": rows, "Region": [rng.choice(regions) for _ in rows]}
    return {"Orders": orders, "Customers": table}


@pytest.mark.parametrize("seed", range(30))
def test_dense_aggr_agrees_with_the_nested_cube(seed: int) -> None:
    """The per-symbol computation against the same Aggr read through an expression (x * 1),
    which takes the nested cube, on random models: a customer in several regions or none, NULL
    customers and regions, random selections."""
    rng = random.Random(7000 + seed)
    one_table = seed % 3 == 0
    model = dense_model(rng, one_table)
    app = App.from_tables(model)
    select: dict[str, list[Any]] = {}
    if rng.random() < 0.4:
        select["Month"] = rng.sample([1, 2, 3, 4], rng.randint(1, 3))
    if rng.random() < 0.3:
        select["Region"] = rng.sample(["R1", "R2", "R3"], rng.randint(1, 2))
    dims = rng.choice(
        [["Region"], ["Customer"], [], ["Customer", "Region"], ["Month"], ["Region", "Month"]]
    )
    pairs = [
        (outer, inner, word)
        for outer in ["Sum", "Avg", "Count", "Min", "Max", "Only"]
        for inner in ["Sum", "Count", "Avg", "Min", "Max"]
        for word in ["", "NODISTINCT "]
    ]
    picked = rng.sample(pairs, 6)
    fast = [f"{o}(Aggr({w}{i}(Amount), Customer))" for o, i, w in picked]
    slow = [f"{o}(Aggr({w}{i}(Amount), Customer) * 1)" for o, i, w in picked]
    fast.append("Aggr(Sum(Amount), Customer)")
    slow.append("Aggr(Sum(Amount), Customer) * 1")
    with app.session() as s:
        for field, values in select.items():
            s.select(field, values)
        try:
            got = s.hypercube(dims, fast)
        except assoc.Error:
            return  # a selection of no value
        want = s.hypercube(dims, slow)
    assert [r[: len(dims)] for r in got.rows] == [r[: len(dims)] for r in want.rows]
    for g, w in zip(got.rows, want.rows, strict=True):
        for m, (a, b) in enumerate(zip(g[len(dims) :], w[len(dims) :], strict=True)):
            assert close(a, b), (fast[m], g, w)
    for m, (a, b) in enumerate(zip(got.totals, want.totals, strict=True)):
        assert close(a, b), (fast[m], got.totals, want.totals)
