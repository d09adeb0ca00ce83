"""The service's Python per layout, without sockets: a QIX session in this process answering
the requests of `compare_objects.py`'s patch step and `compare_qix.py`'s select step, with the
result cache on, so that the cubes come from it and what is timed is the service's own work
(parsing, properties, layout building, encoding, delta answers).

    python benchmarks/qix_layout_path.py [--rows 1000000] [--steps 400] [--profile] [--cold]

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


def _fresh_cube(session: assoc.Session, factors: Iterator[int]) -> None:
    """A cube no request asked before: Sum(Amount) times a new factor, by Customer."""
    session.hypercube(["Customer"], [f"Sum(Amount)*{next(factors)}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--profile", action="store_true", help="print cProfile's shares")
    parser.add_argument("--cold", action="store_true", help="each request after a fresh cube")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        qvd = Path(tmp) / "sales.qvd"
        big_app_qvd(args.rows, qvd)
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
