"""Short runs of the stress scripts (stress/): kill -9 during concurrent writes keeps every
acknowledged operation; a soak under a memory budget keeps RSS within budget + headroom."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from appfiles import needs_qvd_reader

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "stress"))
import crash_consistency
import soak

pytestmark = needs_qvd_reader


def test_kill_9_during_writes_keeps_every_acknowledged_operation(tmp_path: Path) -> None:
    assert crash_consistency.run(trials=2, workers=3, seed=5, keep=tmp_path) == 0


@pytest.mark.parametrize("budget_mb", [60])
def test_soak_stays_within_the_budget_and_answers_everything(
    budget_mb: int, tmp_path: Path
) -> None:
    result = soak.soak(minutes=0.15, clients=4, budget_mb=budget_mb, csv_mb=2, keep=tmp_path)
    assert result["failures"] == []
    assert result["requests"] > 20
    assert result["rss_max_mb"] <= budget_mb + 300
