"""Every compare_* benchmark at one scale, recorded in one JSON file; or what changed since one.

    python benchmarks/run_all.py [--scale S] [--repeat N] [--out FILE] [--compare OLD.json]
                                 [--only name,...] [--jobs N]
    python benchmarks/run_all.py --compare OLD.json NEW.json     (compare two files, no run)

The scale defaults to ASSOC_BENCH_SCALE (else 1.0 = the sizes the targets name). Each
benchmark runs in its own process (`measures(repeat)` of its module) so that one's memory
and threads do not weigh on the next. The file holds the machine (CPU, cores, memory,
versions, git commit), the load average before and after, the memory bandwidth measured at
the start, and per measure: every time, every peer's times, the ratio to the best peer,
its run-to-run noise, the bytes the path must read and its floor (bytes / bandwidth) with
time / floor. `--compare` prints each ratio beside the old one and flags those that moved
by more than the noise either run measured. Nothing here gates on time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BENCHMARKS = sorted(p.stem for p in HERE.glob("compare_*.py"))
SERVICES = ("compare_store", "compare_http", "compare_qix")
# A ratio is flagged when it moved by more than a factor 1 + NOISE_FACTOR x the larger run's
# noise (a robust standard deviation of its per-round ratios, relative), either way, and by
# at least 1 + MIN_CHANGE.
NOISE_FACTOR = 2.0
MIN_CHANGE = 0.05


# ---- the machine -----------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def version(module: str) -> str | None:
    try:
        return str(importlib.import_module(module).__version__)
    except Exception:
        return None


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
        )
    except OSError:
        return None
    if out.returncode:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def machine() -> dict[str, Any]:
    return {
        "cpu_model": cpu_model(),
        "logical_cores": os.cpu_count(),
        "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {m: version(m) for m in ("assoc", "numpy", "polars", "duckdb", "pyarrow")},
        "git_commit": git_commit(),
    }


# ---- one benchmark, in its own process ---------------------------------------------------


def child(name: str, repeat: int, out: Path) -> None:
    """Runs one module's measures() and writes them (as JSON) to `out`."""
    sys.path.insert(0, str(HERE))
    module = importlib.import_module(name)
    why = module.unavailable() if hasattr(module, "unavailable") else None
    if why:
        out.write_text(json.dumps({"skipped": why, "measures": []}))
        return
    started = time.perf_counter()
    found = module.measures(repeat)
    result = {
        "seconds": time.perf_counter() - started,
        "measures": [m.to_json() for m in found],
    }
    out.write_text(json.dumps(result))


