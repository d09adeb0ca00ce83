"""Side-by-side QIX benchmarks of `assoc serve` (WebSocket JSON-RPC).

1. Round trips of `EngineVersion` over one socket, against a bare Starlette WebSocket endpoint
   that answers the same bytes under the same uvicorn settings (runs alternate).
2. On a 10,000,000-row app: `SelectListObjectValues` then `GetLayout` of a 1,000-value list
   object and of a 20-row hypercube, against the same work through the embedded API
   (`select_indices`, `state`, `hypercube(...).rows`, `counts` of the cube's dimension) in
   this process; runs alternate, every step selects a value neither side selected before.
3. 64 sockets selecting one of `--soak-values` values at random and reading both layouts on
   that app for 60 s: requests, errors, latency percentiles and the server's resident memory
   every 10 s.

    python benchmarks/compare_qix.py [--seconds 3] [--runs 5] [--rows 10000000] [--soak 60]
        [--soak-values 100] [--enigma]

`--enigma` adds a column for step 2 made by enigma.js in node (`qix_enigma_steps.js`: delta
answers, both layouts asked at once on the select's answer, as a front-end asks), from the
packages `npm ci` installs in tests/.

Targets: round trips >= 0.8x the bare endpoint; step <= 1.5x embedded + 1 ms (and the tighter
<= 1.2x + 1 ms); 0 errors in the soak with memory bounded. The script prints Markdown; it
never fails on a missed target.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import websockets

import assoc
from compare_http import Server, assoc_server, import_qvd
from conftest import SCALE, scaled
from harness import Measure, column_bytes, symbol_bytes

HERE = Path(__file__).resolve().parent
ENGINE_VERSION = '{"jsonrpc":"2.0","id":1,"method":"EngineVersion","handle":-1,"params":[]}'
CUSTOMERS, REGIONS = 1_000, 20
HAS_HYPERCUBE = hasattr(assoc.Session, "hypercube")
LIST_PROPS = {
    "qInfo": {"qType": "listbox"},
    "qListObjectDef": {
        "qDef": {"qFieldDefs": ["Customer"]},
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": CUSTOMERS}],
    },
}
CUBE_PROPS = {
    "qInfo": {"qType": "table"},
    "qHyperCubeDef": {
        "qDimensions": [{"qDef": {"qFieldDefs": ["Region"]}}],
        "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": REGIONS}],
    },
}


# ---- 1. round trips ---------------------------------------------------------------------


async def _round_trips(url: str, seconds: float) -> tuple[float, str]:
    """Round trips per second of the EngineVersion request on one socket, and one answer."""
    async with websockets.connect(url, max_size=None) as ws:
        await ws.recv()
        for _ in range(200):
            await ws.send(ENGINE_VERSION)
            answer = await ws.recv()
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for _ in range(100):
                await ws.send(ENGINE_VERSION)
                await ws.recv()
            done += 100
        return done / (time.perf_counter() - start), str(answer)


def _timed_round_trips(server: Server, path: str, seconds: float) -> tuple[float, float]:
    """Round trips per second, and the server's CPU microseconds per round trip."""
    cpu = server.cpu_seconds()
    start = time.perf_counter()
    rps, _ = asyncio.run(_round_trips(server.url.replace("http", "ws") + path, seconds))
    elapsed = time.perf_counter() - start
    used = server.cpu_seconds() - cpu
    return rps, used / (rps * elapsed) * 1e6


@dataclass
class RoundTrips:
    """Round trips per second and server CPU microseconds per round trip, per run."""

    assoc_rps: list[float] = field(default_factory=list)
    bare_rps: list[float] = field(default_factory=list)
    assoc_cpu_us: list[float] = field(default_factory=list)
    bare_cpu_us: list[float] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        """assoc / bare round trips per second of each pair of runs."""
        return [a / b for a, b in zip(self.assoc_rps, self.bare_rps, strict=True)]


def compare_round_trips(seconds: float, runs: int, data_dir: Path) -> RoundTrips:
    """EngineVersion round trips: assoc against the bare endpoint, alternating which goes first."""
    server = assoc_server(data_dir)
    try:
        _, answer = asyncio.run(_round_trips(server.url.replace("http", "ws") + "/app", 0.1))
        answer_file = data_dir.parent / "engine_version_answer.json"
        answer_file.write_text(answer, encoding="utf-8")
        bare = Server([str(HERE / "bare_qix_server.py"), str(answer_file)], "/health")
        try:
            _, bare_answer = asyncio.run(_round_trips(bare.url.replace("http", "ws") + "/", 0.1))
            assert bare_answer == answer, (bare_answer, answer)
            out = RoundTrips()
            for run in range(runs):
                pair = [("bare", bare, "/"), ("assoc", server, "/app")]
                for name, target, path in pair if run % 2 == 0 else pair[::-1]:
                    rps, cpu_us = _timed_round_trips(target, path, seconds)
                    getattr(out, f"{name}_rps").append(rps)
                    getattr(out, f"{name}_cpu_us").append(cpu_us)
            return out
        finally:
            bare.close()
    finally:
        server.close()


