"""Calculated dimensions (`=expr` in qFieldDefs) over QIX against a real `assoc serve`: the
layout's rows and values, and SelectHyperCubeValues translated to the source field (spec
chart-expressions §7, Shop app)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from qixclient import QixClient

from conftest import QixServer
from shop import SHOP

pytestmark = pytest.mark.server

LARGE = "=If(Amount>=30,'Large','Small')"
BIG = "=Aggr(If(Sum(Amount)>50,'Big','Other'), Customer)"


@pytest.fixture(scope="module")
def shop_id(qix_server: QixServer) -> str:
    return qix_server.import_app(SHOP)


@pytest.fixture
def qix(qix_server: QixServer, shop_id: str) -> Iterator[QixClient]:
    with QixClient(qix_server.ws_base + f"/app/{shop_id}") as client:
        client.open_doc(shop_id)
        yield client


def props(dimension: str, **more: Any) -> dict[str, Any]:
    definition: dict[str, Any] = {
        "qDimensions": [{"qDef": {"qFieldDefs": [dimension]}, **more}],
        "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
        "qInitialDataFetch": [{"qHeight": 20, "qWidth": 2}],
    }
    return {"qInfo": {"qType": "table"}, "qHyperCubeDef": definition}


def layout(qix: QixClient, obj: int) -> dict[str, Any]:
    cube: dict[str, Any] = qix.result("GetLayout", [], obj)["qLayout"]["qHyperCube"]
    return cube


def matrix(cube: dict[str, Any]) -> list[tuple[str, str, float]]:
    return [(r[0]["qText"], r[0]["qState"], r[1]["qNum"]) for r in cube["qDataPages"][0]["qMatrix"]]


def test_layout_of_calculated_dimensions(qix: QixClient) -> None:
    obj = qix.handle_of("CreateSessionObject", [props(LARGE)], 1)
    cube = layout(qix, obj)
    assert "qError" not in cube
    assert matrix(cube) == [("Large", "O", 120), ("Small", "O", 60)]
    info = cube["qDimensionInfo"][0]
    assert info["qFallbackTitle"] == LARGE
    assert info["qCardinal"] == 2
    assert [c["qNum"] for c in cube["qGrandTotalRow"]] == [180]

    classes = qix.handle_of("CreateSessionObject", [props("=Class(Amount, 20)")], 1)
    rows = matrix(layout(qix, classes))
    assert rows == [
        ("0 <= x < 20", "O", 15),
        ("20 <= x < 40", "O", 75),
        ("40 <= x < 60", "O", 90),
    ]
    cell = layout(qix, classes)["qDataPages"][0]["qMatrix"][1][0]
    assert cell["qNum"] == 20


def test_null_results_and_null_suppression(qix: QixClient) -> None:
    dim = "=If(Amount > 20, Upper(Product))"
    obj = qix.handle_of("CreateSessionObject", [props(dim)], 1)
    cube = layout(qix, obj)
    assert [r[:1] + r[2:] for r in matrix(cube)] == [
        ("BOLT", 80),
        ("NUT", 25),
        ("WASHER", 40),
        ("-", 35),
    ]
    assert cube["qDataPages"][0]["qMatrix"][-1][0]["qIsNull"] is True
    hidden = qix.handle_of("CreateSessionObject", [props(dim, qNullSuppression=True)], 1)
    assert [r[0] for r in matrix(layout(qix, hidden))] == ["BOLT", "NUT", "WASHER"]


def test_select_in_a_calculated_dimension_selects_the_source_field(qix: QixClient) -> None:
    obj = qix.handle_of("CreateSessionObject", [props(LARGE)], 1)
    large = layout(qix, obj)["qDataPages"][0]["qMatrix"][0][0]
    assert large["qText"] == "Large"
    answer = qix.call(
        "SelectHyperCubeValues", ["/qHyperCubeDef", 0, [large["qElemNumber"]], False], obj
    )
    assert answer["result"] == {"qSuccess": True}
    assert matrix(layout(qix, obj)) == [("Large", "S", 120)]
    amounts = qix.handle_of("CreateSessionObject", [props("Amount")], 1)
    assert [(t, s) for t, s, _ in matrix(layout(qix, amounts))] == [
        ("30", "S"),
        ("40", "S"),
        ("50", "S"),
    ]
    qix.result("ClearAll", [], 1)


def test_select_in_an_aggr_dimension_selects_its_dimension_values(qix: QixClient) -> None:
    obj = qix.handle_of("CreateSessionObject", [props(BIG)], 1)
    rows = layout(qix, obj)["qDataPages"][0]["qMatrix"]
    assert [(r[0]["qText"], r[1]["qNum"]) for r in rows] == [("Big", 125), ("Other", 55)]
    qix.result(
        "SelectHyperCubeValues", ["/qHyperCubeDef", 0, [rows[0][0]["qElemNumber"]], False], obj
    )
    customers = qix.handle_of("CreateSessionObject", [props("Customer")], 1)
    assert [(t, s, v) for t, s, v in matrix(layout(qix, customers))] == [
        ("Bob", "S", 70),
        ("Carol", "S", 55),
    ]
    assert matrix(layout(qix, obj)) == [("Big", "S", 125)]
    qix.result("ClearAll", [], 1)


def test_errors_of_calculated_dimensions(qix: QixClient) -> None:
    obj = qix.handle_of("CreateSessionObject", [props("=Sum(Amount)")], 1)
    error = layout(qix, obj)["qError"]
    assert "an aggregation (Sum) outside Aggr" in error["qExtendedMessage"]
    assert "at position 1" in error["qExtendedMessage"]
    several = qix.handle_of("CreateSessionObject", [props("=Product & Country")], 1)
    assert "fields of more than one table" in layout(qix, several)["qError"]["qExtendedMessage"]
    mixed = qix.handle_of("CreateSessionObject", [props("=Product & Year")], 1)
    answer = qix.call("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [0], False], mixed)
    assert "reads several fields" in answer["error"]["message"] + str(answer["error"])


def test_values_follow_reloads_across_more_dimensions_than_are_kept(qix_server: QixServer) -> None:
    """A calculated dimension's values are kept between layouts (facts.KEPT_CALCULATED of
    them); eleven texts over two reloads each show their own values of the data loaded."""
    texts = [f"='{letter}' & N" for letter in "abcdefghijk"]
    with QixClient(qix_server.ws_base + "/app/") as qix:
        doc = qix.result("CreateSessionApp")["qReturn"]["qHandle"]
        objects = [qix.handle_of("CreateSessionObject", [props(t)], doc) for t in texts]
        for rows in (3, 5):
            script = f"T: LOAD RecNo() AS N, RecNo() * 10 AS Amount AUTOGENERATE {rows};"
            qix.result("SetScript", [script], doc)
            assert qix.result("DoReload", [], doc)["qReturn"] is True
            for _ in range(2):
                for text, obj in zip(texts, objects, strict=True):
                    shown = [(t, s, n) for t, s, n in matrix(layout(qix, obj))]
                    assert shown == [(f"{text[2]}{n}", "O", n * 10) for n in range(1, rows + 1)]
