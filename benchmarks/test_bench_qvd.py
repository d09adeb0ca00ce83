"""QVD loading with pytest-benchmark: assoc against pyarrow (the same table from an Arrow IPC
file) and pyqvd, in one group. Every benchmark checks what it loaded; none gates on time.

    PYTHONPATH=python python -m pytest benchmarks/test_bench_qvd.py --benchmark-only

The side-by-side table with ratios and memory comes from benchmarks/compare_qvd.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqvd
import pytest

from assoc import App
from compare_qvd import (
    arrow_table,
    assoc_bytes,
    check_arrow,
    check_assoc,
    check_pyqvd,
    make_columns,
    read_arrow,
    write_files,
)
from conftest import scaled

ROWS = scaled(1_000_000)

Data = tuple[dict[str, np.ndarray], Path, Path]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Data:
    """The benchmark table's columns, as a QVD file and as an Arrow IPC file."""
    columns = make_columns(ROWS)
    qvd, arrow = write_files(tmp_path_factory.mktemp("qvd"), columns)
    return columns, qvd, arrow


@pytest.mark.benchmark(group="qvd-load")
def test_assoc_from_qvd(benchmark, data: Data) -> None:
    columns, qvd, _ = data
    app = benchmark(App.from_qvd, qvd)
    check_assoc(app, columns)
    total, indexes = assoc_bytes(app)
    benchmark.extra_info.update(table_bytes=total, index_bytes=indexes)
    # What the memory target compares (reported, not gated): Arrow with dictionary text.
    benchmark.extra_info["arrow_bytes"] = arrow_table(columns).get_total_buffer_size()


@pytest.mark.benchmark(group="qvd-load")
def test_pyarrow_ipc_read(benchmark, data: Data) -> None:
    columns, _, arrow = data
    table = benchmark(read_arrow, arrow)
    check_arrow(table, columns)
    benchmark.extra_info["table_bytes"] = table.get_total_buffer_size()


@pytest.mark.benchmark(group="qvd-load")
def test_pyqvd_read(benchmark, data: Data) -> None:
    columns, qvd, _ = data
    # Seconds a run at full size: one round is enough to compare.
    table = benchmark.pedantic(pyqvd.QvdTable.from_qvd, args=(str(qvd),), rounds=1, iterations=1)
    check_pyqvd(table, columns)
