"""benchmarks/qvd_sizes.py still works: a short run loads each size it is given, by each build
named, and prints one row per size and build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SIZES = Path(__file__).resolve().parents[2] / "benchmarks" / "qvd_sizes.py"


def test_a_short_run_prints_a_row_per_size_and_build() -> None:
    package = str(Path(__import__("assoc").__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": package}
    done = subprocess.run(
        [sys.executable, str(SIZES), "--rows", "50,3000", "--rounds", "2",
         "--build", f"a={package}", "--build", f"b={package}"],
        env=env, capture_output=True, text=True, timeout=300, cwd=SIZES.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1:6] for line in done.stdout.splitlines() if line.startswith("| ")]
    assert [(r[0].strip(), r[1].strip()) for r in rows[1:]] == [
        ("50", "a"), ("50", "b"), ("3,000", "a"), ("3,000", "b")
    ]  # fmt: skip
    for row in rows[1:]:
        assert float(row[2].split()[0]) > 0
        assert float(row[3].split()[0]) > 0
        assert len(row[4].split(",")) == 2  # a ratio per round
