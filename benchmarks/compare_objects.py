"""Side-by-side benchmarks of a front-end page over QIX: what nebula.js charts ask of `assoc serve`
against the same work through the embedded API, on a 10,000,000-row app.

1. A page of six charts (bar, line, pie, table, pivot, filter pane): a selection made on the
   bar chart in selection mode (BeginSelections, SelectHyperCubeValues, EndSelections(true)),
   then the six layouts requested at once, as enigma.js sends them on `changed`; timed from
   the first request to the last layout received. The embedded side selects the same value
   and computes the same six results (`hypercube(...).rows`, pivot as a two-dimension cube,
   the list's `state`).
2. `ApplyPatches` of a bar chart's measure, then its `GetLayout`, against a fresh embedded
   cube of the patched definition (each round patches to an expression neither side has
   computed before).

    python benchmarks/compare_objects.py [--rows 10000000] [--runs 5] [--steps 20] [--no-delta]
        [--only page|patches] [--cpu] [--nebula-order]

The QIX client asks as enigma.js does by default (and so nebula.js charts): `"delta": true` on
each request whose method has one out-parameter other than qSuccess (OpenDoc,
CreateSessionObject, GetLayout; not ApplyPatches or the selections), applying the JSON-Patch
operations of delta answers to the values it keeps per handle and method. `--no-delta` asks for
full answers, as before delta answers existed.

`--nebula-order` asks the page's six layouts as nebula.js charts do (a recorded click): on
`changed`, right after the selection (the bar chart in selection mode), the bar chart's
GetEffectiveProperties first; then EndSelections(true), and the bar chart's properties and
layout again; the embedded side is the same.

`--cpu` (Linux) adds the CPU time of each page step: the server's threads by role (read from
/proc/<pid>/task, where the service names its threads) and the client's (this process). The
server answers one session's requests one after another, so its CPU time is a floor under
the step's wall time.

Targets (issue: front-end objects): the page <= 1.5x embedded + 5 ms; ApplyPatches + GetLayout
<= 1.2x a fresh cube. Runs alternate; each run's median is kept. It prints Markdown and never
fails on a missed target.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets

import assoc
from compare_http import assoc_server, import_qvd
from compare_qix import CUSTOMERS, big_app_qvd
from conftest import SCALE, scaled
from harness import Measure, column_bytes, symbol_bytes


def _cube(kind: str, dims: list[str], measures: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "qInfo": {"qType": kind},
        "qHyperCubeDef": {
            "qDimensions": [{"qDef": {"qFieldDefs": [d]}} for d in dims],
            "qMeasures": [{"qDef": {"qDef": m}} for m in measures],
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 4, "qHeight": 100}],
            "qSuppressZero": False,
            "qSuppressMissing": True,
            **extra,
        },
    }


# The six objects and the embedded work each stands for: (dimensions, measures).
CHARTS: dict[str, tuple[dict[str, Any], list[str], list[str]]] = {
    "barchart": (
        _cube("barchart", ["Customer"], ["Sum(Amount)"]),
        ["Customer"],
        ["Sum(Amount)"],
    ),
    "linechart": (_cube("linechart", ["Region"], ["Avg(Amount)"]), ["Region"], ["Avg(Amount)"]),
    "piechart": (
        _cube("piechart", ["Region"], ["Count(Amount)"]),
        ["Region"],
        ["Count(Amount)"],
    ),
    "table": (
        _cube("table", ["Customer", "Region"], ["Sum(Amount)", "Max(Amount)"]),
        ["Customer", "Region"],
        ["Sum(Amount)", "Max(Amount)"],
    ),
    "pivot-table": (
        _cube("pivot-table", ["Region", "Customer"], ["Sum(Amount)"], qMode="P"),
        ["Region", "Customer"],
        ["Sum(Amount)"],
    ),
}
FILTER = {
    "qInfo": {"qType": "filterpane"},
    "qListObjectDef": {
        "qDef": {"qFieldDefs": ["Customer"]},
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 100}],
    },
}


# Whether the client asks for delta answers (--no-delta: not).
DELTA = True


def _delta_methods() -> frozenset[str]:
    """The methods enigma.js asks delta answers of: one out-parameter, not qSuccess."""
    from assoc.server.qix.schema import schema

    return frozenset(
        name
        for methods in schema().values()
        for name, method in methods.items()
        if len(method.out) == 1 and method.out[0] != "qSuccess"
    )


def _apply(value: Any, ops: list[dict[str, Any]]) -> Any:
    """A value after JSON-Patch operations (`/` the whole value), changed in place."""
    for op in ops:
        path = op["path"]
        if path == "/":
            value = op["value"]
            continue
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]
        parent = value
        for part in parents:
            parent = parent[int(part)] if type(parent) is list else parent[part]
        if type(parent) is list:
            index = int(last)
            if op["op"] == "add":
                parent.insert(index, op["value"])
            elif op["op"] == "replace":
                parent[index] = op["value"]
            else:
                del parent[index]
        elif op["op"] == "remove":
            del parent[last]
        else:
            parent[last] = op["value"]
    return value


class Socket:
    """A pipelining QIX client: requests sent at once, answers matched by id; delta answers
    (when DELTA) patched into the values kept per handle, method and result member."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.next_id = 0
        self.delta = _delta_methods() if DELTA else frozenset()
        self.kept: dict[tuple[int, str, str], Any] = {}

    async def calls(self, requests: list[tuple[str, Any, int]]) -> list[dict[str, Any]]:
        """Sends every request, then waits for all their answers (error answers raise)."""
        ids: dict[int, tuple[int, str]] = {}
        for method, params, handle in requests:
            self.next_id += 1
            ids[self.next_id] = (handle, method)
            request = {
                "jsonrpc": "2.0",
                "id": self.next_id,
                "method": method,
                "handle": handle,
                "params": params,
            }
            if method in self.delta:
                request["delta"] = True
            await self.ws.send(json.dumps(request))
        answers: dict[int, dict[str, Any]] = {}
        while len(answers) < len(ids):
            message = json.loads(await self.ws.recv())
            for closed in message.get("close", ()):
                self.kept = {k: v for k, v in self.kept.items() if k[0] != closed}
            if message.get("id") in ids:
                if "error" in message:
                    raise RuntimeError(f"{message['error']}")
                result = message["result"]
                if message.get("delta"):
                    handle, method = ids[message["id"]]
                    for member, ops in result.items():
                        key = (handle, method, member)
                        result[member] = self.kept[key] = _apply(self.kept.get(key), ops)
                answers[message["id"]] = result
        return [answers[i] for i in ids]

    async def call(self, method: str, params: Any, handle: int) -> dict[str, Any]:
        return (await self.calls([(method, params, handle)]))[0]