def run_one(name: str, repeat: int, scale: float, timeout: float) -> dict[str, Any]:
    """One benchmark's result, or its error (the run goes on with the next one)."""
    env = {**os.environ, "ASSOC_BENCH_SCALE": str(scale)}
    with tempfile.TemporaryDirectory(prefix="assoc-run-all-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name]
        cmd += ["--repeat", str(repeat), "--child-out", str(out)]
        started = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s", "measures": []}
        if proc.returncode or not out.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
            return {"error": "\n".join(tail), "measures": [], "exit": proc.returncode}
        result: dict[str, Any] = json.loads(out.read_text())
        result["wall_seconds"] = time.perf_counter() - started
        return result


def add_floors(result: dict[str, Any], bytes_per_s: float) -> None:
    """floor = bytes / bandwidth, and time / floor, for every measure with its bytes."""
    for bench in result["benchmarks"].values():
        for m in bench["measures"]:
            if m.get("floor_bytes"):
                m["floor_s"] = m["floor_bytes"] / bytes_per_s
                m["time_per_floor"] = m["best_s"] / m["floor_s"]
            else:
                m["floor_s"] = m["time_per_floor"] = None


# ---- printing and comparing ---------------------------------------------------------------


def fmt_s(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.3f} s"


def fmt_x(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def summary(result: dict[str, Any]) -> str:
    """The run as a Markdown table."""
    bw = result["bandwidth"]
    lines = [
        f"scale {result['scale']}, repeat {result['repeat']}, jobs {result.get('jobs', 1)}, "
        f"load {result['load_before'][0]:.2f} -> {result['load_after'][0]:.2f}, "
        f"bandwidth {bw['bytes_per_s'] / 1e9:.1f} GB/s "
        f"(copy {bw['copy_bytes_per_s'] / 1e9:.1f}, triad {bw['triad_bytes_per_s'] / 1e9:.1f})",
        "",
        "| measure | assoc best | peer | peer best | ratio | noise | floor | time/floor |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for name, bench in result["benchmarks"].items():
        if bench.get("error") or bench.get("skipped"):
            why = bench.get("skipped") or bench["error"].splitlines()[-1]
            lines.append(f"| {name}: {why} | | | | | | | |")
        for m in bench["measures"]:
            noise = "-" if m["ratio_noise"] is None else f"±{m['ratio_noise']:.0%}"
            lines.append(
                f"| {m['name']} | {fmt_s(m['best_s'])} | {m['peer'] or '-'} "
                f"| {fmt_s(m.get('peer_best_s'))} | {fmt_x(m['ratio'])} | {noise} "
                f"| {fmt_s(m['floor_s'])} | {fmt_x(m['time_per_floor'])} |"
            )
    return "\n".join(lines)


def measures_of(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for b in result["benchmarks"].values() for m in b["measures"]}


def compare(old: dict[str, Any], new: dict[str, Any]) -> tuple[str, list[str]]:
    """What changed from `old` to `new` (Markdown), and the measures whose ratio moved by more
    than the noise: NOISE_FACTOR x the larger of the two runs' noise, at least MIN_CHANGE.
    Measures without a peer compare their best times by their time noise."""
    before, after = measures_of(old), measures_of(new)
    lines = [
        f"old: {old['machine'].get('git_commit')} scale {old['scale']} "
        f"({old.get('started', '?')}); new: {new['machine'].get('git_commit')} "
        f"scale {new['scale']} ({new.get('started', '?')})",
        "",
        "| measure | old ratio | new ratio | change | bound | flag |",
        "|---|---:|---:|---:|---:|---|",
    ]
    flagged = []
    for name in sorted(before.keys() | after.keys()):
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            lines.append(
                f"| {name} | {'-' if a is None else 'present'} | "
                f"{'-' if b is None else 'present'} | | | {'new' if a is None else 'gone'} |"
            )
            continue
        if a["ratio"] is None or b["ratio"] is None:
            ra, rb, key = a["best_s"], b["best_s"], "time"
            noise = max(NOISE_FACTOR * max(a["time_noise"], b["time_noise"]), MIN_CHANGE)
        else:
            ra, rb, key = a["ratio"], b["ratio"], "ratio"
            worst = max(a["ratio_noise"] or 0.0, b["ratio_noise"] or 0.0)
            noise = max(NOISE_FACTOR * worst, MIN_CHANGE)
        change = rb / ra - 1
        flag = ""
        # Symmetric: twice as slow and twice as fast are the same distance from no change.
        if abs(math.log(rb / ra)) > math.log1p(noise):
            flag = ("worse" if change > 0 else "better") + f" ({key})"
            flagged.append(name)
        old_text = fmt_x(ra) if key == "ratio" else fmt_s(ra)
        new_text = fmt_x(rb) if key == "ratio" else fmt_s(rb)
        lines.append(
            f"| {name} | {old_text} | {new_text} | {change:+.0%} | ±{noise:.0%} | {flag} |"
        )
    if old["scale"] != new["scale"]:
        lines.append(f"\nThe scales differ ({old['scale']} vs {new['scale']}): ratios may too.")
    return "\n".join(lines), flagged


# ---- main --------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_scale = float(os.environ.get("ASSOC_BENCH_SCALE", "1.0"))
    parser.add_argument("--scale", type=float, default=default_scale)
    parser.add_argument("--repeat", type=int, default=5, help="rounds per measure (>= 2)")
    parser.add_argument("--out", type=Path, help="the JSON file (default: run-<time>.json)")
    parser.add_argument("--compare", type=Path, help="an earlier run_all JSON file")
    parser.add_argument("--only", help="comma-separated benchmarks, e.g. csv,selection")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per benchmark")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="benchmarks run at once (> 1 only to check the harness: the times then contend)",
    )
    parser.add_argument("--bandwidth-mib", type=int, default=256, help="MiB per STREAM array")
    parser.add_argument("new", nargs="?", type=Path, help="with --compare: a file to compare")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        child(args.child, args.repeat, args.child_out)
        return 0
    if args.new is not None:
        if args.compare is None:
            parser.error("a file to compare needs --compare OLD.json")
        text, flagged = compare(
            json.loads(args.compare.read_text()), json.loads(args.new.read_text())
        )
        print(text)
        print(f"\nflagged: {', '.join(flagged) if flagged else 'none'}")
        return 0
    if args.repeat < 2:
        parser.error("--repeat must be at least 2 (the noise needs two rounds)")

    names = BENCHMARKS
    if args.only:
        wanted = [n if n.startswith("compare_") else f"compare_{n}" for n in args.only.split(",")]
        unknown = [n for n in wanted if n not in BENCHMARKS]
        if unknown:
            parser.error(f"unknown benchmarks {unknown}; known: {', '.join(BENCHMARKS)}")
        names = wanted

    import bandwidth

    started = dt.datetime.now(dt.UTC)
    result: dict[str, Any] = {
        "started": started.isoformat(timespec="seconds"),
        "scale": args.scale,
        "repeat": args.repeat,
        "machine": machine(),
        "load_before": list(os.getloadavg()),
    }
    result["bandwidth"] = bandwidth.measure(args.bandwidth_mib)
    result["jobs"] = args.jobs

    def one(name: str) -> dict[str, Any]:
        print(f"{name} ...", file=sys.stderr, flush=True)
        return run_one(name, args.repeat, args.scale, args.timeout)

    # The benchmarks that start servers take longest: they start first, so that the others
    # run beside them.
    order = sorted(names, key=lambda n: n not in SERVICES)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        done = dict(zip(order, pool.map(one, order), strict=True))
    result["benchmarks"] = {name.removeprefix("compare_"): done[name] for name in names}
    result["load_after"] = list(os.getloadavg())
    result["seconds"] = (dt.datetime.now(dt.UTC) - started).total_seconds()
    add_floors(result, result["bandwidth"]["bytes_per_s"])

    out = args.out or Path(f"run-{started:%Y%m%dT%H%M%S}.json")
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(summary(result))
    print(f"\nwritten: {out}")
    if args.compare:
        text, flagged = compare(json.loads(args.compare.read_text()), result)
        print("\n" + text)
        print(f"\nflagged: {', '.join(flagged) if flagged else 'none'}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:
        traceback.print_exc()
        sys.exit(1)
