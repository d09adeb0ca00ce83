"""Dollar-sign expansion in chart expressions (spec chart-expressions §8, §2.6): the spec's
examples on its Shop app, parameters, nesting, and the limits that stop runaway expansions."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import assoc
from assoc.expansion import MAX_DEPTH, MAX_SIZE, MAX_STEPS, Expander, expand

SHOP = """
Orders: LOAD * INLINE [
OrderID, Customer, Year, Product, Amount
1, Alice, 2020, Bolt, 10
2, Alice, 2021, Nut, 20
3, Bob, 2020, Bolt, 30
4, Bob, 2021, Washer, 40
5, Carol, 2021, Bolt, 50
6, Carol, 2021, Nut, 5
7, Eve, 2021, Nut, 25
];
Customers: LOAD * INLINE [
Customer, Country
Alice, Sweden
Bob, Norway
Carol, Sweden
Dave, Denmark
];
"""


@pytest.fixture(scope="module")
def shop() -> assoc.App:
    return assoc.App.from_script(SHOP)


@pytest.fixture
def s(shop: assoc.App) -> Iterator[assoc.Session]:
    with shop.session() as session:
        yield session


def _one(s: assoc.Session, measure: str, **kw: object) -> object:
    return s.hypercube([], [measure], **kw).totals[0]  # type: ignore[arg-type]


# ---- the spec's examples ---------------------------------------------------------------------


def test_spec_2_6_set_with_dollar_max_year_under_selection_a(s: assoc.Session) -> None:
    s.select("Country", ["Sweden"])
    assert _one(s, "Sum({<Year={$(=Max(Year))}>} Amount)") == 75
    # $(=Max({1} Year)) ignores the selection: still 2021 here.
    assert _one(s, "Sum({<Year={$(=Max({1} Year))}>} Amount)") == 75


def test_spec_8_variable_is_per_row_but_dollar_equals_is_once(s: assoc.Session) -> None:
    s.variables = {"vMin": "Min(Year)"}
    cube = s.hypercube(["Customer"], ["$(vMin)", "$(=Min(Year))"])
    rows = {r[0]: r[1:] for r in cube.rows}
    assert rows["Alice"] == (2020, 2020)
    assert rows["Bob"] == (2020, 2020)
    assert rows["Carol"] == (2021, 2020)
    assert rows["Eve"] == (2021, 2020)
    # The columns keep the names as given; sorting names them so too.
    assert cube.columns == ["Customer", "$(vMin)", "$(=Min(Year))"]
    ordered = s.hypercube(["Customer"], ["$(vMin)"], sort=[("$(vMin)", "desc")])
    assert [r[0] for r in ordered.rows][:2] == ["Carol", "Eve"]
    assert list(ordered.array("$(vMin)")[:2]) == [2021, 2021]


def test_spec_8_parameters(s: assoc.Session) -> None:
    s.variables = {"vS": "Sum({<Year={$1}>} Amount)", "vMul": "$1*$2", "vN": "$0", "vKeep": "$3"}
    assert _one(s, "$(vS(2020))") == 40
    assert _one(s, "$(vMul(3,7))") == 21
    assert _one(s, "$(vMul(3, 7, 100))") == 21  # extra actuals are ignored
    assert s.expand("$(vN(a,b,c))") == "3"
    assert s.expand("$(vKeep(1))") == "$3"  # no third actual: left as written
    assert s.expand("$(vMul('a,b', 2))") == "'a,b'*2"  # a comma inside quotes stays


def test_spec_8_calculated_variable_is_its_value(s: assoc.Session) -> None:
    s.variables = {"vMaxYear": "=Max(Year)", "vShare": "=Sum(Amount)/4"}
    assert s.expand("$(vMaxYear)") == "2021"
    assert _one(s, "Sum({<Year={$(vMaxYear)}>} Amount)") == 140
    s.select("Country", ["Sweden"])
    assert _one(s, "Sum({<Year={$(vMaxYear)}>} Amount)") == 75
    assert s.expand("$(vShare)") == "21.25"  # 85 / 4
    assert s.expand("$(#vShare)") == "21.25"


def test_dollar_equals_uses_the_objects_state(s: assoc.Session) -> None:
    s.add_state("B")
    s.select("Year", [2020], state="B")
    assert s.expand("$(=Max(Year))") == "2021"
    assert s.expand("$(=Max(Year))", state="B") == "2020"
    assert _one(s, "Sum({<Year={$(=Max(Year))}>} Amount)", state="B") == 40


def test_nested_expansions_and_variables_that_expand_others(s: assoc.Session) -> None:
    s.variables = {"i": "1", "v1": "Sum($(f))", "f": "Amount"}
    assert _one(s, "$(v$(i))") == 180
    assert s.expand("$(v$(i))") == "Sum(Amount)"


def test_unknown_variable_expands_to_nothing(s: assoc.Session) -> None:
    assert s.expand("Sum(Amount)$(nope)") == "Sum(Amount)"
    assert _one(s, "Sum(Amount)$(nope)") == 180
    assert s.expand("$(Nope)x", variables={"nope": "1"}) == "x"  # names are case-sensitive


def test_variables_argument_overrides_the_sessions(s: assoc.Session) -> None:
    s.variables = {"v": "Sum(Amount)"}
    assert _one(s, "$(v)") == 180
    assert _one(s, "$(v)", variables={"v": "Count(Amount)"}) == 7
    assert s.evaluate("=$(v) / 2") == 90
    with pytest.raises(assoc.Error, match="variables must be a mapping"):
        s.hypercube([], ["$(v)"], variables=["v"])  # type: ignore[arg-type]


def test_dimension_may_be_a_variable(s: assoc.Session) -> None:
    cube = s.hypercube(["$(vDim)"], ["Sum(Amount)"], variables={"vDim": "Country"})
    assert cube.columns == ["$(vDim)", "Sum(Amount)"]
    assert {r[0]: r[1] for r in cube.rows} == {
        "Sweden": 85,
        "Norway": 70,
        "Denmark": 0,
        None: 25,
    }


# ---- edges and limits -------------------------------------------------------------------


def test_self_reference_is_an_error_not_a_loop(s: assoc.Session) -> None:
    with pytest.raises(assoc.Error, match=f"nested deeper than {MAX_DEPTH} levels"):
        s.hypercube([], ["$(v)"], variables={"v": "Sum(Amount) + $(v)"})
    with pytest.raises(assoc.Error, match="nested deeper"):
        s.expand("$(a)", variables={"a": "$(b)", "b": "=$(a)"})


def test_depth_limit_is_exact() -> None:
    chain = {f"v{i}": f"$(v{i + 1})" for i in range(MAX_DEPTH)}
    chain[f"v{MAX_DEPTH}"] = "end"
    with pytest.raises(assoc.Error, match="nested deeper"):
        expand("$(v0)", chain, lambda e: None)
    # Half as deep (each level is a `$(` and the variable's text) fits.
    chain[f"v{MAX_DEPTH // 2 - 1}"] = "end"
    assert expand("$(v0)", chain, lambda e: None) == "end"


def test_output_and_step_limits() -> None:
    doubling = {f"v{i}": f"$(v{i - 1})$(v{i - 1})" for i in range(1, 40)}
    doubling["v0"] = "x" * 1000
    with pytest.raises(assoc.Error, match=f"longer than {MAX_SIZE} characters"):
        expand("$(v39)", doubling, lambda e: None)
    doubling["v0"] = ""  # nothing to paste, but 2^39 expansions to make
    with pytest.raises(assoc.Error, match=f"more than {MAX_STEPS} dollar expansions"):
        expand("$(v39)", doubling, lambda e: None)


def test_unterminated_and_bad_inner_expression_errors(s: assoc.Session) -> None:
    with pytest.raises(assoc.Error, match=r"unterminated \$\( at position 4"):
        s.hypercube([], ["Sum($(v"])
    with pytest.raises(assoc.Error, match=r"in \$\(=Sum\(Yr\)\): .*unknown field 'Yr'"):
        s.hypercube([], ["Sum({<Year={$(=Sum(Yr))}>} Amount)"])
    # A `)` inside a quoted text does not close the expansion.
    assert s.expand("$(=Only({<Customer={'Eve'}>} Customer) & ')')") == "Eve)"


def test_each_distinct_dollar_equals_is_evaluated_once() -> None:
    calls: list[str] = []

    def evaluate(expression: str) -> object:
        calls.append(expression)
        return 2021.0

    expander = Expander({"vY": "=Max(Year)"}, evaluate)
    assert expander("$(=Max(Year)) $(=Max(Year)) $(vY)") == "2021 2021 2021"
    assert expander("{<Year={$(=Max(Year))}>}") == "{<Year={2021}>}"
    assert calls == ["Max(Year)"]


def test_texts_of_values(s: assoc.Session) -> None:
    assert s.expand("$(=1/3)") == "0.333333333333333"
    assert s.expand("$(=Null())") == ""
    assert s.expand("$(=Dual('two', 2))") == "two"
    assert s.expand("$(#v)", variables={"v": "=Dual('two', 2)"}) == "2"
    assert s.expand("'$(=Only({<Customer={'Bob'}>} Country))'") == "'Norway'"
    assert s.evaluate("Count(distinct Customer)") == 5
