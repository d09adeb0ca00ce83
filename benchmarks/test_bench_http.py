"""The HTTP comparisons as a test: each must produce sound figures; no time is a gate."""

from __future__ import annotations

import math

from compare_http import compare_import, compare_metadata, report
from conftest import SCALE, scaled


def test_metadata_against_bare_starlette() -> None:
    duration = max(1.0, 5.0 * SCALE)
    results = compare_metadata(duration, runs=1)
    assert [r.connections for r in results] == [1, 64]
    for r in results:
        assert r.ours.errors == 0
        assert r.bare.errors == 0
        assert r.ours.requests_per_s > 0
        assert r.bare.requests_per_s > 0
        assert math.isfinite(r.throughput_ratio)
        assert math.isfinite(r.p99_ratio)
    print(report(results, None))


def test_http_import_against_from_qvd() -> None:
    rows = scaled(1_000_000)
    result = compare_import(rows, runs=1)
    assert result.rows == rows
    assert result.file_bytes > rows  # at least a byte per row
    assert result.from_qvd_s > 0
    assert result.http_import_s > 0
    assert result.bare_upload_s > 0
    assert math.isfinite(result.upload_ratio)
    print(report([], result))
