"""The apps and the app's entities as QIX lists them, against a real `assoc serve`:
Global.GetDocList / GetAppEntry (what corectl's `app ls` and its app checks send),
Doc.GetAllInfos (corectl's `objects` and `unbuild`), Doc.GetAppProperties, and the Field
methods ClearAllButThis and GetNxProperties."""

from __future__ import annotations

import datetime
import json

import pytest
from qixclient import QixClient, QixError

from conftest import QixServer

SERIAL_EPOCH = datetime.datetime(1899, 12, 30, tzinfo=datetime.timezone.utc)


def test_doc_list_names_every_app_as_rest_does(qix_server: QixServer, app_id: str) -> None:
    other = qix_server.import_app({"T": {"x": [1, 2]}})
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        docs = qix.result("GetDocList")["qDocList"]
    rest = qix_server.rest_apps()
    assert [d["qDocId"] for d in docs] == [a["id"] for a in rest]
    by_id = {d["qDocId"]: d for d in docs}
    assert {app_id, other} <= set(by_id)
    for attributes in rest:
        entry = by_id[attributes["id"]]
        assert entry["qDocName"] == entry["qTitle"] == attributes["name"]
        assert entry["qLastReloadTime"] == attributes["lastReloadTime"]
        assert entry["qReadOnly"] is False
        assert entry["qThumbnail"] == {"qUrl": attributes.get("thumbnail") or ""}
        modified = datetime.datetime.fromisoformat(
            str(attributes["modifiedDate"]).replace("Z", "+00:00")
        )
        days = (modified - SERIAL_EPOCH) / datetime.timedelta(days=1)
        assert entry["qFileTime"] == pytest.approx(days, abs=1e-6)


def test_app_entry_by_id_or_name_and_unknown_apps(qix_server: QixServer, app_id: str) -> None:
    name = next(a["name"] for a in qix_server.rest_apps() if a["id"] == app_id)
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        entry = qix.result("GetAppEntry", [app_id])["qEntry"]
        assert entry["qID"] == entry["qPath"] == app_id
        assert entry["qTitle"] == name
        assert entry["qReadOnly"] is False
        if sum(a["name"] == name for a in qix_server.rest_apps()) == 1:
            assert qix.result("GetAppEntry", {"qAppID": name})["qEntry"]["qID"] == app_id
        with pytest.raises(QixError) as missing:
            qix.result("GetAppEntry", ["no-such-app"])
        assert missing.value.code == 1003


def test_all_infos_list_the_apps_entities_not_the_sessions(qix_server: QixServer) -> None:
    app = qix_server.import_app()
    with QixClient(qix_server.ws_base + f"/app/{app}") as qix:
        doc = qix.open_doc(app)
        assert qix.result("GetAllInfos", [], doc) == {"qInfos": []}
        dim = {"qInfo": {"qId": "dimC"}, "qDim": {"qFieldDefs": ["Customer"]}}
        qix.result("CreateDimension", [dim], doc)
        measure = {"qInfo": {"qId": "mS"}, "qMeasure": {"qDef": "Sum(Amount)"}}
        qix.result("CreateMeasure", [measure], doc)
        variable = {"qInfo": {"qId": "v1"}, "qName": "vKept", "qDefinition": "7"}
        qix.result("CreateVariableEx", [variable], doc)
        qix.result("CreateSessionVariable", [{"qName": "vGone", "qDefinition": "1"}], doc)
        qix.result("CreateBookmark", [{"qInfo": {"qId": "bm1"}}], doc)
        sheet = qix.result("CreateObject", [{"qInfo": {"qId": "sheet1", "qType": "sheet"}}], doc)
        chart = {"qInfo": {"qId": "chart1", "qType": "barchart"}}
        qix.result("CreateChild", [chart], sheet["qReturn"]["qHandle"])
        qix.result("CreateSessionObject", [{"qInfo": {"qId": "mine", "qType": "listbox"}}], doc)
        infos = qix.result("GetAllInfos", [], doc)["qInfos"]
        assert sorted((i["qId"], i["qType"]) for i in infos) == [
            ("bm1", "bookmark"),
            ("chart1", "barchart"),
            ("dimC", "dimension"),
            ("mS", "measure"),
            ("sheet1", "sheet"),
            ("v1", "variable"),
        ]
        qix.result("DestroyObject", ["sheet1"], doc)
        left = {i["qId"] for i in qix.result("GetAllInfos", [], doc)["qInfos"]}
        assert left == {"bm1", "dimC", "mS", "v1"}


