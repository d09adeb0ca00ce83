"""The service's Python per layout, without sockets: a QIX session in this process answering
the requests of `compare_objects.py`'s patch step and `compare_qix.py`'s select step, with the
result cache on, so that the cubes come from it and what is timed is the service's own work
(parsing, properties, layout building, encoding, delta answers).

    python benchmarks/qix_layout_path.py [--rows 1000000] [--steps 400] [--profile] [--cold]
    python benchmarks/qix_layout_path.py --page [--rows 10000000] [--steps 100]
    python benchmarks/qix_layout_path.py --pivot [--rows 10000000] [--steps 40]

`--page` answers `compare_objects.py`'s page step instead (a customer confirmed on the bar
chart in selection mode, then the six objects' delta layouts; each step a customer not
selected before, so the engine computes every cube) beside the embedded page on the same app,
and splits the step's time into the engine's calls (cubes, the selection, field states) and
the service's Python around them.

`--pivot` times the page's pivot table (Region, Customer; nothing selected, its cubes from the
result cache) as it opens collapsed, with its first region expanded and with every region
expanded: the service's Python for the pivot's trees and cells.

Prints the median and best time of each request; `--profile` adds cProfile's shares. `--cold`
times each request right after a fresh cube of the same app (Sum of a new multiple of Amount
by Customer, through the embedded API, not timed), as the service answers after its engine
work: that work's reads evict the caches the Python of the request would find warm.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import json
import pstats
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import assoc
import compare_objects
from assoc.server.qix import ahead
from assoc.server.qix.delta import DeltaBases
from assoc.server.qix.rpc import parse_request
from assoc.server.qix.session import QixSession
from assoc.server.settings import Settings
from assoc.server.store import AppStore
from compare_qix import CUBE_PROPS, LIST_PROPS, big_app_qvd


class _Unbounded:
    """An engine without a memory budget (every request admitted at once)."""

    def admitted(self, *_: Any) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


class Driver:
    """One session over an imported app; each request as the service answers it."""

    def __init__(self, qvd: Path, data_dir: Path) -> None:
        store = AppStore(data_dir)
        self.app_id = store.import_file(qvd)["id"]
        self.session = QixSession(store, Settings())
        self.bases = DeltaBases()
        self.next_id = 0
        self.doc = self.handle("OpenDoc", [self.app_id], -1)

    def call(self, method: str, params: Any, handle: int, delta: bool = False) -> str:
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "handle": handle}
        request["params"] = params
        if delta:
            request["delta"] = True
        parsed = parse_request(json.dumps(request))
        target, found = self.session.resolve(parsed)
        return self.session.answer(parsed, target, found, self.bases)

    def handle(self, method: str, params: Any, handle: int) -> int:
        answer = json.loads(self.call(method, params, handle))
        return int(answer["result"]["qReturn"]["qHandle"])

    def layout_ahead(self, handle: int) -> str:
        """The delta layout an engine thread makes ahead after a change (ahead.py)."""
        made = ahead._layout(_Unbounded(), self.session, handle, self.bases)  # type: ignore[arg-type]
        assert made is not None
        assert made.delta_text is not None
        return made.delta_text


def run(
    driver: Driver, steps: int, before: Callable[[], Any] | None = None
) -> dict[str, list[float]]:
    """Per request kind, the seconds of each of `steps` steps (after a warm-up), each request
    after `before()` when given."""
    d = driver
    bar = d.handle("CreateSessionObject", [compare_objects.CHARTS["barchart"][0]], d.doc)
    listbox = d.handle("CreateSessionObject", [LIST_PROPS], d.doc)
    cube = d.handle("CreateSessionObject", [CUBE_PROPS], d.doc)
    d.call("GetLayout", [], bar, delta=True)
    values = list(range(1000))
    random.Random(1).shuffle(values)
    out: dict[str, list[float]] = {}
    for step in range(steps + 20):
        k = 2 + step % 2  # two measures, both cubes cached after the first steps
        patch = {
            "qOp": "replace",
            "qPath": "/qHyperCubeDef/qMeasures/0/qDef/qDef",
            "qValue": json.dumps(f"Sum(Amount)*{k}"),
        }
        select = ["/qListObjectDef", [values[step % 1000]], False]
        requests: list[tuple[str, Callable[[], Any]]] = [
            ("ApplyPatches", functools.partial(d.call, "ApplyPatches", [[patch], False], bar)),
            ("bar chart layout (delta)", functools.partial(d.layout_ahead, bar)),
            ("select", functools.partial(d.call, "SelectListObjectValues", select, listbox)),
            ("list layout (1,000 values)", functools.partial(d.call, "GetLayout", [], listbox)),
            ("cube layout (20 rows)", functools.partial(d.call, "GetLayout", [], cube)),
        ]
        for name, request in requests:
            if before is not None:
                before()
            start = time.perf_counter()
            request()
            if step >= 20:
                out.setdefault(name, []).append(time.perf_counter() - start)
    return out


# The embedded API's calls a page step's engine work goes through (timed apart by `run_page`).
ENGINE_CALLS = {"cubes": "hypercube", "selection": "select_indices", "field states": "state_codes"}


def run_page(driver: Driver, qvd: Path, steps: int) -> dict[str, list[float]]:
    """Per part of the page step (the step, each object's layout, the engine's calls), the
    seconds of each of `steps` steps after a warm-up; the embedded page beside it."""
    d = driver
    objects = [c[0] for c in compare_objects.CHARTS.values()] + [compare_objects.FILTER]
    handles = [d.handle("CreateSessionObject", [props], d.doc) for props in objects]
    for h in handles:
        d.call("GetLayout", [], h, delta=True)
    spent: dict[str, float] = dict.fromkeys(ENGINE_CALLS, 0.0)

    def timed(part: str, call: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(call)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                spent[part] += time.perf_counter() - start

        return wrapper

    originals = {part: getattr(assoc.Session, name) for part, name in ENGINE_CALLS.items()}
    for part, name in ENGINE_CALLS.items():
        setattr(assoc.Session, name, timed(part, originals[part]))
    customers = list(range(compare_objects.CUSTOMERS))
    random.Random(7).shuffle(customers)
    out: dict[str, list[float]] = {}
    names = [*compare_objects.CHARTS, "filterpane"]
    try:
        for step in range(steps + 10):
            d.call("ClearAll", [], d.doc)
            for h in handles:
                d.call("GetLayout", [], h, delta=True)
            spent.update(dict.fromkeys(spent, 0.0))
            bar, customer = handles[0], customers.pop()
            times: dict[str, float] = {}
            start = time.perf_counter()
            d.call("BeginSelections", [["/qHyperCubeDef"]], bar)
            d.call("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [customer], False], bar)
            d.call("EndSelections", [True], bar)
            times["selection mode (3 requests)"] = time.perf_counter() - start
            for name, h in zip(names, handles, strict=True):
                started = time.perf_counter()
                d.call("GetLayout", [], h, delta=True)
                times[f"layout: {name}"] = time.perf_counter() - started
            times["page step"] = time.perf_counter() - start
            engine = sum(spent.values())
            times.update({f"engine: {part}": t for part, t in spent.items()})
            times["the service's Python"] = times["page step"] - engine
            if step >= 10:
                for part, t in times.items():
                    out.setdefault(part, []).append(t)
    finally:
        for part, name in ENGINE_CALLS.items():
            setattr(assoc.Session, name, originals[part])
    with assoc.App.from_qvd(qvd).session() as session:
        for step in range(steps + 10):
            started = time.perf_counter()
            compare_objects._embedded_page(session, customers.pop())
            if step >= 10:
                out.setdefault("embedded page", []).append(time.perf_counter() - started)
    return out


def run_pivot(driver: Driver, steps: int) -> dict[str, list[float]]:
    """The pivot table's layout, in seconds, `steps` times in each of its three shapes."""
    d = driver
    pivot = d.handle("CreateSessionObject", [compare_objects.CHARTS["pivot-table"][0]], d.doc)
    d.call("GetLayout", [], pivot)  # its cubes made, then kept by the result cache
    out: dict[str, list[float]] = {}
    shapes = [
        ("collapsed", None),
        ("first region expanded", ["/qHyperCubeDef", 0, 0, False]),
        ("every region expanded", ["/qHyperCubeDef", 0, 0, True]),
    ]
    for name, expand in shapes:
        if expand is not None:
            d.call("ExpandLeft", expand, pivot)
        d.call("GetLayout", [], pivot)
        for _ in range(steps):
            start = time.perf_counter()
            d.call("GetLayout", [], pivot)
            out.setdefault(name, []).append(time.perf_counter() - start)
    return out


