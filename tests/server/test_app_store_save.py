"""QIX DoSave on an app in an object store (a real SeaweedFS, two real nodes): the save is a
commit like an import, through the pointer swap, so the other node serves what was saved; a
save from a session whose app another node replaced since changes nothing."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from appfiles import CUSTOMERS, ORDERS, ServerProcess, needs_qvd_reader, package_bytes, qvd_bytes
from seaweed import SeaweedFS, s3_env

pytest.importorskip("obstore", reason="the S3 client is the extra assoc[s3]")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "qix"))
from qixclient import QixClient, QixError

pytestmark = needs_qvd_reader
SHEET = {"qInfo": {"qId": "sheet1", "qType": "sheet"}, "qMetaDef": {"title": "Overview"}}


@pytest.fixture
def weed(shared_weed: SeaweedFS) -> SeaweedFS:
    """The tests' shared SeaweedFS: each test here works under a prefix of its own."""
    return shared_weed


@pytest.fixture
def nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, weed: SeaweedFS
) -> Iterator[list[ServerProcess]]:
    """Two nodes on a fresh prefix of the store."""
    for name, value in s3_env().items():
        monkeypatch.setenv(name, value)
    url = weed.url()
    started: list[ServerProcess] = []
    try:
        for i in range(2):
            settings = (f"AppStore={url}", f"S3Endpoint={weed.endpoint}", "EFEMode=1")
            started.append(ServerProcess(tmp_path / f"node{i}", *settings).start())
        yield started
    finally:
        for node in started:
            node.stop()


def _ws(node: ServerProcess) -> str:
    return node.base_url.replace("http://", "ws://") + "/app"


def _tables(node: ServerProcess, app_id: str) -> list[str]:
    with node.client() as client:
        response = client.get(f"/v1/apps/{app_id}/data/metadata")
    assert response.status_code == 200, response.text
    return [t["name"] for t in response.json()["tables"]]


def _sheets(node: ServerProcess, app_id: str) -> list[str]:
    with QixClient(_ws(node)) as qix:
        doc = qix.open_doc(app_id)
        listing = qix.handle_of(
            "CreateSessionObject",
            [{"qInfo": {"qType": "L"}, "qAppObjectListDef": {"qType": "sheet"}}],
            doc,
        )
        items = qix.result("GetLayout", [], listing)["qLayout"]["qAppObjectList"]["qItems"]
        return [i["qInfo"]["qId"] for i in items]


def test_do_save_commits_through_the_store(nodes: list[ServerProcess]) -> None:
    one, two = nodes
    with one.client() as client:
        created = client.post("/v1/apps/import?name=Orders", content=qvd_bytes("Orders", ORDERS))
        assert created.status_code == 200, created.text
        app_id = created.json()["attributes"]["id"]
    assert _sheets(two, app_id) == []  # the second node has it cached before the save
    with QixClient(_ws(one)) as qix:
        doc = qix.open_doc(app_id)
        qix.result("CreateObject", [SHEET], doc)
        assert qix.result("DoSave", [], doc) == {}
    # The other node revalidates its cached copy and serves the saved version.
    assert _sheets(two, app_id) == ["sheet1"]
    assert _tables(two, app_id) == ["Orders"]


def test_do_save_after_a_replacement_changes_nothing(nodes: list[ServerProcess]) -> None:
    one, two = nodes
    with one.client() as client:
        created = client.post("/v1/apps/import?name=Orders", content=qvd_bytes("Orders", ORDERS))
        app_id = created.json()["attributes"]["id"]
    replacement = package_bytes({"Customers": CUSTOMERS}, attributes={"id": app_id})
    with QixClient(_ws(one)) as qix:
        doc = qix.open_doc(app_id)
        qix.result("CreateObject", [SHEET], doc)
        with two.client() as client:  # replaced on the other node: this one does not know yet
            replaced = client.post("/v1/apps/import?mode=AUTOREPLACE", content=replacement)
            assert replaced.status_code == 200, replaced.text
        with pytest.raises(QixError, match="changed by another commit") as refused:
            qix.result("DoSave", [], doc)
        assert refused.value.parameter == "DoSave"
        assert refused.value.code == 8  # invalid parameters, as every refused DoSave
    for node in nodes:  # the replacement, whole, everywhere; no sheet saved
        assert _tables(node, app_id) == ["Customers"]
        assert _sheets(node, app_id) == []
