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
