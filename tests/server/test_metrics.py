"""GET /metrics and PrometheusPort: the exposition parsed with the Prometheus client's parser."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from appfiles import CUSTOMERS, ORDERS, ServerProcess, needs_qvd_reader, package_bytes
from assoc.server import create_app
from assoc.server.settings import Settings


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition by (name, sorted labels)."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(text: str, name: str, **labels: str) -> float:
    """One sample's value (KeyError when it is absent)."""
    return samples(text)[(name, tuple(sorted(labels.items())))]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """A started service with a memory budget that holds one small app; never saturated (a
    busy machine must not flip the figure between a scrape and a healthcheck)."""
    settings = Settings(memory_budget_mb=1, cpu_overload_threshold=100, ram_overload_threshold=100)
    app = create_app(settings, tmp_path / "data")
    with TestClient(app) as client:
        yield client


class Qix:
    """Calls over one QIX socket of the test client: each call's answer (notices skipped)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.n = 0

    def __call__(self, handle: int, method: str, params: list[object]) -> dict[str, Any]:
        self.n += 1
        self.ws.send_json(
            {"jsonrpc": "2.0", "id": self.n, "handle": handle, "method": method, "params": params}
        )
        while True:
            answer: dict[str, Any] = self.ws.receive_json()
            if answer.get("id") == self.n:
                return answer


BAR = {
    "qInfo": {"qType": "barchart"},
    "qHyperCubeDef": {
        "qDimensions": [{"qDef": {"qFieldDefs": ["Customer"]}}],
        "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": 10}],
    },
}


@contextlib.contextmanager
def qix_doc(client: TestClient) -> Iterator[tuple[Qix, int]]:
    """A QIX socket on a newly imported app with its doc open: the calls and the doc handle."""
    app_id = client.post("/v1/apps/import", content=package_bytes()).json()["attributes"]["id"]
    with client.websocket_connect(f"/app/{app_id}") as ws:
        assert ws.receive_json()["method"] == "OnConnected"
        call = Qix(ws)
        yield call, call(-1, "OpenDoc", [app_id])["result"]["qReturn"]["qHandle"]


def scrape(client: TestClient) -> str:
    """The exposition, checked for its content type."""
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    return response.text


def test_metrics_carry_the_healthcheck_figures(client: TestClient) -> None:
    text = scrape(client)
    health = client.get("/healthcheck").json()
    assert value(text, "assoc_memory_committed_bytes") > 0
    assert value(text, "assoc_memory_allocated_bytes") >= value(
        text, "assoc_memory_committed_bytes"
    )
    assert value(text, "assoc_saturated") == int(health["saturated"])
    assert value(text, "assoc_apps_loaded") == 0
    assert value(text, "assoc_apps_loaded_bytes") == 0
    assert value(text, "assoc_calls_total") == health["apps"]["calls"]
    assert value(text, "process_resident_memory_bytes") > 0
    assert value(text, "assoc_threads") >= 1
    # Scrapes are probes: they are not engine calls.
    scrape(client)
    assert value(scrape(client), "assoc_calls_total") == health["apps"]["calls"]


@needs_qvd_reader
def test_requests_are_counted_and_timed_per_route_and_status(client: TestClient) -> None:
    body = package_bytes()
    app_id = client.post("/v1/apps/import", content=body).json()["attributes"]["id"]
    for _ in range(3):
        assert client.get(f"/v1/apps/{app_id}/data/metadata").status_code == 200
    assert client.get("/v1/apps/no-such-app/data/metadata").status_code == 404
    assert client.get("/nowhere").status_code == 404
    text = scrape(client)
    route = "/v1/apps/{appId}/data/metadata"
    assert value(text, "assoc_http_requests_total", route=route, method="GET", status="200") == 3
    assert value(text, "assoc_http_requests_total", route=route, method="GET", status="404") == 1
    assert (
        value(text, "assoc_http_requests_total", route="<unmatched>", method="GET", status="404")
        == 1
    )
    count = value(
        text, "assoc_http_request_duration_seconds_count", route=route, method="GET", status="200"
    )
    assert count == 3
    inf = value(
        text,
        "assoc_http_request_duration_seconds_bucket",
        route=route,
        method="GET",
        status="200",
        le="+Inf",
    )
    assert inf == 3
    assert (
        value(
            text, "assoc_http_request_duration_seconds_sum", route=route, method="GET", status="200"
        )
        > 0
    )
    # The import: its duration and the body bytes it received.
    assert value(text, "assoc_import_duration_seconds_count", status="200") == 1
    assert value(text, "assoc_import_bytes_total") == len(body)
    assert value(text, "assoc_apps_loaded") == 1
    assert value(text, "assoc_apps_stored") == 1
    assert value(text, "assoc_apps_loaded_bytes") > 0


@needs_qvd_reader
def test_failed_imports_and_evictions_are_counted(client: TestClient) -> None:
    assert client.post("/v1/apps/import", content=b"\x00not an app").status_code == 415
    text = scrape(client)
    assert value(text, "assoc_import_duration_seconds_count", status="415") == 1
    assert value(text, "assoc_app_evictions_total") == 0
    # Apps of ~0.5 MB each under a 1 MB budget: loading the third evicts an idle one.
    big = {"Id": list(range(40_000)), "Text": [f"value-{i}" for i in range(40_000)]}
    ids = []
    for n in range(3):
        response = client.post("/v1/apps/import", content=package_bytes({f"T{n}": big}))
        assert response.status_code == 200
        ids.append(response.json()["attributes"]["id"])
    text = scrape(client)
    evictions = value(text, "assoc_app_evictions_total")
    assert evictions >= 1
    assert value(text, "assoc_apps_loaded") < 3
    # Imports are not loads; using an evicted app loads it from its files again.
    assert value(text, "assoc_app_loads_total") == 0
    assert client.get(f"/v1/apps/{ids[0]}/data/metadata").status_code == 200
    text = scrape(client)
    assert value(text, "assoc_app_loads_total") == 1
    assert value(text, "assoc_app_load_seconds_total") > 0
    assert value(text, "assoc_app_load_bytes_total") > 300_000
    assert value(text, "assoc_app_evictions_total") == evictions + 1


@needs_qvd_reader
def test_result_cache_hits_and_misses_follow_the_engine(client: TestClient) -> None:
    import assoc

    before = samples(scrape(client))
    app = assoc.App.from_tables({"Orders": ORDERS, "Customers": CUSTOMERS})
    for _ in range(2):
        with app.session() as session:
            session.select("Customer", ["a"])
            session.state("Name")
    counters = assoc.engine_counters()["cache"]
    after = samples(scrape(client))
    hits = after[("assoc_result_cache_hits_total", ())]
    misses = after[("assoc_result_cache_misses_total", ())]
    assert hits + misses == counters["lookups"]
    assert hits == counters["hits"]
    assert (
        hits + misses
        > before[("assoc_result_cache_hits_total", ())]
        + before[("assoc_result_cache_misses_total", ())]
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.server
def test_prometheus_port_serves_the_metrics_alone(tmp_path: Path) -> None:
    port = _free_port()
    server = ServerProcess(tmp_path / "data", f"PrometheusPort={port}").start()
    try:
        assert f"metrics on http://127.0.0.1:{port}" in server.read_log()
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        assert value(text, "assoc_apps_stored") == 0
        assert value(text, "assoc_saturated") in (0, 1)
        # That port serves the metrics and nothing of the engine API.
        other = httpx.get(f"http://127.0.0.1:{port}/v1/apps", timeout=10).text
        assert "assoc_calls_total" in other
        with server.client() as client:
            assert value(client.get("/metrics").text, "assoc_apps_stored") == 0
    finally:
        server.stop()


def test_a_bad_prometheus_port_is_refused() -> None:
    import assoc

    with pytest.raises(assoc.Error, match=r"PrometheusPort=.70000.: must be 0\.\.65535"):
        Settings.from_sources(["PrometheusPort=70000"], environ={})


@needs_qvd_reader
def test_qix_requests_are_counted_per_method(client: TestClient) -> None:
    app_id = client.post("/v1/apps/import", content=package_bytes()).json()["attributes"]["id"]
    with client.websocket_connect("/app/engineData") as ws:
        assert ws.receive_json()["method"] == "OnConnected"
        calls = [
            (-1, "EngineVersion", []),
            (-1, "EngineVersion", []),
            (-1, "OpenDoc", [app_id]),
            (1, "NoSuchMethod", []),
        ]
        for n, (handle, method, params) in enumerate(calls, 1):
            ws.send_json(
                {"jsonrpc": "2.0", "id": n, "handle": handle, "method": method, "params": params}
            )
            assert ws.receive_json()["id"] == n
    text = scrape(client)
    assert value(text, "assoc_qix_requests_total", method="EngineVersion") == 2
    assert value(text, "assoc_qix_requests_total", method="OpenDoc") == 1
    # Unknown methods are answered with an error and make no label of their own.
    assert ("assoc_qix_requests_total", (("method", "NoSuchMethod"),)) not in samples(text)


@needs_qvd_reader
def test_layouts_made_ahead_are_counted_planned_and_served(client: TestClient) -> None:
    """After a change, the layouts of objects laid out before are made ahead: a GetLayout
    takes one (served); one never asked is planned only."""
    with qix_doc(client) as (call, doc):
        obj = call(doc, "CreateSessionObject", [BAR])["result"]["qReturn"]["qHandle"]
        call(obj, "GetLayout", [])
        patch = {"qOp": "replace", "qPath": "/qHyperCubeDef/qMeasures/0/qDef/qDef"}
        call(obj, "ApplyPatches", [[{**patch, "qValue": '"Sum(Amount)*2"'}], False])
        layout = call(obj, "GetLayout", [])["result"]["qLayout"]
        matrix = layout["qHyperCube"]["qDataPages"][0]["qMatrix"]
        assert [(r[0]["qText"], r[1]["qNum"]) for r in matrix] == [
            ("a", 30),
            ("b", 40),
            ("c", 14),
        ]
        # Two changes in a row: the first's layout is dropped unasked, and the object is made
        # ahead no more until it is asked again.
        call(obj, "ApplyPatches", [[{**patch, "qValue": '"Sum(Amount)*3"'}], False])
        call(obj, "ApplyPatches", [[{**patch, "qValue": '"Sum(Amount)*4"'}], False])
        layout = call(obj, "GetLayout", [])["result"]["qLayout"]
        assert layout["qHyperCube"]["qDataPages"][0]["qMatrix"][0][1]["qNum"] == 60
        call(obj, "ApplyPatches", [[{**patch, "qValue": '"Sum(Amount)*5"'}], False])
        layout = call(obj, "GetLayout", [])["result"]["qLayout"]
        assert layout["qHyperCube"]["qDataPages"][0]["qMatrix"][0][1]["qNum"] == 75
    text = scrape(client)
    assert value(text, "assoc_qix_layouts_ahead_total", outcome="planned") == 3
    assert value(text, "assoc_qix_layouts_ahead_total", outcome="served") == 2


@needs_qvd_reader
def test_layouts_after_selection_mode_are_made_ahead(client: TestClient) -> None:
    """A selection made in selection mode changes every chart: their layouts are made ahead
    from the selection on; accepting it (EndSelections changes the modal chart alone) keeps
    them and makes the modal chart's again, out of selection mode."""
    with qix_doc(client) as (call, doc):
        pie = {**BAR, "qInfo": {"qType": "piechart"}}
        charts = [
            call(doc, "CreateSessionObject", [props])["result"]["qReturn"]["qHandle"]
            for props in (BAR, pie)
        ]
        for handle in charts:
            call(handle, "GetLayout", [])
        call(charts[0], "BeginSelections", [["/qHyperCubeDef"]])
        picked = call(charts[0], "SelectHyperCubeValues", ["/qHyperCubeDef", 0, [0], False])
        assert set(charts) <= set(picked["change"])
        assert call(charts[0], "EndSelections", [True])["change"] == [charts[0]]
        for handle in charts:
            layout = call(handle, "GetLayout", [])["result"]["qLayout"]
            matrix = layout["qHyperCube"]["qDataPages"][0]["qMatrix"]
            assert [(r[0]["qText"], r[1]["qNum"]) for r in matrix] == [("a", 15)]
            assert layout["qSelectionInfo"] == {"qInSelections": False, "qMadeSelections": False}
    text = scrape(client)
    # The two charts after the selection, the modal one again after EndSelections.
    assert value(text, "assoc_qix_layouts_ahead_total", outcome="planned") == 3
    assert value(text, "assoc_qix_layouts_ahead_total", outcome="served") == 2