def test_app_properties(qix_server: QixServer, app_id: str, qix: QixClient) -> None:
    name = next(a for a in qix_server.rest_apps() if a["id"] == app_id)
    doc = qix.result("GetActiveDoc")["qReturn"]["qHandle"]
    props = qix.result("GetAppProperties", [], doc)["qProp"]
    assert props["qTitle"] == name["name"]
    assert props["qLastReloadTime"] == name["lastReloadTime"]
    assert props["qSavedInProductVersion"] == "12.792.0"  # the server's EngineVersion setting
    assert props["qHasSectionAccess"] is False
    assert props["qThumbnail"] == {"qUrl": ""}


def test_clear_all_but_this_keeps_the_field_and_locked_ones(qix: QixClient) -> None:
    doc = qix.result("GetActiveDoc")["qReturn"]["qHandle"]
    customer = qix.handle_of("GetField", ["Customer"], doc)
    region = qix.handle_of("GetField", ["Region"], doc)
    amount = qix.handle_of("GetField", ["Amount"], doc)
    qix.result("SelectValues", [[{"qText": "a"}, {"qText": "b"}]], customer)
    qix.result("SelectValues", [[{"qText": "North"}, {"qText": "South"}]], region)
    qix.result("SelectValues", [[{"qIsNumeric": True, "qNumber": 10}]], amount)
    assert qix.result("Lock", [], amount) == {"qReturn": True}

    def fields() -> dict[str, list[str]]:
        obj = qix.handle_of(
            "CreateSessionObject",
            [{"qInfo": {"qType": "cs"}, "qSelectionObjectDef": {}}],
            doc,
        )
        items = qix.result("GetLayout", [], obj)["qLayout"]["qSelectionObject"]["qSelections"]
        qix.result("DestroySessionObject", [qix.result("GetInfo", [], obj)["qInfo"]["qId"]], doc)
        return {
            i["qField"]: sorted(v["qName"] for v in i["qSelectedFieldSelectionInfo"]) for i in items
        }

    assert set(fields()) == {"Customer", "Region", "Amount"}
    answer = qix.call("ClearAllButThis", [], region)
    assert answer["result"] == {"qReturn": True}
    assert answer.get("change")  # the charts of the doc are told
    assert fields() == {"Region": ["North", "South"], "Amount": ["10"]}
    qix.result("Back", [], doc)  # one step back: Customer's selection again
    assert set(fields()) == {"Customer", "Region", "Amount"}


def test_field_nx_properties(qix: QixClient) -> None:
    doc = qix.result("GetActiveDoc")["qReturn"]["qHandle"]
    field = qix.handle_of("GetField", ["Customer"], doc)
    assert qix.result("GetNxProperties", [], field) == {"qProperties": {"qOneAndOnlyOne": False}}


def test_delete_app_removes_it_and_closes_it_where_open(qix_server: QixServer) -> None:
    app = qix_server.import_app()
    with (
        QixClient(qix_server.ws_base + f"/app/{app}") as holder,
        QixClient(qix_server.ws_base + "/app/engineData") as qix,
        qix_server.process.client() as rest,
    ):
        doc = holder.open_doc(app)
        assert qix.result("DeleteApp", [app]) == {"qSuccess": True}
        closed = json.loads(holder.ws.recv(timeout=10))
        assert closed == {"jsonrpc": "2.0", "close": [doc]}
        assert rest.get(f"/v1/apps/{app}").status_code == 404
        assert app not in {d["qDocId"] for d in qix.result("GetDocList")["qDocList"]}
        with pytest.raises(QixError) as again:
            qix.result("DeleteApp", [app])
        assert again.value.code == 1003
