"""benchmarks/qix_large_fields.py: every case of the service's layouts over large fields is
timed (a small app here)."""

from __future__ import annotations

from benchscripts import table_rows


def test_every_case_is_timed() -> None:
    rows = table_rows("qix_large_fields.py", "--rows", "20000", "--repeat", "2")
    assert len(rows) == 13
    for name, shown in rows:
        assert float(shown.split()[0]) > 0, name
        assert "not repeated" not in shown
