"""CreateObject on stored apps and DoSave: objects, master items, variables and bookmarks
stored in the app, served after a restart, carried by export and import."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from qixclient import QixClient, QixError

from appfiles import ServerProcess, package_bytes
from conftest import QixServer

SHEET = {
    "qInfo": {"qId": "sheet1", "qType": "sheet"},
    "qMetaDef": {"title": "Overview"},
    "qChildListDef": {"qData": {"title": "/title"}},
}
CHART = {
    "qInfo": {"qId": "chart1", "qType": "barchart"},
    "title": "By customer",
    "qHyperCubeDef": {
        "qDimensions": [{"qLibraryId": "dimC"}],
        "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": 10}],
    },
}


def _build(qix: QixClient, doc: int) -> None:
    qix.result(
        "CreateDimension", [{"qInfo": {"qId": "dimC"}, "qDim": {"qFieldDefs": ["Customer"]}}], doc
    )
    qix.result(
        "CreateMeasure", [{"qInfo": {"qId": "mS"}, "qMeasure": {"qDef": "Sum(Amount)"}}], doc
    )
    qix.result(
        "CreateVariableEx", [{"qInfo": {"qId": "v1"}, "qName": "vKept", "qDefinition": "7"}], doc
    )
    qix.result("CreateSessionVariable", [{"qName": "vGone", "qDefinition": "1"}], doc)
    qix.result("AddAlternateState", ["Compare"], doc)
    qix.result("AddSessionAlternateState", ["Scratch"], doc)
    qix.result("AddAlternateState", ["Dropped"], doc)
    qix.result("RemoveAlternateState", ["Dropped"], doc)
    region = qix.handle_of("GetField", ["Region"], doc)
    qix.result("SelectValues", [[{"qText": "South"}]], region)
    qix.result("CreateBookmark", [{"qInfo": {"qId": "bm1"}, "qMetaDef": {"title": "South"}}], doc)
    made = qix.result("CreateObject", [SHEET], doc)
    assert made["qInfo"] == {"qId": "sheet1", "qType": "sheet"}
    sheet = made["qReturn"]["qHandle"]
    qix.result("CreateChild", [CHART], sheet)
    temp = qix.result("CreateObject", [{"qInfo": {"qId": "temp", "qType": "sheet"}}], doc)
    assert temp["qInfo"]["qId"] == "temp"
    gone = qix.call("DestroyObject", ["temp"], doc)
    assert gone["result"] == {"qSuccess": True}
    assert gone["close"] == [temp["qReturn"]["qHandle"]]
    assert qix.result("DestroyObject", ["temp"], doc) == {"qSuccess": False}


def _check(qix: QixClient, doc: int, fresh: bool = True) -> None:
    """What DoSave stored is served (`fresh`: in a session that did not make it)."""
    sheet = qix.handle_of("GetObject", ["sheet1"], doc)
    layout = qix.result("GetLayout", [], sheet)["qLayout"]
    assert layout["qChildList"]["qItems"][0]["qInfo"] == {"qId": "chart1", "qType": "barchart"}
    assert layout["qChildList"]["qItems"][0]["qData"] == {"title": "By customer"}
    chart = qix.handle_of("GetChild", ["chart1"], sheet)
    cube = qix.result("GetLayout", [], chart)["qLayout"]["qHyperCube"]
    assert cube["qDimensionInfo"][0]["qFallbackTitle"] == "Customer"
    with pytest.raises(QixError) as destroyed:
        qix.result("GetObject", ["temp"], doc)
    assert destroyed.value.code == 2
    assert (
        qix.result("GetMeasure", [], qix.handle_of("GetMeasure", ["mS"], doc))["qMeasure"]["qDef"]
        == "Sum(Amount)"
    )
    var = qix.handle_of("GetVariableByName", ["vKept"], doc)
    assert qix.result("GetLayout", [], var)["qLayout"]["qText"] == "7"
    states = qix.result("GetAppLayout", [], doc)["qLayout"]["qStateNames"]
    if fresh:  # session variables and session states are never stored
        with pytest.raises(QixError) as session_only:
            qix.result("GetVariableByName", ["vGone"], doc)
        assert session_only.value.code == 2
        assert states == ["Compare"]
    else:
        assert sorted(states) == ["Compare", "Scratch"]
    # The stored state selects on its own: a field in it, the default state untouched.
    customer = qix.handle_of("GetField", ["Customer", "Compare"], doc)
    assert qix.result("SelectValues", [[{"qText": "b"}]], customer) == {"qReturn": True}
    compared = qix.handle_of(
        "CreateSessionObject",
        [{"qInfo": {"qType": "S"}, "qStateName": "Compare", "qSelectionObjectDef": {}}],
        doc,
    )
    in_state = qix.result("GetLayout", [], compared)["qLayout"]["qSelectionObject"]
    assert [(s["qField"], s["qSelected"]) for s in in_state["qSelections"]] == [("Customer", "b")]
    qix.result("ClearAll", [False, "Compare"], doc)
    listing = qix.handle_of(
        "CreateSessionObject",
        [{"qInfo": {"qType": "A"}, "qAppObjectListDef": {"qType": "sheet"}}],
        doc,
    )
    items = qix.result("GetLayout", [], listing)["qLayout"]["qAppObjectList"]["qItems"]
    assert [i["qInfo"]["qId"] for i in items] == ["sheet1"]
    assert qix.result("ApplyBookmark", ["bm1"], doc) == {"qSuccess": True}
    sel = qix.handle_of(
        "CreateSessionObject", [{"qInfo": {"qType": "S"}, "qSelectionObjectDef": {}}], doc
    )
    selections = qix.result("GetLayout", [], sel)["qLayout"]["qSelectionObject"]["qSelections"]
    assert [(s["qField"], s["qSelected"]) for s in selections] == [("Region", "South")]


def test_do_save_survives_a_restart_and_travels_in_exports(tmp_path) -> None:
    data = tmp_path / "data"
    server = ServerProcess(data).start()
    try:
        app_id = QixServer(server).import_app()
        with QixClient(QixServer(server).ws_base + "/app") as qix:
            doc = qix.open_doc(app_id)
            _build(qix, doc)
            assert qix.result("DoSave", [], doc) == {}
            _check(qix, doc, fresh=False)  # the saving session goes on
        # Another socket that did not save sees what was saved.
        with QixClient(QixServer(server).ws_base + "/app") as qix:
            _check(qix, qix.open_doc(app_id))
        assert server.stopped_gracefully()
    finally:
        server.stop()
    server = ServerProcess(data).start()
    try:
        qix_server = QixServer(server)
        with QixClient(qix_server.ws_base + "/app") as qix:
            _check(qix, qix.open_doc(app_id))
        with server.client() as rest:
            exported = rest.get(f"/v1/apps/{app_id}/export")
            assert exported.status_code == 200
            manifest = json.loads(zipfile.ZipFile(io.BytesIO(exported.content)).read("app.json"))
            assert [o["id"] for o in manifest["objects"]] == ["sheet1"]
            assert manifest["objects"][0]["children"][0]["id"] == "chart1"
            assert [d["id"] for d in manifest["dimensions"]] == ["dimC"]
            assert [v["properties"]["qName"] for v in manifest["variables"]] == ["vKept"]
            assert manifest["bookmarks"][0]["selections"] == {"Region": ["South"]}
            assert manifest["states"] == ["Compare"]
            # The export imports as a new app that serves the same objects.
            imported = rest.post("/v1/apps/import", content=exported.content)
            assert imported.status_code == 200, imported.text
            copy_id = imported.json()["attributes"]["id"]
        with QixClient(qix_server.ws_base + "/app") as qix:
            _check(qix, qix.open_doc(copy_id))
    finally:
        server.stop()


def test_an_imported_package_with_objects_is_served(qix_server: QixServer) -> None:
    body = package_bytes(
        objects=[
            {
                "id": "s9",
                "type": "sheet",
                "approved": True,
                "properties": {"title": "T", "qInfo": {"qType": "sheet"}},
            }
        ],
        manifest=None,
    )
    with qix_server.process.client() as rest:
        app_id = rest.post("/v1/apps/import", content=body).json()["attributes"]["id"]
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.open_doc(app_id)
        obj = qix.handle_of("GetObject", ["s9"], doc)
        assert qix.result("GetLayout", [], obj)["qLayout"]["title"] == "T"


def test_do_save_errors(qix_server: QixServer, app_id: str) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.open_doc(app_id)
        with pytest.raises(QixError) as named:
            qix.result("DoSave", ["/tmp/elsewhere.qvf"], doc)
        assert named.value.code == 8
    with QixClient(qix_server.ws_base + "/app") as qix:
        session_app = qix.handle_of("CreateSessionApp")
        with pytest.raises(QixError) as session_app_save:
            qix.result("DoSave", [], session_app)
        assert session_app_save.value.code == 20


def test_bad_library_in_app_json_is_refused_at_import(qix_server: QixServer) -> None:
    for bad in (
        {"dimensions": {"x": 1}},
        {"measures": [{"id": "m", "properties": 3}]},
        {"variables": [{"properties": {}}]},
        {"bookmarks": [{"id": "b", "properties": {}, "selections": {"F": 1}}]},
        {"objects": [{"id": "o", "children": [{"type": "x"}]}]},
        {"states": "Compare"},
        {"states": ["$"]},
        {"states": ["A", "A"]},
        {"states": [7]},
    ):
        manifest = {
            "format": "assoc-app",
            "formatVersion": 1,
            "attributes": {},
            "tables": [{"name": "Orders", "file": "tables/Orders.qvd"}],
            "objects": [],
            **bad,
        }
        with qix_server.process.client() as rest:
            answer = rest.post("/v1/apps/import", content=package_bytes(manifest=manifest))
        assert answer.status_code == 422, (bad, answer.text)
        assert answer.json()["errors"][0]["code"] == "InvalidAppFile"
