"""Runs the reader fuzzers for a number of executions and prints what they found.

Usage: python fuzz/run.py [--runs N] [--jobs J] [qvd_fuzzer csv_fuzzer]
Builds nothing: build first with
    CXX=clang++-14 cmake -S fuzz -B build/fuzz && cmake --build build/fuzz -j2
Seeds: the QVD files in ../shared/testdata/qlik-qvd and fuzz/seeds/csv. Crashes are written to
build/fuzz/crashes/<fuzzer>/; each one found becomes a regression test in tests/.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "fuzz"
SEEDS = {
    "qvd_fuzzer": [
        ROOT.parent / "shared" / "testdata" / "qlik-qvd",
        ROOT / "fuzz" / "seeds" / "qvd",
    ],
    "csv_fuzzer": [ROOT / "fuzz" / "seeds" / "csv"],
}
SEED_SUFFIX = {"qvd_fuzzer": ".qvd", "csv_fuzzer": ".csv"}
DONE = re.compile(r"^#(\d+)\s+DONE\b", re.MULTILINE)
STATS = re.compile(r"stat::number_of_executed_units:\s*(\d+)")


def seed_corpus(name: str) -> Path:
    """The fuzzer's working corpus, seeded from the files above (kept between runs)."""
    corpus = BUILD / f"corpus-{name}"
    corpus.mkdir(parents=True, exist_ok=True)
    for folder in SEEDS[name]:
        if folder.is_dir():
            for seed in folder.iterdir():
                if seed.suffix == SEED_SUFFIX[name]:
                    shutil.copy(seed, corpus / seed.name)
    return corpus


def run(name: str, runs: int, jobs: int, max_len: int) -> tuple[int, int, float]:
    """Runs one fuzzer; returns (executions, crashes, seconds)."""
    binary = BUILD / name
    if not binary.exists():
        sys.exit(f"{binary} is missing: build the fuzzers first (see this file's docstring)")
    crashes = BUILD / "crashes" / name
    crashes.mkdir(parents=True, exist_ok=True)
    before = set(crashes.iterdir())
    corpus = seed_corpus(name)
    per_job = runs // jobs
    start = time.monotonic()
    procs = [
        subprocess.Popen(
            [
                str(binary),
                f"-runs={per_job}",
                f"-max_len={max_len}",
                "-print_final_stats=1",
                "-rss_limit_mb=4096",
                f"-artifact_prefix={crashes}/",
                str(corpus),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(jobs)
    ]
    executed = 0
    for proc in procs:
        out, _ = proc.communicate()
        stats = STATS.findall(out)
        executed += int(stats[-1]) if stats else 0
        if proc.returncode != 0:
            print(out[-4000:], file=sys.stderr)
    found = len(set(crashes.iterdir()) - before)
    return executed, found, time.monotonic() - start


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fuzzers", nargs="*", default=list(SEEDS))
    parser.add_argument("--runs", type=int, default=10_000_000, help="executions per fuzzer")
    parser.add_argument("--jobs", type=int, default=1, help="fuzzer processes per fuzzer")
    parser.add_argument("--max-len", type=int, default=16384, help="largest input in bytes")
    args = parser.parse_args()
    failed = False
    for name in args.fuzzers:
        executed, found, seconds = run(name, args.runs, args.jobs, args.max_len)
        print(f"{name}: {executed:,} executions in {seconds:.0f} s, {found} crashes")
        failed |= found > 0
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
