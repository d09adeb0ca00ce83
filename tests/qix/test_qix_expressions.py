"""Expressions over QIX: Doc.Evaluate / EvaluateEx / CheckExpression / ExpandExpression,
qStringExpression / qValueExpression in properties, `$(…)` with the document's variables
in cube measures and dimensions, and calculated variables' layouts."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from qixclient import QixClient, QixError

from appfiles import run_node
from conftest import ORDERS, QixServer

pytestmark = pytest.mark.server

NODE = shutil.which("node")

SCRIPT = """
SET vS = Sum({<Year={$1}>} Amount);
SET vDim = Customer;
LET vMaxYear = '=Max(Year)';
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


@pytest.fixture
def shop(qix_server: QixServer) -> Iterator[tuple[QixClient, int]]:
    """A session app with the spec's Shop data and three script variables."""
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        doc = qix.handle_of("CreateSessionApp")
        qix.result("SetScript", [SCRIPT], doc)
        assert qix.result("DoReload", [], doc)["qReturn"] is True
        yield qix, doc


def _select(qix: QixClient, doc: int, field: str, texts: list[str]) -> None:
    handle = qix.handle_of("GetField", [field], doc)
    values = [{"qText": t} for t in texts]
    assert qix.result("SelectValues", [values], handle)["qReturn"] is True


def test_evaluate_and_evaluate_ex(shop: tuple[QixClient, int]) -> None:
    qix, doc = shop
    assert qix.result("Evaluate", ["Sum(Amount)"], doc) == {"qReturn": "180"}
    assert qix.result("Evaluate", ["=Sum(Amount) / 7"], doc)["qReturn"] == "25.7142857142857"
    _select(qix, doc, "Country", ["Sweden"])
    assert qix.result("Evaluate", {"qExpression": "Sum(Amount)"}, doc) == {"qReturn": "85"}
    # Spec §2.6 on selection A, with the script's calculated variable too.
    assert qix.result("Evaluate", ["Sum({<Year={$(=Max(Year))}>} Amount)"], doc) == {
        "qReturn": "75"
    }
    assert qix.result("Evaluate", ["$(vMaxYear)"], doc) == {"qReturn": "2021"}
    assert qix.result("EvaluateEx", ["Sum(Amount)"], doc) == {
        "qValue": {"qText": "85", "qIsNumeric": True, "qNumber": 85}
    }
    assert qix.result("EvaluateEx", ["Only({1<Customer={'Bob'}>} Country)"], doc) == {
        "qValue": {"qText": "Norway", "qIsNumeric": False, "qNumber": 0}
    }
    assert qix.result("EvaluateEx", ["Only(Customer)"], doc) == {
        "qValue": {"qText": "-", "qIsNumeric": False, "qNumber": 0}
    }
    assert qix.result("Evaluate", ["Only(Customer)"], doc) == {"qReturn": "-"}
    with pytest.raises(QixError) as bad:
        qix.result("Evaluate", ["Sum(Amount"], doc)
    assert bad.value.code == 7000
    assert bad.value.message == "expected ')', found the end at position 10"
    with pytest.raises(QixError) as bad:
        qix.result("Evaluate", ["=Sum(Yr) + $(vS(2020))"], doc)
    assert bad.value.message == "unknown field 'Yr' at position 5"
    assert qix.result("Evaluate", ["Sum(Amount)$(nope)"], doc) == {"qReturn": "85"}
    qix.result("CreateSessionVariable", [{"qName": "vLoop", "qDefinition": "1+$(vLoop)"}], doc)
    with pytest.raises(QixError) as loop:
        qix.result("Evaluate", ["$(vLoop)"], doc)
    assert loop.value.code == 7000
    assert bad.value.code == 7000
    assert "nested deeper than 100 levels" in str(loop.value.message)
    with pytest.raises(QixError) as missing:
        qix.result("Evaluate", [], doc)
    assert missing.value.code == -32602


def test_selection_state_functions_over_qix(shop: tuple[QixClient, int]) -> None:
    qix, doc = shop
    assert qix.result("Evaluate", ["GetFieldSelections(Country)"], doc) == {"qReturn": "-"}
    _select(qix, doc, "Country", ["Sweden", "Norway"])
    assert qix.result("Evaluate", ["GetFieldSelections(Country)"], doc) == {
        "qReturn": "Sweden, Norway"
    }
    assert qix.result("Evaluate", ["GetSelectedCount(Country)"], doc) == {"qReturn": "2"}
    assert qix.result("Evaluate", ["GetPossibleCount(Customer)"], doc) == {"qReturn": "3"}
    obj = qix.handle_of(
        "CreateSessionObject",
        [_cube(["Customer"], ["Sum(Amount) / GetPossibleCount(Customer)"])],
        doc,
    )
    assert _rows(qix, obj) == [
        ["Alice", "10"],
        ["Bob", "23.3333333333333"],
        ["Carol", "18.3333333333333"],
    ]


