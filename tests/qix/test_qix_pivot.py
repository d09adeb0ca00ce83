"""Pivot hypercubes (qMode P) over a real `assoc serve`: the left and top trees, cells computed
from the same tables in the test, expanding and collapsing, totals, the measures'
pseudo-dimension, pages and their limits, and selecting pivot cells."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from qixclient import QixClient

from conftest import CUSTOMERS, ORDERS, QixServer

pytestmark = pytest.mark.server

REGION_OF = dict(zip(CUSTOMERS["Customer"], CUSTOMERS["Region"], strict=True))
# Regions in ascii order, the NULL region (customer d has none) last.
REGIONS = sorted(set(CUSTOMERS["Region"]))


def customers_of(region: str) -> list[str]:
    return sorted(c for c, r in REGION_OF.items() if r == region)


# Every (region, customer) the tables associate: d has orders but no region.
PAIRS = [[r, c] for r in REGIONS for c in customers_of(r)] + [["-", "d"]]


@pytest.fixture
def qix(qix_server: QixServer, app_id: str) -> Iterator[QixClient]:
    with QixClient(qix_server.ws_base + "/app/engineData") as client:
        client.open_doc(app_id)
        yield client


def pivot(dims: list[str], measures: list[str], **more: Any) -> dict[str, Any]:
    return {
        "qInfo": {"qType": "pivot-table"},
        "qHyperCubeDef": {
            "qMode": "P",
            "qDimensions": [
                {"qDef": {"qFieldDefs": [d], "qSortCriterias": [{"qSortByAscii": 1}]}} for d in dims
            ],
            "qMeasures": [{"qDef": {"qDef": m}} for m in measures],
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 50, "qHeight": 50}],
            **more,
        },
    }


def orders(region: str | None = None, customer: str | None = None) -> list[int]:
    """The rows of Orders of a region (None: any; "" the orders without one) and customer."""
    out = []
    for i, c in enumerate(ORDERS["Customer"]):
        r = REGION_OF.get(c, "")
        if (region is None or r == region) and (customer is None or c == customer):
            out.append(i)
    return out


def total(rows: list[int]) -> float:
    return float(sum(ORDERS["Amount"][i] for i in rows))


def hypercube(qix: QixClient, obj: int) -> dict[str, Any]:
    cube: dict[str, Any] = qix.result("GetLayout", [], obj)["qLayout"]["qHyperCube"]
    return cube


def left_texts(nodes: list[dict[str, Any]]) -> list[list[str]]:
    """Each row of the left tree as the texts from its root to its leaf."""
    out: list[list[str]] = []
    for node in nodes:
        if node["qType"] == "E":  # the empty node below a collapsed one
            out.append([])
        elif node["qSubNodes"]:
            out += [[node["qText"], *rest] for rest in left_texts(node["qSubNodes"])]
        else:
            out.append([node["qText"]])
    return out


def numbers(page: dict[str, Any]) -> list[list[Any]]:
    return [[cell["qNum"] for cell in row] for row in page["qData"]]


def test_collapsed_first_level_with_two_measures_on_top(qix: QixClient) -> None:
    obj = qix.handle_of(
        "CreateSessionObject", [pivot(["Region", "Customer"], ["Sum(Amount)", "Count(OrderId)"])], 1
    )
    cube = hypercube(qix, obj)
    assert cube["qMode"] == "P"
    assert cube["qDataPages"] == []
    assert cube["qNoOfLeftDims"] == 2
    assert cube["qEffectiveInterColumnSortOrder"] == [0, 1, -1]
    page = cube["qPivotDataPages"][0]
    assert left_texts(page["qLeft"]) == [[r] for r in REGIONS] + [["-"]]
    assert [n["qCanExpand"] for n in page["qLeft"]] == [True] * 4
    assert page["qLeft"][3]["qType"] == "U"
    assert page["qLeft"][3]["qElemNo"] == -1
    assert [(n["qText"], n["qType"], n["qElemNo"]) for n in page["qTop"]] == [
        ("Sum(Amount)", "P", 0),
        ("Count(OrderId)", "P", 1),
    ]
    expected = [[total(orders(r)), float(len(orders(r)))] for r in [*REGIONS, ""]]
    assert numbers(page) == expected
    assert cube["qSize"] == {"qcx": 2, "qcy": 4}
    assert page["qArea"] == {"qLeft": 0, "qTop": 0, "qWidth": 2, "qHeight": 4}


def test_expand_and_collapse_left(qix: QixClient) -> None:
    obj = qix.handle_of("CreateSessionObject", [pivot(["Region", "Customer"], ["Sum(Amount)"])], 1)
    answer = qix.call("ExpandLeft", ["/qHyperCubeDef", 0, 0, False], obj)
    assert answer["result"] == {}
    assert obj in answer["change"]
    page = hypercube(qix, obj)["qPivotDataPages"][0]
    north = customers_of("North")
    rows = [["North", c] for c in north] + [[r] for r in REGIONS[1:]] + [["-"]]
    assert left_texts(page["qLeft"]) == rows
    assert page["qLeft"][0]["qCanCollapse"]
    assert not page["qLeft"][0]["qCanExpand"]
    assert numbers(page) == [
        *([total(orders("North", c))] for c in north),
        *([total(orders(r))] for r in [*REGIONS[1:], ""]),
    ]
    assert page["qTop"] == []
    assert hypercube(qix, obj)["qSize"] == {"qcx": 1, "qcy": len(rows)}
    # A collapsed region has an empty node below it, so every path reaches the second level
    # (clients read the levels down the first path).
    for node in page["qLeft"][1:]:
        assert [(e["qType"], e["qText"], e["qSubNodes"]) for e in node["qSubNodes"]] == [
            ("E", "", [])
        ]
    # Collapse the node at the second row (North's second customer's row), level 0.
    qix.result("CollapseLeft", ["/qHyperCubeDef", 1, 0, False], obj)
    page = hypercube(qix, obj)["qPivotDataPages"][0]
    assert left_texts(page["qLeft"]) == [[r] for r in REGIONS] + [["-"]]
    # qAll: every region.
    qix.result("ExpandLeft", ["/qHyperCubeDef", 0, 0, True], obj)
    page = hypercube(qix, obj)["qPivotDataPages"][0]
    assert all(n["qCanCollapse"] for n in page["qLeft"])
    assert left_texts(page["qLeft"]) == PAIRS


def test_expand_errors(qix: QixClient) -> None:
    obj = qix.handle_of("CreateSessionObject", [pivot(["Region", "Customer"], ["Sum(Amount)"])], 1)
    # Row 99 does not exist; level 1 has no node while collapsed; the top has no nodes.
    for method, params in (
        ("ExpandLeft", ["/qHyperCubeDef", 99, 0, False]),
        ("ExpandLeft", ["/qHyperCubeDef", 0, 1, False]),
        ("CollapseLeft", ["/qHyperCubeDef", 0, 0, False]),
        ("ExpandTop", ["/qHyperCubeDef", 0, 0, False]),
    ):
        answer = qix.call(method, params, obj)
        assert answer["error"]["code"] == 8, (method, answer)
    straight = qix.handle_of(
        "CreateSessionObject",
        [{"qHyperCubeDef": {"qDimensions": [{"qDef": {"qFieldDefs": ["Region"]}}]}}],
        1,
    )
    answer = qix.call("ExpandLeft", ["/qHyperCubeDef", 0, 0, False], straight)
    assert answer["error"]["code"] == 8
    assert qix.call("ExpandLeft", ["/nothing", 0, 0, False], obj)["error"]["code"] == 2


def test_fully_expanded_with_totals_above(qix: QixClient) -> None:
    props = pivot(["Region", "Customer"], ["Sum(Amount)"])
    cube_def = props["qHyperCubeDef"]
    cube_def.update(qAlwaysFullyExpanded=True, qShowTotalsAbove=True)
    for d in cube_def["qDimensions"]:
        d["qOtherTotalSpec"] = {"qTotalMode": "TOTAL_EXPR"}
    obj = qix.handle_of("CreateSessionObject", [props], 1)
    page = hypercube(qix, obj)["qPivotDataPages"][0]
    nodes = page["qLeft"]
    # The grand total first, then each region with its own total first.
    assert nodes[0]["qType"] == "T"
    assert nodes[0]["qText"] == "Totals"
    expected_rows = [["Totals"]]
    expected = [[total(orders())]]
    for region in [*REGIONS, ""]:
        expected_rows.append([region or "-", "Totals"])
        expected.append([total(orders(region))])
        for customer in customers_of(region) if region else ["d"]:
            expected_rows.append([region or "-", customer])
            expected.append([total(orders(region, customer))])
    assert left_texts(nodes) == expected_rows
    assert numbers(page) == expected
    assert all(not n["qCanExpand"] and not n["qCanCollapse"] for n in nodes)
    assert [c["qType"] for c in (row[0] for row in page["qData"])][:2] == ["T", "T"]
    # Below: each total after its nodes.
    cube_def["qShowTotalsAbove"] = False
    qix.result("SetProperties", [props], obj)
    nodes = hypercube(qix, obj)["qPivotDataPages"][0]["qLeft"]
    assert nodes[-1]["qType"] == "T"
    assert nodes[0]["qSubNodes"][-1]["qType"] == "T"


def test_null_suppressed_region_expanded_cell_by_cell(qix: QixClient) -> None:
    """Customer d (orders, no region) is left out where the region is NULL-suppressed: the
    cells of the deepest nodes after it read their rows past the row left out."""
    props = pivot(["Customer", "Region"], ["Sum(Amount)", "Count(Amount)"])
    props["qHyperCubeDef"]["qDimensions"][1]["qNullSuppression"] = True
    obj = qix.handle_of("CreateSessionObject", [props], 1)
    qix.result("ExpandLeft", ["/qHyperCubeDef", 0, 0, True], obj)
    page = hypercube(qix, obj)["qPivotDataPages"][0]
    pairs = sorted([c, r] for r, c in PAIRS if r != "-")
    assert left_texts(page["qLeft"]) == pairs
    # The measures' pseudo-dimension is on top: a column each.
    assert numbers(page) == [[total(orders(r, c)), len(orders(r, c))] for c, r in pairs]


def test_dimension_on_top(qix: QixClient) -> None:
    props = pivot(["Region", "Customer"], ["Sum(Amount)"], qNoOfLeftDims=1)
    obj = qix.handle_of("CreateSessionObject", [props], 1)
    cube = hypercube(qix, obj)
    page = cube["qPivotDataPages"][0]
    customers = sorted(CUSTOMERS["Customer"] + ["d"])
    assert [n["qText"] for n in page["qTop"]] == customers
    assert left_texts(page["qLeft"]) == [[r] for r in REGIONS] + [["-"]]
    expected = []
    for region in [*REGIONS, ""]:
        row = []
        for customer in customers:
            paired = [region or "-", customer] in PAIRS
            row.append(total(orders(region, customer)) if paired else "NaN")
        expected.append(row)
    assert numbers(page) == expected
    assert page["qData"][0][1]["qText"] == "-"  # North and b: no such combination
    assert cube["qSize"] == {"qcx": len(customers), "qcy": 4}
    assert cube["qNoOfLeftDims"] == 1


def test_hrank_ranks_across_the_columns_of_a_row(qix: QixClient) -> None:
    """Spec §5: HRank is Rank across a pivot's columns, per row; NULL in a straight table."""
    props = pivot(["Customer", "OrderId"], ["HRank(Sum(Amount))"], qNoOfLeftDims=1)
    obj = qix.handle_of("CreateSessionObject", [props], 1)
    page = hypercube(qix, obj)["qPivotDataPages"][0]
    customers = sorted(set(ORDERS["Customer"]) | set(CUSTOMERS["Customer"]))  # e: no orders
    order_ids = sorted(ORDERS["OrderId"])
    assert [n["qText"] for n in page["qTop"]] == [str(o) for o in order_ids]
    expected = []
    for customer in customers:
        mine = orders(customer=customer)
        amounts = sorted((ORDERS["Amount"][i] for i in mine), reverse=True)
        row: list[Any] = ["NaN"] * len(order_ids)
        for i in mine:
            row[order_ids.index(ORDERS["OrderId"][i])] = amounts.index(ORDERS["Amount"][i]) + 1
        expected.append(row)
    assert numbers(page) == expected
    straight = {
        "qInfo": {"qType": "table"},
        "qHyperCubeDef": {
            "qDimensions": [{"qDef": {"qFieldDefs": ["Customer"]}}],
            "qMeasures": [{"qDef": {"qDef": "HRank(Sum(Amount))"}}],
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": 10}],
        },
    }
    table = qix.handle_of("CreateSessionObject", [straight], 1)
    matrix = hypercube(qix, table)["qDataPages"][0]["qMatrix"]
    assert [row[1]["qText"] for row in matrix] == ["-"] * len(customers)


