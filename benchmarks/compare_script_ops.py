"""Script table operations side by side in one run: LEFT JOIN of a 100,000-row dimension onto
a 10,000,000-row fact, LOAD … GROUP BY of the fact into 100,000 groups with Sum and Count, and
ApplyMap of the fact's key through a 100,000-row mapping table, against polars
`join(how="left")`, `group_by().agg()` and `replace_strict` on the same data.

    python benchmarks/compare_script_ops.py [--repeat 3] [--ops join,group,applymap]

Rows: 10,000,000 x ASSOC_BENCH_SCALE fact rows (K: 100,000 keys, V: numbers); the dimension
has one row per key (K, Name). The script's time is the statement's own wall time (its
`statement_seconds`), the tables already loaded; polars' time is the operation on its frames.
Each contender's best time counts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from assoc.script import ScriptRunner
from conftest import scaled
from harness import Measure, model_bytes

KEYS = 100_000


def script_run(rows: int, op: str) -> tuple[float, int]:
    """The wall time of the script's last statement (the operation) after loading the data,
    and the bytes it reads and writes: the packed tables and symbols (of the inputs for the
    GROUP BY, of the joined table for the join)."""
    setup = (
        f"Fact: LOAD Mod(RecNo() * 7919, {KEYS}) AS K, Mod(RecNo(), 1000) / 10 AS V "
        f"AUTOGENERATE {rows};\n"
        f"Dim: NOCONCATENATE LOAD RecNo() - 1 AS K, 'name' & (RecNo() - 1) AS Name "
        f"AUTOGENERATE {KEYS};\n"
    )
    if op == "join":
        setup = setup.replace("Dim: NOCONCATENATE LOAD", "LEFT JOIN (Fact) LOAD")
    elif op == "applymap":
        setup = setup.replace("Dim: NOCONCATENATE LOAD", "Names: MAPPING LOAD")
        setup += "M: LOAD K, ApplyMap('Names', K, 'none') AS Name RESIDENT Fact;\n"
    else:
        setup += "G: LOAD K, Sum(V) AS S, Count(V) AS N RESIDENT Fact GROUP BY K;\n"
    result = ScriptRunner(setup).run()
    return result.statement_seconds[-1][1], model_bytes(result.model)


def script_seconds(rows: int, op: str) -> float:
    """The wall time of the script's last statement (the operation) after loading the data."""
    return script_run(rows, op)[0]


def polars_seconds(rows: int, op: str) -> float:
    import polars as pl

    r = np.arange(1, rows + 1, dtype=np.int64)
    fact = pl.DataFrame({"K": (r * 7919) % KEYS, "V": (r % 1000) / 10})
    keys = np.arange(KEYS, dtype=np.int64)
    dim = pl.DataFrame({"K": keys, "Name": [f"name{k}" for k in keys]})
    started = time.perf_counter()
    if op == "join":
        out = fact.join(dim, on="K", how="left")
    elif op == "applymap":
        # polars' faster of its two ways: replace_strict, or a left join with a default.
        names = fact["K"].replace_strict(dim["K"], dim["Name"], default="none")
        out = fact.select("K").with_columns(names.alias("Name"))
        replaced = time.perf_counter() - started
        started = time.perf_counter()
        joined = fact.select("K").join(dim, on="K", how="left", maintain_order="left")
        joined = joined.with_columns(pl.col("Name").fill_null("none"))
        assert joined.height == out.height
        return min(replaced, time.perf_counter() - started)
    else:
        out = fact.group_by("K").agg(pl.col("V").sum().alias("S"), pl.col("V").count().alias("N"))
    assert out.height > 0
    return time.perf_counter() - started


def run(rows: int, repeat: int) -> dict[str, dict[str, list[float]] | dict[str, int]]:
    """Every time (seconds) of the script and polars per operation, alternating."""
    times: dict[str, list[float]] = {}
    sizes: dict[str, int] = {}
    for _ in range(repeat):
        for op in ("join", "group"):
            t, sizes[op] = script_run(rows, op)
            times.setdefault(f"script {op}", []).append(t)
            times.setdefault(f"polars {op}", []).append(polars_seconds(rows, op))
    return {"times": times, "bytes": sizes}


def measures(repeat: int) -> list[Measure]:
    """LEFT JOIN and GROUP BY as measures for run_all.py."""
    rows = scaled(10_000_000)
    r = run(rows, repeat)
    t, b = r["times"], r["bytes"]
    return [
        Measure(
            f"script_ops.{op}",
            f"{rows:,} fact rows, {KEYS:,} keys: {label} vs polars",
            t[f"script {op}"],
            {"polars": t[f"polars {op}"]},
            b[op],
            "the app's packed tables and symbols after the statement",
        )
        for op, label in (("join", "LEFT JOIN"), ("group", "GROUP BY Sum, Count"))
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ops", default="join,group,applymap")
    args = parser.parse_args()
    ops = args.ops.split(",")
    rows = scaled(10_000_000)
    print(f"fact rows: {rows:,}, keys: {KEYS:,}")
    labels = {"join": "LEFT JOIN", "group": "GROUP BY Sum, Count", "applymap": "ApplyMap"}
    for op, label in labels.items():
        if op not in ops:
            continue
        ours, theirs = [], []
        for _ in range(args.repeat):
            ours.append(script_seconds(rows, op))
            theirs.append(polars_seconds(rows, op))
        a, b = min(ours), min(theirs)
        print(f"{label:22s} script {a:7.3f} s   polars {b:7.3f} s   ratio {a / b:5.2f}x")


if __name__ == "__main__":
    main()
