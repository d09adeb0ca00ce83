"""benchmarks/qix_layout_path.py `--pivot`: the pivot table's layout in its three shapes."""

from __future__ import annotations

from benchscripts import table_rows


def test_the_pivot_s_three_shapes_are_timed() -> None:
    rows = table_rows("qix_layout_path.py", "--pivot", "--rows", "20000", "--steps", "3")
    assert [row[0] for row in rows] == [
        "collapsed",
        "first region expanded",
        "every region expanded",
    ]
    for _, median, best in rows:
        assert 0 < float(best) <= float(median)