def pivot_numbers(qix: QixClient, dims: list[str], measure: str) -> list[list[Any]]:
    """The cells of a pivot with the first dimension on the left, the second on top."""
    obj = qix.handle_of("CreateSessionObject", [pivot(dims, [measure], qNoOfLeftDims=1)], 1)
    return numbers(hypercube(qix, obj)["qPivotDataPages"][0])


def test_rows_and_above_down_a_pivot_column(qix: QixClient) -> None:
    """Spec §5 in a pivot: RowNo, NoOfRows and Above read one column of the top dimension
    (Customer on the left, Region on top), not the straight table's rows of a customer."""
    customers = sorted(set(ORDERS["Customer"]) | set(CUSTOMERS["Customer"]))
    regions = [*REGIONS, "-"]
    column = {r: [c for c in customers if [r, c] in PAIRS] for r in regions}
    rows = []
    above = []
    for customer in customers:
        row: list[Any] = ["NaN"] * len(regions)
        up: list[Any] = ["NaN"] * len(regions)
        for j, region in enumerate(regions):
            if customer in column[region]:
                i = column[region].index(customer)
                row[j] = (i + 1) * 10 + len(column[region])
                if i > 0:
                    up[j] = total(orders(customer=column[region][i - 1]))
        rows.append(row)
        above.append(up)
    # Sum(Amount) brings d's order without a region (the cells come from the records the
    # aggregations read).
    rows_measure = "RowNo() * 10 + NoOfRows() + 0 * Sum(Amount)"
    assert pivot_numbers(qix, ["Customer", "Region"], rows_measure) == rows
    assert pivot_numbers(qix, ["Customer", "Region"], "Above(Sum(Amount))") == above
    assert any(n != "NaN" for r in above for n in r)