def _fresh_cube(session: assoc.Session, factors: Iterator[int]) -> None:
    """A cube no request asked before: Sum(Amount) times a new factor, by Customer."""
    session.hypercube(["Customer"], [f"Sum(Amount)*{next(factors)}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--profile", action="store_true", help="print cProfile's shares")
    parser.add_argument("--cold", action="store_true", help="each request after a fresh cube")
    parser.add_argument("--page", action="store_true", help="compare_objects.py's page step")
    parser.add_argument("--pivot", action="store_true", help="the pivot table's layouts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        qvd = Path(tmp) / "sales.qvd"
        big_app_qvd(args.rows, qvd)
        if args.page:
            kept = Path(tmp) / "embedded.qvd"  # the store takes the file it imports
            kept.write_bytes(qvd.read_bytes())
            profile = cProfile.Profile() if args.profile else None
            if profile is not None:
                profile.enable()
            page = run_page(Driver(qvd, Path(tmp) / "data"), kept, args.steps)
            if profile is not None:
                profile.disable()
            print(f"{args.rows:,} rows, {args.steps} page steps, in this process (no sockets)")
            print("| part | median ms |")
            print("|---|---:|")
            for name, seconds in page.items():
                print(f"| {name} | {statistics.median(seconds) * 1e3:.3f} |")
            if profile is not None:
                pstats.Stats(profile).sort_stats("tottime").print_stats(30)
            return
        if args.pivot:
            shapes = run_pivot(Driver(qvd, Path(tmp) / "data"), args.steps)
            print(f"{args.rows:,} rows, the pivot table's layout (Region, Customer)")
            print("| shape | median ms | best ms |")
            print("|---|---:|---:|")
            for name, seconds in shapes.items():
                median, best = statistics.median(seconds) * 1e3, min(seconds) * 1e3
                print(f"| {name} | {median:.3f} | {best:.3f} |")
            return
        before = None
        if args.cold:  # read before the store takes the file
            session = assoc.App.from_qvd(qvd).session()
            factors = iter(range(10**6, 10**9))
            before = functools.partial(_fresh_cube, session, factors)
        driver = Driver(qvd, Path(tmp) / "data")
        profile = cProfile.Profile() if args.profile else None
        if profile is not None:
            profile.enable()
        times = run(driver, args.steps, before)
        if profile is not None:
            profile.disable()
    after = ", each after a fresh cube" if args.cold else ""
    print(f"{args.rows:,} rows, {args.steps} steps, cubes from the result cache{after}")
    print("| request | median ms | best ms |")
    print("|---|---:|---:|")
    for name, seconds in times.items():
        print(f"| {name} | {statistics.median(seconds) * 1e3:.3f} | {min(seconds) * 1e3:.3f} |")
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