# ---- 2. select + layouts on a big app ----------------------------------------------------


def big_app_qvd(rows: int, path: Path) -> None:
    """Sales: Customer (1,000 values), Region (20, one per customer), Amount; as a QVD file."""
    rng = np.random.default_rng(7)
    customer = rng.integers(0, CUSTOMERS, rows)
    app = assoc.App.from_tables(
        {
            "Sales": {
                "Customer": customer,
                "Region": customer % REGIONS,
                "Amount": rng.integers(1, 1_000, rows),
            }
        }
    )
    app.write_qvd("Sales", path)


class QixSocket:
    """A minimal asyncio QIX client: one request at a time."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.next_id = 0

    async def call(self, method: str, params: list[object], handle: int) -> dict[str, object]:
        """One answer (error answers raise)."""
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "handle": handle}
        request["params"] = params
        await self.ws.send(json.dumps(request))
        while True:
            answer = json.loads(await self.ws.recv())
            if answer.get("id") == self.next_id:
                break
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        result: dict[str, object] = answer["result"]
        return result

    async def open_objects(self, app_id: str) -> tuple[int, int | None]:
        """OpenDoc, then the list object and (when the engine has cubes) the hypercube."""
        doc = (await self.call("OpenDoc", [app_id], -1))["qReturn"]["qHandle"]  # type: ignore[index]
        listbox = await self.call("CreateSessionObject", [LIST_PROPS], doc)
        cube = await self.call("CreateSessionObject", [CUBE_PROPS], doc) if HAS_HYPERCUBE else None
        return (
            listbox["qReturn"]["qHandle"],  # type: ignore[index]
            cube["qReturn"]["qHandle"] if cube else None,  # type: ignore[index]
        )

    async def step(self, listbox: int, cube: int | None, k: int) -> list[float]:
        """Select value k through the list object, then both layouts; each request's seconds."""
        times = []
        start = time.perf_counter()
        await self.call("SelectListObjectValues", ["/qListObjectDef", [k], False], listbox)
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
        layout = await self.call("GetLayout", [], listbox)
        times.append(time.perf_counter() - start)
        cells = layout["qLayout"]["qListObject"]["qDataPages"][0]["qMatrix"]  # type: ignore[index]
        assert len(cells) == CUSTOMERS
        if cube is not None:
            start = time.perf_counter()
            cube_layout = await self.call("GetLayout", [], cube)
            times.append(time.perf_counter() - start)
            size = cube_layout["qLayout"]["qHyperCube"]["qSize"]  # type: ignore[index]
            assert size["qcy"] == 1  # one customer lies in one region
        return times


def embedded_step(session: assoc.Session, k: int) -> None:
    """The same work through the embedded API."""
    session.select_indices("Customer", [k])
    states = session.state("Customer")
    assert len(states["selected"]) == 1
    if HAS_HYPERCUBE:
        rows = session.hypercube(["Region"], ["Sum(Amount)"]).rows
        assert len(rows) == 1
        session.counts("Region")  # the cube layout's qStateCounts of its dimension


@dataclass
class StepTimes:
    """Median seconds of one step (select + layouts), per run."""

    qix_s: list[float] = field(default_factory=list)
    embedded_s: list[float] = field(default_factory=list)
    enigma_s: list[float] = field(default_factory=list)  # with --enigma


async def _qix_steps(url: str, app_id: str, ks: list[int]) -> list[float]:
    async with websockets.connect(url, max_size=None) as ws:
        await ws.recv()
        qix = QixSocket(ws)
        listbox, cube = await qix.open_objects(app_id)
        return [sum(await qix.step(listbox, cube, k)) for k in ks]


