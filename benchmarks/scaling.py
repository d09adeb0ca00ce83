"""How assoc scales with threads, beside polars and duckdb at the same thread counts.

    python benchmarks/scaling.py [--scale 1] [--threads 1,2,4,8,16,32] [--oversubscribe]
                                 [--repeat 3] [--plot scaling.png] [--json FILE]

Sweeps `Threads` from 1 to the machine's logical cores (powers of two and the core count), or
the counts `--threads` names (those above the cores are skipped with a note, or run and
marked oversubscribed with `--oversubscribe`), for
four operations on generated data — loading the fact table from QVD (peers: the same table
as Parquet, their own columnar file), loading it from CSV, a selection through a key (one
country: how many products and fact rows stay possible), and a hypercube (Sum(Amount) by
country across the link). Every (engine, threads) pair runs in a fresh process, so each
engine's thread pool is sized once as its users would size it (POLARS_MAX_THREADS,
`SET threads`, assoc.set_threads). The answers are compared across engines before any time is
shown. It prints a table of times and speedups and writes a plot of speedup vs threads, one
line per engine and operation (log2 thread axis; oversubscribed points hollow), and for each
engine and operation Amdahl's serial fraction s from the 1 -> 2 thread speedup S2
(s = 2 / S2 - 1) with the speedups it predicts at 8, 16 and 32 threads.
Scale 1 = 1,000,000 fact rows and 10,000 customers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

OPERATIONS = ("qvd_load", "csv_load", "selection", "hypercube")
OPERATION_TITLES = {
    "qvd_load": "QVD load (peers: Parquet)",
    "csv_load": "CSV load",
    "selection": "selection",
    "hypercube": "hypercube",
}
ENGINES = ("assoc", "polars", "duckdb")
COUNTRIES = 20
PRODUCTS = 2_000
ROWS_AT_SCALE_1 = 1_000_000


# ---- data ----------------------------------------------------------------------------------


def generate(folder: Path, scale: float) -> dict[str, Any]:
    """Writes facts and customers as CSV, Parquet and QVD; returns the sizes."""
    import numpy as np
    import polars as pl

    import assoc

    rows = max(10_000, int(ROWS_AT_SCALE_1 * scale))
    customers = max(100, rows // 100)
    rng = np.random.default_rng(20261122)
    facts = pl.DataFrame(
        {
            "OrderId": np.arange(rows, dtype=np.int64),
            "CustomerId": rng.integers(0, customers, rows, dtype=np.int64),
            "ProductId": rng.integers(0, PRODUCTS, rows, dtype=np.int64),
            "Quantity": rng.integers(1, 20, rows, dtype=np.int64),
            "Amount": np.round(rng.uniform(1, 1000, rows), 2),
        }
    )
    dimension = pl.DataFrame(
        {
            "CustomerId": np.arange(customers, dtype=np.int64),
            "Country": [f"Country {i % COUNTRIES:02d}" for i in range(customers)],
        }
    )
    for name, frame in (("facts", facts), ("customers", dimension)):
        frame.write_csv(folder / f"{name}.csv")
        frame.write_parquet(folder / f"{name}.parquet")
        app = assoc.App.from_tables({name: {c: frame[c].to_numpy() for c in frame.columns}})
        app.write_qvd(name, folder / f"{name}.qvd")
    return {"rows": rows, "customers": customers}


# ---- one engine at one thread count (a child process) -------------------------------------


def best_of(repeat: int, run: Callable[[int], Any]) -> tuple[float, Any]:
    """The fastest of `repeat` runs in seconds, and the last run's answer."""
    times, answer = [], None
    for i in range(repeat):
        started = time.perf_counter()
        answer = run(i)
        times.append(time.perf_counter() - started)
    return min(times), answer


def country(i: int) -> str:
    """The country the i-th selection run picks (a new one each run: no cached answer)."""
    return f"Country {(3 + 7 * i) % COUNTRIES:02d}"