def test_check_expression_names_bad_fields_with_positions(shop: tuple[QixClient, int]) -> None:
    qix, doc = shop
    assert qix.result("CheckExpression", ["Sum(Amount)"], doc) == {
        "qErrorMsg": "",
        "qBadFieldNames": [],
        "qDangerousFieldNames": [],
    }
    answer = qix.result("CheckExpression", ["Sum(Yr) + Max([Bad x])"], doc)
    assert answer["qErrorMsg"] == "Bad field name(s): Yr, Bad x"
    assert answer["qBadFieldNames"] == [{"qFrom": 4, "qCount": 2}, {"qFrom": 14, "qCount": 7}]
    # Positions count in the text as given, its `=` included.
    answer = qix.result("CheckExpression", {"qExpr": "=Sum(Amount"}, doc)
    assert answer["qErrorMsg"] == "expected ')', found the end at position 11"
    assert answer["qBadFieldNames"] == []
    answer = qix.result("CheckExpression", [" = Sum(Yr)"], doc)
    assert answer["qBadFieldNames"] == [{"qFrom": 7, "qCount": 2}]
    answer = qix.result("CheckExpression", ["Sum($(vS(2020))"], doc)
    assert "expected ')'" in answer["qErrorMsg"]
    assert qix.result("CheckExpression", ["$(vS(2020))"], doc)["qErrorMsg"] == ""


def test_expand_expression(shop: tuple[QixClient, int]) -> None:
    qix, doc = shop
    assert qix.result("ExpandExpression", ["$(vS(2020)) + $(nope)0"], doc) == {
        "qExpandedExpression": "Sum({<Year={2020}>} Amount) + 0"
    }


def test_string_and_value_expressions_in_properties(shop: tuple[QixClient, int]) -> None:
    qix, doc = shop
    props = {
        "qInfo": {"qType": "kpi"},
        "title": {"qStringExpression": {"qExpr": "='Total: ' & Sum(Amount)"}},
        "deep": {"list": [{"value": {"qValueExpression": {"qExpr": "=Sum(Amount)/2"}}}]},
        "plain": {"qStringExpression": "=Count(distinct Customer)"},
        "bad": {"qStringExpression": {"qExpr": "=Sum(Yr)"}},
        "badValue": {"qValueExpression": {"qExpr": "=Only(Customer)"}},
        "keep": "as is",
    }
    obj = qix.handle_of("CreateSessionObject", [props], doc)
    layout = qix.result("GetLayout", [], obj)["qLayout"]
    assert layout["title"] == "Total: 180"
    assert layout["deep"] == {"list": [{"value": 90}]}
    assert layout["plain"] == "5"
    assert layout["bad"].startswith("Error: unknown field 'Yr'")
    assert layout["badValue"] == "NaN"
    assert layout["keep"] == "as is"
    _select(qix, doc, "Country", ["Norway"])
    layout = qix.result("GetLayout", [], obj)["qLayout"]
    assert (layout["title"], layout["deep"]["list"][0]["value"]) == ("Total: 70", 35)
    # The properties keep the expressions.
    got = qix.result("GetProperties", [], obj)["qProp"]
    assert got["title"] == {"qStringExpression": {"qExpr": "='Total: ' & Sum(Amount)"}}
    with pytest.raises(QixError) as bad:
        qix.result(
            "CreateSessionObject",
            [{"qInfo": {"qType": "x"}, "t": {"qStringExpression": {"qExpr": 5}}}],
            doc,
        )
    assert bad.value.code == 8


def _cube(dims: list[str], measures: list[str]) -> dict[str, object]:
    return {
        "qInfo": {"qType": "chart"},
        "qHyperCubeDef": {
            "qDimensions": [{"qDef": {"qFieldDefs": [d]}} for d in dims],
            "qMeasures": [{"qDef": {"qDef": m}} for m in measures],
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 5, "qHeight": 20}],
        },
    }


def _rows(qix: QixClient, obj: int) -> list[list[str]]:
    cube = qix.result("GetLayout", [], obj)["qLayout"]["qHyperCube"]
    assert "qError" not in cube, cube.get("qError")
    return [[c["qText"] for c in row] for row in cube["qDataPages"][0]["qMatrix"]]