def test_before_and_column_numbers_across_a_pivot_row(qix: QixClient) -> None:
    """Spec §5: Before, ColumnNo and NoOfColumns read the cells of a row across the top
    dimension (each customer's orders)."""
    customers = sorted(set(ORDERS["Customer"]) | set(CUSTOMERS["Customer"]))
    order_ids = sorted(ORDERS["OrderId"])
    numbers_expected, before = [], []
    for customer in customers:
        mine = sorted(ORDERS["OrderId"][i] for i in orders(customer=customer))
        row: list[Any] = ["NaN"] * len(order_ids)
        prev: list[Any] = ["NaN"] * len(order_ids)
        for k, order_id in enumerate(mine):
            row[order_ids.index(order_id)] = (k + 1) * 10 + len(mine)
            if k > 0:
                prev[order_ids.index(order_id)] = ORDERS["Amount"][mine[k - 1] - 1]
        numbers_expected.append(row)
        before.append(prev)
    dims = ["Customer", "OrderId"]
    assert pivot_numbers(qix, dims, "ColumnNo() * 10 + NoOfColumns()") == numbers_expected
    assert pivot_numbers(qix, dims, "Before(Sum(Amount))") == before


def test_pages_cut_nodes_with_up_and_down(qix: QixClient) -> None:
    props = pivot(["Region", "Customer"], ["Sum(Amount)", "Count(OrderId)"])
    props["qHyperCubeDef"]["qAlwaysFullyExpanded"] = True
    obj = qix.handle_of("CreateSessionObject", [props], 1)
    # Rows 1..2: North's second customer and South's only one; the Count column only.
    page = qix.result(
        "GetHyperCubePivotData",
        ["/qHyperCubeDef", [{"qTop": 1, "qLeft": 1, "qWidth": 1, "qHeight": 2}]],
        obj,
    )["qDataPages"][0]
    assert page["qArea"] == {"qLeft": 1, "qTop": 1, "qWidth": 1, "qHeight": 2}
    north, south = page["qLeft"]
    assert (north["qText"], north["qUp"], north["qDown"]) == ("North", 1, 0)
    assert [n["qText"] for n in north["qSubNodes"]] == [customers_of("North")[1]]
    assert (south["qText"], south["qUp"], south["qDown"]) == ("South", 0, 0)
    assert [n["qText"] for n in page["qTop"]] == ["Count(OrderId)"]
    assert numbers(page) == [
        [float(len(orders("North", customers_of("North")[1])))],
        [float(len(orders("South", "b")))],
    ]
    # Past the end: an empty page; too many cells: 7009; a straight cube's pages: error 8.
    past = qix.result(
        "GetHyperCubePivotData",
        ["/qHyperCubeDef", [{"qTop": 99, "qLeft": 0, "qWidth": 2, "qHeight": 5}]],
        obj,
    )["qDataPages"][0]
    assert past["qData"] == []
    assert past["qLeft"] == []
    assert past["qArea"]["qHeight"] == 0
    big = [{"qTop": 0, "qLeft": 0, "qWidth": 101, "qHeight": 100}]
    answer = qix.call("GetHyperCubePivotData", ["/qHyperCubeDef", big], obj)
    assert answer["error"]["code"] == 7009