@needs_qvd_reader
def test_requests_that_change_nothing_keep_the_layouts_made_ahead(client: TestClient) -> None:
    """As nebula.js asks after a selection: the chart's effective properties, the app's
    layout, an object by id and a layout asked twice come between the GetLayouts of the
    changed charts; none of them drops the layouts made ahead, and each answers as always."""
    with qix_doc(client) as (call, doc):
        pie = {**BAR, "qInfo": {"qType": "piechart", "qId": "pie-1"}}
        charts = [
            call(doc, "CreateSessionObject", [props])["result"]["qReturn"]["qHandle"]
            for props in (BAR, pie)
        ]
        for handle in charts:
            call(handle, "GetLayout", [])
        picked = call(charts[0], "SelectHyperCubeValues", ["/qHyperCubeDef", 0, [0], False])
        assert set(charts) <= set(picked["change"])
        props = call(charts[0], "GetEffectiveProperties", [])["result"]["qProp"]
        assert props["qInfo"]["qType"] == BAR["qInfo"]["qType"]
        assert call(doc, "GetAppLayout", [])["result"]["qLayout"]["qHasData"] is True
        found = call(doc, "GetObject", ["pie-1"])["result"]["qReturn"]["qHandle"]
        assert found == charts[1]
        for handle in (charts[0], charts[0], charts[1]):  # the bar chart's a second time
            layout = call(handle, "GetLayout", [])["result"]["qLayout"]
            matrix = layout["qHyperCube"]["qDataPages"][0]["qMatrix"]
            assert [(r[0]["qText"], r[1]["qNum"]) for r in matrix] == [("a", 15)]
    text = scrape(client)
    assert value(text, "assoc_qix_layouts_ahead_total", outcome="planned") == 2
    assert value(text, "assoc_qix_layouts_ahead_total", outcome="served") == 2


