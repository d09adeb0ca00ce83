"""Builds side by side: each case (a file and how to read it) loaded by each build (a
PYTHONPATH holding an `assoc` package) in a new process per round, against a peer reading the
same file in the same process; the table of medians and per-round ratios that qvd_sizes.py and
csv_shapes.py print."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

Medians = dict[tuple[str, str], list[tuple[float, float]]]


def parse_builds(given: list[str]) -> dict[str, str]:
    """`--build NAME=PYTHONPATH` values by name; none given: this interpreter's `assoc`."""
    return dict(b.split("=", 1) for b in given) or {"this": os.pathsep.join(sys.path)}


def per_build_medians(
    cases: dict[str, list[str]], builds: dict[str, str], rounds: int, worker: str
) -> Medians:
    """Per (case, build), each round's (median of ours, median of the peer's) seconds. `worker`
    is a Python program given each case's arguments; it prints [ours, peer's] as JSON."""
    out: Medians = {}
    for _ in range(rounds):
        for case, args in cases.items():
            for name, package in builds.items():
                done = subprocess.run(
                    [sys.executable, "-c", worker, *args],
                    env={**os.environ, "PYTHONPATH": package},
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                ours, theirs = json.loads(done.stdout)
                out.setdefault((case, name), []).append(
                    (statistics.median(ours), statistics.median(theirs))
                )
    return out


def print_table(medians: Medians, case: str, peer: str, decimals: int) -> None:
    """One row per case and build: the medians of the rounds' medians, each round's ratio."""
    print(f"| {case} | build | assoc | {peer} | ratio per round |")
    print("|---|---|---:|---:|---|")
    for (name, build), pairs in medians.items():
        ours, theirs = (statistics.median(p[i] for p in pairs) * 1e3 for i in (0, 1))
        ratios = ", ".join(f"{a / b:.2f}" for a, b in pairs)
        times = f"{ours:.{decimals}f} ms | {theirs:.{decimals}f} ms"
        print(f"| {name} | {build} | {times} | {ratios} |")