def test_select_pivot_cells(qix: QixClient) -> None:
    props = pivot(["Region", "Customer"], ["Sum(Amount)"], qNoOfLeftDims=1)
    obj = qix.handle_of("CreateSessionObject", [props], 1)
    customers = sorted(CUSTOMERS["Customer"] + ["d"])
    cells = [{"qType": "L", "qRow": 1, "qCol": 0}, {"qType": "T", "qRow": 0, "qCol": 0}]
    answer = qix.call("SelectPivotCells", ["/qHyperCubeDef", cells], obj)
    assert answer["result"] == {"qSuccess": True}
    assert obj in answer["change"]
    selection = qix.handle_of(
        "CreateSessionObject", [{"qInfo": {"qType": "cs"}, "qSelectionObjectDef": {}}], 1
    )
    shown = qix.result("GetLayout", [], selection)["qLayout"]["qSelectionObject"]["qSelections"]
    assert {s["qField"]: s["qSelected"] for s in shown} == {
        "Region": REGIONS[1],
        "Customer": customers[0],
    }
    # South and a: no combination, so the pivot is empty now.
    assert hypercube(qix, obj)["qSize"]["qcy"] == 0
    qix.result("ClearAll", [], 1)
    for bad in ({"qType": "D", "qRow": 0, "qCol": 0}, {"qType": "L", "qRow": 50, "qCol": 0}):
        answer = qix.call("SelectPivotCells", ["/qHyperCubeDef", [bad]], obj)
        assert answer["error"]["code"] == 8