def run_assoc(data: Path, threads: int, repeat: int) -> dict[str, Any]:
    """assoc's times and answers."""
    import assoc
    from assoc.sources import load_model

    assoc.set_threads(threads)
    assoc.set_cache_limit(0)  # every run computes its answer
    out: dict[str, Any] = {}
    out["qvd_load"] = best_of(
        repeat, lambda _: assoc.App.from_qvd(data / "facts.qvd").table("facts").num_rows
    )
    out["csv_load"] = best_of(
        repeat, lambda _: assoc.App.from_csv(data / "facts.csv", "facts").table("facts").num_rows
    )
    app = assoc.App(
        load_model([(data / "facts.qvd", "facts"), (data / "customers.qvd", "customers")])
    )

    def select(i: int) -> list[int]:
        with app.session() as session:
            session.select("Country", [country(i)])
            return [session.counts("ProductId")["possible"], session.possible_rows("facts")]

    def cube(_: int) -> dict[str, float]:
        with app.session() as session:
            result = session.hypercube(dimensions=["Country"], measures=["Sum(Amount)"])
            return {str(c): round(float(s), 2) for c, s in result.rows if s}

    out["selection"] = best_of(repeat, select)
    out["hypercube"] = best_of(repeat, cube)
    return out


def run_polars(data: Path, threads: int, repeat: int) -> dict[str, Any]:
    """polars' times and answers (its pool is sized by POLARS_MAX_THREADS before import)."""
    import polars as pl

    assert pl.thread_pool_size() == threads, pl.thread_pool_size()
    out: dict[str, Any] = {}
    out["qvd_load"] = best_of(repeat, lambda _: pl.read_parquet(data / "facts.parquet").height)
    out["csv_load"] = best_of(repeat, lambda _: pl.read_csv(data / "facts.csv").height)
    facts = pl.read_parquet(data / "facts.parquet")
    customers = pl.read_parquet(data / "customers.parquet").with_columns(
        pl.col("Country").cast(pl.Categorical)
    )

    def select(i: int) -> list[int]:
        chosen = customers.filter(pl.col("Country") == country(i)).select("CustomerId")
        rows = facts.join(chosen, on="CustomerId", how="semi")
        return [rows["ProductId"].n_unique(), rows.height]

    def cube(_: int) -> dict[str, float]:
        joined = (
            facts.join(customers, on="CustomerId").group_by("Country").agg(pl.col("Amount").sum())
        )
        return {str(c): round(float(s), 2) for c, s in joined.iter_rows() if s}

    out["selection"] = best_of(repeat, select)
    out["hypercube"] = best_of(repeat, cube)
    return out


def run_duckdb(data: Path, threads: int, repeat: int) -> dict[str, Any]:
    """duckdb's times and answers (tables materialised in memory, as the others hold them)."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")

    def load(source: str) -> Callable[[int], int]:
        def run(_: int) -> int:
            con.execute(f"CREATE OR REPLACE TABLE loaded AS SELECT * FROM {source}")
            return int(con.execute("SELECT count(*) FROM loaded").fetchone()[0])  # type: ignore[index]

        return run

    out: dict[str, Any] = {}
    out["qvd_load"] = best_of(repeat, load(f"read_parquet('{data / 'facts.parquet'}')"))
    out["csv_load"] = best_of(repeat, load(f"read_csv('{data / 'facts.csv'}')"))
    con.execute(f"CREATE TABLE facts AS SELECT * FROM read_parquet('{data / 'facts.parquet'}')")
    con.execute(
        f"CREATE TABLE customers AS SELECT * FROM read_parquet('{data / 'customers.parquet'}')"
    )

    def select(i: int) -> list[int]:
        row = con.execute(
            "SELECT count(DISTINCT ProductId), count(*) FROM facts "
            "JOIN customers USING (CustomerId) WHERE Country = ?",
            [country(i)],
        ).fetchone()
        return [int(row[0]), int(row[1])]  # type: ignore[index]

    def cube(_: int) -> dict[str, float]:
        rows = con.execute(
            "SELECT Country, sum(Amount) FROM facts "
            "JOIN customers USING (CustomerId) GROUP BY Country"
        ).fetchall()
        return {str(c): round(float(s), 2) for c, s in rows if s}

    out["selection"] = best_of(repeat, select)
    out["hypercube"] = best_of(repeat, cube)
    return out


RUNNERS = {"assoc": run_assoc, "polars": run_polars, "duckdb": run_duckdb}


def child(args: argparse.Namespace) -> int:
    """Runs one engine at one thread count and prints its results as JSON."""
    results = RUNNERS[args.engine](Path(args.data), args.child_threads, args.repeat)
    print(json.dumps({op: {"seconds": t, "answer": a} for op, (t, a) in results.items()}))
    return 0


def measure(engine: str, threads: int, data: Path, repeat: int) -> dict[str, Any]:
    """One engine at one thread count, in a fresh process."""
    env = dict(os.environ, POLARS_MAX_THREADS=str(threads))
    argv = [sys.executable, __file__, "--engine", engine, "--child-threads", str(threads)]
    argv += ["--data", str(data), "--repeat", str(repeat)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{engine} at {threads} threads failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# ---- the sweep -----------------------------------------------------------------------------


def thread_counts(cores: int) -> list[int]:
    """1, 2, 4, … up to the cores, and the core count itself."""
    counts = {cores}
    n = 1
    while n < cores:
        counts.add(n)
        n *= 2
    return sorted(counts)


def check_answers(results: dict[tuple[str, int], dict[str, Any]]) -> None:
    """Every engine at every thread count gave the same answers (loads: the same row count)."""
    for op in OPERATIONS:
        answers = {key: r[op]["answer"] for key, r in results.items()}
        first_key, first = next(iter(answers.items()))
        for key, answer in answers.items():
            if op == "hypercube":
                same = answer.keys() == first.keys() and all(
                    math.isclose(answer[k], first[k], rel_tol=1e-9, abs_tol=0.01) for k in first
                )
            else:
                same = answer == first
            if not same:
                raise SystemExit(f"{op}: {key} answered {answer}, {first_key} answered {first}")


def amdahl_serial_fraction(speedup_2: float) -> float:
    """Amdahl's serial fraction s from the speedup on 2 threads: S2 = 1 / (s + (1 - s) / 2),
    so s = 2 / S2 - 1 (clamped to [0, 1]: noise can give S2 above 2 or below 1)."""
    return min(1.0, max(0.0, 2.0 / speedup_2 - 1.0))


def amdahl_speedup(serial: float, threads: int) -> float:
    """The speedup Amdahl's law predicts on `threads` threads for serial fraction `serial`."""
    return 1.0 / (serial + (1.0 - serial) / threads)


