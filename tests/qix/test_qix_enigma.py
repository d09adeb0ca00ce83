"""The real enigma.js (npm, pinned in tests/package.json) against a real `assoc serve`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import assoc
from appfiles import run_node
from conftest import CUSTOMERS, ORDERS, QixServer

pytestmark = pytest.mark.server

SCRIPT = Path(__file__).with_name("enigma_session.js")
NODE = shutil.which("node")
HAS_HYPERCUBE = hasattr(assoc.Session, "hypercube")


def _region_totals() -> dict[str, tuple[float, int]]:
    """Sum(Amount) and Count(OrderId) per region, by joining the imported columns here."""
    region_of = dict(zip(CUSTOMERS["Customer"], CUSTOMERS["Region"], strict=True))
    totals = dict.fromkeys(CUSTOMERS["Region"], (0.0, 0))
    for customer, amount in zip(ORDERS["Customer"], ORDERS["Amount"], strict=True):
        region = region_of.get(customer)
        if region is not None:
            total, count = totals[region]
            totals[region] = (total + amount, count + 1)
    return totals


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_enigma_js_session(qix_server: QixServer, app_id: str, node_packages: Path) -> None:
    extra = ["cube"] if HAS_HYPERCUBE else []
    seen = run_node(SCRIPT, qix_server.ws_base, app_id, *extra)

    assert seen["version"] == "12.792.0"
    assert seen["tables"] == [
        {"name": "Orders", "rows": len(ORDERS["OrderId"]), "fields": list(ORDERS)},
        {"name": "Customers", "rows": len(CUSTOMERS["Customer"]), "fields": list(CUSTOMERS)},
    ]
    assert seen["keys"] == [{"qKeyFields": ["Customer"], "qTables": ["Orders", "Customers"]}]
    assert seen["listType"] == "filterbox"

    customers = list(dict.fromkeys(ORDERS["Customer"] + CUSTOMERS["Customer"]))
    assert seen["initial"] == dict.fromkeys(customers, "O")
    # Region=North: the customers of North rows are possible, every other one excluded.
    north = {
        c for c, r in zip(CUSTOMERS["Customer"], CUSTOMERS["Region"], strict=True) if r == "North"
    }
    assert seen["fieldSelect"] is True
    assert seen["afterField"] == {c: "O" if c in north else "X" for c in customers}
    # Customer=b as well: b (South) is selected but excluded; North's customers alternative.
    assert seen["listSelect"] is True
    assert seen["afterList"] == {
        c: "XS" if c == "b" else "A" if c in north else "X" for c in customers
    }
    assert seen["counts"]["qSelectedExcluded"] == 1
    assert seen["counts"]["qAlternative"] == len(north)
    assert seen["counts"]["qExcluded"] == len(customers) - len(north) - 1
    assert seen["page"] == customers[1:3]
    assert seen["changedAfterField"] == 1
    assert seen["changedAfterList"] == 2
    clears = 2 if HAS_HYPERCUBE else 1
    assert seen["changedAfterClear"] == 2 + clears
    assert seen["afterClear"] == dict.fromkeys(customers, "O")
    assert seen["error"]["code"] == 2

    if HAS_HYPERCUBE:
        totals = _region_totals()
        assert seen["cubeAfterList"] == []
        assert seen["cubeTotals"] == ["0", "0"]
        expected = [
            [region, f"{total:g}", str(count)] for region, (total, count) in sorted(totals.items())
        ]
        assert seen["cube"] == expected
        assert seen["cubeSize"] == {"qcx": 3, "qcy": len(expected)}
        assert seen["cubePage"] == [expected[1][1:]]


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_enigma_js_modal_selections(
    qix_server: QixServer, app_id: str, node_packages: Path
) -> None:
    """Begin → select → layout in selections → cancel restores; again with confirm keeps."""
    script = Path(__file__).with_name("enigma_modal.js")
    seen = run_node(script, qix_server.ws_base, app_id)

    sums: dict[str, float] = {}
    for customer, amount in zip(ORDERS["Customer"], ORDERS["Amount"], strict=True):
        sums[customer] = sums.get(customer, 0) + amount
    # Customers without orders (e) count 0; bars by value, descending.
    for customer in CUSTOMERS["Customer"]:
        sums.setdefault(customer, 0)
    every_bar = sorted(([c, v] for c, v in sums.items()), key=lambda bar: -bar[1])
    assert seen["before"] == every_bar
    assert seen["infoCId"] == "d1"
    assert seen["selectionInfo"] == {"qInSelections": False, "qMadeSelections": False}
    assert seen["success"] is True
    assert seen["during"] == {"inSelections": True, "bars": [["b", sums["b"]]]}
    assert seen["cancelled"] == {"inSelections": False, "bars": every_bar}
    assert seen["confirmed"] == {"inSelections": False, "bars": [["b", sums["b"]]]}
    # begin, select, end (cancel), begin, select, end (confirm): every step announced.
    assert seen["changed"] == 6
    assert seen["notFound"] == {"code": 2, "message": "Object not found"}
    assert seen["effectiveVisualization"] == "barchart"


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_enigma_js_hears_a_selection_made_on_another_socket_of_its_session(
    qix_server: QixServer, app_id: str, node_packages: Path
) -> None:
    script = Path(__file__).with_name("enigma_shared.js")
    seen = run_node(script, qix_server.ws_base, app_id)
    assert seen["heard"] == "changed"
    assert seen["selected"] == ["North"]


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_enigma_js_reads_the_apps_and_the_apps_entities(
    qix_server: QixServer, node_packages: Path
) -> None:
    """corectl's catalog calls through the real enigma.js: GetDocList, GetAppEntry,
    GetAllInfos, GetAppProperties, ClearAllButThis, GetNxProperties."""
    app_id = qix_server.import_app()
    seen = run_node(SCRIPT.with_name("enigma_catalog.js"), qix_server.ws_base, app_id)
    assert app_id in seen["docs"]
    assert seen["entry"] == app_id
    assert seen["infos"] == ["chart1:barchart", "dimC:dimension", "sheet1:sheet"]
    with qix_server.process.client() as rest:
        assert seen["title"] == rest.get(f"/v1/apps/{app_id}").json()["attributes"]["name"]
    assert seen["clearAllButThis"] is True
    assert seen["regionCleared"] is True
    assert seen["customerKept"] == "a"
    assert seen["nx"] == {"qOneAndOnlyOne": False}
