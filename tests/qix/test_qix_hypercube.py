"""Straight hypercubes over QIX against a real `assoc serve`; expected rows joined here from the
imported columns."""

from __future__ import annotations

from typing import Any

import pytest
from qixclient import QixClient

import assoc
from conftest import CUSTOMERS, ORDERS, TABLES, QixServer, symbols

pytestmark = pytest.mark.server

REGION_OF = dict(zip(CUSTOMERS["Customer"], CUSTOMERS["Region"], strict=True))


def by_region() -> dict[str | None, tuple[int, int]]:
    """Sum(Amount) and Count(OrderId) per region; None for orders whose customer has no row."""
    out: dict[str | None, tuple[int, int]] = dict.fromkeys(CUSTOMERS["Region"], (0, 0))
    for customer, amount in zip(ORDERS["Customer"], ORDERS["Amount"], strict=True):
        region = REGION_OF.get(customer)
        total, count = out.get(region, (0, 0))
        out[region] = (total + amount, count + 1)
    return out


def cube_props(**more: Any) -> dict[str, Any]:
    definition: dict[str, Any] = {
        "qDimensions": [
            {"qDef": {"qFieldDefs": ["Region"], "qSortCriterias": [{"qSortByAscii": 1}]}}
        ],
        "qMeasures": [
            {"qDef": {"qDef": "=Sum(Amount)", "qLabel": "Total"}},
            {"qDef": {"qDef": "Count(OrderId)"}},
        ],
        "qInitialDataFetch": [{"qHeight": 50, "qWidth": 3}],
    }
    definition.update(more)
    return {"qInfo": {"qType": "table"}, "qHyperCubeDef": definition}


def texts(cube: dict[str, Any]) -> list[list[str]]:
    return [[c["qText"] for c in row] for row in cube["qDataPages"][0]["qMatrix"]]


def layout_of(qix: QixClient, props: dict[str, Any]) -> dict[str, Any]:
    obj = qix.handle_of("CreateSessionObject", [props], 1)
    cube: dict[str, Any] = qix.result("GetLayout", [], obj)["qLayout"]["qHyperCube"]
    return cube


def expected_rows(regions: list[str | None]) -> list[list[str]]:
    figures = by_region()
    return [[r if r is not None else "-", str(figures[r][0]), str(figures[r][1])] for r in regions]


def test_rows_totals_and_infos(qix: QixClient) -> None:
    cube = layout_of(qix, cube_props())
    regions = sorted(set(CUSTOMERS["Region"]))
    assert texts(cube) == expected_rows([*regions, None])  # d's order reaches no region
    assert cube["qSize"] == {"qcx": 3, "qcy": len(regions) + 1}
    null_cell = cube["qDataPages"][0]["qMatrix"][-1][0]
    assert null_cell["qElemNumber"] == -2
    assert null_cell["qIsNull"] is True
    first = cube["qDataPages"][0]["qMatrix"][0]
    assert first[0]["qElemNumber"] == symbols("Region").index(regions[0])
    assert first[0]["qState"] == "O"
    assert first[1]["qState"] == "L"
    assert first[1]["qNum"] == by_region()[regions[0]][0]
    totals = cube["qGrandTotalRow"]
    assert [c["qText"] for c in totals] == [str(sum(ORDERS["Amount"])), str(len(ORDERS["OrderId"]))]
    assert all(c["qElemNumber"] == -1 and c["qIsTotalCell"] for c in totals)
    assert [m["qFallbackTitle"] for m in cube["qMeasureInfo"]] == ["Total", "Count(OrderId)"]
    sums = [figures[0] for figures in by_region().values()]
    assert cube["qMeasureInfo"][0]["qMin"] == min(sums)
    assert cube["qMeasureInfo"][0]["qMax"] == max(sums)
    info = cube["qDimensionInfo"][0]
    assert info["qFallbackTitle"] == "Region"
    assert info["qCardinal"] == len(set(CUSTOMERS["Region"]))


def test_hypercube_cardinal_counts_the_values_the_cube_holds(qix: QixClient) -> None:
    """qCardinalities.qHypercubeCardinal: a dimension's distinct values among the cube's rows
    (NULL, d's region, counts as one), which a selection narrows; qCardinal stays the
    field's."""
    props = cube_props()
    props["qHyperCubeDef"]["qDimensions"].append({"qDef": {"qFieldDefs": ["Customer"]}})
    obj = qix.handle_of("CreateSessionObject", [props], 1)

    def cardinals() -> list[tuple[int, int]]:
        cube = qix.result("GetLayout", [], obj)["qLayout"]["qHyperCube"]
        return [
            (i["qCardinalities"]["qHypercubeCardinal"], i["qCardinal"])
            for i in cube["qDimensionInfo"]
        ]

    regions, customers = set(CUSTOMERS["Region"]), set(CUSTOMERS["Customer"] + ORDERS["Customer"])
    assert cardinals() == [(len(regions) + 1, len(regions)), (len(customers), len(customers))]
    listbox = {"qInfo": {"qType": "lb"}, "qListObjectDef": {"qDef": {"qFieldDefs": ["Region"]}}}
    lb = qix.handle_of("CreateSessionObject", [listbox], 1)
    north = symbols("Region").index("North")
    qix.result("SelectListObjectValues", ["/qListObjectDef", [north], False], lb)
    of_north = [c for c, r in zip(*CUSTOMERS.values(), strict=True) if r == "North"]
    assert cardinals() == [(1, len(regions)), (len(of_north), len(customers))]
    qix.result("ClearAll", [], 1)