def test_pages_of_a_wide_side_cross_its_regions_and_totals(qix_server: QixServer) -> None:
    """Three regions of 1,500 customers each, every region expanded, a total below each
    region's customers: pages across a region's end, a page at the very end, and a selection
    of a customer deep in the second region read the nodes and cells they show."""
    regions = ["East", "North", "West"]
    customers = [f"c{i:05d}" for i in range(4500)]  # ascii order is the numbers' order
    region_of = {c: regions[i // 1500] for i, c in enumerate(customers)}
    amount_of = {c: float(i % 97 + 1) for i, c in enumerate(customers)}
    rows = [c for c in customers for _ in range(2)]  # two rows each
    sales: dict[str, list[object]] = {
        "Customer": list(rows),
        "Region": [region_of[c] for c in rows],
        "Amount": [amount_of[c] for c in rows],
    }
    app = qix_server.import_app({"Sales": sales})
    props = pivot(["Region", "Customer"], ["Sum(Amount)"])
    props["qHyperCubeDef"]["qDimensions"][1]["qOtherTotalSpec"] = {"qTotalMode": "TOTAL_EXPR"}
    # The display's rows: each region's 1,500 customers, then its total.
    shown = [
        (region, customer)
        for i, region in enumerate(regions)
        for customer in [*customers[1500 * i : 1500 * (i + 1)], "Totals"]
    ]

    def want(row: tuple[str, str]) -> float:
        region, customer = row
        if customer == "Totals":
            return sum(2 * amount_of[c] for c in customers if region_of[c] == region)
        return 2 * amount_of[customer]

    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        qix.open_doc(app)
        obj = qix.handle_of("CreateSessionObject", [props], 1)
        qix.result("ExpandLeft", ["/qHyperCubeDef", 0, 0, True], obj)
        assert hypercube(qix, obj)["qSize"] == {"qcx": 1, "qcy": len(shown)}
        for top, height in ((1495, 10), (len(shown) - 3, 10), (3000, 3)):
            page = qix.result(
                "GetHyperCubePivotData",
                ["/qHyperCubeDef", [{"qTop": top, "qLeft": 0, "qWidth": 1, "qHeight": height}]],
                obj,
            )["qDataPages"][0]
            expected = shown[top : top + height]
            assert page["qArea"]["qHeight"] == len(expected)
            assert left_texts(page["qLeft"]) == [list(row) for row in expected]
            assert numbers(page) == [[want(row)] for row in expected]
            leaves = [node for region in page["qLeft"] for node in region["qSubNodes"]]
            assert [n["qType"] for n in leaves] == [
                "T" if c == "Totals" else "N" for _, c in expected
            ]
            assert all(n["qUp"] == n["qDown"] == 0 for n in leaves)
            # A region's node counts its rows above and below the page.
            first, last = page["qLeft"][0], page["qLeft"][-1]
            assert first["qUp"] == top - 1501 * regions.index(first["qText"])
            end = 1501 * (regions.index(last["qText"]) + 1)
            assert last["qDown"] == max(0, end - (top + height))
        # Row 2,000 of the display: the second region's 499th customer (after 1,500 + a total).
        picked = customers[1500 + 2000 - 1501]
        cell = {"qType": "L", "qRow": 2000, "qCol": 1}
        assert qix.result("SelectPivotCells", ["/qHyperCubeDef", [cell]], obj) == {"qSuccess": True}
        page = hypercube(qix, obj)["qPivotDataPages"][0]
        assert left_texts(page["qLeft"]) == [["North", picked], ["North", "Totals"]]
        assert numbers(page) == [[2 * amount_of[picked]], [2 * amount_of[picked]]]


def test_cells_of_a_wide_top_side_read_their_rows(qix_server: QixServer) -> None:
    """Customer on top, 3,000 of them, by region on the left: a page far along the columns
    reads each cell's row of the (Region, Customer) cube, and a customer with no row in a
    region is a NULL cell."""
    regions = ["East", "North", "West"]
    customers = [f"c{i:04d}" for i in range(3000)]
    # Each customer buys in one or two regions.
    pairs = [(regions[i % 3], c) for i, c in enumerate(customers)]
    pairs += [(regions[(i + 1) % 3], c) for i, c in enumerate(customers) if i % 4 == 0]
    sales: dict[str, list[object]] = {
        "Region": [r for r, _ in pairs],
        "Customer": [c for _, c in pairs],
        "Amount": [float(len(c) + i % 5) for i, (_, c) in enumerate(pairs)],
    }
    amount = {(r, c): a for r, c, a in zip(*sales.values(), strict=True)}
    app = qix_server.import_app({"Sales": sales})
    props = pivot(["Region", "Customer"], ["Sum(Amount)"], qNoOfLeftDims=1)
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        qix.open_doc(app)
        obj = qix.handle_of("CreateSessionObject", [props], 1)
        qix.result("ExpandTop", ["/qHyperCubeDef", 0, 0, True], obj)
        left, width = 2000, 40
        page = qix.result(
            "GetHyperCubePivotData",
            ["/qHyperCubeDef", [{"qTop": 0, "qLeft": left, "qWidth": width, "qHeight": 3}]],
            obj,
        )["qDataPages"][0]
        assert [n["qText"] for n in page["qLeft"]] == regions
        shown = [n["qText"] for n in page["qTop"]]
        assert shown == customers[left : left + width]
        want = [[amount.get((r, c), "NaN") for c in shown] for r in regions]
        assert numbers(page) == want
