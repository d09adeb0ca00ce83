"""GET /ui in a real browser: the list of apps, the data model, list boxes in Qlik's four
states, the selections bar and the chart, all updated through QIX."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.server

Page = Any


def open_app(page: Page, base: str, app_id: str) -> None:
    """Opens an app's view and waits for its first drawing (a second app in the same page is
    a change of the hash only: the page is not loaded again)."""
    page.goto(f"{base}/ui/#app={app_id}")
    expect(page.locator("body")).to_have_attribute("data-app", app_id)


def states(page: Page, field: str) -> dict[str, str]:
    """A list box's values and their states."""
    items = page.locator(f'.listbox[data-field="{field}"] li[data-state]')
    return dict(
        zip(
            items.evaluate_all("els => els.map(e => e.dataset.value)"),
            items.evaluate_all("els => els.map(e => e.dataset.state)"),
            strict=True,
        )
    )


def settle(page: Page, generation: int) -> None:
    """Waits until the page has drawn `generation` times."""
    expect(page.locator("body")).to_have_attribute("data-generation", str(generation))


def test_page_is_served_as_static_files_that_need_no_build(demo: Any) -> None:
    with httpx.Client(base_url=demo.url) as client:
        page = client.get("/ui/")
        assert page.status_code == 200
        assert '<script type="module" src="page.js">' in page.text
        for name, kind in (("page.js", "javascript"), ("qix.js", "javascript"), ("ui.css", "css")):
            response = client.get(f"/ui/{name}")
            assert response.status_code == 200
            assert kind in response.headers["content-type"]
        assert client.get("/ui/nothing.js").status_code == 404
        # Page files are not engine calls.
        calls = client.get("/healthcheck").json()["apps"]["calls"]
        client.get("/ui/")
        assert client.get("/healthcheck").json()["apps"]["calls"] == calls


def test_the_list_of_apps_links_to_each_app(demo: Any, page: Page, screenshots: Path) -> None:
    page.goto(f"{demo.url}/ui/")
    rows = page.locator("#apps tbody tr")
    expect(rows).to_have_count(3)
    link = page.locator(f'#apps tr[data-app-id="{demo.sales}"] a')
    expect(link).to_have_text("Sales")
    page.screenshot(path=str(screenshots / "ui-apps.png"))
    link.click()
    settle(page, 1)
    expect(page.locator("#app-title")).to_have_text("Sales")


def test_the_data_model_shows_tables_and_the_keys_that_link_them(demo: Any, page: Page) -> None:
    open_app(page, demo.url, demo.sales)
    tables = page.locator(".model-table")
    expect(tables).to_have_count(3)
    orders = page.locator('.model-table[data-table="orders"]')
    expect(orders.locator("h3")).to_contain_text("8 rows")
    keys = orders.locator("li.key")
    expect(keys).to_have_text(["CustomerId", "ProductId"])
    expect(page.locator('.model-table[data-table="customers"] li.key')).to_have_text(["CustomerId"])
    expect(page.locator("#links line")).to_have_count(2)
    expect(page.locator(".model-table.synthetic, .model-table.loose")).to_have_count(0)


def test_synthetic_key_tables_and_loose_tables_are_marked(
    demo: Any, page: Page, screenshots: Path
) -> None:
    open_app(page, demo.url, demo.synthetic)
    synthetic = page.locator(".model-table.synthetic")
    expect(synthetic).to_have_count(1)
    expect(synthetic).to_have_attribute("data-table", "$Syn 1 Table")
    expect(synthetic.locator(".mark")).to_have_text("synthetic key table")
    expect(page.locator('.model-table[data-table="budget"] li.key')).to_have_text(["$Syn 1"])
    page.locator("#model-view").screenshot(path=str(screenshots / "ui-synthetic-key.png"))
    open_app(page, demo.url, demo.loose)
    loose = page.locator(".model-table.loose")
    expect(loose).to_have_count(1)
    expect(loose.locator(".mark")).to_have_text("loose")


