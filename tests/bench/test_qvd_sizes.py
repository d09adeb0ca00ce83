"""benchmarks/qvd_sizes.py still works: a short run loads each size it is given, by each build
named, and prints one row per size and build."""

from __future__ import annotations

from benchscripts import table_rows


def test_a_short_run_prints_a_row_per_size_and_build() -> None:
    rows = table_rows("qvd_sizes.py", "--rows", "50,3000", "--rounds", "2", builds=("a", "b"))
    assert [(r[0], r[1]) for r in rows] == [
        ("50", "a"), ("50", "b"), ("3,000", "a"), ("3,000", "b")
    ]  # fmt: skip
    for row in rows:
        assert float(row[2].split()[0]) > 0
        assert float(row[3].split()[0]) > 0
        assert len(row[4].split(",")) == 2  # a ratio per round
