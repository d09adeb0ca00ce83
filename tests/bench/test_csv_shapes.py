"""benchmarks/csv_shapes.py still works: a short run loads each shape by each build named and
prints one row per shape and build."""

from __future__ import annotations

from benchscripts import table_rows


def test_a_short_run_prints_a_row_per_shape_and_build() -> None:
    rows = table_rows("csv_shapes.py", "--rows", "2000", "--rounds", "1", builds=("a", "b"))
    assert len(rows) == 12
    assert "decimals rising" in [r[0] for r in rows]
    assert [r[1] for r in rows] == ["a", "b"] * 6
    for row in rows:
        assert float(row[2].split()[0]) > 0
        assert float(row[3].split()[0]) > 0
