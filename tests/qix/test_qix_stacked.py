"""Stacked hypercubes (qMode K) over a real `assoc serve`: the tree of the first and second
dimension with one leaf per measure, stack sums, paging over the first dimension, errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from qixclient import QixClient, QixError

from conftest import CUSTOMERS, ORDERS, QixServer

pytestmark = pytest.mark.server

REGION_OF = dict(zip(CUSTOMERS["Customer"], CUSTOMERS["Region"], strict=True))


@pytest.fixture
def qix(qix_server: QixServer, app_id: str) -> Iterator[tuple[QixClient, int]]:
    with QixClient(qix_server.ws_base + "/app/engineData") as client:
        yield client, client.open_doc(app_id)


def stacked(height: int = 50) -> dict[str, Any]:
    return {
        "qInfo": {"qType": "barchart"},
        "qHyperCubeDef": {
            "qMode": "K",
            "qAlwaysFullyExpanded": True,
            "qDimensions": [
                {"qDef": {"qFieldDefs": [f], "qSortCriterias": [{"qSortByAscii": 1}]}}
                for f in ("Region", "Customer")
            ],
            "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}, {"qDef": {"qDef": "-Count(OrderId)"}}],
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 4, "qHeight": height}],
        },
    }


def expected() -> dict[str, dict[str, tuple[float, float]]]:
    """Region -> customer -> (Sum(Amount), -Count(OrderId)) over the orders (NULL region "-")."""
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for c, r in REGION_OF.items():  # a customer without orders: 0 and 0
        out.setdefault(r, {})[c] = (0.0, 0.0)
    for c, a in zip(ORDERS["Customer"], ORDERS["Amount"], strict=True):
        region = REGION_OF.get(c, "-")
        total, count = out.setdefault(region, {}).get(c, (0.0, 0.0))
        out[region][c] = (total + a, count - 1)
    return out


def tree(root: dict[str, Any]) -> dict[str, dict[str, tuple[float, float]]]:
    return {
        region["qText"]: {
            customer["qText"]: tuple(leaf["qValue"] for leaf in customer["qSubNodes"])
            for customer in region["qSubNodes"]
        }
        for region in root["qSubNodes"]
    }


def test_stacked_tree_and_sums(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    handle = client.handle_of("CreateSessionObject", [stacked()], doc)
    cube = client.result("GetLayout", [], handle)["qLayout"]["qHyperCube"]
    want = expected()
    assert cube["qMode"] == "K"
    assert cube["qDataPages"] == []
    assert cube["qSize"]["qcy"] == len(want)
    root = cube["qStackedDataPages"][0]["qData"][0]
    assert root["qType"] == "R"
    assert tree(root) == want
    assert [r["qText"] for r in root["qSubNodes"]] == [*sorted(r for r in want if r != "-"), "-"]
    for region in root["qSubNodes"]:
        assert region["qMaxPos"] == sum(v[0] for v in want[region["qText"]].values())
        assert region["qMinNeg"] == sum(v[1] for v in want[region["qText"]].values())
    # Pages over the first dimension's nodes.
    pages = client.result(
        "GetHyperCubeStackData",
        ["/qHyperCubeDef", [{"qTop": 1, "qLeft": 0, "qWidth": 4, "qHeight": 1}]],
        handle,
    )["qDataPages"]
    page_root = pages[0]["qData"][0]
    assert [r["qText"] for r in page_root["qSubNodes"]] == [root["qSubNodes"][1]["qText"]]
    assert (pages[0]["qArea"]["qTop"], pages[0]["qArea"]["qHeight"]) == (1, 1)
    assert (page_root["qUp"], page_root["qDown"]) == (1, len(want) - 2)


def test_stack_data_of_other_cubes_is_an_error(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    props = stacked()
    props["qHyperCubeDef"]["qMode"] = "S"
    handle = client.handle_of("CreateSessionObject", [props], doc)
    with pytest.raises(QixError) as caught:
        client.result(
            "GetHyperCubeStackData", ["/qHyperCubeDef", [{"qTop": 0, "qHeight": 1}]], handle
        )
    assert caught.value.code == 8


def test_stack_pages_hold_at_most_their_cells(qix_server: QixServer) -> None:
    """A stacked layout's pages hold at most qMaxStackedCells measure cells (5,000 unless the
    definition says), GetHyperCubeStackData's at most qMaxNbrCells (10,000): whole
    first-dimension nodes while they fit, the first one cut when it alone holds more."""
    customers = [f"c{i:04d}" for i in range(3000)]
    region_of = {c: ["East", "North", "West"][i // 1000] for i, c in enumerate(customers)}
    sales: dict[str, list[object]] = {
        "Customer": list(customers),
        "Region": [region_of[c] for c in customers],
        "Amount": [float(i % 7) for i in range(3000)],
    }
    app = qix_server.import_app({"Sales": sales})
    props = stacked(height=3)
    measures = props["qHyperCubeDef"]["qMeasures"]
    measures[1] = {"qDef": {"qDef": "Count(Amount)"}}
    with QixClient(qix_server.ws_base + "/app/engineData") as client:
        handle = client.handle_of("CreateSessionObject", [props], client.open_doc(app))
        cube = client.result("GetLayout", [], handle)["qLayout"]["qHyperCube"]
        assert cube["qSize"]["qcy"] == 3
        page = cube["qStackedDataPages"][0]
        root = page["qData"][0]
        # 2 measures x 1,000 customers a region: two regions (4,000 cells) fit in 5,000.
        assert [r["qText"] for r in root["qSubNodes"]] == ["East", "North"]
        assert [len(r["qSubNodes"]) for r in root["qSubNodes"]] == [1000, 1000]
        assert (page["qArea"]["qHeight"], root["qUp"], root["qDown"]) == (2, 0, 1)

        def stack_data(top: int, height: int, *limit: object) -> dict[str, Any]:
            page = {"qTop": top, "qLeft": 0, "qWidth": 4, "qHeight": height}
            params = ["/qHyperCubeDef", [page], *limit]
            pages = client.result("GetHyperCubeStackData", params, handle)["qDataPages"]
            return dict(pages[0])

        whole = stack_data(0, 3)["qData"][0]  # 6,000 cells within 10,000
        assert [len(r["qSubNodes"]) for r in whole["qSubNodes"]] == [1000, 1000, 1000]
        cut = stack_data(1, 2, 1000)  # North alone holds 2,000 cells: its first 500 customers
        north = cut["qData"][0]["qSubNodes"]
        assert [r["qText"] for r in north] == ["North"]
        assert [c["qText"] for c in north[0]["qSubNodes"]] == customers[1000:1500]
        assert cut["qArea"]["qHeight"] == 1
        assert stack_data(0, 3, 0) == stack_data(0, 3)  # 0: the default, as the .NET SDK sends
        with pytest.raises(QixError) as caught:
            stack_data(0, 3, "many")
        assert caught.value.code in (8, -32602)
        props["qHyperCubeDef"]["qMaxStackedCells"] = 100_000
        client.result("SetProperties", [props], handle)
        cube = client.result("GetLayout", [], handle)["qLayout"]["qHyperCube"]
        assert cube["qStackedDataPages"][0]["qArea"]["qHeight"] == 3