def test_list_boxes_select_on_click_and_show_the_four_states(
    demo: Any, page: Page, screenshots: Path
) -> None:
    open_app(page, demo.url, demo.sales)
    # The first three fields have list boxes; a field of the model opens another.
    expect(page.locator(".listbox h3")).to_have_text(
        ["CustomerId0 of 6", "Customer0 of 6", "Country0 of 4"]
    )
    page.locator('.model-table[data-table="products"] li[data-field="Category"]').click()
    settle(page, 2)
    expect(page.locator(".listbox")).to_have_count(4)
    page.locator('.model-table[data-table="products"] li[data-field="Category"]').click()
    expect(page.locator(".listbox")).to_have_count(4)
    assert set(states(page, "Country").values()) == {"O"}

    page.locator('.listbox[data-field="Country"] li[data-value="Austria"]').click()
    settle(page, 3)
    assert states(page, "Country") == {
        "Austria": "S",
        "France": "A",
        "Germany": "A",
        "Norway": "A",
    }
    assert states(page, "Category") == {"Coffee": "O", "Food": "X", "Tea": "O"}
    expect(page.locator('.listbox[data-field="Country"] .counts')).to_have_text("1 of 4")
    expect(page.locator("#selection-chips .chip")).to_have_text(["Country: Austria\u00d7"])
    # Colours as Qlik shows them: selected green, alternative light grey, excluded dark grey.
    colour = "el => getComputedStyle(el).backgroundColor"
    box = page.locator('.listbox[data-field="Country"]')
    assert box.locator('li[data-value="Austria"]').evaluate(colour) == "rgb(0, 152, 69)"
    assert box.locator('li[data-value="France"]').evaluate(colour) == "rgb(221, 221, 221)"
    food = page.locator('.listbox[data-field="Category"] li[data-value="Food"]')
    assert food.evaluate(colour) == "rgb(169, 169, 169)"
    tea = page.locator('.listbox[data-field="Category"] li[data-value="Tea"]')
    assert tea.evaluate(colour) == "rgb(255, 255, 255)"

    # A second selection in another field: Tea within Austria.
    tea.click()
    settle(page, 4)
    assert states(page, "Category") == {"Coffee": "A", "Food": "X", "Tea": "S"}
    assert states(page, "Country")["Austria"] == "S"
    assert states(page, "Country")["Germany"] == "X"
    expect(page.locator("#selection-chips .chip")).to_have_count(2)
    page.screenshot(path=str(screenshots / "ui-app.png"), full_page=True)

    # Clearing one field from the bar, then everything.
    page.locator('#selection-chips .chip[data-field="Category"] button').click()
    settle(page, 5)
    expect(page.locator("#selection-chips .chip")).to_have_count(1)
    assert states(page, "Category") == {"Coffee": "O", "Food": "X", "Tea": "O"}
    page.locator("#clear-all").click()
    settle(page, 6)
    expect(page.locator("#selection-chips .chip")).to_have_count(0)
    assert set(states(page, "Country").values()) == {"O"}


def test_the_chart_follows_selections(demo: Any, page: Page, screenshots: Path) -> None:
    open_app(page, demo.url, demo.sales)
    # It starts on the first text field and the sum of the last numeric one.
    cube = page.locator("#cube table")
    expect(cube.locator("thead th")).to_have_text(["Customer", "Sum(Amount)"])
    expect(cube.locator("tbody tr").nth(0)).to_have_text("Alpine Foods280")
    page.select_option("#dimension", "Country")
    settle(page, 2)
    expect(cube.locator("thead th")).to_have_text(["Country", "Sum(Amount)"])
    rows = cube.locator("tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.nth(0)).to_have_attribute("data-value", "Austria")
    # Austria: orders 1, 2 (Alpine Foods) and 6 (Danube Trade) = 200 + 80 + 240.
    expect(rows.nth(0).locator("td.num")).to_have_text("520")
    expect(rows.nth(3).locator("td")).to_have_text(["Norway", "0"])
    expect(cube.locator("td[data-total]")).to_have_text("830")

    page.locator('.model-table[data-table="products"] li[data-field="ProductId"]').click()
    settle(page, 3)
    page.locator('.listbox[data-field="ProductId"] li[data-value="12"]').click()
    settle(page, 4)
    page.select_option("#measure-function", "Count distinct")
    settle(page, 5)
    expect(cube.locator("thead th")).to_have_text(["Country", "Count(distinct Amount)"])
    page.select_option("#measure-function", "Sum")
    settle(page, 6)
    # Product 12 (Biscuits): orders 4 (Café Lyon, 50), 7 (Elbe Stores, 20), 8 (Berliner Markt, 40).
    expect(cube.locator("tbody tr")).to_have_text(["France50", "Germany60"])
    expect(cube.locator("td[data-total]")).to_have_text("110")

    page.locator('input[name="view"][value="bars"]').check()
    bars = page.locator("#cube .bar-row")
    expect(bars).to_have_count(2)
    widths = bars.locator(".bar").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().width)"
    )
    assert widths[0] == pytest.approx(widths[1] * 50 / 60, abs=1)
    page.screenshot(path=str(screenshots / "ui-chart.png"), full_page=True)


def test_an_unknown_app_shows_the_engine_error(demo: Any, page: Page) -> None:
    page.goto(f"{demo.url}/ui/#app=no-such-app")
    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error")).to_contain_text("OpenDoc")
