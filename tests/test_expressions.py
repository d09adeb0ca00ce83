"""Chart expressions in hypercube measures (spec chart-expressions §1, §3, §4 TOTAL, §6, §9).

The random tests compare the engine with a brute-force reference written here from the spec:
rows of a small star model under a selection, each aggregation's records found by scanning,
values as (number, text) pairs. It shares no code with the engine.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from typing import Any

import pytest

import assoc
from assoc import App, Dual
from shop import SHOP

# ---------------------------------------------------------------------------------------------
# The Shop app of the spec (§0).


@pytest.fixture(scope="module")
def shop() -> App:
    return App.from_tables(SHOP)


def one(app: App, measure: str, select: dict[str, list[Any]] | None = None) -> Any:
    """A measure over everything possible (no dimensions)."""
    with app.session() as s:
        for field, values in (select or {}).items():
            s.select(field, values)
        [row] = s.hypercube([], [measure]).rows
        return row[0]


def by(app: App, dims: list[str], measures: list[str], **kw: Any) -> list[tuple[Any, ...]]:
    with app.session() as s:
        return s.hypercube(dims, measures, **kw).rows


SWEDEN = {"Country": ["Sweden"]}


def test_shop_aggregations_of_section_3(shop: App) -> None:
    assert one(shop, "Sum(Amount)") == 180
    assert one(shop, "Sum(DISTINCT Year)") == 4041
    assert one(shop, "Count(Year)") == 7
    assert one(shop, "Count(DISTINCT Year)") == 2
    assert one(shop, "Avg(Amount)") == pytest.approx(25.714285714)
    assert one(shop, "Avg(Amount)", SWEDEN) == pytest.approx(21.25)
    assert one(shop, "MaxString(Product)") == "Washer"
    assert one(shop, "MinString(Product)") == "Bolt"
    assert one(shop, "Mode(Year)") == 2021
    assert one(shop, "Mode(Product)", SWEDEN) is None  # Bolt 2, Nut 2
    assert one(shop, "Median(Amount)") == 25
    assert one(shop, "Fractile(Amount, 0.9)") == pytest.approx(44)
    assert one(shop, "Fractile(Amount, 0.25)") == pytest.approx(15)
    assert one(shop, "Concat(Product, ',', OrderID)", SWEDEN) == "Bolt,Nut,Bolt,Nut"
    assert one(shop, "Count(*)") == 7
    assert one(shop, "NullCount(Amount)") == 0
    assert one(shop, "NumericCount(Product)") == 0
    assert one(shop, "TextCount(Product)") == 7
    assert one(shop, "MissingCount(Product)") == 7
    assert one(shop, "Max(Amount, 2)") == 40
    assert one(shop, "Min(Amount, 3)") == 20
    assert one(shop, "Max(Amount, 8)") is None
    assert one(shop, "FirstSortedValue(Customer, -Amount)") == "Carol"
    assert one(shop, "FirstSortedValue(Customer, -Amount, 2)") == "Bob"
    # Two orders share the lowest year (2020): NULL.
    assert one(shop, "FirstSortedValue(Product, Year)") is None
    assert by(shop, ["Customer"], ["Only(Year)"]) == [
        ("Alice", None),
        ("Bob", None),
        ("Carol", 2021),
        ("Dave", None),  # in Customers, no order
        ("Eve", 2021),
    ]
    assert by(shop, ["Country"], ["Concat(DISTINCT Product, '|')"]) == [
        ("Denmark", None),
        ("Norway", "Bolt|Washer"),
        ("Sweden", "Bolt|Nut"),
        (None, "Nut"),
    ]


def test_stdev_and_var_are_the_sample_ones(shop: App) -> None:
    amounts = SHOP["Orders"]["Amount"]
    mean = sum(amounts) / len(amounts)
    var = sum((a - mean) ** 2 for a in amounts) / (len(amounts) - 1)
    assert one(shop, "Var(Amount)") == pytest.approx(var)
    assert one(shop, "Stdev(Amount)") == pytest.approx(math.sqrt(var))
    assert one(shop, "Stdev(Amount)", {"Customer": ["Eve"]}) is None  # one value


def test_first_sorted_value_ties_and_distinct() -> None:
    # The doc's Divadip: two AA orders of 16 -> NULL, DISTINCT removes the duplicate pair.
    app = App.from_tables(
        {
            "T": {
                "Customer": ["D", "D", "D"],
                "Product": ["AA", "AA", "DD"],
                "UnitSales": [16, 16, 10],
            }
        }
    )
    assert one(app, "FirstSortedValue(Product, -UnitSales)") is None
    assert one(app, "FirstSortedValue(DISTINCT Product, -UnitSales)") == "AA"


def test_concat_orders_by_weight_text_or_load_order() -> None:
    app = App.from_tables(
        {"T": {"Team": ["Gamma", "Gamma", "Alpha", "Delta", "Beta"], "W": [5, 4, 1, 3, 2]}}
    )
    assert one(app, "Concat(Team)") == "AlphaBetaDeltaGammaGamma"
    assert one(app, "Concat(DISTINCT Team, '-')") == "Alpha-Beta-Delta-Gamma"
    assert one(app, "Concat(Team, '', 0)") == "GammaGammaAlphaDeltaBeta"
    assert one(app, "Concat(Team, ',', W)") == "Alpha,Beta,Delta,Gamma,Gamma"


def test_shop_total_of_section_4(shop: App) -> None:
    rows = by(
        shop,
        ["Year", "Customer"],
        [
            "Sum(Amount)",
            "Sum(TOTAL Amount)",
            "Sum(TOTAL <Year> Amount)",
            "Sum(Amount)/Sum(TOTAL <Year> Amount)",
        ],
    )
    assert [r[:5] for r in rows] == [
        (2020, "Alice", 10, 180, 40),
        (2020, "Bob", 30, 180, 40),
        (2021, "Alice", 20, 180, 140),
        (2021, "Bob", 40, 180, 140),
        (2021, "Carol", 55, 180, 140),
        (2021, "Eve", 25, 180, 140),
    ]
    assert [round(r[5], 3) for r in rows] == [0.25, 0.75, 0.143, 0.286, 0.393, 0.179]
    # A field listed in TOTAL <…> that is no dimension of the chart does not restrict.
    assert by(shop, ["Customer"], ["Sum(TOTAL <Year> Amount)"])[0] == ("Alice", 180)


def test_total_inside_an_aggregation_is_computed_once_for_the_chart(shop: App) -> None:
    # §1.4's legal example: the latest year over all the data, then the sum of its orders.
    assert one(shop, "Sum(If(Year = Max(TOTAL Year), Amount))") == 140
    # Per chart row, the inner TOTAL still reads every record of the selection.
    rows = by(shop, ["Customer"], ["Sum(If(Amount > Avg(TOTAL Amount), Amount))"])
    average = sum(SHOP["Orders"]["Amount"]) / len(SHOP["Orders"]["Amount"])
    above: dict[str, int] = {}
    for customer, amount in zip(SHOP["Orders"]["Customer"], SHOP["Orders"]["Amount"], strict=True):
        if amount > average:
            above[customer] = above.get(customer, 0) + amount
    assert {r[0]: r[1] for r in rows if r[1]} == above
    # Under a selection, TOTAL is over the possible records (Sweden: Alice, Carol).
    assert one(shop, "Sum(If(Year = Min(TOTAL Year), Amount))", SWEDEN) == 10
    # With its own set, inside Aggr, and in a text comparison.
    assert one(shop, "Sum(If(Year = Max({1} TOTAL Year), Amount))", SWEDEN) == 75
    assert one(shop, "Sum(Aggr(Sum(If(Year = Max(TOTAL Year), Amount)), Customer))") == 140
    assert one(shop, "Count(If(Product = MaxString(TOTAL Product), OrderID))") == 1
    # TOTAL <fields> naming no dimension of the chart is TOTAL alone (§4).
    assert one(shop, "Sum(If(Year = Max(TOTAL <Customer> Year), Amount))") == 140
    # Under an outer set, the inner TOTAL reads that set's records (2020: 10 and 30, mean 20).
    assert one(shop, "{<Year={2020}>} Sum(If(Amount > Avg(TOTAL Amount), Amount))") == 30
    assert one(shop, "{<Year={2020}>} Sum(If(Amount > Avg(TOTAL Amount), Amount))", SWEDEN) == 0


def test_total_doc_table_month_by_group() -> None:
    app = App.from_tables(
        {"T": {"Month": [1, 1, 2, 2, 3, 3], "Group": ["A", "B"] * 3, "Value": [1, 2, 3, 4, 5, 6]}}
    )
    rows = by(app, ["Month", "Group"], ["Sum(TOTAL <Month> Value)", "Sum(TOTAL <Group> Value)"])
    assert [r[2] for r in rows] == [3, 3, 7, 7, 11, 11]
    assert [r[3] for r in rows] == [9, 12] * 3
    with app.session() as s:
        s.select("Month", [1, 2])
        cube = s.hypercube(["Month", "Group"], ["Sum(Value)", "Sum(TOTAL Value)"])
        assert [r[3] for r in cube.rows] == [10] * 4
        assert cube.totals == [10, 10]


def test_grand_totals_reevaluate_the_measure(shop: App) -> None:
    """§9: the totals row is the measure with no dimensions, not a sum of the rows."""
    with shop.session() as s:
        cube = s.hypercube(
            ["Country"],
            [
                "Sum(Amount)",
                "Avg(Amount)",
                "Count(DISTINCT Product)",
                "Sum(Amount)/Sum(TOTAL Amount)",
                "Only(Country)",
                "Median(Amount)",
            ],
        )
        totals = cube.totals
        assert totals[0] == 180
        assert totals[1] == pytest.approx(25.714285714)  # all 7 orders, not the mean of rows
        assert totals[2] == 3  # not 2 + 2 + 1
        assert totals[3] == 1
        assert totals[4] is None
        assert totals[5] == 25


def test_field_outside_aggregation_is_only(shop: App) -> None:
    """§1.3: a bare field reads as Only(field) for the row."""
    rows = by(shop, ["Customer"], ["Year", "Year + 1", "Product & '!'"])
    assert rows == [
        ("Alice", None, None, "!"),
        ("Bob", None, None, "!"),
        ("Carol", 2021, 2022, "!"),
        ("Dave", None, None, "!"),
        ("Eve", 2021, 2022, "Nut!"),
    ]


def test_aggregation_of_an_expression_per_record(shop: App) -> None:
    """§1.4: Sum(If(Year=2021, Amount)), Count(If(...)) evaluated per record of Orders."""
    rows = by(
        shop,
        ["Customer"],
        [
            "Sum(If(Year = 2021, Amount))",
            "Count(If(Amount > 20, OrderID))",
            "Sum(Amount * 2) / Count(Amount)",
        ],
    )
    assert rows == [
        ("Alice", 20, 0, 30),
        ("Bob", 40, 2, 70),
        ("Carol", 55, 1, 55),
        ("Dave", 0, 0, None),
        ("Eve", 25, 1, 50),
    ]
    assert one(shop, "Concat(DISTINCT Upper(Left(Product, 1)))") == "BNW"


def test_scalars_and_operators_of_section_6(shop: App) -> None:
    cases: dict[str, Any] = {
        "'a' & 1+2": "a3",
        "not 1=2": -1,
        "1 = 1 and 2 > 1": -1,
        "1 = 2 or 0": 0,
        "1 xor 1": 0,
        "'abcd' like 'a?c*'": -1,
        "'ABCD' like 'a*'": -1,
        "' 1' precedes ' 2'": -1,
        "'1 ' precedes ' 2'": 0,
        "'1 ' < ' 2'": -1,
        "'b' > 'a'": -1,
        "2 < '10'": -1,
        "'abc' & Null()": "abc",
        "1 + Null()": None,
        "0 * Null()": None,
        "1 / 0": None,
        "Null() = Null()": None,
        "1 <> Null()": -1,
        "1 = Null()": 0,
        "If(Null(), 1, 2)": 2,
        "If(1, Null(), 2)": None,
        "If(0, 1)": None,
        "IsNull(Null())": -1,
        "IsNum(Null())": 0,
        "IsNum('12')": -1,
        "IsText('ab')": -1,
        "Alt('x', Null(), 3, 4)": 3,
        "Alt('x', 'y')": "y",
        "Match('b', 'a', 'b')": 2,
        "Match('B', 'a', 'b')": 0,
        "MixMatch('B', 'a', 'b')": 2,
        "WildMatch('Bolt', 'n*', 'b?lt')": 2,
        "Pick(2, 'a', 'b', 'c')": "b",
        "Pick(4, 'a', 'b', 'c')": None,
        "Class(23, 10)": Dual(20, "20 <= x < 30"),
        "Class(23, 10, 'v', 5)": Dual(15, "15 <= v < 25"),
        "Dual('one', 1) + 1": 2,
        "Text(12) & ''": "12",
        "Num(1234.5, '#,##0.00')": Dual(1234.5, "1,234.50"),
        "Num(0.25, '0%')": Dual(0.25, "25%"),
        "Num#('1,234.5', '#,##0.0')": Dual(1234.5, "1,234.5"),
        "Round(2.5)": 3,
        "Round(-2.5)": -2,
        "Round(1234, 100)": 1200,
        "Floor(3.7)": 3,
        "Ceil(3.2)": 4,
        "Floor(17, 5, 1)": 16,
        "Mod(-4, 3)": 2,
        "Mod(7.5, 2)": None,
        "Mod(4, -3)": None,
        "Fmod(7.5, 2)": 1.5,
        "Div(7, 2)": 3,
        "Div(-7, 2)": -3,
        "Sign(-3)": -1,
        "Fabs(-3)": 3,
        "Abs(-3)": 3,
        "Sqrt(16)": 4,
        "Sqrt(-1)": None,
        "Log(-5)": None,
        "Log10(1000)": 3,
        "Exp(0)": 1,
        "Pow(2, 10)": 1024,
        "Len('héllo')": 5,
        "Upper('abc')": "ABC",
        "Lower('ABC')": "abc",
        "Left('abcdef', 2)": "ab",
        "Right('abcdef', 2)": "ef",
        "Mid('abcdef', 2, 3)": "bcd",
        "Mid('abcdef', 4)": "def",
        "Index('abcabc', 'b')": 2,
        "Index('abcabc', 'b', 2)": 5,
        "Index('abcabc', 'b', -1)": 5,
        "Index('abc', 'x')": 0,
        "Trim('  a b  ')": "a b",
        "LTrim('  a ')": "a ",
        "RTrim('  a ')": "  a",
        "Replace('abcabc', 'b', 'XY')": "aXYcaXYc",
        "SubStringCount('abcabc', 'bc')": 2,
        "Repeat('ab', 3)": "ababab",
        "Chr(65)": "A",
        "Ord('A')": 65,
        "Coalesce(Null(), Null(), 'z')": "z",
        "Year(42005)": 2015,
        "Month(42005)": Dual(1, "Jan"),
        "Day(42036)": 1,
        "Date(42005)": Dual(42005, "1/1/2015"),
        "Date(42005, 'YYYY-MM-DD')": Dual(42005, "2015-01-01"),
        "Date#('2/1/2015')": Dual(42036, "2/1/2015"),
        "Date#('2015-02-30', 'YYYY-MM-DD') + 0": None,
        "Sum(Amount) / 2 // comments are allowed\n": 90,
        "/* block */ -Sum(Amount)": -180,
        "- - 3": 3,
        "2 * 3 + 4 * 5": 26,
        "(2 + 3) * 4": 20,
        "10 - 4 - 3": 3,
        "1e3 / 10": 100,
    }
    with shop.session() as s:
        measures = list(cases)
        [row] = s.hypercube([], measures).rows
    for text, got in zip(measures, row, strict=True):
        want = cases[text]
        if isinstance(want, Dual):
            assert isinstance(got, Dual), text
            assert (got.number, got.text) == (want.number, want.text), text
        elif isinstance(want, float) and not want.is_integer():
            assert got == pytest.approx(want), text
        else:
            assert got == want, text


def test_text_measures_keep_their_texts_and_sort_suppression(shop: App) -> None:
    with shop.session() as s:
        cube = s.hypercube(
            ["Country"], ["If(Sum(Amount) > 50, 'big', 'small')", "Sum(Amount)"], suppress_zero=True
        )
        # Denmark: Sum 0 but a text measure: the row stays.
        assert cube.rows == [
            ("Denmark", "small", 0),
            ("Norway", "big", 70),
            ("Sweden", "big", 85),
            (None, "small", 25),
        ]
        assert math.isnan(cube.array(0 + 1)[0])  # a pure text has no number
        assert cube.totals == ["big", 180]


ERRORS = {
    "Sum(Amount": "expected '\\)', found the end at position 10",
    "Sum(Amount) +": "expected a value, found the end at position 13",
    "'abc": "unclosed ' at position 0",
    "Sum(Amount, 2)": "Sum takes 1 argument, not 2 at position 0",
    "Mid('a')": "Mid takes 2 to 3 arguments, not 1 at position 0",
    "Foo(1)": "unknown function 'Foo' at position 0",
    "ValueLoop(1, 3)": "function 'ValueLoop' is not yet supported at position 0",
    "HRank(Sum(Amount), 1, 5)": "the format of HRank is 0 to 2 at position 22",
    "Sum(Sum(Amount))": "inside another aggregation \\(Sum\\) needs Aggr.* at position 4",
    "Sum({<Yer={2021}>} Amount)": "unknown field 'Yer' in the set expression at position 6",
    "{<Year={2021}} Sum(Amount)": "expected '>' to close the set modifier at position 13",
    "Sum({<Year={2021}> Amount)": "unclosed '{' at position 4",
    "Sum(Nope * 2)": "unknown field 'Nope' at position 4",
    "Sum(Amount * Country)": "more than one table",
    "Sum(TOTAL <Nope> Amount)": "unknown field 'Nope' in TOTAL <…> at position 11",
    "Fractile(Amount, Amount)": "argument 2 of Fractile must be a constant at position 17",
    "Max(DISTINCT Amount)": "'distinct' is not allowed in Max at position 4",
    "Sum(Customer)": "key field 'Customer' at position 4",
    "Sum(Aggr(Sum(Amount)))": "Aggr needs an expression and at least one dimension at position 4",
    "Count(NODISTINCT Amount)": "NODISTINCT belongs to Aggr",
    "1 2": "unexpected '2' at position 2",
    "Sum(Amount) /* open": "unclosed comment at position 12",
}


@pytest.mark.parametrize(("text", "message"), list(ERRORS.items()))
def test_errors_name_the_position_and_the_problem(shop: App, text: str, message: str) -> None:
    with shop.session() as s, pytest.raises(assoc.Error, match=message):
        s.hypercube(["Country"], [text])


def test_key_field_values_allow_distinct_aggregations(shop: App) -> None:
    assert one(shop, "Count(DISTINCT Customer)") == 5
    assert one(shop, "MaxString(Customer)") == "Eve"
    assert one(shop, "Concat(DISTINCT Customer, ',')") == "Alice,Bob,Carol,Dave,Eve"


LIMIT = 256


@pytest.mark.parametrize(
    ("make", "ok"),
    [
        (lambda n: "(" * n + "1" + ")" * n, LIMIT - 1),
        (lambda n: "-" * n + "1", LIMIT - 1),
        (lambda n: "not " * n + "1", LIMIT - 1),
        (lambda n: "Fabs(" * n + "1" + ")" * n, LIMIT - 1),
        (lambda n: "+".join(["1"] * (n + 1)), LIMIT - 1),
    ],
)
def test_depth_limit(shop: App, make: Callable[[int], str], ok: int) -> None:
    """Nesting up to the limit evaluates; beyond it is a clear error, at any depth."""
    with shop.session() as s:
        s.hypercube([], [make(ok)])
        for n in (LIMIT + 1, 100_000):
            with pytest.raises(assoc.Error, match=f"nested deeper than {LIMIT} levels"):
                s.hypercube([], [make(n)])


def test_evaluation_problems_give_null_never_a_crash(shop: App) -> None:
    measures = [
        "Sum(Amount) / 0",
        "Log(Sum(Amount) - 180)",
        "Repeat('x', 1e12)",
        "Chr(-1)",
        "Mid('abc', -5, 2)",
        "Date#('nonsense') + 1",
        "Pow(10, 400)",
        "Fractile(Amount, 2)",
        "Mod(1e300, 7)",
    ]
    with shop.session() as s:
        [row] = s.hypercube([], measures).rows
    assert row[:-1] == (None,) * (len(measures) - 1)


# ---------------------------------------------------------------------------------------------
# The reference: a brute-force evaluator written from the spec.

Val = tuple[float | None, str | None]  # (numeric part, text); (None, None) is NULL
NULL: Val = (None, None)
NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def num(v: float) -> Val:
    return (None, None) if math.isnan(v) or math.isinf(v) else (float(v), None)


def shown(v: Val) -> str:
    if v[1] is not None:
        return v[1]
    if v[0] is None:
        return ""
    return str(int(v[0])) if v[0].is_integer() else repr(v[0])


def numeric(v: Val) -> float | None:
    if v[0] is not None:
        return v[0]
    if v[1] is not None and NUMBER.match(v[1].strip(" ")):
        return float(v[1].strip(" "))
    return None


def true(v: Val) -> bool:
    x = numeric(v)
    return x is not None and x != 0


def boolean(b: bool) -> Val:
    return (-1.0 if b else 0.0, None)


def same(a: Val, b: Val) -> bool:
    if a[0] is not None or b[0] is not None:
        return a[0] is not None and b[0] is not None and a[0] == b[0]
    return a[1] == b[1]


def binop(op: str, a: Val, b: Val) -> Val:
    if op in "+-*/":
        x, y = numeric(a), numeric(b)
        if x is None or y is None:
            return NULL
        if op == "/":
            return NULL if y == 0 else num(x / y)
        return num(x + y if op == "+" else x - y if op == "-" else x * y)
    if op == "&":
        return NULL if a == NULL and b == NULL else (None, shown(a) + shown(b))
    if op == "and":
        return boolean(true(a) and true(b))
    if op == "or":
        return boolean(true(a) or true(b))
    if a == NULL or b == NULL:
        return NULL if a == b else boolean(op == "<>")
    x, y = numeric(a), numeric(b)
    if x is not None and y is not None:
        c = (x > y) - (x < y)
    else:
        c = (shown(a) > shown(b)) - (shown(a) < shown(b))
    return boolean(
        {"=": c == 0, "<>": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]
    )


def call(name: str, args: list[Val]) -> Val:
    if name == "If":
        return args[1] if true(args[0]) else args[2] if len(args) > 2 else NULL
    if name == "Alt":
        return next((a for a in args[:-1] if numeric(a) is not None), args[-1])
    if name == "IsNull":
        return boolean(args[0] == NULL)
    if name == "Coalesce":
        return next((a for a in args if a != NULL), NULL)
    if any(a == NULL for a in args):
        return NULL
    if name == "Len":
        return num(len(shown(args[0])))
    if name == "Upper":
        return (None, shown(args[0]).upper())
    x = numeric(args[0])
    if x is None:
        return NULL
    if name == "Fabs":
        return num(abs(x))
    if name == "Round":
        step = numeric(args[1]) if len(args) > 1 else 1.0
        return NULL if step is None else num(math.floor(x / step + 0.5) * step)
    if name == "Mod":
        y = numeric(args[1])
        if y is None or not x.is_integer() or not y.is_integer() or y <= 0:
            return NULL
        return num(x - y * math.floor(x / y))
    raise AssertionError(name)


def distinct_values(values: list[Val]) -> list[Val]:
    out: list[Val] = []
    for v in values:
        if v != NULL and not any(same(v, o) for o in out):
            out.append(v)
    return out


def fractile(values: list[Val], f: float) -> Val:
    xs = sorted(v[0] for v in values if v[0] is not None)
    if not xs:
        return NULL
    r = f * (len(xs) - 1)
    lo = math.floor(r)
    hi = min(lo + 1, len(xs) - 1)
    return num(xs[lo] + (r - lo) * (xs[hi] - xs[lo]))


def aggregate(
    fn: str, distinct: bool, values: list[Val], weights: list[Val], params: list[Any]
) -> Val:
    if distinct and fn not in ("Concat", "FirstSortedValue"):
        values = distinct_values(values)
    nums = [v[0] for v in values if v[0] is not None]
    if fn == "Sum":
        return num(sum(nums))
    if fn == "Count":
        return num(sum(1 for v in values if v != NULL))
    if fn in ("Avg", "Min", "Max", "Stdev", "Var"):
        if fn == "Avg":
            return num(sum(nums) / len(nums)) if nums else NULL
        if fn in ("Min", "Max"):
            return num(min(nums) if fn == "Min" else max(nums)) if nums else NULL
        if len(nums) < 2:
            return NULL
        m = sum(nums) / len(nums)
        var = sum((x - m) ** 2 for x in nums) / (len(nums) - 1)
        return num(var if fn == "Var" else math.sqrt(var))
    if fn == "Only":
        d = distinct_values(values)
        return d[0] if len(d) == 1 else NULL
    if fn in ("MinString", "MaxString"):
        d = [v for v in values if v != NULL]
        if not d:
            return NULL
        key = [(0, v[0], "") if v[0] is not None else (1, 0.0, v[1]) for v in d]
        pick = min if fn == "MinString" else max
        return d[key.index(pick(key))]
    if fn == "Mode":
        d = distinct_values(values)
        counts = [sum(1 for v in values if v != NULL and same(v, k)) for k in d]
        if not d or counts.count(max(counts)) > 1:
            return NULL
        return d[counts.index(max(counts))]
    if fn == "Median":
        return fractile(values, 0.5)
    if fn == "Fractile":
        return fractile(values, params[0])
    if fn == "NullCount":
        return num(sum(1 for v in values if v == NULL))
    if fn == "NumericCount":
        return num(sum(1 for v in values if v[0] is not None))
    if fn == "TextCount":
        return num(sum(1 for v in values if v != NULL and v[0] is None))
    if fn == "MissingCount":
        return num(sum(1 for v in values if v[0] is None))
    if fn == "Concat":
        idx = [i for i, v in enumerate(values) if v != NULL]
        if not idx:
            return NULL
        if weights:
            big = float("inf")
            idx.sort(key=lambda i: weights[i][0] if weights[i][0] is not None else big)
        else:
            idx.sort(key=lambda i: shown(values[i]))
        texts = [shown(values[i]) for i in idx]
        if distinct:
            texts = list(dict.fromkeys(texts))
        return (None, params[0].join(texts))
    if fn == "FirstSortedValue":
        pairs = [
            (w[0], v)
            for v, w in zip(values, weights, strict=True)
            if w[0] is not None and v != NULL
        ]
        if distinct:
            kept: list[tuple[float, Val]] = []
            for w, v in pairs:
                if not any(w == w2 and same(v, v2) for w2, v2 in kept):
                    kept.append((w, v))
            pairs = kept
        if not pairs:
            return NULL
        lowest = min(w for w, _ in pairs)
        tied = [v for w, v in pairs if w == lowest]
        return tied[0] if len(tied) == 1 else NULL
    raise AssertionError(fn)


def empty(fn: str) -> Val:
    zero = ("Sum", "Count", "NullCount", "NumericCount", "TextCount", "MissingCount")
    return num(0) if fn in zero else NULL


# A random star: Facts(K, A, B, C) -> Dims(K, D).

Record = dict[str, Val]


def cell(v: Any) -> Val:
    if v is None:
        return NULL
    if isinstance(v, Dual):
        return (float(v.number), v.text)
    if isinstance(v, str):
        return (None, v)
    return (float(v), None)


def random_model(rng: random.Random) -> dict[str, dict[str, list[Any]]]:
    n = rng.randint(4, 14)
    a_pool: list[Any] = [None, 0, 1, 2, 3, 5, -4, 7, 2.5]
    b_pool: list[Any] = [None, "p", "q", "r", "Ab", Dual(5, "s"), Dual(2, "t")]
    facts = {
        "K": [rng.choice([None, 1, 2, 3, 4]) for _ in range(n)],
        "A": [rng.choice(a_pool) for _ in range(n)],
        "B": [rng.choice(b_pool) for _ in range(n)],
        "C": [rng.randint(-3, 9) for _ in range(n)],
    }
    dims = {"K": [1, 2, 3], "D": [rng.choice(["x", "y", None]) for _ in range(3)]}
    return {"Facts": facts, "Dims": dims}


def possible_facts(
    model: dict[str, dict[str, list[Any]]], field: str, chosen: list[Any]
) -> list[Record]:
    """The fact records possible under a selection of `chosen` in `field`, each with its D."""
    facts, dims = model["Facts"], model["Dims"]
    n = len(facts["K"])
    d_of = dict(zip(dims["K"], dims["D"], strict=True))
    rows = []
    for i in range(n):
        rec = {f: cell(facts[f][i]) for f in facts}
        k = facts["K"][i]
        rec["D"] = cell(d_of[k]) if k in d_of else NULL
        if field in facts:
            ok = any(same(rec[field], cell(c)) for c in chosen)
        else:  # a selection in the dimension table reaches facts through K
            ok = k in d_of and any(same(cell(d_of[k]), cell(c)) for c in chosen)
        if ok:
            rows.append(rec)
    return rows


# Expressions as trees: ("agg", fn, distinct, total, arg, extra), ("op", op, l, r),
# ("call", name, args), ("field", F), ("const", Val).

REC_FIELDS = ["A", "B", "C"]
AGGS = [
    "Sum", "Count", "Avg", "Min", "Max", "Only", "MinString", "MaxString", "Mode", "Median",
    "Fractile", "Stdev", "Var", "NullCount", "MissingCount", "NumericCount", "TextCount",
    "Concat", "FirstSortedValue",
]  # fmt: skip
DISTINCT_OK = {"Sum", "Count", "Avg", "Fractile", "Stdev", "Var", "Concat", "FirstSortedValue"}


def gen_record(rng: random.Random, depth: int) -> Any:
    if depth <= 0 or rng.random() < 0.35:
        if rng.random() < 0.8:
            return ("field", rng.choice(REC_FIELDS))
        return ("const", rng.choice([num(2), num(0), (None, "z"), NULL]))
    kind = rng.random()
    if kind < 0.5:
        op = rng.choice(["+", "-", "*", "/", "&", "=", "<", ">=", "<>", "and", "or"])
        return ("op", op, gen_record(rng, depth - 1), gen_record(rng, depth - 1))
    name = rng.choice(["If", "Alt", "IsNull", "Len", "Upper", "Fabs", "Round", "Mod", "Coalesce"])
    arity = {"If": 3, "Alt": 2, "Coalesce": 2, "Round": 2, "Mod": 2}.get(name, 1)
    args = [gen_record(rng, depth - 1) for _ in range(arity)]
    if name == "Round":
        args[1] = ("const", num(rng.choice([1, 0.5, 2])))
    if name == "Mod":
        args[1] = ("const", num(rng.choice([3, 2, -1])))
    return ("call", name, args)


def gen_agg(rng: random.Random) -> Any:
    fn = rng.choice(AGGS)
    distinct = fn in DISTINCT_OK and rng.random() < 0.3
    total = rng.choice([None, None, None, (), ("D",)])
    arg = gen_record(rng, rng.randint(0, 2))
    extra: Any = None
    if fn == "Fractile":
        extra = rng.choice([0.25, 0.5, 0.9])
    elif fn == "Concat":
        extra = (rng.choice(["-", ""]), ("field", "C") if rng.random() < 0.5 else None)
    elif fn == "FirstSortedValue":
        extra = gen_record(rng, 1)
    return ("agg", fn, distinct, total, arg, extra)


def gen_measure(rng: random.Random, depth: int) -> Any:
    if depth <= 0 or rng.random() < 0.4:
        return gen_agg(rng) if rng.random() < 0.85 else ("const", num(rng.choice([1, 3])))
    if rng.random() < 0.7:
        op = rng.choice(["+", "-", "*", "/", "&", "<", "=", "and"])
        return ("op", op, gen_measure(rng, depth - 1), gen_measure(rng, depth - 1))
    name = rng.choice(["If", "Alt", "Round", "IsNull", "Fabs"])
    arity = {"If": 3, "Alt": 2, "Round": 1}.get(name, 1)
    return ("call", name, [gen_measure(rng, depth - 1) for _ in range(arity)])


def const_text(v: Val) -> str:
    if v == NULL:
        return "Null()"
    if v[0] is None:
        return "'" + (v[1] or "").replace("'", "''") + "'"
    return shown(v)


def render(e: Any) -> str:
    kind = e[0]
    if kind == "field":
        return e[1]
    if kind == "const":
        return const_text(e[1])
    if kind == "op":
        return f"({render(e[2])} {e[1]} {render(e[3])})"
    if kind == "call":
        return f"{e[1]}(" + ", ".join(render(a) for a in e[2]) + ")"
    _, fn, distinct, total, arg, extra = e
    head = ("DISTINCT " if distinct else "") + (
        "" if total is None else "TOTAL " + (f"<{', '.join(total)}> " if total else "")
    )
    args = [render(arg)]
    if fn == "Fractile":
        args.append(str(extra))
    elif fn == "Concat":
        args.append(const_text((None, extra[0])))
        if extra[1] is not None:
            args.append(render(extra[1]))
    elif fn == "FirstSortedValue":
        args.append(render(extra))
    return f"{fn}({head}{', '.join(args)})"


def eval_record(e: Any, rec: Record) -> Val:
    kind = e[0]
    if kind == "field":
        return rec[e[1]]
    if kind == "const":
        return e[1]
    if kind == "op":
        return binop(e[1], eval_record(e[2], rec), eval_record(e[3], rec))
    return call(e[1], [eval_record(a, rec) for a in e[2]])


def eval_measure(e: Any, records: list[Record], row: dict[str, Val] | None) -> Val:
    """The measure on a row (`row` the dimension values; None for the totals row)."""
    kind = e[0]
    if kind == "const":
        return e[1]
    if kind == "op":
        return binop(e[1], eval_measure(e[2], records, row), eval_measure(e[3], records, row))
    if kind == "call":
        return call(e[1], [eval_measure(a, records, row) for a in e[2]])
    _, fn, distinct, total, arg, extra = e
    if row is None or total == ():
        scope = records
    else:
        keep = row if total is None else {d: v for d, v in row.items() if d in total}
        scope = [r for r in records if all(r[d] == v for d, v in keep.items())]
    if not scope:
        return empty(fn)
    values = [eval_record(arg, r) for r in scope]
    weights: list[Val] = []
    params: list[Any] = []
    if fn == "Fractile":
        params = [extra]
    elif fn == "Concat":
        params = [extra[0]]
        if extra[1] is not None:
            weights = [eval_record(extra[1], r) for r in scope]
    elif fn == "FirstSortedValue":
        weights = [eval_record(extra, r) for r in scope]
    return aggregate(fn, distinct, values, weights, params)


def engine_val(v: Any) -> Val:
    if v is None:
        return NULL
    if isinstance(v, Dual):
        return (float(v.number), v.text)
    if isinstance(v, str):
        return (None, v)
    return (float(v), None)


def close(a: Val, b: Val) -> bool:
    if a[1] != b[1] or (a[0] is None) != (b[0] is None):
        return False
    return a[0] is None or b[0] is None or math.isclose(a[0], b[0], rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.parametrize("seed", range(200))
def test_random_expressions_match_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    model = random_model(rng)
    app = App.from_tables(model)
    field = rng.choice(["D", "B", "C"])
    values = [
        v for v in (model["Dims"]["D"] if field == "D" else model["Facts"][field]) if v is not None
    ]
    chosen = rng.sample(values, k=min(len(values), rng.randint(1, 2))) if values else []
    records = (
        possible_facts(model, field, chosen)
        if chosen
        else possible_facts(model, "C", list(range(-3, 10)))
    )
    dims = rng.choice([["D"], ["D", "B"], []])
    measures = [gen_measure(rng, rng.randint(0, 3)) for _ in range(4)]
    texts = [render(m) for m in measures]
    with app.session() as s:
        if chosen:
            s.select(field, chosen)
        cube = s.hypercube(dims, ["Count(C)", *texts])
        reference_rows = s.hypercube(dims, ["Count(C)"]).rows
        rows, totals = cube.rows, cube.totals
    # Rows come from the grouped Count(C): no measure adds or drops one.
    assert [r[: len(dims) + 1] for r in rows] == reference_rows
    for row in rows:
        at = {d: engine_val(v) for d, v in zip(dims, row, strict=False)}
        for m, text, got in zip(measures, texts, row[len(dims) + 1 :], strict=True):
            want = eval_measure(m, records, at)
            assert close(engine_val(got), want), (text, at, got, want)
    for m, text, got in zip(measures, texts, totals[1:], strict=True):
        want = eval_measure(m, records, None)
        assert close(engine_val(got), want), (text, "totals", got, want)


def test_reference_sees_every_function_and_aggregation() -> None:
    """The random grammar reaches every aggregation, modifier and record-level function."""
    rng = random.Random(0)
    seen: set[str] = set()
    for _ in range(400):
        seen |= set(re.findall(r"([A-Za-z]+)\(", render(gen_measure(rng, 3))))
        text = render(gen_agg(rng))
        seen |= {w for w in ("DISTINCT", "TOTAL <D>", "TOTAL ") if w in text}
    assert set(AGGS) <= seen
    assert {"If", "Alt", "IsNull", "Len", "Upper", "Fabs", "Round", "Mod", "Coalesce"} <= seen
    assert {"DISTINCT", "TOTAL <D>", "TOTAL "} <= seen