@dataclass
class Times:
    """Per-run medians (seconds) of each side."""

    qix_s: list[float] = field(default_factory=list)
    embedded_s: list[float] = field(default_factory=list)
    parts: dict[str, list[float]] = field(default_factory=dict)  # embedded, by object
    cpu: StepCpu | None = None  # the QIX steps' CPU time, when measured

    def ratios(self) -> list[float]:
        return [q / e for q, e in zip(self.qix_s, self.embedded_s, strict=True)]


class StepCpu:
    """The CPU time of each step: the server's threads by role (Linux: /proc/<pid>/task, by the
    names the service gives its threads) and this process's, the client's."""

    SERVER_ROLES = ("event loop", "QIX engine threads", "engine pool", "other threads")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.steps: list[dict[str, float]] = []
        self.embedded: list[float] = []  # the embedded page's CPU seconds, for comparison

    def _role(self, tid: int, name: str) -> str:
        if tid == self.pid:
            return "event loop"  # the main thread runs uvicorn's loop
        if name.startswith("assoc-qix"):
            return "QIX engine threads"
        return "engine pool" if name.startswith("assoc-pool") else "other threads"

    def _read(self) -> dict[str, int]:
        """Nanoseconds of CPU so far, by role."""
        out = dict.fromkeys(self.SERVER_ROLES, 0)
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                name = (task / "comm").read_text().strip()
                ns = int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):  # the thread ended meanwhile
                continue
            out[self._role(int(task.name), name)] += ns
        return out

    @contextmanager
    def step(self) -> Iterator[None]:
        before = self._read()
        client = time.process_time_ns()  # the reads of /proc left out
        yield
        client = time.process_time_ns() - client
        after = self._read()
        spent = {role: (after[role] - before[role]) / 1e9 for role in self.SERVER_ROLES}
        self.steps.append({**spent, "client": client / 1e9})

    def report(self) -> str:
        """Medians per step, in ms."""
        med = {r: statistics.median(s[r] for s in self.steps) * 1e3 for r in self.steps[0]}
        server = statistics.median(sum(s[r] for r in self.SERVER_ROLES) for s in self.steps)
        parts = ", ".join(f"{r} {med[r]:.2f}" for r in self.SERVER_ROLES)
        return (
            f"CPU per page step (medians of {len(self.steps)} steps, ms): the server "
            f"{server * 1e3:.2f} ({parts}); the client {med['client']:.2f}; the embedded page "
            f"{statistics.median(self.embedded) * 1e3:.2f}"
        )


