"""Benchmark settings: sizes scale with ASSOC_BENCH_SCALE (1.0 = the sizes the targets name)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import assoc

SCALE = float(os.environ.get("ASSOC_BENCH_SCALE", "1.0"))


def scaled(n: int) -> int:
    """`n` rows scaled by ASSOC_BENCH_SCALE, at least 1,000."""
    return max(1000, int(n * SCALE))


@pytest.fixture(scope="session")
def scale() -> float:
    """The ASSOC_BENCH_SCALE factor."""
    return SCALE


@pytest.fixture
def uncached() -> Iterator[None]:
    """Turns the result cache off, so that every timed call computes."""
    limit = assoc.cache_info()["limit"]
    assoc.set_cache_limit(0)
    yield
    assoc.set_cache_limit(limit)
