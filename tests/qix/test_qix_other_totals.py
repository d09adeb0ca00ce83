"""Straight-cube options over a real `assoc serve`: Others and totals rows (qOtherTotalSpec),
reverse sorts, sorting by an expression, attribute expressions and calculation conditions;
expected values are computed here from the tables the server loaded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from qixclient import QixClient, QixError

from conftest import CUSTOMERS, ORDERS, QixServer

pytestmark = pytest.mark.server


@pytest.fixture
def qix(qix_server: QixServer, app_id: str) -> Iterator[tuple[QixClient, int]]:
    with QixClient(qix_server.ws_base + "/app/engineData") as client:
        yield client, client.open_doc(app_id)


def amounts(customers: set[str]) -> list[int]:
    return [a for c, a in zip(ORDERS["Customer"], ORDERS["Amount"], strict=True) if c in customers]


def total(customers: set[str]) -> float:
    return float(sum(amounts(customers)))


def average(customers: set[str]) -> float:
    found = amounts(customers)
    return sum(found) / len(found)


# Every customer (e has no orders: its sum is 0), by Sum(Amount) descending.
RANKED = sorted(CUSTOMERS["Customer"] + ["d"], key=lambda c: -total({c}))


def chart(spec: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    dimension: dict[str, Any] = {"qDef": {"qFieldDefs": ["Customer"]}}
    if spec is not None:
        dimension["qOtherTotalSpec"] = spec
    return {
        "qInfo": {"qType": "piechart"},
        "qHyperCubeDef": {
            "qDimensions": [dimension],
            "qMeasures": [
                {"qDef": {"qDef": "Sum(Amount)"}, "qSortBy": {"qSortByNumeric": -1}},
                {"qDef": {"qDef": "Avg(Amount)"}},
            ],
            "qInterColumnSortOrder": [1, 0],
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 3, "qHeight": 50}],
            **more,
        },
    }


def cube_layout(client: QixClient, doc: int, props: dict[str, Any]) -> dict[str, Any]:
    handle = client.handle_of("CreateSessionObject", [props], doc)
    found: dict[str, Any] = client.result("GetLayout", [], handle)["qLayout"]["qHyperCube"]
    return found


def rows(cube: dict[str, Any]) -> list[tuple[str, int, Any, Any]]:
    """(dimension text, element number, first measure, second measure) per row."""
    return [
        (r[0]["qText"], r[0]["qElemNumber"], r[1]["qNum"], r[2]["qNum"])
        for r in cube["qDataPages"][0]["qMatrix"]
    ]


def test_others_counted_re_evaluates_each_measure(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    spec = {"qOtherMode": "OTHER_COUNTED", "qOtherCounted": {"qv": "2"}}
    cube = cube_layout(client, doc, chart(spec))
    top, rest = RANKED[:2], set(RANKED[2:])
    assert rows(cube) == [
        (top[0], 1, total({top[0]}), average({top[0]})),
        (top[1], 0, total({top[1]}), average({top[1]})),
        # The Others row: Avg over the other customers' orders, not a sum of averages.
        ("Others", -3, total(rest), average(rest)),
    ]
    assert cube["qHasOtherValues"] is True
    assert cube["qSize"] == {"qcx": 3, "qcy": 3}
    # Under a selection the Others row holds what is left of it.
    field = client.handle_of("GetField", ["Customer"], doc)
    client.result("SelectValues", [[{"qText": c} for c in ("a", "b", "c")]], field)
    assert rows(cube_layout(client, doc, chart(spec)))[-1] == ("Others", -3, total({"c"}), 7.0)


@pytest.mark.parametrize(
    ("spec", "kept"),
    [
        ({"qOtherMode": "OTHER_ABS_LIMITED", "qOtherLimit": {"qv": "7"}}, ["b", "a", "c"]),
        (
            {
                "qOtherMode": "OTHER_ABS_LIMITED",
                "qOtherLimit": {"qv": "7"},
                "qOtherLimitMode": "OTHER_GT_LIMIT",
            },
            ["b", "a"],
        ),
        ({"qOtherMode": "OTHER_REL_LIMITED", "qOtherLimit": {"qv": "0.4"}}, ["b"]),
        ({"qOtherMode": "OTHER_ABS_ACC_TARGET", "qOtherLimit": {"qv": "40"}}, ["b", "a", "c"]),
        ({"qOtherMode": "OTHER_REL_ACC_TARGET", "qOtherLimit": {"qv": "0.5"}}, ["b", "a"]),
        (
            {
                "qOtherMode": "OTHER_COUNTED",
                "qOtherCounted": {"qv": "2"},
                "qOtherSortMode": "OTHER_SORT_ASCENDING",
            },
            ["c", "d"],  # the two lowest with a sum: e's 0 is lower still
        ),
    ],
)
def test_other_modes(qix: tuple[QixClient, int], spec: dict[str, Any], kept: list[str]) -> None:
    client, doc = qix
    if spec.get("qOtherSortMode") == "OTHER_SORT_ASCENDING":
        kept = sorted(CUSTOMERS["Customer"] + ["d"], key=lambda c: total({c}))[:2]
    shown = rows(cube_layout(client, doc, chart(spec)))
    assert [r[0] for r in shown[:-1]] == [c for c in RANKED if c in kept]
    rest = set(RANKED) - set(kept)
    assert shown[-1][:3] == ("Others", -3, total(rest))


def test_suppress_other_and_totals_rows(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    spec = {"qOtherMode": "OTHER_COUNTED", "qOtherCounted": {"qv": "2"}, "qSuppressOther": True}
    shown = rows(cube_layout(client, doc, chart(spec)))
    assert [r[0] for r in shown] == RANKED[:2]
    # TOTAL_EXPR: a totals row after the rows, each measure over every possible record.
    cube = cube_layout(client, doc, chart({"qTotalMode": "TOTAL_EXPR"}))
    everyone = set(CUSTOMERS["Customer"]) | set(ORDERS["Customer"])
    assert rows(cube)[-1] == ("Totals", -1, total(everyone), average(everyone))
    assert [r[0] for r in rows(cube)[:-1]] == RANKED
    assert cube["qDataPages"][0]["qMatrix"][-1][0]["qIsTotalCell"] is True
    # Others and totals together: the totals row comes last.
    both = {"qOtherMode": "OTHER_COUNTED", "qOtherCounted": "1", "qTotalMode": "TOTAL_EXPR"}
    assert [r[0] for r in rows(cube_layout(client, doc, chart(both)))] == [
        RANKED[0],
        "Others",
        "Totals",
    ]


def test_others_per_group_of_the_dimension_before(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    props = {
        "qInfo": {"qType": "table"},
        "qHyperCubeDef": {
            "qDimensions": [
                {"qDef": {"qFieldDefs": ["Region"]}, "qNullSuppression": True},
                {
                    "qDef": {"qFieldDefs": ["Customer"]},
                    "qOtherTotalSpec": {"qOtherMode": "OTHER_COUNTED", "qOtherCounted": "1"},
                },
            ],
            "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}, "qSortBy": {"qSortByNumeric": -1}}],
            "qInterColumnSortOrder": [0, 2, 1],
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 3, "qHeight": 50}],
        },
    }
    matrix = cube_layout(client, doc, props)["qDataPages"][0]["qMatrix"]
    region_of = dict(zip(CUSTOMERS["Customer"], CUSTOMERS["Region"], strict=True))
    expected = []
    for region in sorted(set(CUSTOMERS["Region"])):
        members = sorted(
            (c for c, r in region_of.items() if r == region), key=lambda c: -total({c})
        )
        expected.append([region, members[0], total({members[0]})])
        if len(members) > 1:
            expected.append([region, "Others", total(set(members[1:]))])
    assert [[r[0]["qText"], r[1]["qText"], r[2]["qNum"]] for r in matrix] == expected


def test_reverse_sort_and_sort_by_expression(qix: tuple[QixClient, int]) -> None:
    client, doc = qix

    def by_dimension(criteria: dict[str, Any], reverse: bool = False) -> list[str]:
        props = {
            "qInfo": {"qType": "table"},
            "qHyperCubeDef": {
                "qDimensions": [
                    {
                        "qDef": {
                            "qFieldDefs": ["Customer"],
                            "qSortCriterias": [criteria],
                            "qReverseSort": reverse,
                        }
                    }
                ],
                "qMeasures": [{"qDef": {"qDef": "Count(OrderId)"}}],
                "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": 50}],
            },
        }
        cube = cube_layout(client, doc, props)
        assert cube["qSize"]["qcx"] == 2  # a sort expression is no column
        return [r[0]["qText"] for r in cube["qDataPages"][0]["qMatrix"]]

    customers = sorted(set(RANKED))
    assert by_dimension({"qSortByAscii": 1}) == customers
    assert by_dimension({"qSortByAscii": 1}, reverse=True) == customers[::-1]
    by_sum = {"qSortByExpression": -1, "qExpression": {"qv": "=Sum(Amount)"}}
    assert by_dimension(by_sum) == RANKED
    assert by_dimension(by_sum, reverse=True) == RANKED[::-1]


def test_attribute_expressions(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    props = chart()
    props["qHyperCubeDef"]["qMeasures"][0]["qAttributeExpressions"] = [
        {"qExpression": "Count(OrderId)"},
        {"qExpression": "=Max(Amount)"},
    ]
    cube = cube_layout(client, doc, props)
    for row in cube["qDataPages"][0]["qMatrix"]:
        customer = row[0]["qText"]
        found = amounts({customer})
        values = row[1]["qAttrExps"]["qValues"]
        assert values[0]["qNum"] == len(found)
        assert values[1]["qNum"] == (max(found) if found else "NaN")
    info = cube["qMeasureInfo"][0]["qAttrExprInfo"]
    assert [i["qMax"] for i in info] == [2, max(ORDERS["Amount"])]
    assert cube["qMeasureInfo"][1]["qAttrExprInfo"] == []


def test_calc_condition(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    condition = {
        "qCond": {"qv": "=Count(distinct Customer) = 1"},
        "qMsg": {"qv": "Select one customer"},
    }
    handle = client.handle_of("CreateSessionObject", [chart(qCalcCondition=condition)], doc)
    cube = client.result("GetLayout", [], handle)["qLayout"]["qHyperCube"]
    assert cube["qError"] == {"qErrorCode": 7005}
    assert cube["qCalcCondMsg"] == "Select one customer"
    assert cube["qSize"]["qcy"] == 0
    assert cube["qDataPages"][0]["qMatrix"] == []
    assert [i["qFallbackTitle"] for i in cube["qDimensionInfo"]] == ["Customer"]
    assert len(cube["qMeasureInfo"]) == 2
    field = client.handle_of("GetField", ["Customer"], doc)
    client.result("SelectValues", [[{"qText": "a"}]], field)
    cube = client.result("GetLayout", [], handle)["qLayout"]["qHyperCube"]
    assert "qError" not in cube
    assert rows(cube) == [("a", 0, total({"a"}), average({"a"}))]


@pytest.mark.parametrize(
    "spec",
    [
        {"qOtherMode": "OTHER_SOMETIMES"},
        {"qOtherMode": "OTHER_COUNTED", "qOtherCounted": {"qv": "ten"}},
        {"qOtherMode": "OTHER_ABS_LIMITED", "qOtherLimitMode": "OTHER_NEAR_LIMIT"},
        {"qTotalMode": "TOTAL_SOMETIMES"},
        {"qOtherMode": "OTHER_COUNTED", "qReferencedExpression": {"qv": "Sum(Nothing)"}},
    ],
)
def test_bad_specs_are_errors(qix: tuple[QixClient, int], spec: dict[str, Any]) -> None:
    client, doc = qix
    with pytest.raises(QixError) as caught:
        client.result("CreateSessionObject", [chart(spec)], doc)
    assert caught.value.code == 8


def test_attribute_dimensions(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    props = chart({"qOtherMode": "OTHER_COUNTED", "qOtherCounted": "3"})
    props["qHyperCubeDef"]["qDimensions"][0]["qAttributeDimensions"] = [{"qDef": "[Region]"}]
    cube = cube_layout(client, doc, props)
    region_of = dict(zip(CUSTOMERS["Customer"], CUSTOMERS["Region"], strict=True))
    regions = []
    for row in cube["qDataPages"][0]["qMatrix"]:
        value = row[0]["qAttrDims"]["qValues"][0]
        regions.append((row[0]["qText"], value["qText"]))
        if value["qText"] != "-":
            assert value["qElemNo"] >= 0
    # d has no region, and the Others row stands for several customers: both NULL.
    assert regions == [(c, region_of.get(c, "-")) for c in RANKED[:3]] + [("Others", "-")]
    info = cube["qDimensionInfo"][0]["qAttrDimInfo"]
    assert info[0]["qFallbackTitle"] == "Region"
    assert info[0]["qCardinal"] == len(set(CUSTOMERS["Region"]))
    props["qHyperCubeDef"]["qDimensions"][0]["qAttributeDimensions"] = [{"qDef": "Nothing"}]
    assert cube_layout(client, doc, props)["qError"]["qErrorCode"] == 7000


def test_others_and_attribute_dimensions_of_thousands_of_values(qix_server: QixServer) -> None:
    """5,000 customers in 4 regions: the top 3 of each region, an Others row per region (its
    sum over the region's other customers) and a totals row per region; a page far down reads
    each row's region as its attribute dimension."""
    regions = ["East", "North", "South", "West"]
    customers = [f"c{i:04d}" for i in range(5000)]
    region_of = {c: regions[i % 4] for i, c in enumerate(customers)}
    amount_of = {c: float((i * 7919) % 5000) for i, c in enumerate(customers)}  # distinct
    sales: dict[str, list[object]] = {
        "Region": [region_of[c] for c in customers],
        "Customer": list(customers),
        "Amount": [amount_of[c] for c in customers],
    }
    app = qix_server.import_app({"Sales": sales})
    customer_dim: dict[str, Any] = {
        "qDef": {"qFieldDefs": ["Customer"]},
        "qOtherTotalSpec": {
            "qOtherMode": "OTHER_COUNTED",
            "qOtherCounted": "3",
            "qTotalMode": "TOTAL_EXPR",  # a totals row after each region's rows
        },
    }
    region_dim = {"qDef": {"qFieldDefs": ["Region"], "qSortCriterias": [{"qSortByAscii": 1}]}}
    props = {
        "qInfo": {"qType": "table"},
        "qHyperCubeDef": {
            "qDimensions": [region_dim, customer_dim],
            "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}, "qSortBy": {"qSortByNumeric": -1}}],
            "qInterColumnSortOrder": [0, 2, 1],
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 3, "qHeight": 100}],
        },
    }
    with QixClient(qix_server.ws_base + "/app/engineData") as client:
        doc = client.open_doc(app)
        rows = cube_layout(client, doc, props)["qDataPages"][0]["qMatrix"]
        want: list[list[Any]] = []
        for region in regions:
            ranked = sorted((c for c in customers if region_of[c] == region), key=amount_of.get)
            top = sorted(ranked[-3:], key=lambda c: -amount_of[c])
            want += [[region, c, amount_of[c]] for c in top]
            want.append([region, "Others", sum(amount_of[c] for c in ranked[:-3])])
            want.append([region, "Totals", sum(amount_of[c] for c in ranked)])
        assert [[r[0]["qText"], r[1]["qText"], r[2]["qNum"]] for r in rows] == want
        # Customers by amount, each with its region as an attribute dimension, page 3,000.
        props["qHyperCubeDef"] = {
            "qDimensions": [
                {
                    "qDef": {"qFieldDefs": ["Customer"], "qSortCriterias": [{"qSortByAscii": 1}]},
                    "qAttributeDimensions": [{"qDef": "Region"}],
                }
            ],
            "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
        }
        handle = client.handle_of("CreateSessionObject", [props], doc)
        page = client.result(
            "GetHyperCubeData",
            ["/qHyperCubeDef", [{"qTop": 3000, "qLeft": 0, "qWidth": 2, "qHeight": 20}]],
            handle,
        )["qDataPages"][0]["qMatrix"]
        assert [(r[0]["qText"], r[0]["qAttrDims"]["qValues"][0]["qText"]) for r in page] == [
            (c, region_of[c]) for c in customers[3000:3020]
        ]
