"""Qlik's own front-end on assoc: enigma.js, @nebula.js/stardust and the sn-* charts (pinned in
tests/package.json) in Debian's chromium against a real `assoc serve`. The page
(tests/ui/nebula/) is served with the npm files by a static server of the test; the charts
draw with `renderer: 'svg'` and the test reads the numbers back from the DOM.

Asserted: bar, pie, KPI, table, pivot table (with an expand), filter pane and the selections
toolbar."""

from __future__ import annotations

import http.server
import posixpath
import re
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from playwright.sync_api import expect

from appfiles import ServerProcess, package_bytes

pytestmark = pytest.mark.server

Page = Any
PAGE_DIR = Path(__file__).resolve().parent / "nebula"

# An Orders-like model: orders of customers, customers in regions (linked by Customer).
ORDERS = {
    "OrderId": [1, 2, 3, 4, 5, 6, 7, 8],
    "Customer": ["Alpine", "Berlin", "Alpine", "Cafe", "Danube", "Berlin", "Elbe", "Cafe"],
    "Amount": [120, 80, 40, 150, 60, 30, 90, 20],
}
CUSTOMERS = {
    "Customer": ["Alpine", "Berlin", "Cafe", "Danube", "Elbe"],
    "Region": ["North", "South", "North", "East", "South"],
}
REGION_OF = dict(zip(CUSTOMERS["Customer"], CUSTOMERS["Region"], strict=True))
CUSTOMER_ELEM = {c: i for i, c in enumerate(CUSTOMERS["Customer"])}  # first-occurrence order


def sums(customers: set[str] | None = None) -> tuple[dict[str, int], dict[str, int]]:
    """Sum(Amount) by Customer and by Region over the orders of `customers` (all if None)."""
    by_customer: dict[str, int] = defaultdict(int)
    by_region: dict[str, int] = defaultdict(int)
    for customer, amount in zip(ORDERS["Customer"], ORDERS["Amount"], strict=True):
        if customers is None or customer in customers:
            by_customer[customer] += amount
            by_region[REGION_OF[customer]] += amount
    return dict(by_customer), dict(by_region)


# ---- fixtures: the npm files over HTTP, the app, one page per test --------------------------


