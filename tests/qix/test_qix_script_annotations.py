"""Tags and comments a load script gives (TAG, COMMENT) in the QIX data-model answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from qixclient import QixClient

from appfiles import package_bytes
from assoc import App
from conftest import QixServer

pytestmark = pytest.mark.server

ANNOTATED = """T: LOAD * INLINE [
Amount, Note
1, a
];
Tag Field Amount With 'kpi';
Comment Field Note With 'free text';
Comment Table T With 'the facts';"""


def test_tags_and_comments_in_get_tables_and_keys(qix_server: QixServer) -> None:
    script = ANNOTATED
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        doc = qix.handle_of("CreateSessionApp")
        qix.result("SetScript", [script], doc)
        assert qix.result("DoReload", [], doc)["qReturn"] is True
        (table,) = qix.result("GetTablesAndKeys", [{}, {}, 0, False, False], doc)["qtr"]
        fields = {f["qName"]: f for f in table["qFields"]}
        assert table["qComment"] == "the facts"
        assert "kpi" in fields["Amount"]["qTags"]
        assert fields["Note"]["qComment"] == "free text"


def test_a_stored_apps_tags_and_comments_go_with_its_export(qix_server: QixServer) -> None:
    script = ANNOTATED
    manifest = {
        "format": "assoc-app",
        "formatVersion": 1,
        "tables": [{"name": "Old", "file": "tables/Old.qvd"}],
        "script": script,
    }
    with qix_server.process.client() as client:
        body = package_bytes({"Old": {"A": [1]}}, manifest=manifest)
        app_id = client.post("/v1/apps/import", content=body).json()["attributes"]["id"]
    with QixClient(qix_server.ws_base + "/app/") as qix:
        doc = qix.open_doc(app_id)
        assert qix.result("DoReload", [], doc)["qReturn"] is True
    with qix_server.process.client() as client:
        exported = client.get(f"/v1/apps/{app_id}/export")
        assert exported.status_code == 200
        copy = client.post("/v1/apps/import", content=exported.content).json()["attributes"]["id"]
        metadata = client.get(f"/v1/apps/{copy}/data/metadata").json()
    fields = {f["name"]: f for f in metadata["fields"]}
    assert fields["Amount"]["tags"][-1] == "kpi"
    assert fields["Note"]["comment"] == "free text"
    assert metadata["tables"][0]["comment"] == "the facts"
    with QixClient(qix_server.ws_base + "/app/") as qix:
        doc = qix.open_doc(copy)
        description = qix.result("GetFieldDescription", ["Amount"], doc)["qReturn"]
        assert description["qTags"][-1] == "kpi"
        (table,) = qix.result("GetTablesAndKeys", [{}, {}, 0, False, False], doc)["qtr"]
        assert table["qComment"] == "the facts"
        assert {f["qName"]: f["qComment"] for f in table["qFields"]}["Note"] == "free text"


def test_an_imported_qvds_user_tags_reach_qix_and_metadata(
    qix_server: QixServer, tmp_path: Path
) -> None:
    """A QVD stored with a script's tags and comments, imported into a new app."""
    store = "\nStore T Into [lib://out/t.qvd] (qvd);"
    App.from_script(ANNOTATED + store, folders={"out": tmp_path})
    with qix_server.process.client() as client:
        body = (tmp_path / "t.qvd").read_bytes()
        app_id = client.post("/v1/apps/import", content=body).json()["attributes"]["id"]
        metadata = client.get(f"/v1/apps/{app_id}/data/metadata").json()
    fields = {f["name"]: f for f in metadata["fields"]}
    assert fields["Amount"]["tags"] == ["$numeric", "$integer", "kpi"]
    assert fields["Note"]["comment"] == "free text"
    assert metadata["tables"][0]["comment"] == "the facts"
    with QixClient(qix_server.ws_base + "/app/") as qix:
        doc = qix.open_doc(app_id)
        description = qix.result("GetFieldDescription", ["Amount"], doc)["qReturn"]
        assert description["qTags"] == ["$numeric", "$integer", "kpi"]
        (table,) = qix.result("GetTablesAndKeys", [{}, {}, 0, False, False], doc)["qtr"]
        assert {f["qName"]: f["qTags"] for f in table["qFields"]}["Amount"][-1] == "kpi"