def amdahl(results: dict[tuple[str, int], dict[str, Any]], counts: list[int]) -> list[str]:
    """Markdown: per engine and operation, S2, the serial fraction and predicted speedups."""
    if 2 not in counts:
        return ["(no Amdahl estimate: the sweep has no 2-thread run)"]
    lines = [
        "| operation | engine | 1 -> 2 threads | serial fraction | predicted 8 / 16 / 32 threads |",
        "|---|---|---:|---:|---:|",
    ]
    for op in OPERATIONS:
        for engine in ENGINES:
            s2 = results[(engine, 1)][op]["seconds"] / results[(engine, 2)][op]["seconds"]
            serial = amdahl_serial_fraction(s2)
            predicted = " / ".join(f"{amdahl_speedup(serial, n):.1f}\u00d7" for n in (8, 16, 32))
            title = OPERATION_TITLES[op]
            lines.append(f"| {title} | {engine} | {s2:.2f}\u00d7 | {serial:.2f} | {predicted} |")
    return lines


def report(
    results: dict[tuple[str, int], dict[str, Any]], counts: list[int], over: set[int]
) -> None:
    """Prints times and speedups (rich table) and the same as Markdown; counts in `over` ran
    on more threads than cores (marked *)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="time (ms) and speedup over 1 thread")
    table.add_column("operation")
    table.add_column("engine")
    heads = [f"{n} threads{' *' if n in over else ''}" for n in counts]
    for head in heads:
        table.add_column(head, justify="right")
    markdown = ["| operation | engine | " + " | ".join(heads) + " |"]
    markdown.append("|---|---|" + "---:|" * len(counts))
    for op in OPERATIONS:
        for engine in ENGINES:
            base = results[(engine, 1)][op]["seconds"]
            cells = []
            for n in counts:
                seconds = results[(engine, n)][op]["seconds"]
                cells.append(f"{seconds * 1000:,.1f} ms ({base / seconds:.2f}\u00d7)")
            table.add_row(OPERATION_TITLES[op], engine, *cells)
            markdown.append(f"| {OPERATION_TITLES[op]} | {engine} | " + " | ".join(cells) + " |")
        table.add_section()
    Console().print(table)
    print("\n".join(markdown))
    if over:
        print(f"\n* more threads than the {os.cpu_count()} logical cores (oversubscribed)")
    print("\nAmdahl's estimate from the 1 -> 2 thread speedup:\n")
    print("\n".join(amdahl(results, counts)))
    load = os.getloadavg()[0]
    if load > (os.cpu_count() or 1) - 1:
        print(
            f"\nload average {load:.1f} on {os.cpu_count()} cores: no core was free for the second "
            "thread, so these speedups and serial fractions measure the machine's other work"
        )


def plot(
    results: dict[tuple[str, int], dict[str, Any]], counts: list[int], over: set[int], path: Path
) -> bool:
    """Speedup vs threads, one panel per operation, one line per engine; a log2 thread axis
    (1 to 32 and beyond stay readable), oversubscribed points hollow."""
    try:
        import matplotlib
    except ImportError:
        print('no plot: matplotlib is not installed (pip install ".[bench]")')
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(OPERATIONS), figsize=(4 * len(OPERATIONS), 3.6), sharey=True)
    for ax, op in zip(axes, OPERATIONS, strict=True):
        ax.plot(counts, counts, color="#bbbbbb", linestyle="--", label="ideal")
        for engine in ENGINES:
            base = results[(engine, 1)][op]["seconds"]
            speedups = [base / results[(engine, n)][op]["seconds"] for n in counts]
            (line,) = ax.plot(counts, speedups, marker="o", label=engine)
            hollow = [(n, x) for n, x in zip(counts, speedups, strict=True) if n in over]
            if hollow:
                ax.plot(
                    *zip(*hollow, strict=True),
                    linestyle="none",
                    marker="o",
                    markerfacecolor="white",
                    color=line.get_color(),
                )
        ax.set_title(OPERATION_TITLES[op])
        ax.set_xlabel("threads" + (" (hollow: oversubscribed)" if over else ""))
        if max(counts) > 4:
            ax.set_xscale("log", base=2)
            ax.set_yscale("log", base=2)
        ax.set_xticks(counts)
        ax.set_xticklabels([str(n) for n in counts])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("speedup over 1 thread")
    axes[0].legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return True


def main() -> int:
    """Generates the data, runs the sweep, prints the table and writes the plot."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1 = 1,000,000 fact rows")
    parser.add_argument("--threads", help="thread counts, e.g. 1,2,4 (default 1..cores)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure; the best counts")
    parser.add_argument("--plot", default="scaling.png", help="the PNG to write")
    parser.add_argument(
        "--oversubscribe",
        action="store_true",
        help="run thread counts above the logical cores too (marked), instead of skipping them",
    )
    parser.add_argument("--json", type=Path, help="also write the times and answers here")
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--engine", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--child-threads", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine:
        return child(args)

    cores = os.cpu_count() or 1
    counts = [int(n) for n in args.threads.split(",")] if args.threads else thread_counts(cores)
    if any(n < 1 for n in counts):
        parser.error("--threads counts must be at least 1")
    counts = sorted(set(counts) | {1})
    above = [n for n in counts if n > cores]
    if above and not args.oversubscribe:
        print(
            f"skipped {above}: more threads than the {cores} logical cores here "
            "(--oversubscribe runs them, marked)"
        )
        counts = [n for n in counts if n <= cores]
    over = set(above) if args.oversubscribe else set()
    with tempfile.TemporaryDirectory(prefix="assoc-scaling-") as tmp:
        data = Path(tmp)
        sizes = generate(data, args.scale)
        print(
            f"{sizes['rows']:,} fact rows, {sizes['customers']:,} customers; threads {counts}; "
            f"{cores} logical cores; load average {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        results: dict[tuple[str, int], dict[str, Any]] = {}
        # Engines alternate at each thread count, so a change in the machine's load hits all.
        for n in counts:
            for engine in ENGINES:
                results[(engine, n)] = measure(engine, n, data, args.repeat)
    check_answers(results)
    report(results, counts, over)
    plotted = plot(results, counts, over, Path(args.plot))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "cores": cores,
                    "scale": args.scale,
                    "oversubscribed": sorted(over),
                    "results": [{"engine": e, "threads": n, **r} for (e, n), r in results.items()],
                },
                indent=1,
            )
        )
    print(
        (f"plot: {args.plot}; " if plotted else "")
        + f"load average at the end {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