def test_suppression(qix: QixClient) -> None:
    regions = sorted(set(CUSTOMERS["Region"]))
    missing = layout_of(qix, cube_props(qSuppressMissing=True))
    assert texts(missing) == expected_rows(regions)
    props = cube_props()
    props["qHyperCubeDef"]["qDimensions"][0]["qNullSuppression"] = True
    assert texts(layout_of(qix, props)) == expected_rows(regions)
    zero = layout_of(qix, cube_props(qSuppressZero=True, qSuppressMissing=True))
    assert texts(zero) == expected_rows([r for r in regions if by_region()[r][1] > 0])
    # Suppression does not change the grand totals.
    assert [c["qText"] for c in zero["qGrandTotalRow"]] == [
        str(sum(ORDERS["Amount"])),
        str(len(ORDERS["OrderId"])),
    ]


def test_sort_by_a_measure_first(qix: QixClient) -> None:
    props = cube_props(qInterColumnSortOrder=[1, 0], qSuppressMissing=True)
    props["qHyperCubeDef"]["qMeasures"][0]["qSortBy"] = {"qSortByNumeric": -1}
    cube = layout_of(qix, props)
    figures = by_region()
    order = sorted((r for r in figures if r is not None), key=lambda r: -figures[r][0])
    assert texts(cube) == expected_rows(order)
    assert cube["qEffectiveInterColumnSortOrder"] == [1, 0, 2]


def test_measure_glyph_count_is_its_longest_text(qix: QixClient) -> None:
    # Negative whole numbers (the most negative is the longest), decimals, and both mixed.
    measures = ["Sum(Amount)*-1000", "Sum(Amount)/3", "If(Sum(Amount)>10, Sum(Amount)/7, -1e6)"]
    props = cube_props(
        qMeasures=[{"qDef": {"qDef": m}} for m in measures],
        qDimensions=[{"qDef": {"qFieldDefs": ["Customer"]}}],
        qInitialDataFetch=[{"qHeight": 50, "qWidth": 4}],
        qSuppressMissing=True,
    )
    cube = layout_of(qix, props)
    rows = cube["qDataPages"][0]["qMatrix"]
    glyphs = [info["qApprMaxGlyphCount"] for info in cube["qMeasureInfo"]]
    longest = [max(len(row[1 + m]["qText"]) for row in rows) for m in range(len(measures))]
    assert glyphs == longest
    assert [row[1]["qText"] for row in rows] == ["-15000", "-21000", "-7000", "-3000", "0"]


