"""The machine's memory bandwidth, STREAM-style: copy (a = b) and triad (a = b + s*c) over
arrays far larger than the last-level cache, split over threads (numpy releases the GIL in
its loops), best of a few passes.

    python benchmarks/bandwidth.py [--mib 256] [--threads N] [--repeat 5]

Bytes are counted as STREAM counts them: copy moves 16 bytes per element (one read, one
write), triad 24 (two reads, one write). The triad runs in cache-sized blocks, so its
second numpy pass over a block stays in cache and memory sees the three STREAM streams.
"""

from __future__ import annotations

import argparse
import itertools
import os
import threading
import time
from collections.abc import Callable

import numpy as np

BLOCK = 1 << 16  # elements per triad block (512 KiB per array: two passes hit the cache)


def _timed(threads: int, work: Callable[[int, int], None], n: int, repeat: int) -> float:
    """The best wall time of `work` over [0, n) split into `threads` contiguous parts."""
    edges = np.linspace(0, n, threads + 1).astype(int)
    best = float("inf")
    for _ in range(repeat):
        pool = [
            threading.Thread(target=work, args=(int(lo), int(hi)))
            for lo, hi in itertools.pairwise(edges)
        ]
        start = time.perf_counter()
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        best = min(best, time.perf_counter() - start)
    return best


def measure(mib: int = 256, threads: int | None = None, repeat: int = 5) -> dict[str, float]:
    """Copy and triad bandwidth in bytes per second, over three arrays of `mib` MiB each, on
    `threads` threads (default: every logical core)."""
    threads = threads or os.cpu_count() or 1
    n = mib * (1 << 20) // 8
    a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)  # written: every page is resident

    def copy(lo: int, hi: int) -> None:
        np.copyto(a[lo:hi], b[lo:hi])

    def triad(lo: int, hi: int) -> None:
        for k in range(lo, hi, BLOCK):
            end = min(k + BLOCK, hi)
            np.multiply(c[k:end], 3.0, out=a[k:end])
            np.add(a[k:end], b[k:end], out=a[k:end])

    t_copy = _timed(threads, copy, n, repeat)
    t_triad = _timed(threads, triad, n, repeat)
    assert a[0] == a[-1] == 7.0
    copy_bps, triad_bps = 16 * n / t_copy, 24 * n / t_triad
    return {
        "copy_bytes_per_s": copy_bps,
        "triad_bytes_per_s": triad_bps,
        "bytes_per_s": max(copy_bps, triad_bps),
        "threads": float(threads),
        "array_bytes": float(8 * n),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256, help="MiB per array (three arrays)")
    parser.add_argument("--threads", type=int, default=0, help="0 = every logical core")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for threads in sorted({1, args.threads or os.cpu_count() or 1}):
        m = measure(args.mib, threads, args.repeat)
        print(
            f"{threads} thread(s): copy {m['copy_bytes_per_s'] / 1e9:6.2f} GB/s, "
            f"triad {m['triad_bytes_per_s'] / 1e9:6.2f} GB/s"
        )


if __name__ == "__main__":
    main()