@asynccontextmanager
async def _page(url: str, app_id: str) -> AsyncIterator[tuple[Socket, int, list[int]]]:
    """A socket with the app open and the six objects made and laid out once."""
    async with websockets.connect(url, max_size=None) as ws:
        await ws.recv()
        qix = Socket(ws)
        doc = (await qix.call("OpenDoc", [app_id], -1))["qReturn"]["qHandle"]
        handles = []
        for props in [c[0] for c in CHARTS.values()] + [FILTER]:
            made = await qix.call("CreateSessionObject", [props], doc)
            handles.append(made["qReturn"]["qHandle"])
        await qix.calls([("GetLayout", [], h) for h in handles])
        yield qix, doc, handles


async def _page_steps(
    url: str, app_id: str, customers: list[int], cpu: StepCpu | None = None, nebula: bool = False
) -> list[float]:
    """Each step: a confirmed selection of one customer on the bar chart and six layouts, in
    page_step's order (their CPU time into `cpu` when given)."""
    async with _page(url, app_id) as (qix, doc, handles):
        times = []
        for customer in customers:
            await qix.call("ClearAll", [], doc)
            await qix.calls([("GetLayout", [], h) for h in handles])
            with cpu.step() if cpu is not None else contextlib.nullcontext():
                start = time.perf_counter()
                await page_step(qix, handles, customer, nebula)
                times.append(time.perf_counter() - start)
        return times