def test_pages_and_selections_through_the_cube(qix: QixClient) -> None:
    obj = qix.handle_of("CreateSessionObject", [cube_props(qSuppressMissing=True)], 1)
    regions = sorted(set(CUSTOMERS["Region"]))
    pages = [{"qTop": 1, "qLeft": 1, "qWidth": 2, "qHeight": 5}]
    page = qix.result("GetHyperCubeData", ["/qHyperCubeDef", pages], obj)["qDataPages"][0]
    assert page["qArea"] == {"qLeft": 1, "qTop": 1, "qWidth": 2, "qHeight": len(regions) - 1}
    assert [[c["qText"] for c in row] for row in page["qMatrix"]] == [
        row[1:] for row in expected_rows(regions[1:])
    ]
    too_big = [{"qTop": 0, "qLeft": 0, "qWidth": 3, "qHeight": 3334}]
    assert qix.call("GetHyperCubeData", ["/qHyperCubeDef", too_big], obj)["error"]["code"] == 7009

    south = symbols("Region").index("South")
    answer = qix.call("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [south], False], obj)
    assert answer["result"] == {"qSuccess": True}
    assert obj in answer["change"]
    cube = qix.result("GetLayout", [], obj)["qLayout"]["qHyperCube"]
    assert texts(cube) == expected_rows(["South"])
    assert cube["qDataPages"][0]["qMatrix"][0][0]["qState"] == "S"
    assert (
        qix.call("SelectHyperCubeValues", ["/qHyperCubeDef", 5, [0], False], obj)["error"]["code"]
        == 8
    )
    qix.result("ClearSelections", ["/qHyperCubeDef", [0]], obj)
    assert len(texts(qix.result("GetLayout", [], obj)["qLayout"]["qHyperCube"])) == len(regions)


def test_bare_field_measure_is_only(qix: QixClient) -> None:
    props = cube_props()
    props["qHyperCubeDef"]["qDimensions"] = [{"qDef": {"qFieldDefs": ["OrderId"]}}]
    props["qHyperCubeDef"]["qMeasures"] = [{"qDef": {"qDef": "[Amount]"}}]
    cube = layout_of(qix, props)
    assert texts(cube) == [
        [str(o), str(a)] for o, a in zip(ORDERS["OrderId"], ORDERS["Amount"], strict=True)
    ]
    props["qHyperCubeDef"]["qDimensions"] = [{"qDef": {"qFieldDefs": ["Region"]}}]
    cube = layout_of(qix, props)
    # North has several amounts: Only() is NULL there, shown as "-".
    assert texts(cube)[0] == ["North", "-"]
    assert cube["qDataPages"][0]["qMatrix"][0][1]["qIsNull"] is True


def test_definition_errors_are_layout_errors(qix: QixClient) -> None:
    props = cube_props()
    props["qHyperCubeDef"]["qDimensions"] = [{"qDef": {"qFieldDefs": ["Nope"]}}]
    cube = layout_of(qix, props)
    assert cube["qError"]["qErrorCode"] == 7000
    assert cube["qSize"]["qcy"] == 0
    props = cube_props()
    props["qHyperCubeDef"]["qMeasures"] = [{"qDef": {"qDef": "Sum(Amount"}}]
    assert layout_of(qix, props)["qError"]["qErrorCode"] == 7000
    # The message names the problem and its position in the expression.
    props["qHyperCubeDef"]["qMeasures"] = [{"qDef": {"qDef": "=Sum(Amount) + Upper(Amount, 2)"}}]
    error = layout_of(qix, props)["qError"]
    assert error["qErrorCode"] == 7000
    assert "Upper takes 1 argument, not 2 at position 14" in error["qExtendedMessage"]
    props["qHyperCubeDef"]["qMeasures"] = [{"qDef": {"qDef": "Sum({<Regio={'N'}>} Amount)"}}]
    error = layout_of(qix, props)["qError"]
    assert "unknown field 'Regio' in the set expression at position 6" in error["qExtendedMessage"]
    bad = cube_props(qInterColumnSortOrder=[0, 7])
    assert qix.call("CreateSessionObject", [bad], 1)["error"]["code"] == 8
    tree = cube_props(qMode="T")  # tree mode is not implemented (stacked K is)
    assert qix.call("CreateSessionObject", [tree], 1)["error"]["code"] == 20


def test_island_dimension_layout_matches_the_embedded_cube(qix_server: QixServer) -> None:
    """A what-if table that no key links: its dimension combines with every customer, and
    GetLayout shows the rows the embedded cube has."""
    tables: dict[str, dict[str, list[object]]] = {**TABLES, "Discount": {"Discount": [0.1, 0.2]}}
    app_id = qix_server.import_app(tables)
    props = cube_props()
    props["qHyperCubeDef"]["qDimensions"] = [
        {"qDef": {"qFieldDefs": ["Customer"]}},
        {"qDef": {"qFieldDefs": ["Discount"]}},
    ]
    props["qHyperCubeDef"]["qInitialDataFetch"] = [{"qHeight": 50, "qWidth": 4}]
    with assoc.App.from_tables(tables).session() as s:
        want = s.hypercube(["Customer", "Discount"], ["Sum(Amount)", "Count(OrderId)"]).rows
    customers = sorted(set(CUSTOMERS["Customer"]) | set(ORDERS["Customer"]))
    assert [r[:2] for r in want] == [(c, d) for c in customers for d in (0.1, 0.2)]
    with QixClient(qix_server.ws_base + f"/app/{app_id}") as client:
        client.open_doc(app_id)
        obj = client.handle_of("CreateSessionObject", [props], 1)
        cube = client.result("GetLayout", [], obj)["qLayout"]["qHyperCube"]
        matrix = cube["qDataPages"][0]["qMatrix"]
        got = [(r[0]["qText"], r[1]["qNum"], r[2]["qNum"], r[3]["qNum"]) for r in matrix]
        assert got == [tuple(r) for r in want]
        assert cube["qSize"] == {"qcx": 4, "qcy": len(customers) * 2}
        assert [c["qNum"] for c in cube["qGrandTotalRow"]] == [
            sum(ORDERS["Amount"]),
            len(ORDERS["OrderId"]),
        ]
        # A selection in the island through the cube keeps one discount for every customer.
        elem = matrix[1][1]["qElemNumber"]
        assert matrix[1][1]["qNum"] == 0.2
        client.result("SelectHyperCubeValues", ["/qHyperCubeDef", 1, [elem], False], obj)
        cube = client.result("GetLayout", [], obj)["qLayout"]["qHyperCube"]
        matrix = cube["qDataPages"][0]["qMatrix"]
        got = [(r[0]["qText"], r[1]["qNum"], r[2]["qNum"]) for r in matrix]
        assert got == [(r[0], r[1], r[2]) for r in want if r[1] == 0.2]
