"""Global.CreateApp against a real `assoc serve`: a stored app with no data that a client names,
opens (by id or name), gives a script, reloads and saves, as corectl's `build` and halyard.js's
createAppUsingHalyard do; the names it refuses, and that a refused call stores nothing. Then
Doc.SetAppProperties and SaveObjects, the rest of what corectl's `build` sends."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from typing import Any

import pytest
from qixclient import QixClient, QixError

from conftest import QixServer

SCRIPT = "Sales:\nLOAD * INLINE [\nRegion, Amount\nNorth, 10\nSouth, 32\nNorth, 5\n];\n"
REGIONS = {
    "qInfo": {"qType": "table"},
    "qHyperCubeDef": {
        "qDimensions": [{"qDef": {"qFieldDefs": ["Region"]}}],
        "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": 10}],
    },
}


def _rows(qix: QixClient, doc: int) -> list[tuple[str, float]]:
    cube = qix.handle_of("CreateSessionObject", [REGIONS], doc)
    layout = qix.result("GetLayout", [], cube)["qLayout"]
    matrix = layout["qHyperCube"]["qDataPages"][0]["qMatrix"]
    return sorted((row[0]["qText"], row[1]["qNum"]) for row in matrix)


def test_a_created_app_opens_empty_then_keeps_what_its_reload_and_save_made(
    qix_server: QixServer,
) -> None:
    name = f"Built {uuid.uuid4().hex[:8]}"
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        assert qix.result("AllowCreateApp") == {"qReturn": True}
        created = qix.result("CreateApp", [name])
        assert created["qSuccess"] is True
        app_id = created["qAppId"]
        assert str(uuid.UUID(app_id)) == app_id
        listed = {d["qDocId"]: d for d in qix.result("GetDocList")["qDocList"]}
        assert listed[app_id]["qDocName"] == name
        assert listed[app_id]["qLastReloadTime"] == ""
    rest = next(a for a in qix_server.rest_apps() if a["id"] == app_id)
    assert rest["name"] == name
    assert rest["lastReloadTime"] == ""
    assert rest["createdDate"] == rest["modifiedDate"]
    with qix_server.process.client() as client:
        metadata = client.get(f"/v1/apps/{app_id}/data/metadata")
        assert metadata.status_code == 200, metadata.text
        assert metadata.json()["tables"] == []

    # By name, as corectl and halyard.js open what they created.
    with QixClient(qix_server.ws_base + f"/app/{app_id}") as qix:
        doc = qix.open_doc(name)
        layout = qix.result("GetAppLayout", [], doc)["qLayout"]
        assert layout["qTitle"] == name
        assert layout["qHasData"] is False
        assert layout["qLastReloadTime"] == ""
        script = qix.result("GetScript", [], doc)["qScript"]
        assert script.startswith("///$tab Main\n")
        assert (
            script.removeprefix("///$tab Main\n")
            == qix.result("GetEmptyScript", [], doc)["qReturn"]
        )
        qix.result("SetScript", [SCRIPT], doc)
        assert qix.result("DoReload", [], doc) == {"qReturn": True}
        assert _rows(qix, doc) == [("North", 15), ("South", 32)]
        qix.result("CreateObject", [{"qInfo": {"qId": "sheet1", "qType": "sheet"}}], doc)
        qix.result("DoSave", [], doc)

    with QixClient(qix_server.ws_base + f"/app/{app_id}") as qix:
        doc = qix.open_doc(app_id)
        assert qix.result("GetScript", [], doc)["qScript"] == SCRIPT
        assert qix.result("GetAppLayout", [], doc)["qLayout"]["qHasData"] is True
        assert _rows(qix, doc) == [("North", 15), ("South", 32)]
        infos = qix.result("GetAllInfos", [], doc)["qInfos"]
        assert {"qId": "sheet1", "qType": "sheet"} in infos
    assert next(a for a in qix_server.rest_apps() if a["id"] == app_id)["lastReloadTime"]


def test_the_script_section_is_named_as_asked(qix_server: QixServer) -> None:
    name = f"Sectioned {uuid.uuid4().hex[:8]}"
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        app_id = qix.result(
            "CreateApp", {"qAppName": name, "qLocalizedScriptMainSection": "Haupt"}
        )["qAppId"]
    with QixClient(qix_server.ws_base + f"/app/{app_id}") as qix:
        doc = qix.open_doc(app_id)
        assert qix.result("GetScript", [], doc)["qScript"].startswith("///$tab Haupt\n")


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ([""], 1001),
        (["   "], 1001),
        (["two\nlines"], 1001),
        (["nul\x00"], 1001),
        (["x" * 256], 1001),
        (["fine", "two\nlines"], 1001),
        ([7], -32602),
        ([None], -32602),
        ([], -32602),
    ],
)
def test_names_that_are_refused_store_nothing(
    qix_server: QixServer, params: list[Any], code: int
) -> None:
    before = qix_server.rest_apps()
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        with pytest.raises(QixError) as refused:
            qix.result("CreateApp", params)
        assert refused.value.code == code
        assert "qVersion" in qix.result("EngineVersion")  # the socket still answers
    assert qix_server.rest_apps() == before


def test_a_name_an_app_has_already_is_refused(qix_server: QixServer) -> None:
    imported = qix_server.import_app()
    taken = next(a["name"] for a in qix_server.rest_apps() if a["id"] == imported)
    name = f"Once {uuid.uuid4().hex[:8]}"
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        qix.result("CreateApp", [name])
        before = qix_server.rest_apps()
        for existing in (name, taken):
            with pytest.raises(QixError) as refused:
                qix.result("CreateApp", [existing])
            assert refused.value.code == 1000
    assert qix_server.rest_apps() == before


def test_app_properties_are_the_documents_until_saved_then_the_apps(
    qix_server: QixServer,
) -> None:
    name, title = f"Props {uuid.uuid4().hex[:8]}", f"Renamed {uuid.uuid4().hex[:8]}"
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        app_id = qix.result("CreateApp", [name])["qAppId"]
    with (
        QixClient(qix_server.ws_base + f"/app/{app_id}") as qix,
        QixClient(qix_server.ws_base + f"/app/{app_id}/identity/other") as other,
    ):
        doc, other_doc = qix.open_doc(app_id), other.open_doc(app_id)
        props = {"qTitle": title, "theme": "sense-dark", "qLastReloadTime": "2001-01-01"}
        answer = qix.call("SetAppProperties", [props], doc)
        assert answer["result"] == {}
        assert doc in answer["change"]
        seen = qix.result("GetAppProperties", [], doc)["qProp"]
        assert (seen["qTitle"], seen["theme"], seen["qLastReloadTime"]) == (title, "sense-dark", "")
        assert qix.result("GetAppLayout", [], doc)["qLayout"]["qTitle"] == title
        # Not saved: the app and its other sessions keep what they had.
        assert other.result("GetAppProperties", [], other_doc)["qProp"]["qTitle"] == name
        assert next(a for a in qix_server.rest_apps() if a["id"] == app_id)["name"] == name
        for bad in ({"qTitle": 5}, {"qTitle": "a\nb"}, {"qTitle": "x" * 300}):
            with pytest.raises(QixError) as refused:
                qix.result("SetAppProperties", [bad], doc)
            assert refused.value.code == 8
        with pytest.raises(QixError) as refused:
            qix.result("SetAppProperties", ["theme"], doc)
        assert refused.value.code == -32602
        assert qix.result("SaveObjects", [], doc) == {}
    assert next(a for a in qix_server.rest_apps() if a["id"] == app_id)["name"] == title

    with QixClient(qix_server.ws_base + f"/app/{app_id}") as qix:
        doc = qix.open_doc(title)
        qix.result("SetScript", [SCRIPT], doc)
        assert qix.result("DoReload", [], doc) == {"qReturn": True}
        seen = qix.result("GetAppProperties", [], doc)["qProp"]
        assert (seen["qTitle"], seen["theme"]) == (title, "sense-dark")
        assert seen["qLastReloadTime"]
    with qix_server.process.client() as client:
        exported = client.get(f"/v1/apps/{app_id}/export")
        assert exported.status_code == 200
        with zipfile.ZipFile(io.BytesIO(exported.content)) as archive:
            stored = json.loads(archive.read("app.json"))
    assert stored["properties"] == {"qTitle": title, "theme": "sense-dark"}
    assert stored["attributes"]["name"] == title


def test_session_apps_keep_their_properties_but_cannot_save_them(qix_server: QixServer) -> None:
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        doc = qix.handle_of("CreateSessionApp")
        qix.result("SetAppProperties", [{"qTitle": "Scratch", "colour": 3}], doc)
        seen = qix.result("GetAppProperties", [], doc)["qProp"]
        assert (seen["qTitle"], seen["colour"]) == ("Scratch", 3)
        with pytest.raises(QixError) as refused:
            qix.result("SaveObjects", [], doc)
        assert refused.value.code == 20
