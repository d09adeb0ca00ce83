"""Chart functions of the selection state (GetSelectedCount, GetPossibleCount,
GetFieldSelections) and the statistics FractileExc, Skew and Kurtosis (spec
chart-expressions §3, §6), against expectations computed here."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import assoc
from shop import SHOP


@pytest.fixture
def shop() -> assoc.App:
    return assoc.App.from_tables(SHOP)


def value(s: assoc.Session, expr: str, state: str | None = None) -> Any:
    kw = {} if state is None else {"state": state}
    [row] = s.hypercube([], [expr], **kw).rows
    return row[0]


def test_state_functions_with_no_selection(shop: assoc.App) -> None:
    with shop.session() as s:
        assert value(s, "GetSelectedCount(Customer)") == 0
        assert value(s, "GetPossibleCount(Customer)") == 5  # Alice, Bob, Carol, Eve, Dave
        assert value(s, "GetFieldSelections(Customer)") is None
        assert value(s, "IsNull(GetFieldSelections(Product))") == -1


def test_state_functions_follow_selections(shop: assoc.App) -> None:
    with shop.session() as s:
        s.select("Product", ["Bolt", "Nut"])
        assert value(s, "GetSelectedCount(Product)") == 2
        assert value(s, "GetFieldSelections(Product)") == "Bolt, Nut"
        assert value(s, "GetFieldSelections(Product, '; ')") == "Bolt; Nut"
        # Two of three selected, at most one listed: the one left out with NOT.
        assert value(s, "GetFieldSelections(Product, ', ', 1)") == "NOT Washer"
        assert value(s, "GetFieldSelections(Product, ', ', 0)") == "2 of 3"
        # Customer has no selection: its possible values (Bolt or Nut buyers).
        assert value(s, "GetPossibleCount(Customer)") == 4  # Alice, Bob, Carol, Eve
        assert value(s, "GetPossibleCount(Product)") == 2  # its selected values
        s.select("Product", ["Bolt", "Nut", "Washer"])
        assert value(s, "GetFieldSelections(Product)") == "ALL"
        # Selections in another field exclude a selected value: counted only on request.
        s.select("Customer", ["Eve"])
        assert value(s, "GetSelectedCount(Product)") == 1  # Nut
        assert value(s, "GetSelectedCount(Product, True())") == 3
        assert value(s, "'Products: ' & GetFieldSelections(Product)") == "Products: ALL"
        # Per chart row the value is the same: a constant of the object's state.
        rows = s.hypercube(["Customer"], ["Sum(Amount)", "GetSelectedCount(Customer)"]).rows
        assert rows == [("Eve", 25, 1)]


def test_a_search_selection_shows_its_search_text(shop: assoc.App) -> None:
    with shop.session() as s:
        s.keep_history = True
        codes = [shop.symbols("Product").index(p) for p in ("Bolt", "Nut")]
        s.select_indices("Product", codes, search="*o*")
        assert s.search_text("Product") == "*o*"
        assert value(s, "GetFieldSelections(Product)") == "*o*"
        s.select("Customer", ["Alice"])  # another field's selection keeps it
        assert value(s, "GetFieldSelections(Product)") == "*o*"
        s.select("Product", ["Bolt", "Nut"])  # the same values, not by a search
        assert s.search_text("Product") is None
        assert value(s, "GetFieldSelections(Product)") == "Bolt, Nut"
        s.back()  # back to the search selection: its text again
        assert value(s, "GetFieldSelections(Product)") == "*o*"
        s.forward()
        assert s.search_text("Product") is None
        s.select_indices("Product", codes, search="*o*")
        s.clear_field("Product")
        assert s.search_text("Product") is None
        assert value(s, "GetFieldSelections(Product)") is None
        s.select_indices("Product", [], search="zzz")  # no values: no selection, no text
        assert s.search_text("Product") is None
        with pytest.raises(assoc.Error, match="search must be"):
            s.select_indices("Product", codes, search=5)  # type: ignore[arg-type]


def test_state_functions_in_alternate_states(shop: assoc.App) -> None:
    with shop.session() as s:
        s.add_state("Compare")
        s.select("Customer", ["Alice", "Bob"], state="Compare")
        assert value(s, "GetSelectedCount(Customer)") == 0
        assert value(s, "GetSelectedCount(Customer, False(), 'Compare')") == 2
        assert value(s, "GetFieldSelections(Customer, ', ', 6, 'Compare')") == "Alice, Bob"
        assert value(s, "GetSelectedCount(Customer)", state="Compare") == 2


def test_state_function_errors(shop: assoc.App) -> None:
    with shop.session() as s:
        with pytest.raises(assoc.Error, match="field not found: Nope at position 17"):
            value(s, "GetSelectedCount(Nope)")
        with pytest.raises(assoc.Error, match="unknown state 'Other'"):
            value(s, "GetSelectedCount(Customer, 0, 'Other')")
        with pytest.raises(assoc.Error, match="GetPossibleCount takes 1 to 2 arguments, not 3"):
            value(s, "GetPossibleCount(Customer, 1, 2)")
        with pytest.raises(assoc.Error, match="argument 2 of GetSelectedCount must be a constant"):
            value(s, "GetSelectedCount(Customer, Amount)")


def excel_skew(xs: list[float]) -> float:
    n = len(xs)
    m = sum(xs) / n
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return n / ((n - 1) * (n - 2)) * sum(((x - m) / s) ** 3 for x in xs)


def excel_kurt(xs: list[float]) -> float:
    n = len(xs)
    m = sum(xs) / n
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    k = sum(((x - m) / s) ** 4 for x in xs)
    return n * (n + 1) / ((n - 1) * (n - 2) * (n - 3)) * k - 3 * (n - 1) ** 2 / ((n - 2) * (n - 3))


def stat(values: list[Any], measure: str) -> Any:
    app = assoc.App.from_tables({"T": {"X": values, "K": list(range(len(values)))}})
    with app.session() as s:
        [row] = s.hypercube([], [measure]).rows
    return row[0]


def test_skew_and_kurtosis_are_excels() -> None:
    data = [3, 4, 5, 2, 3, 4, 5, 6, 4, 7]  # the example of Excel's SKEW and KURT help pages
    assert stat(data, "Skew(X)") == pytest.approx(0.359543, abs=1e-6)
    assert stat(data, "Kurtosis(X)") == pytest.approx(-0.151799637, abs=1e-9)
    rng = np.random.default_rng(5)
    xs = [float(x) for x in rng.gamma(2.0, 3.0, 200)]
    assert stat(xs, "Skew(X)") == pytest.approx(excel_skew(xs), rel=1e-12)
    assert stat(xs, "Kurtosis(X)") == pytest.approx(excel_kurt(xs), rel=1e-12)
    distinct = sorted(set(data))
    assert stat(data, "Skew(DISTINCT X)") == pytest.approx(excel_skew(distinct), rel=1e-12)
    # Texts are no numbers; too few values or no spread give NULL.
    assert stat([1, 2, "a", 9], "Skew(X)") == pytest.approx(excel_skew([1, 2, 9]), rel=1e-12)
    assert stat([1, 2], "Skew(X)") is None
    assert stat([1, 2, 3], "Kurtosis(X)") is None
    assert stat([4, 4, 4, 4], "Kurtosis(X)") is None


def test_fractile_exc_is_excels_percentile_exc() -> None:
    data = [1, 2, 3, 6, 6, 6, 7, 8, 9]  # Excel's PERCENTILE.EXC example
    assert stat(data, "FractileExc(X, 0.25)") == pytest.approx(2.5)
    assert stat(data, "FractileExc(X, 0.5)") == 6
    assert stat(data, "FractileExc(X, 0.9)") == 9
    assert stat(data, "FractileExc(X, 0.01)") is None  # rank below 1
    assert stat(data, "FractileExc(X, 2)") is None
    assert stat(data, "FractileExc(DISTINCT X, 0.5)") == pytest.approx(6)  # 1 2 3 6 7 8 9
    by = assoc.App.from_tables({"T": {"G": ["a"] * 9 + ["b"] * 2, "X": [*data, 5, 7]}})
    with by.session() as s:
        # Two values: ranks from 1/3 to 2/3 only.
        got = s.hypercube(["G"], ["FractileExc(X, 0.5)", "FractileExc(X, 0.25)"]).rows
    assert got == [("a", 6.0, 2.5), ("b", 6.0, None)]