def _enigma_steps(url: str, app_id: str, ks: list[int]) -> list[float]:
    """The steps made by enigma.js in node (qix_enigma_steps.js); seconds each."""
    node = shutil.which("node")
    tests = HERE.parent / "tests"
    if node is None or not (tests / "node_modules" / "enigma.js").is_dir():
        raise SystemExit("--enigma needs node and the packages of tests/ (cd tests && npm ci)")
    args = [url, app_id, json.dumps(LIST_PROPS), json.dumps(CUBE_PROPS), json.dumps(ks)]
    run = subprocess.run(
        [node, str(HERE / "qix_enigma_steps.js"), str(tests), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        raise RuntimeError(f"qix_enigma_steps.js failed: {run.stderr[-2000:]}")
    return [ms / 1e3 for ms in json.loads(run.stdout)]


def compare_steps(
    server: Server,
    app_id: str,
    qvd: Path,
    runs: int,
    per_run: int | None = None,
    enigma: bool = False,
) -> StepTimes:
    """Select + layouts over QIX against the embedded API, alternating; fresh values per run
    (`per_run` of them, default as many as the customers allow); with `enigma`, as many
    other fresh values through enigma.js (never the same: the result cache would answer)."""
    app = assoc.App.from_qvd(qvd)
    order = list(range(CUSTOMERS))
    random.Random(3).shuffle(order)
    clients = 2 if enigma else 1
    per_run = min(per_run or CUSTOMERS, CUSTOMERS // (clients * runs + 1))
    out = StepTimes()
    url = server.url.replace("http", "ws") + f"/app/{app_id}"
    with app.session() as session:
        embedded_step(session, order[-1])  # warm-up: both sides load what they need once
        asyncio.run(_qix_steps(url, app_id, [order[-1]]))
        for r in range(runs):
            ks = order[r * per_run : (r + 1) * per_run]
            times = []
            for k in ks:
                start = time.perf_counter()
                embedded_step(session, k)
                times.append(time.perf_counter() - start)
            out.embedded_s.append(statistics.median(times))
            out.qix_s.append(statistics.median(asyncio.run(_qix_steps(url, app_id, ks))))
            if enigma:
                others = order[(runs + r) * per_run : (runs + r + 1) * per_run]
                out.enigma_s.append(statistics.median(_enigma_steps(url, app_id, others)))
    return out


# ---- 3. soak --------------------------------------------------------------------------------


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


@dataclass
class Soak:
    """Many sockets for a while: requests, errors, latency, memory."""

    sockets: int
    seconds: float
    values: int
    latencies_s: list[float]
    errors: int
    rss_mb: list[float]


async def _soak(url: str, app_id: str, sockets: int, seconds: float, values: int, pid: int) -> Soak:
    latencies: list[float] = []
    errors = 0
    rss = [_rss_mb(pid)]
    deadline = time.monotonic() + seconds

    async def one(n: int) -> None:
        nonlocal errors
        rng = random.Random(n)
        try:
            async with websockets.connect(url, max_size=None) as ws:
                await ws.recv()
                qix = QixSocket(ws)
                listbox, cube = await qix.open_objects(app_id)
                while time.monotonic() < deadline:
                    try:
                        latencies.extend(await qix.step(listbox, cube, rng.randrange(values)))
                    except (RuntimeError, AssertionError):
                        errors += 1
        except (OSError, websockets.WebSocketException):
            errors += 1

    async def sample() -> None:
        while time.monotonic() < deadline:
            await asyncio.sleep(1)
            rss.append(_rss_mb(pid))

    await asyncio.gather(sample(), *(one(n) for n in range(sockets)))
    rss.append(_rss_mb(pid))
    return Soak(sockets, seconds, values, latencies, errors, rss)


# ---- report ----------------------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) if values else float("nan")


def report(trips: RoundTrips | None, steps: StepTimes | None, soak: Soak | None) -> str:
    """The figures as Markdown."""
    lines = [f"load average before: {os.getloadavg()[0]:.2f}", ""]
    if trips:
        lines += [
            "| EngineVersion | assoc rt/s | bare rt/s | ratio | assoc server CPU µs/rt "
            "| bare server CPU µs/rt |",
            "|---|---|---|---|---|---|",
        ]
        for i, (a, b, r, ac, bc) in enumerate(
            zip(
                trips.assoc_rps,
                trips.bare_rps,
                trips.ratios,
                trips.assoc_cpu_us,
                trips.bare_cpu_us,
                strict=True,
            )
        ):
            lines.append(f"| run {i + 1} | {a:,.0f} | {b:,.0f} | {r:.2f} | {ac:.0f} | {bc:.0f} |")
        lines += [f"| median | | | {statistics.median(trips.ratios):.2f} | | |", ""]
    if steps:
        lines += [
            "| select + layouts (median ms) | QIX | embedded | ratio | QIX <= 1.5x + 1 ms "
            "| QIX <= 1.2x + 1 ms |",
            "|---|---|---|---|---|---|",
        ]
        for i, (q, e) in enumerate(zip(steps.qix_s, steps.embedded_s, strict=True)):
            met = ["yes" if q <= factor * e + 0.001 else "no" for factor in (1.5, 1.2)]
            lines.append(
                f"| run {i + 1} | {q * 1e3:.2f} | {e * 1e3:.2f} | {q / e:.2f} | {met[0]} "
                f"| {met[1]} |"
            )
        lines.append("")
        if steps.enigma_s:
            lines += [
                "| the same steps by enigma.js (median ms) | enigma.js | ratio |",
                "|---|---|---|",
            ]
            for i, (n, e) in enumerate(zip(steps.enigma_s, steps.embedded_s, strict=True)):
                lines.append(f"| run {i + 1} | {n * 1e3:.2f} | {n / e:.2f} |")
            lines.append("")
    if soak:
        lat = soak.latencies_s
        lines += [
            f"soak: {soak.sockets} sockets, {soak.seconds:.0f} s, {soak.values} values, "
            f"{len(lat):,} requests, "
            f"{soak.errors} errors; latency p50 {_pct(lat, 50) * 1e3:.1f} ms, "
            f"p99 {_pct(lat, 99) * 1e3:.1f} ms, max {max(lat, default=0) * 1e3:.1f} ms; "
            "server RSS every 10 s (MB): " + ", ".join(f"{m:.0f}" for m in soak.rss_mb[::10]),
        ]
    lines.append(f"load average after: {os.getloadavg()[0]:.2f}")
    return "\n".join(lines)


def measures(repeat: int) -> list[Measure]:
    """Round trips and the select + layouts step as measures for run_all.py: a round-trip
    measure's times are seconds per round trip (1 / round trips per second) of each run; a
    step measure's, each run's median step."""
    seconds = 0.25 if SCALE < 0.1 else 2.0
    rows = scaled(10_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        trips = compare_round_trips(seconds, repeat, tmp_dir / "trips")
        qvd = tmp_dir / "sales.qvd"
        big_app_qvd(rows, qvd)
        app = assoc.App.from_qvd(qvd)
        # The step selects through Customer's index and cubes Region and Amount's (the list
        # layout pages Customer's 1,000 symbols).
        floor = column_bytes(app, "Sales", ["Customer", "Region", "Amount"])
        floor += symbol_bytes(app, ["Customer", "Amount"])
        del app
        server = assoc_server(tmp_dir / "data")
        try:
            app_id = import_qvd(server, qvd)
            steps = compare_steps(server, app_id, qvd, repeat, 50 if SCALE < 0.1 else None)
        finally:
            server.close()
    return [
        Measure(
            "qix.round_trip",
            f"EngineVersion over one socket, {seconds} s runs, vs a bare Starlette WebSocket"
            " (time = 1 / round trips per second)",
            [1 / r for r in trips.assoc_rps],
            {"bare WebSocket": [1 / r for r in trips.bare_rps]},
            floor_what="a network round trip: no data read",
            goal="<= 1.25x bare (>= 0.8x its round trips/s)",
        ),
        Measure(
            "qix.select_layouts",
            f"{rows:,} rows: SelectListObjectValues + list (1,000) and cube (20) layouts"
            " vs the same through the embedded API (median step per run)",
            steps.qix_s,
            {"embedded": steps.embedded_s},
            floor,
            "packed Sales Customer, Region, Amount; Customer's and Amount's symbols",
            "<= 1.2x embedded + 1 ms",
        ),
    ]


def main() -> None:
    """Runs the comparisons and prints the Markdown report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per round-trip run")
    parser.add_argument("--runs", type=int, default=5, help="alternating runs per comparison")
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the big app")
    parser.add_argument("--soak", type=float, default=60.0, help="seconds of the 64-socket soak")
    parser.add_argument("--sockets", type=int, default=64)
    parser.add_argument("--soak-values", type=int, default=100, help="values the soak selects")
    parser.add_argument("--skip-round-trips", action="store_true")
    parser.add_argument("--enigma", action="store_true", help="step 2 by enigma.js as well")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        trips = None
        if not args.skip_round_trips:
            trips = compare_round_trips(args.seconds, args.runs, tmp_dir / "trips")
        qvd = tmp_dir / "sales.qvd"
        big_app_qvd(args.rows, qvd)
        server = assoc_server(tmp_dir / "data")
        try:
            app_id = import_qvd(server, qvd)
            steps = compare_steps(server, app_id, qvd, args.runs, enigma=args.enigma)
            soak = None
            if args.soak > 0:
                url = server.url.replace("http", "ws") + f"/app/{app_id}"
                soak = asyncio.run(
                    _soak(url, app_id, args.sockets, args.soak, args.soak_values, server.proc.pid)
                )
        finally:
            server.close()
    print(report(trips, steps, soak))


if __name__ == "__main__":
    main()
