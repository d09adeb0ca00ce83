"""Section access over QIX: the token's user opens the app reduced to their rows, in cubes,
list objects and GetTableData; a user the access table lacks is refused."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from qixclient import QixClient, QixError

import assoc
from appfiles import ServerProcess
from assoc.package import Manifest, write_package

SECRET = "a-secret-that-is-long-enough-for-sha256"
SCRIPT = """
Section Access;
LOAD * INLINE [
ACCESS, USERID, GROUP, REGION
USER, ann, , EAST
USER, bob, , WEST
USER, , north team, NORTH
];
Section Application;
Sales:
LOAD * INLINE [
REGION, Product, AMOUNT
EAST, A, 10
EAST, B, 20
WEST, C, 5
NORTH, D, 7
];
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, str]]:
    data = Path(tmp_path_factory.mktemp("secaccess")) / "data"
    process = ServerProcess(data, "ValidateJsonWebTokens=2", f"JsonWebTokenSecret={SECRET}").start()
    try:
        app = assoc.App.from_script(SCRIPT)
        out = io.BytesIO()
        write_package(app.stored_tables, app.write_qvd, Manifest(tables=[]), None, out)
        token = jwt.encode({"sub": "ann"}, SECRET, algorithm="HS256")
        with process.client() as client:
            response = client.post(
                "/v1/apps/import",
                content=out.getvalue(),
                headers={"Authorization": f"Bearer {token}"},
            )
            assert response.status_code == 200, response.text
            yield process, response.json()["attributes"]["id"]
    finally:
        process.stop()


def _client(server: tuple[ServerProcess, str], claims: dict[str, Any]) -> QixClient:
    process, app_id = server
    token = jwt.encode(claims, SECRET, algorithm="HS256")
    url = "ws" + process.base_url.removeprefix("http") + f"/app/{app_id}"
    return QixClient(url, {"Authorization": f"Bearer {token}"})


def _everything(qix: QixClient, app_id: str) -> dict[str, Any]:
    doc = qix.open_doc(app_id)
    cube_props = {
        "qInfo": {"qType": "table"},
        "qHyperCubeDef": {
            "qDimensions": [{"qDef": {"qFieldDefs": ["Product"]}}],
            "qMeasures": [{"qDef": {"qDef": "Sum(AMOUNT)"}}],
            "qInitialDataFetch": [{"qHeight": 50, "qWidth": 2}],
        },
    }
    cube = qix.result("GetLayout", [], qix.handle_of("CreateSessionObject", [cube_props], doc))
    cube = cube["qLayout"]["qHyperCube"]
    lists = {}
    for field in ("REGION", "Product"):
        props = {
            "qInfo": {"qType": "listbox"},
            "qListObjectDef": {
                "qDef": {"qFieldDefs": [field]},
                "qShowAlternatives": True,
                "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 50}],
            },
        }
        obj = qix.handle_of("CreateSessionObject", [props], doc)
        page = qix.result("GetLayout", [], obj)["qLayout"]["qListObject"]["qDataPages"][0]
        lists[field] = {row[0]["qText"]: row[0]["qState"] for row in page["qMatrix"]}
    table = qix.result("GetTableData", [0, 100, True, "Sales"], doc)["qData"]
    return {
        "rows": [[c["qText"] for c in row] for row in cube["qDataPages"][0]["qMatrix"]],
        "total": [c["qText"] for c in cube["qGrandTotalRow"]],
        "lists": lists,
        "table": [[v["qText"] for v in row["qValue"]] for row in table],
    }


def test_each_user_sees_only_their_rows(server: tuple[ServerProcess, str]) -> None:
    _, app_id = server
    with _client(server, {"sub": "ANN"}) as qix:
        ann = _everything(qix, app_id)
    with _client(server, {"sub": "bob"}) as qix:
        bob = _everything(qix, app_id)
    with _client(server, {"sub": "carl", "groups": ["North Team"]}) as qix:
        carl = _everything(qix, app_id)
    assert ann["rows"] == [["A", "10"], ["B", "20"]]
    assert ann["total"] == ["30"]
    assert ann["lists"] == {"REGION": {"EAST": "O"}, "Product": {"A": "O", "B": "O"}}
    assert ann["table"] == [["EAST", "A", "10"], ["EAST", "B", "20"]]
    assert bob["rows"] == [["C", "5"]]
    assert bob["total"] == ["5"]
    assert bob["lists"] == {"REGION": {"WEST": "O"}, "Product": {"C": "O"}}
    assert bob["table"] == [["WEST", "C", "5"]]
    assert carl["table"] == [["NORTH", "D", "7"]]


def test_absent_user_refused(server: tuple[ServerProcess, str]) -> None:
    _, app_id = server
    for claims in ({"sub": "zed"}, {"sub": "carl", "groups": ["south"]}):
        with _client(server, claims) as qix, pytest.raises(QixError) as refused:
            qix.open_doc(app_id)
        assert (refused.value.code, refused.value.message) == (5, "Access denied")
