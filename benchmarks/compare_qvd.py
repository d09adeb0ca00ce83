"""QVD loading side by side, in one run on the same data: assoc, pyqvd, and pyarrow reading
the same table from an Arrow IPC file; then the memory each holds the table in.

    python benchmarks/compare_qvd.py [--rows N] [--repeat K] [--threads T]

The table is a fact table of 1,000,000 rows (scaled by ASSOC_BENCH_SCALE): Id (int, every
value distinct), Amount (float with 2 decimals, mostly distinct) and Category (text, 1,000
distinct values). Times are the best of K runs, since the machine may be busy with other work.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc
import pyqvd

import assoc
from assoc import App

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import scaled  # the benchmarks' shared scale knob
from harness import Measure, interleaved_times, model_bytes

N_CATEGORIES = 1000


def make_columns(rows: int, seed: int = 42, float64_only: bool = False) -> dict[str, np.ndarray]:
    """The benchmark table's columns: Id (int64), Amount (float64) and Category (str). Amount
    has 2 decimals, so that one value in a hundred is an integer (an int32 symbol among the
    float64 ones, as Qlik writes them); with `float64_only`, each integer gets 0.5 more, so
    that every symbol is a float64 (prices that never end in .00)."""
    rng = np.random.default_rng(seed)
    names = np.array([f"category-{i:04d}" for i in range(N_CATEGORIES)], dtype=object)
    amount = np.round(rng.uniform(0, 10_000, rows), 2)
    if float64_only:
        amount = np.where(amount == np.floor(amount), amount + 0.5, amount)
    return {
        "Id": np.arange(rows, dtype=np.int64),
        "Amount": amount,
        "Category": names[rng.integers(0, N_CATEGORIES, rows)],
    }


def write_files(folder: Path, columns: dict[str, np.ndarray]) -> tuple[Path, Path]:
    """The table as a QVD file (written by assoc) and as an uncompressed Arrow IPC file."""
    sales = {
        "Id": columns["Id"],
        "Amount": columns["Amount"],
        "Category": list(columns["Category"]),
    }
    app = App.from_tables({"Sales": sales})
    qvd = folder / "sales.qvd"
    app.write_qvd("Sales", qvd)
    arrow = folder / "sales.arrow"
    table = arrow_table(columns)
    with pa.OSFile(str(arrow), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return qvd, arrow


def arrow_table(columns: dict[str, np.ndarray]) -> pa.Table:
    """The table in Arrow, its text column dictionary-encoded."""
    return pa.table(
        {
            "Id": columns["Id"],
            "Amount": columns["Amount"],
            "Category": pa.array(columns["Category"].tolist()).dictionary_encode(),
        }
    )


def read_arrow(path: Path) -> pa.Table:
    """The Arrow IPC file read into memory."""
    with pa.OSFile(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def read_arrow_mapped(path: Path) -> pa.Table:
    """The Arrow IPC file memory-mapped (buffers stay in the page cache)."""
    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


def check_assoc(app: App, columns: dict[str, np.ndarray]) -> None:
    """The loaded app holds exactly the source columns."""
    table = app.table("Sales")
    assert table.num_rows == len(columns["Id"])
    for field, values in columns.items():
        symbols = np.array(app.symbols(field), dtype=values.dtype)
        assert np.array_equal(symbols[table.column_indices(field)], values), field


def check_arrow(table: pa.Table, columns: dict[str, np.ndarray]) -> None:
    """The Arrow table holds exactly the source columns."""
    assert np.array_equal(table["Id"].to_numpy(), columns["Id"])
    assert np.array_equal(table["Amount"].to_numpy(), columns["Amount"])
    category = table["Category"].combine_chunks()
    dictionary = np.array(category.dictionary.to_pylist(), dtype=object)
    assert np.array_equal(dictionary[category.indices.to_numpy()], columns["Category"])


def check_pyqvd(table: Any, columns: dict[str, np.ndarray]) -> None:
    """pyqvd read the same rows (spot-checked: it holds every value as a Python object)."""
    assert table.shape == (len(columns["Id"]), 3)
    for row in (0, len(columns["Id"]) // 2, len(columns["Id"]) - 1):
        values = [v.calculation_value for v in table.data[row]]
        assert values == [columns["Id"][row], columns["Amount"][row], columns["Category"][row]]


def best_times(readers: dict[str, Callable[[], Any]], repeat: int) -> dict[str, tuple[float, Any]]:
    """Per reader, the fastest of `repeat` calls in seconds and a result. The readers take
    turns, so a burst of other work on the machine slows them alike."""
    best = dict.fromkeys(readers, float("inf"))
    results: dict[str, Any] = {}
    for _ in range(repeat):
        for name, fn in readers.items():
            results[name] = None  # the previous result is freed outside the timed call
            start = time.perf_counter()
            results[name] = fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: (best[name], results[name]) for name in readers}


# One load in a new interpreter: nothing is cached or pooled yet, as when an app opens a file
# for the first time (the file itself is in the page cache).
FIRST_LOAD = {
    "assoc": (
        "import assoc; from assoc import App; assoc.set_threads({threads})",
        "App.from_qvd({qvd!r})",
    ),
    "arrow": (
        "import pyarrow as pa, pyarrow.ipc",
        "f = pa.OSFile({arrow!r}); pa.ipc.open_file(f).read_all(); f.close()",
    ),
    "arrow-mapped": (
        "import pyarrow as pa, pyarrow.ipc",
        "pa.ipc.open_file(pa.memory_map({arrow!r})).read_all()",
    ),
}


def first_load_times(runs: int, **paths: Any) -> dict[str, float]:
    """Per reader, the fastest of `runs` first loads, each in a fresh interpreter, in seconds."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    best = dict.fromkeys(FIRST_LOAD, float("inf"))
    for _ in range(runs):
        for reader, parts in FIRST_LOAD.items():
            setup, load = (part.format(**paths) for part in parts)
            timed = f"t = time.perf_counter()\n{load}\nprint(time.perf_counter() - t)"
            script = f"import time\n{setup}\n{timed}"
            out = subprocess.run(
                [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
            )
            best[reader] = min(best[reader], float(out.stdout.strip()))
    return best


def assoc_bytes(app: App) -> tuple[int, int]:
    """Bytes of the loaded table: symbol tables plus indexes, and the indexes alone."""
    md = app.metadata()
    symbols = sum(f["byte_size"] for f in md["fields"] if not f["is_system"])
    indexes = sum(t["byte_size"] for t in md["tables"] if not t["is_system"])
    return symbols + indexes, indexes


def _read_times(rows: int, repeat: int, float64_only: bool) -> tuple[dict[str, list[float]], int]:
    """Times of App.from_qvd and of pyarrow reading the same table from an Arrow IPC file
    (into memory, and memory-mapped), results checked first; and the bytes the load reads
    and writes."""
    columns = make_columns(rows, float64_only=float64_only)
    with tempfile.TemporaryDirectory(prefix="assoc-bench-qvd-") as tmp:
        qvd, arrow = write_files(Path(tmp), columns)
        app = App.from_qvd(qvd)
        check_assoc(app, columns)
        check_arrow(read_arrow(arrow), columns)
        times = interleaved_times(
            {
                "assoc": (lambda: App.from_qvd(qvd), None),
                "arrow IPC read": (lambda: read_arrow(arrow), None),
                "arrow IPC mapped": (lambda: read_arrow_mapped(arrow), None),
            },
            repeat,
        )
        return times, qvd.stat().st_size + model_bytes(app)


def measures(repeat: int, rows: int | None = None) -> list[Measure]:
    """App.from_qvd against pyarrow reading the same table from an Arrow IPC file (into
    memory, and memory-mapped), as measures for run_all.py; then the same with Amount's
    symbols float64 alone."""
    rows = rows or scaled(1_000_000)
    times, floor = _read_times(rows, repeat, float64_only=False)
    floats, floats_floor = _read_times(rows, repeat, float64_only=True)
    what = f"{rows:,} rows x 3 fields, App.from_qvd"
    read = "the QVD file, and the indexes and symbols written"
    return [
        Measure(
            "qvd.read",
            what,
            times["assoc"],
            {"arrow IPC read": times["arrow IPC read"]},
            floor,
            read,
            "<= 0.8x Arrow IPC read",
        ),
        Measure(
            "qvd.read_vs_mapped",
            what + " vs a memory-mapped Arrow IPC file",
            times["assoc"],
            {"arrow IPC mapped": times["arrow IPC mapped"]},
            floor,
            read,
        ),
        Measure(
            "qvd.read_float64",
            what + ", Amount's symbols float64 alone (no amount is an integer)",
            floats["assoc"],
            {"arrow IPC read": floats["arrow IPC read"]},
            floats_floor,
            read,
        ),
    ]


def main() -> None:
    """Runs the comparison and prints the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=scaled(1_000_000))
    parser.add_argument(
        "--repeat", type=int, default=21, help="runs per fast reader (best is kept)"
    )
    parser.add_argument(
        "--pyqvd-repeat", type=int, default=2, help="runs of pyqvd (seconds each; 0 skips it)"
    )
    parser.add_argument("--threads", type=int, default=0, help="engine threads (0 = all cores)")
    parser.add_argument("--first-loads", type=int, default=7, help="fresh-process loads per reader")
    args = parser.parse_args()
    assoc.set_threads(args.threads)

    columns = make_columns(args.rows)
    with tempfile.TemporaryDirectory(prefix="assoc-bench-qvd-") as tmp:
        qvd, arrow = write_files(Path(tmp), columns)
        fast = best_times(
            {
                "assoc": lambda: App.from_qvd(qvd),
                "arrow": lambda: read_arrow(arrow),
                "arrow-mapped": lambda: read_arrow_mapped(arrow),
            },
            args.repeat,
        )
        (t_assoc, app), (t_arrow, table), (t_mapped, mapped) = fast.values()
        check_assoc(app, columns)
        check_arrow(table, columns)
        check_arrow(mapped, columns)
        t_pyqvd = None
        if args.pyqvd_repeat > 0:
            slow = best_times(
                {"pyqvd": lambda: pyqvd.QvdTable.from_qvd(str(qvd))}, args.pyqvd_repeat
            )
            t_pyqvd, qtable = slow["pyqvd"]
            check_pyqvd(qtable, columns)
        qvd_size, arrow_size = qvd.stat().st_size, arrow.stat().st_size
        first = first_load_times(
            args.first_loads, qvd=str(qvd), arrow=str(arrow), threads=args.threads
        )

    ours, indexes = assoc_bytes(app)
    theirs = table.get_total_buffer_size()

    print(
        f"QVD load: {args.rows:,} rows x 3 fields "
        f"(Id int, Amount float, Category text of {N_CATEGORIES:,} values)"
    )
    print(
        f"pyarrow {pa.__version__}, pyqvd {importlib.metadata.version('pyqvd')}, "
        f"Python {platform.python_version()}, "
        f"{assoc.threads()} engine threads, {os.cpu_count()} cores"
    )
    print(f"files: QVD {qvd_size:,} bytes, Arrow IPC {arrow_size:,} bytes")
    print(f"best of {args.repeat} runs (pyqvd: {args.pyqvd_repeat}); every result checked")
    print()
    print(
        f"| {'reader':<44} | {'best in one process':>19} | {'/ assoc':>7} "
        f"| {'first load, new process':>23} | {'/ assoc':>7} |"
    )
    print(f"|{'-' * 46}|{'-' * 21}|{'-' * 9}|{'-' * 25}|{'-' * 9}|")
    rows: list[tuple[str, float, float | None]] = [
        ("assoc App.from_qvd(path)", t_assoc, first["assoc"]),
        ("pyarrow IPC file read_all (read into memory)", t_arrow, first["arrow"]),
        ("pyarrow IPC file read_all (memory-mapped)", t_mapped, first["arrow-mapped"]),
    ]
    if t_pyqvd is not None:
        rows.append(("pyqvd QvdTable.from_qvd(path)", t_pyqvd, None))
    for name, t, t_first in rows:
        cold = "n/a" if t_first is None else f"{t_first * 1000:.2f} ms"
        ratio = "" if t_first is None else f"{t_first / first['assoc']:.2f}"
        print(
            f"| {name:<44} | {t * 1000:>16.2f} ms | {t / t_assoc:>7.2f} | {cold:>23} | {ratio:>7} |"
        )
    print()
    met = {True: "met", False: "missed"}
    vs_arrow = t_assoc / t_arrow
    vs_arrow_first = first["assoc"] / first["arrow"]
    if t_pyqvd is not None:
        speedup = t_pyqvd / t_assoc
        print(f"assoc vs pyqvd: {speedup:,.0f}x faster (target >= 100x: {met[speedup >= 100]})")
    print(
        f"assoc vs pyarrow IPC read: {vs_arrow:.2f}x its time in one process, "
        f"{vs_arrow_first:.2f}x on a first load (target <= 3x: {met[vs_arrow <= 3]}; "
        f"goal <= 0.8x: {met[vs_arrow <= 0.8]})"
    )
    print()
    print(f"| {'memory of the loaded table':<44} | {'bytes':>12} | {'/ Arrow':>8} |")
    print(f"|{'-' * 46}|{'-' * 14}|{'-' * 10}|")
    for name, n in (
        ("assoc symbol tables + indexes", ours),
        ("assoc indexes only", indexes),
        ("Arrow, Category dictionary-encoded", theirs),
    ):
        print(f"| {name:<44} | {n:>12,} | {n / theirs:>8.2f} |")
    print()
    print(f"assoc vs Arrow memory: {ours / theirs:.2f}x (target <= 1.0x: {met[ours <= theirs]})")


if __name__ == "__main__":
    main()
