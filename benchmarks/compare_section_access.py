"""Opening an app under section access against one selection of the same values, in one run.

    python benchmarks/compare_section_access.py [--rows N] [--repeat K] [--parts]

Orders has 10,000,000 rows (scaled by ASSOC_BENCH_SCALE): Customer (100,000 values), REGION
(1,000 values) and Amount; Customers names each customer. The access table gives user ANN
100 of the regions, and lists 10,000 other users (one region each) as real ones do. Measured,
best of K interleaved runs, each a new session answering the same two questions (Orders'
possible rows, Customer's value counts), with the result cache off:

- open: `app.session("ann")`, the user's row mask applied as the session opens (the app
  keeps each reduction's mask once made);
- first open: the same with the mask made first (the app's kept masks dropped before each);
- select: the same app opened by ROOT (an ADMIN row: no reduction), then
  `select("REGION", <the same 100 values>)`.

Goal: open <= 1.0x select. The answers are checked against each other; the times never gate
anything.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import assoc
from assoc import _core
from assoc.access import AccessTable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import scaled  # the benchmarks' shared scale knob
from harness import Measure, column_bytes

CUSTOMERS = 100_000
REGIONS = 1_000
GRANTED = 100
OTHER_USERS = 10_000


def make_app(rows: int, access: bool, seed: int = 5) -> tuple[assoc.App, list[str]]:
    """The app, with the access table or (for the selection) without it."""
    rng = np.random.default_rng(seed)
    names = np.array([f"R{i:04d}" for i in range(REGIONS)], dtype=object)
    builder = _core.ModelBuilder()
    builder.add_columns(
        "Orders",
        {
            "Customer": rng.integers(0, CUSTOMERS, rows),
            "REGION": list(names[rng.integers(0, REGIONS, rows)]),
            "Amount": np.round(rng.uniform(0, 100, rows), 2),
        },
    )
    builder.add_columns(
        "Customers",
        {"Customer": np.arange(CUSTOMERS), "Name": [f"c{i}" for i in range(CUSTOMERS)]},
    )
    granted = [str(n) for n in names[:GRANTED]]
    if access:
        others = [f"U{i:05d}" for i in range(OTHER_USERS)]
        table = {
            "ACCESS": ["USER"] * (GRANTED + OTHER_USERS) + ["ADMIN"],
            "USERID": ["ANN"] * GRANTED + others + ["ROOT"],
            # ROOT: an ADMIN row without a value sees everything
            "REGION": [*granted, *(str(names[i % REGIONS]) for i in range(OTHER_USERS)), ""],
        }
        AccessTable(table).add_to(builder)
    return assoc.App(builder.build()), granted


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return min(times), result


def run(rows: int, repeat: int) -> dict[str, Any]:
    """Every time (seconds) of the open and the selection over `repeat` alternating rounds,
    the first open, the answers (checked equal), and the bytes the answers read."""
    app, granted = make_app(rows, access=True)

    def answers(s: assoc.Session) -> tuple[int, dict[str, int]]:
        with s:
            return s.possible_rows("Orders"), s.counts("Customer")

    def opened() -> tuple[int, dict[str, int]]:
        return answers(app.session("ann"))

    def first_opened() -> tuple[int, dict[str, int]]:
        app._reductions.pop(("ANN", frozenset()), None)  # ANN's mask made again, as at first
        app._shared_reductions.clear()
        return answers(app.session("ann"))

    def selected() -> tuple[int, dict[str, int]]:
        s = app.session("root")
        s.select("REGION", granted)
        return answers(s)

    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)  # every timed session computes its answers
    try:
        # Interleaved, so that all see the same machine load.
        t_first: list[float] = []
        t_open: list[float] = []
        t_select: list[float] = []
        for _ in range(repeat):
            t, a_first = best(first_opened, 1)
            t_first.append(t)
            t, a_open = best(opened, 1)
            t_open.append(t)
            t, a_select = best(selected, 1)
            t_select.append(t)
    finally:
        assoc.set_cache_limit(limit)
    assert a_open == a_first, (a_open, a_first)
    assert a_open[0] == a_select[0], (a_open, a_select)
    assert a_open[1]["possible"] == a_select[1]["possible"], (a_open, a_select)
    return {
        "open": t_open,
        "select": t_select,
        "first": t_first,
        "kept_rows": a_open[0],
        # REGION's index to find the rows, Customer's to find the possible customers.
        "bytes": column_bytes(app, "Orders", ["REGION", "Customer"]),
    }


def parts(rows: int, repeat: int) -> dict[str, float]:
    """The first open's steps timed apart (best of `repeat`, each right after a selection, as
    in `run`): the user's access rows, their symbols, the row mask's inference, and the
    selection of the same values (its inference and its Python)."""
    app, granted = make_app(rows, access=True)
    layout = app._access_layout
    times: dict[str, list[float]] = {}

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        out = fn()
        times.setdefault(name, []).append(time.perf_counter() - started)
        return out

    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)
    try:
        for _ in range(repeat):
            with app.session("root") as s:
                timed("selection", lambda s=s: s.select("REGION", granted))
            rows = timed("access rows", lambda: app.access.rows_for("ann"))
            codes = timed("value look-up", lambda r=rows: app._access_codes.codes_of_rows(r))
            masked = {**codes, **layout.hidden_system(app.access.omitted(rows))}
            timed("row mask", lambda m=masked: _core.RowMask(app._associative, m))
    finally:
        assoc.set_cache_limit(limit)
    return {name: min(t) for name, t in times.items()}


def measures(repeat: int) -> list[Measure]:
    """The open under section access as a measure for run_all.py."""
    rows = scaled(10_000_000)
    r = run(rows, repeat)
    return [
        Measure(
            "section_access.open",
            f"{rows:,} rows: a session opened under section access ({GRANTED} of {REGIONS} "
            "REGION values) vs one selection of the same values",
            r["open"],
            {"select": r["select"]},
            r["bytes"],
            "packed Orders REGION, Customer",
            "<= 1.0x select",
            {"first_open_s": min(r["first"])},
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=scaled(10_000_000))
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--parts", action="store_true", help="time the first open's steps apart")
    args = parser.parse_args()
    r = run(args.rows, args.repeat)
    t_open, t_select, t_first = min(r["open"]), min(r["select"]), min(r["first"])
    print(
        f"rows {args.rows:,}; ANN keeps {r['kept_rows']:,} Orders rows "
        f"({GRANTED} of {REGIONS} regions)"
    )
    print(f"open under section access  {t_open * 1000:9.1f} ms")
    print(f"first open (mask made)     {t_first * 1000:9.1f} ms")
    print(f"one selection of the same  {t_select * 1000:9.1f} ms")
    print(f"ratio open/select          {t_open / t_select:9.2f}x (goal <= 1.0x)")
    print(f"ratio first open/select    {t_first / t_select:9.2f}x")
    # Best of K against best of K swings with one lucky round: the rounds' medians, and the
    # median of each round's own ratio (its first open beside its selection), move less.
    pairs = [f / s for f, s in zip(r["first"], r["select"], strict=True)]
    print(
        f"medians: first open {statistics.median(r['first']) * 1000:.2f} ms, selection "
        f"{statistics.median(r['select']) * 1000:.2f} ms; the rounds' ratios "
        f"{statistics.median(pairs):.2f}x (median of {len(pairs)})"
    )
    if args.parts:
        for name, seconds in parts(args.rows, args.repeat).items():
            print(f"  {name:24s} {seconds * 1000:9.3f} ms")


if __name__ == "__main__":
    main()
