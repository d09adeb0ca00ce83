"""A real `assoc serve` with demo apps, and Debian's chromium driven by Playwright."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from appfiles import ServerProcess
from assoc.cli import main

CHROMIUM = os.environ.get("ASSOC_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# ASSOC_SCREENSHOTS=1 writes the page's screenshots into docs/ (see docs/guide.md).
DOCS = Path(__file__).resolve().parents[2] / "docs"

SALES = {
    "orders.csv": "OrderId,CustomerId,ProductId,Quantity,Amount\n"
    "1,1,10,2,200\n2,1,11,1,80\n3,2,10,1,100\n4,3,12,5,50\n5,3,10,1,100\n"
    "6,4,11,3,240\n7,5,12,2,20\n8,2,12,4,40\n",
    "customers.csv": "CustomerId,Customer,Country\n1,Alpine Foods,Austria\n"
    "2,Berliner Markt,Germany\n3,Café Lyon,France\n4,Danube Trade,Austria\n"
    "5,Elbe Stores,Germany\n6,Fjord Fisk,Norway\n",
    "products.csv": "ProductId,Product,Category\n10,Espresso,Coffee\n11,Green Tea,Tea\n"
    "12,Biscuits,Food\n",
}
SYNTHETIC = {
    "budget.csv": "Year,Region,Budget\n2025,North,100\n2025,South,80\n2026,North,120\n",
    "actuals.csv": "Year,Region,Actual\n2025,North,90\n2026,South,70\n",
}
LOOSE = {
    "a.csv": "X,Y\n1,u\n2,v\n",
    "b.csv": "Y,Z\nu,p\nv,q\n",
    "c.csv": "Z,X\np,1\nq,2\n",
}


def _import(server: ServerProcess, folder: Path, files: dict[str, str]) -> str:
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    package = folder.with_suffix(".zip")
    assert main(["pack", str(folder), "-o", str(package)]) == 0
    with server.client() as client:
        response = client.post("/v1/apps/import", content=package.read_bytes())
        assert response.status_code == 200, response.text
        app_id: str = response.json()["attributes"]["id"]
    return app_id


class DemoServer:
    """The server and the ids of its apps."""

    def __init__(self, process: ServerProcess, root: Path) -> None:
        self.process = process
        self.url = process.base_url
        self.sales = _import(process, root / "Sales", SALES)
        self.synthetic = _import(process, root / "Budget", SYNTHETIC)
        self.loose = _import(process, root / "Cycle", LOOSE)


@pytest.fixture(scope="package")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoServer]:
    """One service with the demo apps for the page tests."""
    root = tmp_path_factory.mktemp("ui")
    process = ServerProcess(root / "data").start()
    try:
        yield DemoServer(process, root)
    finally:
        process.stop()


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    """Headless chromium (Debian's package), launched by Playwright."""
    if not shutil.which(CHROMIUM):
        # .ci/run installs it, so CI always runs these tests.
        pytest.skip(f"no chromium at {CHROMIUM}: apt-get install -y chromium (or ASSOC_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    """A fresh page; any script error on it fails the test."""
    context = browser.new_context(viewport={"width": 1400, "height": 820})  # type: ignore[attr-defined]
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        context.close()
    assert errors == []


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    """Where screenshots go: docs/ with ASSOC_SCREENSHOTS=1, else the test's tmp folder."""
    return DOCS if os.environ.get("ASSOC_SCREENSHOTS") == "1" else tmp_path
