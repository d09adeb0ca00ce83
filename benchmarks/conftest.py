"""Benchmark settings: sizes scale with ASSOC_BENCH_SCALE (1.0 = the sizes the targets name)."""

from __future__ import annotations

import os

import pytest

SCALE = float(os.environ.get("ASSOC_BENCH_SCALE", "1.0"))


def scaled(n: int) -> int:
    """`n` rows scaled by ASSOC_BENCH_SCALE, at least 1,000."""
    return max(1000, int(n * SCALE))


@pytest.fixture(scope="session")
def scale() -> float:
    """The ASSOC_BENCH_SCALE factor."""
    return SCALE