def test_variables_in_cube_measures_and_dimensions(shop: tuple[QixClient, int]) -> None:
    qix, doc = shop
    chart = qix.handle_of(
        "CreateSessionObject",
        [_cube(["$(vDim)"], ["$(vS(2020))", "=Sum({<Year={$(vMaxYear)}>} Amount)"])],
        doc,
    )
    assert _rows(qix, chart) == [
        ["Alice", "10", "20"],
        ["Bob", "30", "40"],
        ["Carol", "0", "55"],
        ["Dave", "0", "0"],
        ["Eve", "0", "25"],
    ]
    layout = qix.result("GetLayout", [], chart)["qLayout"]["qHyperCube"]
    assert next(m["qFallbackTitle"] for m in layout["qMeasureInfo"]) == "$(vS(2020))"
    # A client's variable changes what the cube computes.
    var = qix.result("CreateVariableEx", [{"qName": "vYear", "qDefinition": "2021"}], doc)
    handle = var["qReturn"]["qHandle"]
    other = qix.handle_of("CreateSessionObject", [_cube(["Customer"], ["$(vS($(vYear)))"])], doc)
    assert [r[1] for r in _rows(qix, other)] == ["20", "40", "55", "0", "25"]
    qix.result("SetStringValue", ["2020"], handle)
    assert [r[1] for r in _rows(qix, other)] == ["10", "30", "0", "0", "0"]
    # A variable that refers to itself is the cube's error, not a hang.
    qix.result("SetStringValue", ["$(vYear)"], handle)
    cube = qix.result("GetLayout", [], other)["qLayout"]["qHyperCube"]
    assert cube["qError"]["qErrorCode"] == 7000
    assert "nested deeper than" in cube["qError"]["qExtendedMessage"]


def test_sets_around_aggr_and_total_fields_in_cube_measures(shop: tuple[QixClient, int]) -> None:
    """Spec §2.9 and §4 in a chart's measures: the Aggr's set makes its virtual rows, the
    outer set keeps those its records reach, a set inside filters the records; TOTAL <Country>
    inside an aggregation is the largest order of the row's country."""
    qix, doc = shop
    measures = [
        "Sum(Aggr({<Year={2020}>} Sum(Amount), Customer))",
        "Sum({<Year={2020}>} Aggr(Sum(Amount), Customer))",
        "Sum(Aggr(Sum({<Year={2020}>} Amount), Customer))",
        "Sum(If(Amount = Max(TOTAL <Country> Amount), Amount))",
    ]
    chart = qix.handle_of("CreateSessionObject", [_cube(["Country"], measures)], doc)
    assert _rows(qix, chart) == [
        ["Denmark", "0", "0", "0", "0"],
        ["Norway", "70", "70", "30", "40"],
        ["Sweden", "30", "30", "10", "50"],
        ["-", "0", "0", "0", "25"],
    ]
    cube = qix.result("GetLayout", [], chart)["qLayout"]["qHyperCube"]
    assert [c["qNum"] for c in cube["qGrandTotalRow"]] == [100, 100, 40, 50]
    _select(qix, doc, "Country", ["Sweden"])
    assert _rows(qix, chart) == [["Sweden", "30", "30", "10", "50"]]
    # A measure whose Aggr calls differ in their sets is the cube's error, with its position.
    bad = "Sum(Aggr({1} Sum(Amount), Customer) - Aggr(Sum(Amount), Customer))"
    wrong = qix.handle_of("CreateSessionObject", [_cube(["Country"], [bad])], doc)
    error = qix.result("GetLayout", [], wrong)["qLayout"]["qHyperCube"]["qError"]
    assert "must have the same set expression at position 38" in error["qExtendedMessage"]


def test_calculated_variable_layout_shows_its_value(shop: tuple[QixClient, int]) -> None:
    qix, doc = shop
    var = qix.handle_of("GetVariableByName", ["vMaxYear"], doc)
    layout = qix.result("GetLayout", [], var)["qLayout"]
    assert (layout["qDefinition"], layout["qText"], layout["qNum"]) == ("=Max(Year)", "2021", 2021)
    _select(qix, doc, "Customer", ["Bob"])
    _select(qix, doc, "Year", ["2020"])
    layout = qix.result("GetLayout", [], var)["qLayout"]
    assert (layout["qText"], layout["qNum"]) == ("2020", 2020)
    plain = qix.handle_of("GetVariableByName", ["vS"], doc)
    layout = qix.result("GetLayout", [], plain)["qLayout"]
    assert layout["qText"] == "Sum({<Year={$1}>} Amount)"
    made = qix.result("CreateSessionVariable", [{"qName": "vBad", "qDefinition": "=Sum("}], doc)
    layout = qix.result("GetLayout", [], made["qReturn"]["qHandle"])["qLayout"]
    assert layout["qText"].startswith("Error:")
    assert layout["qNum"] == "NaN"


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_enigma_js_evaluates_checks_and_lays_out_expressions(
    qix_server: QixServer, app_id: str, node_packages: Path
) -> None:
    script = Path(__file__).with_name("enigma_expressions.js")
    seen = run_node(script, qix_server.ws_base, app_id)
    assert seen["evaluate"] == str(sum(ORDERS["Amount"]))  # type: ignore[arg-type]
    assert seen["evaluateEx"] == {"qText": "North", "qIsNumeric": False, "qNumber": 0}
    assert seen["check"] == {
        "qErrorMsg": "Bad field name(s): Amont",
        "qBadFieldNames": [{"qFrom": 4, "qCount": 5}],
        "qDangerousFieldNames": [],
    }
    assert seen["title"] == f"Orders: {len(ORDERS['OrderId'])}"
