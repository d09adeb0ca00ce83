"""A real `assoc serve` for the QIX tests, with an app of two linked tables imported over REST."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qixclient import QixClient

from appfiles import ServerProcess, package_bytes

ORDERS = {
    "OrderId": [1, 2, 3, 4, 5, 6],
    "Customer": ["a", "b", "a", "c", "d", "b"],
    "Amount": [10, 20, 5, 7, 3, 1],
}
CUSTOMERS = {"Customer": ["a", "b", "c", "e"], "Region": ["North", "South", "North", "West"]}
TABLES = {"Orders": ORDERS, "Customers": CUSTOMERS}
MAX_MESSAGE_BYTES = 65536
MAX_OBJECTS = 20


def symbols(field: str) -> list[object]:
    """A field's values in first-occurrence order over the tables in load order (qElemNumber)."""
    out: list[object] = []
    for columns in TABLES.values():
        for value in columns.get(field, []):
            if value not in out:
                out.append(value)
    return out


class QixServer:
    """The server process, its ws:// base and an imported app."""

    def __init__(self, process: ServerProcess) -> None:
        self.process = process
        self.ws_base = "ws" + process.base_url.removeprefix("http")

    def import_app(self, tables: dict[str, dict[str, list[object]]] | None = None) -> str:
        """Imports a package over REST; its app id."""
        with self.process.client() as client:
            response = client.post("/v1/apps/import", content=package_bytes(tables or TABLES))
            assert response.status_code == 200, response.text
            app_id: str = response.json()["attributes"]["id"]
            return app_id

    def rest_apps(self) -> list[dict[str, Any]]:
        """Every app's attributes as `GET /v1/apps` lists them."""
        with self.process.client() as client:
            response = client.get("/v1/apps")
            assert response.status_code == 200, response.text
            return [app["attributes"] for app in response.json()]


@pytest.fixture(scope="package")
def qix_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QixServer]:
    """One server for the QIX tests (settings for the limits the tests check)."""
    data = Path(tmp_path_factory.mktemp("qix")) / "data"
    process = ServerProcess(
        data,
        f"QixMaxMessageBytes={MAX_MESSAGE_BYTES}",
        f"QixMaxObjectsPerSession={MAX_OBJECTS}",
        "EngineVersion=12.792.0",
    ).start()
    try:
        yield QixServer(process)
    finally:
        process.stop()


@pytest.fixture(scope="package")
def app_id(qix_server: QixServer) -> str:
    """The Orders/Customers app."""
    return qix_server.import_app()


@pytest.fixture
def qix(qix_server: QixServer, app_id: str) -> Iterator[QixClient]:
    """A client with the Orders/Customers app open (tests of other apps define their own)."""
    with QixClient(qix_server.ws_base + f"/app/{app_id}") as client:
        client.open_doc(app_id)
        yield client