@needs_qvd_reader
def test_a_pivot_s_cells_reuse_its_cube(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pivot table's layout asks the engine for its cube once as the cells read it, so the
    cells take it from the result cache (its subtotals by the outer dimension are a cube of
    their own): two distinct cubes, not three."""
    import assoc.session

    asked: list[tuple[Any, ...]] = []
    hypercube = assoc.session.Session.hypercube

    def recorded(self: Any, *args: Any, **kw: Any) -> Any:
        asked.append((repr(args), repr(sorted(kw.items()))))
        return hypercube(self, *args, **kw)

    monkeypatch.setattr(assoc.session.Session, "hypercube", recorded)
    with qix_doc(client) as (call, doc):
        pivot = {
            "qInfo": {"qType": "pivot-table"},
            "qHyperCubeDef": {
                "qMode": "P",
                "qDimensions": [
                    {"qDef": {"qFieldDefs": ["Name"]}},
                    {"qDef": {"qFieldDefs": ["OrderId"]}},
                ],
                "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
                "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": 10}],
            },
        }
        obj = call(doc, "CreateSessionObject", [pivot])["result"]["qReturn"]["qHandle"]
        layout = call(obj, "GetLayout", [])["result"]["qLayout"]
    page = layout["qHyperCube"]["qPivotDataPages"][0]
    assert [row[0]["qNum"] for row in page["qData"]] == [15, 20, 7]  # Ann, Bob, Cid
    assert len(asked) >= 3
    assert len(set(asked)) == 2


def test_reloads_are_timed_by_outcome(client: TestClient) -> None:
    with client.websocket_connect("/app/engineData") as ws:
        assert ws.receive_json()["method"] == "OnConnected"
        call = Qix(ws)
        doc = call(-1, "CreateSessionApp", [])["result"]["qReturn"]["qHandle"]
        call(doc, "SetScript", ["LOAD RecNo() AS N AUTOGENERATE 10;"])
        assert call(doc, "DoReload", [])["result"] == {"qReturn": True}
        call(doc, "SetScript", ["LOAD * FROM [lib://nowhere/x.csv] (txt);"])
        assert call(doc, "DoReload", [])["result"] == {"qReturn": False}
        assert call(doc, "DoReload", [0, True])["error"]  # partial: not implemented, not timed
    text = scrape(client)
    assert value(text, "assoc_reload_duration_seconds_count", outcome="ok") == 1
    assert value(text, "assoc_reload_duration_seconds_count", outcome="failed") == 1