class _Files(http.server.SimpleHTTPRequestHandler):
    """GET /<page file> from tests/ui/nebula, GET /vendor/<package path> from node_modules."""

    node_modules = Path()

    def translate_path(self, path: str) -> str:
        path = posixpath.normpath(urlsplit(path).path)
        if ".." in path.split("/"):
            return str(PAGE_DIR / "missing")
        if path.startswith("/vendor/"):
            return str(self.node_modules / path.removeprefix("/vendor/"))
        return str(PAGE_DIR / path.lstrip("/"))

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def files(node_packages: Path) -> Iterator[str]:
    """The page and the pinned npm packages on a loopback static server: its base URL."""
    handler = type("Files", (_Files,), {"node_modules": node_packages / "node_modules"})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A server of its own (the demo server's list of apps is asserted elsewhere) with the
    Orders/Customers app: its QIX URL and the app id."""
    process = ServerProcess(tmp_path_factory.mktemp("nebula") / "data").start()
    try:
        with process.client() as client:
            response = client.post(
                "/v1/apps/import",
                content=package_bytes({"Orders": ORDERS, "Customers": CUSTOMERS}),
            )
            assert response.status_code == 200, response.text
            app_id: str = response.json()["attributes"]["id"]
        yield "ws" + process.base_url.removeprefix("http") + "/app/engineData", app_id
    finally:
        process.stop()


# An element each asserted chart draws once it has its data.
DRAWN = (
    'svg[data-key="bar"] rect[data-label]',
    'svg[data-key="pie-labels"] text',
    ".sn-kpi-value",
    "#table .sn-table-cell",
    '#pivot-table [data-testid="dimension-cell"]',
    '#filterpane [data-testid="filterpane-listbox-container"] [role="row"]',
)


@pytest.fixture
def charts(page: Page, files: str, engine: tuple[str, str]) -> Iterator[Page]:
    """The page with the six charts rendered; after the test, no QIX error but the expected."""
    ws, app_id = engine
    page.goto(f"{files}/index.html?ws={quote(ws)}&app={app_id}")
    expect(page.locator("body")).to_have_attribute("data-ready", "1", timeout=30_000)
    state = page.evaluate("window.qix")
    assert "fatal" not in state, state["fatal"]
    for name in ("barchart", "piechart", "kpi", "table", "pivot-table", "filterpane"):
        assert state["charts"][name]["ok"], (name, state["charts"][name])
    assert "toolbar" not in state["charts"], state["charts"]["toolbar"]
    for drawn in DRAWN:  # a render resolves before the chart has drawn
        expect(page.locator(drawn).first).to_be_attached()
    yield page
    assert unexpected_errors(page.evaluate("window.qix.errors")) == []


def unexpected_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The QIX error answers of the asserted charts, but the expected one: stardust asks for
    the toolbar's "FieldList"/"DimensionList" and creates them on error 2 "Object not found"."""
    out = []
    for entry in errors:
        request, error = entry["request"] or {}, entry["error"]
        if request.get("method") == "GetObject" and error.get("code") == 2:
            continue
        out.append(entry)
    return out


# ---- reading the charts back --------------------------------------------------------------


def bars(page: Page) -> list[tuple[str, int, float]]:
    """The bar chart's bars left to right (the DOM order is not the drawing order after an
    update): label, qElemNumber, height in px."""
    rows = page.eval_on_selector_all(
        'svg[data-key="bar"] rect[data-label]',
        "els => els.map(e => [+e.getAttribute('x'), e.dataset.label, +e.dataset.value,"
        " +e.getAttribute('height')])",
    )
    return [(label, elem, height) for _, label, elem, height in sorted(rows)]


def pie_labels(page: Page) -> list[str]:
    return list(page.eval_on_selector_all('svg[data-key="pie-labels"] text', TEXTS))


def table_rows(page: Page) -> list[list[str]]:
    """sn-table's cells after the three headers, in rows of three (the totals row first)."""
    cells = page.eval_on_selector_all("#table .sn-table-cell", INNER_TEXTS)[3:]
    return [cells[i : i + 3] for i in range(0, len(cells), 3)]


def listbox(page: Page, field: str) -> dict[str, str]:
    """A filter-pane listbox's values and their Qlik state (S, A, X or "" for possible)."""
    box = page.locator('#filterpane [data-testid="filterpane-listbox-container"]', has_text=field)
    items = box.locator('[role="row"]').evaluate_all(
        "els => els.map(e => [e.innerText,"
        " (e.className.match(/RowColumn-(S|A|X|XS)\\b/) || ['', ''])[1]])"
    )
    return dict(items)


TEXTS = "els => els.map(e => e.textContent)"
INNER_TEXTS = "els => els.map(e => e.innerText)"


def settles(read: Callable[[], object], expected: object, timeout: float = 10.0) -> None:
    """Asserts that `read()` comes to equal `expected` (charts animate and refetch layouts)."""
    deadline = time.monotonic() + timeout
    while (got := read()) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert got == expected


def click_centre(page: Page, selector: str) -> None:
    """A real mouse click at the element's centre (overlay svgs sit on top of bars)."""
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def sent(page: Page, *methods: str) -> list[tuple[str, list[Any]]]:
    """The requests the page sent, with these method names, in order."""
    traffic = page.evaluate("window.qix.traffic")
    return [
        (t["message"]["method"], t["message"]["params"])
        for t in traffic
        if t["dir"] == "sent" and t["message"]["method"] in methods
    ]


def expect_all_orders(page: Page) -> None:
    """Every chart shows the whole app (no selection)."""
    by_customer, by_region = sums()
    total = sum(by_customer.values())
    expect(page.locator(".sn-kpi-value")).to_have_text(str(total))
    expect(page.locator('svg[data-key="bar"] rect[data-label]')).to_have_count(len(by_customer))
    expect(page.locator('svg[data-key="slices"] path[data-label]')).to_have_count(len(by_region))
    expect(page.locator("#toolbar")).not_to_contain_text("Customer")
    expect(page.locator("#toolbar")).not_to_contain_text("Region")


def expect_customers(page: Page, customers: set[str]) -> None:
    """Every chart shows the orders of these customers only."""
    by_customer, by_region = sums(customers)
    total = sum(by_customer.values())
    expect(page.locator(".sn-kpi-value")).to_have_text(str(total))
    labels = page.locator('svg[data-key="bar"] rect[data-label]')
    expect(labels).to_have_count(len(by_customer))
    expect(page.locator('svg[data-key="slices"] path[data-label]')).to_have_count(len(by_region))
    expect(page.locator("#table .sn-table-cell")).to_have_count(3 + 3 * (1 + len(by_customer)))
    rows = [["Totals", "", str(total)]]
    rows += [[c, REGION_OF[c], str(by_customer[c])] for c in sorted(by_customer)]
    settles(lambda: table_rows(page), rows)
    by_value = sorted(by_customer, key=lambda c: -by_customer[c])
    settles(lambda: [label for label, _, _ in bars(page)], by_value)


# ---- the tests ----------------------------------------------------------------------------


def test_the_charts_draw_the_numbers_the_engine_computes(charts: Page) -> None:
    page = charts
    by_customer, by_region = sums()
    total = sum(by_customer.values())

    # Bar: Customer by Sum(Amount), value descending; heights proportional to the sums.
    drawn = bars(page)
    assert [label for label, _, _ in drawn] == sorted(by_customer, key=lambda c: -by_customer[c])
    assert all(elem == CUSTOMER_ELEM[label] for label, elem, _ in drawn)
    top_label, _, top_height = drawn[0]
    for label, _, height in drawn[1:]:
        ratio = by_customer[label] / by_customer[top_label]
        assert height / top_height == pytest.approx(ratio, rel=1e-3), label
    axis = page.eval_on_selector_all(
        'svg[data-key="bar-axis"] text[data-label]',
        "els => els.map(e => [e.getBoundingClientRect().x, e.textContent])",
    )
    assert [text for _, text in sorted(axis)] == [label for label, _, _ in drawn]

    # Pie: Region slices, labels with each region's share of the total.
    slices = page.eval_on_selector_all(
        'svg[data-key="slices"] path[data-label]', "els => els.map(e => e.dataset.label)"
    )
    assert slices == sorted(by_region, key=lambda r: -by_region[r])
    labels = pie_labels(page)
    shares = dict(zip(labels[::2], labels[1::2], strict=True))
    assert shares == {r: f"{100 * v / total:.1f}%" for r, v in by_region.items()}

    # KPI: the total.
    expect(page.locator(".sn-kpi-value")).to_have_text(str(total))
    expect(page.locator(".sn-kpi-measure-title")).to_have_text("Sum(Amount)")

    # Table: totals row, then one row per customer in Customer order.
    assert table_rows(page) == [["Totals", "", str(total)]] + [
        [c, REGION_OF[c], str(by_customer[c])] for c in sorted(by_customer)
    ]

    # Filter pane: one listbox per field, values in text order, nothing selected.
    settles(lambda: listbox(page, "Region"), dict.fromkeys(sorted(by_region), ""))
    settles(lambda: listbox(page, "Customer"), dict.fromkeys(sorted(by_customer), ""))

    # The wire: every chart made its object in one socket, and the bar/pie/table sort as sent.
    created = [p[0]["qInfo"]["qType"] for _, p in sent(page, "CreateSessionObject")]
    for chart in ("barchart", "piechart", "kpi", "table", "filterpane"):
        assert chart in created


def confirm_a_bar_click(page: Page, customer: str) -> None:
    """A click on the customer's bar, then the chart toolbar's confirm."""
    click_centre(page, f'svg[data-key="bar"] rect[data-label="{customer}"]')
    # Modal: the chart's own toolbar pops up; the other charts already show the selection.
    confirm = page.locator('[data-testid="actions-toolbar-confirm"]')
    expect(confirm).to_be_visible()
    by_customer, _ = sums({customer})
    expect(page.locator(".sn-kpi-value")).to_have_text(str(by_customer[customer]))
    confirm.click()
    expect(confirm).to_have_count(0)
    expect_customers(page, {customer})


def test_a_bar_click_then_confirm_selects_the_customer_in_every_chart(
    charts: Page, screenshots: Path
) -> None:
    page = charts
    page.screenshot(path=str(screenshots / "nebula-before.png"))
    confirm_a_bar_click(page, "Berlin")
    by_customer, _ = sums({"Berlin"})
    settles(lambda: pie_labels(page), ["South", str(by_customer["Berlin"])])
    settles(lambda: listbox(page, "Customer")["Berlin"], "S")
    settles(lambda: listbox(page, "Region"), {"South": "", "East": "X", "North": "X"})
    expect(page.locator("#toolbar")).to_contain_text("Customer")
    expect(page.locator("#toolbar")).to_contain_text("Berlin")
    page.screenshot(path=str(screenshots / "nebula-after.png"))
    assert sent(page, "BeginSelections", "SelectHyperCubeValues", "EndSelections") == [
        ("BeginSelections", [["/qHyperCubeDef"]]),
        ("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [CUSTOMER_ELEM["Berlin"]], False]),
        ("EndSelections", [True]),
    ]


def _layouts_ahead(ws_url: str) -> dict[str, float]:
    """The service's count of layouts made ahead and of those served, from /metrics."""
    parts = urlsplit(ws_url)
    base = f"http://{parts.netloc}"
    with urllib.request.urlopen(base + "/metrics") as response:
        text = response.read().decode()
    found = re.findall(r'assoc_qix_layouts_ahead_total\{outcome="(\w+)"\} ([\d.]+)', text)
    return {outcome: float(count) for outcome, count in found}


def test_the_layouts_a_click_asks_for_were_made_ahead(
    charts: Page, engine: tuple[str, str]
) -> None:
    # After the selection nebula.js reads the modal chart's properties, then asks every
    # changed object's layout (some twice): each layout it takes was made while it asked.
    before = _layouts_ahead(engine[0])
    confirm_a_bar_click(charts, "Berlin")
    after = _layouts_ahead(engine[0])
    served = after.get("served", 0) - before.get("served", 0)
    # The six charts, the toolbar's objects and the bar chart once more after confirming.
    assert served >= 7, (before, after)


def test_cancel_restores_the_state_before_the_click(charts: Page) -> None:
    page = charts
    click_centre(page, 'svg[data-key="bar"] rect[data-label="Alpine"]')
    by_customer, _ = sums({"Alpine"})
    expect(page.locator(".sn-kpi-value")).to_have_text(str(by_customer["Alpine"]))
    page.locator('[data-testid="actions-toolbar-cancel"]').click()
    expect_all_orders(page)
    expect_customers(page, set(CUSTOMERS["Customer"]))
    assert sent(page, "EndSelections") == [("EndSelections", [False])]


def test_a_filter_pane_selection_then_the_toolbar_clear(charts: Page) -> None:
    page = charts
    north = {c for c, r in REGION_OF.items() if r == "North"}
    click_centre(page, '#filterpane [role="row"]:has-text("North")')
    page.locator('[data-testid="actions-toolbar-confirm"]').click()
    expect_customers(page, north)
    settles(lambda: pie_labels(page), ["North", str(sum(sums(north)[0].values()))])
    settles(lambda: listbox(page, "Region"), {"North": "S", "East": "A", "South": "A"})
    customers = {c: ("" if c in north else "X") for c in sorted(CUSTOMERS["Customer"])}
    settles(lambda: listbox(page, "Customer"), customers)
    expect(page.locator("#toolbar")).to_contain_text("Region")
    assert sent(page, "SelectListObjectValues", "EndSelections") == [
        ("SelectListObjectValues", ["/qListObjectDef", [0], True]),
        ("EndSelections", [True]),
    ]

    # The selections toolbar's "Clear all selections" button: every chart shows all orders.
    page.locator('#toolbar button[title="Clear all selections"]').click()
    expect_all_orders(page)
    expect_customers(page, set(CUSTOMERS["Customer"]))
    settles(lambda: listbox(page, "Region"), dict.fromkeys(("East", "North", "South"), ""))
    assert sent(page, "ClearAll")


def pivot_text(page: Page) -> list[str]:
    """The pivot table's drawn texts, top to bottom and left to right."""
    text: str = page.locator("#pivot-table").inner_text()
    return [line for line in text.split("\n") if line.strip()]


def test_the_pivot_table_draws_the_regions_and_expands_one(charts: Page) -> None:
    by_customer, by_region = sums()
    regions = sorted(by_region)
    settles(
        lambda: pivot_text(charts),
        ["Region", *regions, *(str(by_region[r]) for r in regions)],
    )
    charts.locator(
        '#pivot-table [data-testid="dimension-cell"][title="North"] [data-testid="expand-icon"]'
    ).click()
    north = sorted(c for c, r in REGION_OF.items() if r == "North")
    for customer in north:  # the expanded node's customers, each with its own sum
        expect(charts.locator("#pivot-table")).to_contain_text(customer)
        expect(charts.locator("#pivot-table")).to_contain_text(str(by_customer[customer]))
    assert sent(charts, "ExpandLeft"), "the expand went to the engine"
