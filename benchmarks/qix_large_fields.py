"""The service's layouts over fields of a million values, without sockets: a QIX session in
this process answering what a front-end asks of a table, a list and its searches, pivot and
stacked charts, Others rows, attribute and calculated dimensions on an app of `--rows` rows
whose Customer field has `--rows / 2` values (20 regions), each with a Name (a text). Cubes
come from the result cache after the first call, so what is timed is the service's own work
around them.

    python benchmarks/qix_large_fields.py [--rows 2000000] [--repeat 3] [--budget 120]

Each case is timed `--repeat` times after one untimed call (a search and a Field.Select
with a new text each time, so each is the first of its text); a case whose untimed call
takes longer than `--budget` seconds is reported as such and not repeated. Run it against
two builds to compare them (docs/benchmarks-qix.md); there is no peer for these answers.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

import assoc
from qix_layout_path import Driver


class _OverBudget(Exception):
    pass


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    raise _OverBudget


def _fetch(width: int, height: int) -> list[dict[str, int]]:
    return [{"qTop": 0, "qLeft": 0, "qWidth": width, "qHeight": height}]


def _dim(field: str, **more: Any) -> dict[str, Any]:
    return {"qDef": {"qFieldDefs": [field]}, **more}


def _cube(dims: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {
        "qInfo": {"qType": "chart"},
        "qHyperCubeDef": {
            "qDimensions": dims,
            "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
            "qInitialDataFetch": _fetch(3, 50),
            **more,
        },
    }


def cases(d: Driver) -> Iterator[tuple[str, Callable[[], str]]]:
    """(name, the timed call) of each case, its objects made first."""

    def layout_of(props: dict[str, Any], *then: tuple[str, list[Any]]) -> Callable[[], str]:
        handle = d.handle("CreateSessionObject", [props], d.doc)
        for method, params in then:
            d.call(method, params, handle)
        return lambda: d.call("GetLayout", [], handle)

    listbox = {"qInfo": {"qType": "listbox"}, "qListObjectDef": {**_dim("Customer")}}
    listbox["qListObjectDef"]["qInitialDataFetch"] = _fetch(1, 50)
    yield "list object of every customer: layout", layout_of(listbox)
    searched = d.handle("CreateSessionObject", [listbox], d.doc)
    texts = (f"{p}*" for p in range(10, 100))

    def search() -> str:
        d.call("SearchListObjectFor", ["/qListObjectDef", next(texts)], searched)
        return d.call("GetLayout", [], searched)

    yield "list search 'NN*': its first layout", search
    yield "list search: the next layout", lambda: d.call("GetLayout", [], searched)
    field = d.handle("GetField", ["Customer"], d.doc)
    selects = (f"{p}*" for p in range(100, 1000))
    yield "Field.Select 'NNN*'", lambda: d.call("Select", [next(selects), False, 0], field)
    d.call("ClearAll", [], d.doc)
    yield "table by customer: layout", layout_of(_cube([_dim("Customer"), _dim("Region")]))
    pivot = _cube([_dim("Region"), _dim("Customer")], qMode="P")
    yield (
        "pivot, every region expanded",
        layout_of(pivot, ("ExpandLeft", ["/qHyperCubeDef", 0, 0, True])),
    )
    top = _cube([_dim("Region"), _dim("Customer")], qMode="P", qNoOfLeftDims=1)
    top["qHyperCubeDef"]["qInitialDataFetch"] = _fetch(20, 20)
    yield (
        "pivot, customers on top expanded",
        layout_of(top, ("ExpandTop", ["/qHyperCubeDef", 0, 0, True])),
    )
    stacked = _cube([_dim("Region"), _dim("Customer")], qMode="K", qAlwaysFullyExpanded=True)
    yield "stacked by region and customer", layout_of(stacked)
    others = {"qOtherMode": "OTHER_COUNTED", "qOtherCounted": {"qv": "10"}}
    yield (
        "top 10 customers and Others",
        layout_of(_cube([_dim("Customer", qOtherTotalSpec=others)])),
    )
    attribute = _dim("Customer", qAttributeDimensions=[{"qDef": "Region"}])
    yield "table with an attribute dimension", layout_of(_cube([attribute]))
    calculated = _dim("='c' & Customer")
    yield "table by a calculated dimension: layout", layout_of(_cube([calculated]))
    yield "table by customer name (texts): layout", layout_of(_cube([_dim("Name")]))
    names = {"qInfo": {"qType": "listbox"}, "qListObjectDef": {**_dim("Name")}}
    names["qListObjectDef"]["qInitialDataFetch"] = _fetch(1, 50)
    yield "list object of every customer name: layout", layout_of(names)


def run(rows: int, repeat: int, budget: float) -> list[tuple[str, str]]:
    """Each case's median (or how it went over budget), in milliseconds."""
    rng = np.random.default_rng(3)
    customer = rng.integers(0, rows // 2, rows)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        app = assoc.App.from_tables(
            {
                "Sales": {
                    "Customer": customer,
                    "Name": np.char.add("Customer ", customer.astype(str)).astype(object),
                    "Region": customer % 20,
                    "Amount": rng.integers(1, 100, rows),
                }
            }
        )
        qvd = Path(tmp) / "sales.qvd"
        app.write_qvd("Sales", qvd)
        d = Driver(qvd, Path(tmp) / "data")
        signal.signal(signal.SIGALRM, _alarm)
        for name, call in cases(d):
            started = time.perf_counter()
            signal.setitimer(signal.ITIMER_REAL, budget)
            try:
                answer = json.loads(call())
            except _OverBudget:
                answer = {}
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            first = time.perf_counter() - started
            if first >= budget:  # stopped (the session answers the interruption as an error)
                out.append((name, f"> {budget * 1e3:,.0f} (not repeated)"))
                continue
            assert "error" not in answer, answer["error"]
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                call()
                times.append(time.perf_counter() - started)
            out.append(
                (name, f"{statistics.median(times) * 1e3:.1f} (untimed first {first * 1e3:.0f})")
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget", type=float, default=120.0, help="seconds a case may take")
    args = parser.parse_args()
    results = run(args.rows, args.repeat, args.budget)
    print(f"{args.rows:,} rows, {args.rows // 2:,} possible customers, median of {args.repeat}")
    print("| case | ms |")
    print("|---|---:|")
    for name, shown in results:
        print(f"| {name} | {shown} |")


if __name__ == "__main__":
    main()
