"""benchmarks/csv_shapes.py still works: a short run loads each shape by each build named and
prints one row per shape and build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SHAPES = Path(__file__).resolve().parents[2] / "benchmarks" / "csv_shapes.py"


def test_a_short_run_prints_a_row_per_shape_and_build() -> None:
    package = str(Path(__import__("assoc").__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": package}
    done = subprocess.run(
        [sys.executable, str(SHAPES), "--rows", "2000", "--rounds", "1",
         "--build", f"a={package}", "--build", f"b={package}"],
        env=env, capture_output=True, text=True, timeout=300, cwd=SHAPES.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1:6] for line in done.stdout.splitlines() if line.startswith("| ")]
    shapes = [r[0].strip() for r in rows[1:]]
    assert len(shapes) == 12
    assert "decimals rising" in shapes
    assert [r[1].strip() for r in rows[1:]] == ["a", "b"] * 6
    for row in rows[1:]:
        assert float(row[2].split()[0]) > 0
        assert float(row[3].split()[0]) > 0