async def page_step(qix: Socket, handles: list[int], customer: int, nebula: bool = False) -> None:
    """One customer confirmed on the bar chart in selection mode, then the six layouts; with
    `nebula`, the six layouts asked in selection mode right after the selection (as
    nebula.js charts ask on `changed`), then the confirmation and the bar chart's layout."""
    bar = handles[0]
    await qix.call("BeginSelections", [["/qHyperCubeDef"]], bar)
    await qix.call("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [customer], False], bar)
    if nebula:  # the chart in selection mode reads its properties first, as stardust does
        asked = [("GetEffectiveProperties", [], bar)] + [("GetLayout", [], h) for h in handles]
        layouts = (await qix.calls(asked))[1:]
        assert layouts[0]["qLayout"]["qSelectionInfo"]["qInSelections"] is True
        await qix.call("EndSelections", [True], bar)
        again = await qix.calls([("GetEffectiveProperties", [], bar), ("GetLayout", [], bar)])
        layouts[0] = again[1]
        assert layouts[0]["qLayout"]["qSelectionInfo"]["qInSelections"] is False
    else:
        await qix.call("EndSelections", [True], bar)
        layouts = await qix.calls([("GetLayout", [], h) for h in handles])
    assert layouts[0]["qLayout"]["qHyperCube"]["qSize"]["qcy"] == 1


def _embedded_page(
    session: assoc.Session, customer: int, parts: dict[str, list[float]] | None = None
) -> None:
    """The page's engine work; each object's seconds into `parts` when given."""
    session.clear()
    session.select_indices("Customer", [customer])
    for kind, (_, dims, measures) in CHARTS.items():
        start = time.perf_counter()
        session.hypercube(dims, measures).rows  # noqa: B018
        if parts is not None:
            parts.setdefault(kind, []).append(time.perf_counter() - start)
    start = time.perf_counter()
    session.state("Customer")
    if parts is not None:
        parts.setdefault("filterpane", []).append(time.perf_counter() - start)


def compare_page(
    url: str,
    app_id: str,
    app: assoc.App,
    runs: int,
    steps: int,
    cpu: StepCpu | None = None,
    nebula: bool = False,
) -> Times:
    """The six-chart page over QIX (in nebula.js's order with `nebula`) against the embedded
    work, alternating runs (the QIX steps' CPU time into `cpu` when given)."""
    out = Times()
    order = list(range(CUSTOMERS))  # every step selects a customer neither side selected
    random.Random(5).shuffle(order)
    with app.session() as session:
        _embedded_page(session, order.pop())  # warm-up: both sides load what they need once
        asyncio.run(_page_steps(url, app_id, [order.pop()], nebula=nebula))
        for _ in range(runs):
            customers = [order.pop() for _ in range(steps)]
            times = []
            for customer in customers:
                start, cpu_start = time.perf_counter(), time.process_time()
                _embedded_page(session, customer, out.parts)
                times.append(time.perf_counter() - start)
                if cpu is not None:  # this process's threads: the caller and the engine's pool
                    cpu.embedded.append(time.process_time() - cpu_start)
            out.embedded_s.append(statistics.median(times))
            qix_times = asyncio.run(_page_steps(url, app_id, customers, cpu, nebula))
            out.qix_s.append(statistics.median(qix_times))
    return out


async def _patch_steps(url: str, app_id: str, factors: list[int]) -> list[float]:
    async with _page(url, app_id) as (qix, _, handles):
        bar = handles[0]
        times = []
        for k in factors:
            patch = {
                "qOp": "replace",
                "qPath": "/qHyperCubeDef/qMeasures/0/qDef/qDef",
                "qValue": json.dumps(f"Sum(Amount)*{k}"),
            }
            start = time.perf_counter()
            await qix.call("ApplyPatches", [[patch], False], bar)
            layout = await qix.call("GetLayout", [], bar)
            times.append(time.perf_counter() - start)
            assert layout["qLayout"]["qHyperCube"]["qSize"]["qcy"] == CUSTOMERS
        return times


def compare_patches(url: str, app_id: str, app: assoc.App, runs: int, steps: int) -> Times:
    """ApplyPatches + GetLayout against a fresh embedded cube of the patched definition."""
    out = Times()
    factor = 2
    with app.session() as session:
        session.hypercube(["Customer"], ["Sum(Amount)*1"]).rows  # noqa: B018
        for _ in range(runs):
            times = []
            for _ in range(steps):
                factor += 1
                start = time.perf_counter()
                session.hypercube(["Customer"], [f"Sum(Amount)*{factor}"]).rows  # noqa: B018
                times.append(time.perf_counter() - start)
            out.embedded_s.append(statistics.median(times))
            factors = list(range(factor + 1, factor + steps + 1))
            factor += steps
            out.qix_s.append(statistics.median(asyncio.run(_patch_steps(url, app_id, factors))))
    return out


def _served(
    rows: int,
    runs: int,
    steps: int,
    only: str | None = None,
    cpu: bool = False,
    orders: tuple[bool, ...] = (False,),
) -> tuple[list[Times], Times, int, int]:
    """Both comparisons on an app of `rows` rows served by `assoc serve`, the page in each of
    `orders` (True: nebula.js's); the bytes the page's and a patched cube's engine work must
    read (their floors)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        qvd = tmp_dir / "sales.qvd"
        big_app_qvd(rows, qvd)
        app = assoc.App.from_qvd(qvd)
        floor = column_bytes(app, "Sales", ["Customer", "Region", "Amount"])
        floor += symbol_bytes(app, ["Customer", "Region", "Amount"])
        cube_floor = column_bytes(app, "Sales", ["Customer", "Amount"])
        cube_floor += symbol_bytes(app, ["Customer", "Amount"])
        server = assoc_server(tmp_dir / "data")
        try:
            app_id = import_qvd(server, qvd)
            url = server.url.replace("http", "ws") + f"/app/{app_id}"
            pages = []
            for nebula in orders if only != "patches" else ():
                step_cpu = StepCpu(server.proc.pid) if cpu else None
                page = compare_page(url, app_id, app, runs, steps, step_cpu, nebula)
                page.cpu = step_cpu
                pages.append(page)
            patches = compare_patches(url, app_id, app, runs, steps) if only != "page" else Times()
        finally:
            server.close()
    return pages, patches, floor, cube_floor


def measures(repeat: int) -> list[Measure]:
    """The page and the patch steps as measures for run_all.py (each run's median step)."""
    rows = scaled(10_000_000)
    steps = 5 if SCALE < 0.1 else 20
    (page, nebula), patches, floor, cube_floor = _served(rows, repeat, steps, orders=(False, True))
    return [
        Measure(
            "objects.page",
            f"{rows:,} rows: a confirmed selection on a bar chart, then six charts' layouts"
            " (bar, line, pie, table, pivot, filter pane) vs the same embedded work",
            page.qix_s,
            {"embedded": page.embedded_s},
            floor,
            "packed Sales Customer, Region, Amount and their symbols",
            "<= 1.5x embedded + 5 ms",
        ),
        Measure(
            "objects.page_nebula",
            f"{rows:,} rows: the same page as nebula.js asks it: the modal chart's properties"
            " and the six layouts in selection mode, then the confirmation and its layout",
            nebula.qix_s,
            {"embedded": nebula.embedded_s},
            floor,
            "packed Sales Customer, Region, Amount and their symbols",
            "(measured)",
        ),
        Measure(
            "objects.apply_patches",
            f"{rows:,} rows: ApplyPatches of a bar chart's measure + GetLayout vs a fresh"
            " embedded cube of the patched definition",
            patches.qix_s,
            {"embedded": patches.embedded_s},
            cube_floor,
            "packed Sales Customer and Amount and their symbols",
            "<= 1.2x a fresh cube",
        ),
    ]


def _row(name: str, target: str, times: Times, extra_ms: float, factor: float) -> str:
    qix = statistics.median(times.qix_s) * 1000
    emb = statistics.median(times.embedded_s) * 1000
    ratios = " / ".join(f"{r:.2f}" for r in times.ratios())
    met = "met" if qix <= factor * emb + extra_ms else "missed"
    ratio = qix / emb
    return f"| {name} | {qix:.1f} ms | {emb:.1f} ms | {ratio:.2f}x ({ratios}) | {target} | {met} |"


def main() -> None:
    """Runs both comparisons and prints the Markdown report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=5, help="alternating runs per comparison")
    parser.add_argument("--steps", type=int, default=20, help="steps per run")
    parser.add_argument(
        "--no-delta", action="store_true", help="ask for full answers (not as enigma.js)"
    )
    parser.add_argument("--only", choices=("page", "patches"), help="run one comparison")
    parser.add_argument(
        "--cpu", action="store_true", help="the page steps' CPU time, by server thread (Linux)"
    )
    parser.add_argument(
        "--nebula-order",
        action="store_true",
        help="the page's layouts asked in selection mode, then the bar chart's after confirming",
    )
    args = parser.parse_args()
    global DELTA
    DELTA = not args.no_delta
    orders = (bool(args.nebula_order),)
    pages, patches, _, _ = _served(args.rows, args.runs, args.steps, args.only, args.cpu, orders)
    page = pages[0] if pages else Times()
    client = "delta answers, as enigma.js" if DELTA else "full answers"
    print(
        f"{args.rows:,} rows, {args.runs} alternating runs of {args.steps} steps (medians),"
        f" {client}\n"
    )
    print("| path | QIX | embedded | ratio (per run) | target | |")
    print("|---|---:|---:|---|---|---|")
    if page.qix_s:
        title = "six-chart page: confirmed selection → six layouts"
        if args.nebula_order:
            title = "six-chart page: selection → six layouts → confirmed → the bar chart's"
        print(_row(title, "≤ 1.5x + 5 ms", page, 5, 1.5))
    if patches.qix_s:
        print(_row("ApplyPatches + GetLayout vs a fresh cube", "≤ 1.2x", patches, 0, 1.2))
    if page.parts:
        by_object = ", ".join(
            f"{kind} {statistics.median(times) * 1e3:.2f}" for kind, times in page.parts.items()
        )
        print(f"\nThe embedded page by object (median ms, each step a new customer): {by_object}")
    if page.cpu is not None and page.cpu.steps:
        print(f"\n{page.cpu.report()}")


if __name__ == "__main__":
    main()
