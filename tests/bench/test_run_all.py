"""benchmarks/run_all.py still works: one smoke run of every compare_* benchmark at
ASSOC_BENCH_SCALE=0.01 writes one JSON file with every benchmark's times, ratios and floors,
and --compare flags a moved ratio and nothing else. No time here is a gate."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

for peer in ("polars", "duckdb", "pyarrow", "pyqvd"):
    pytest.importorskip(peer)  # the peers come with `pip install ".[bench]"`

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
RUN_ALL = BENCH_DIR / "run_all.py"
sys.path.insert(0, str(BENCH_DIR))
import run_all  # noqa: E402 - the benchmarks folder is not a package


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSOC_BENCH_SCALE": "0.01"}
    package = str(Path(__import__("assoc").__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package, env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, str(RUN_ALL), *args], env=env, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One run of every benchmark (2 rounds each, four at once, a small bandwidth buffer)."""
    out = tmp_path_factory.mktemp("run_all") / "run.json"
    done = run("--repeat", "2", "--jobs", "4", "--bandwidth-mib", "32", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out, json.loads(out.read_text())


def test_every_benchmark_has_times_ratios_and_floors(smoke: tuple[Path, dict[str, Any]]) -> None:
    _, result = smoke
    assert result["scale"] == 0.01  # from ASSOC_BENCH_SCALE
    assert result["machine"]["logical_cores"] >= 1
    assert result["machine"]["versions"]["numpy"]
    assert len(result["load_before"]) == len(result["load_after"]) == 3
    bandwidth = result["bandwidth"]["bytes_per_s"]
    assert bandwidth > 1e8  # at least 0.1 GB/s: any machine moves more
    names = {p.stem.removeprefix("compare_") for p in BENCH_DIR.glob("compare_*.py")}
    assert set(result["benchmarks"]) == names
    for name, bench in result["benchmarks"].items():
        assert "error" not in bench, f"{name}: {bench.get('error')}"
        if bench.get("skipped"):  # e.g. no haproxy or SeaweedFS here
            continue
        measures = bench["measures"]
        assert measures, name
        assert any(m["floor_s"] for m in measures), f"{name}: no measure has a floor"
        for m in measures:
            assert m["name"].startswith(name + "."), m["name"]
            assert len(m["times"]) >= 2, m["name"]
            assert all(t > 0 for t in m["times"]), m["name"]
            assert m["best_s"] == min(m["times"])
            if m["peers"]:
                peer_best = min(m["peers"][m["peer"]])
                assert m["ratio"] == pytest.approx(m["best_s"] / peer_best)
                assert m["ratio_noise"] >= 0
            if m["floor_bytes"]:
                assert m["floor_s"] == pytest.approx(m["floor_bytes"] / bandwidth)
                assert m["time_per_floor"] == pytest.approx(m["best_s"] / m["floor_s"])


def test_floor_bytes_come_from_the_engine_sizes() -> None:
    """The packed bytes per column add up to the table's byte_size in the metadata (up to
    word padding), so a floor rests on what the engine holds."""
    import numpy as np

    import assoc
    import harness

    rng = np.random.default_rng(0)
    rows = 100_003
    app = assoc.App.from_tables(
        {
            "T": {
                "A": rng.integers(0, 1000, rows),
                "B": rng.integers(0, 3, rows),
                "C": np.arange(rows),
            }
        }
    )
    table = next(t for t in app.metadata()["tables"] if t["name"] == "T")
    packed = harness.column_bytes(app, "T", ["A", "B", "C"])
    assert packed == (rows * 10 + 7) // 8 + (rows * 2 + 7) // 8 + (rows * 17 + 7) // 8
    assert packed <= table["byte_size"] <= packed + 3 * 8
    fields = {f["name"]: f["byte_size"] for f in app.metadata()["fields"]}
    assert harness.symbol_bytes(app, ["A", "C"]) == fields["A"] + fields["C"]
    with pytest.raises(AssertionError, match="no such fields"):
        harness.symbol_bytes(app, ["Nope"])


def test_compare_flags_nothing_against_itself(smoke: tuple[Path, dict[str, Any]]) -> None:
    path, _ = smoke
    done = run("--compare", str(path), str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("flagged: none")


def test_compare_flags_a_moved_ratio(smoke: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    path, result = smoke
    doctored = copy.deepcopy(result)
    moved = doctored["benchmarks"]["selection"]["measures"][0]
    # Slower by twice the bound the run's own noise sets (two rounds give a wide one).
    bound = max(run_all.NOISE_FACTOR * moved["ratio_noise"], run_all.MIN_CHANGE)
    factor = (1 + bound) ** 2
    moved["times"] = [t * factor for t in moved["times"]]
    moved["best_s"] *= factor
    moved["ratio"] *= factor
    changed = tmp_path / "doctored.json"
    changed.write_text(json.dumps(doctored))
    done = run("--compare", str(path), str(changed))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(f"flagged: {moved['name']}")
    line = next(x for x in done.stdout.splitlines() if x.startswith(f"| {moved['name']} |"))
    assert "worse (ratio)" in line
    assert f"{factor - 1:+.0%}" in line
    # ... and the way back reads as better.
    _, flagged = run_all.compare(doctored, result)
    assert flagged == [moved["name"]]


def test_compare_needs_an_old_file() -> None:
    done = run(str(BENCH_DIR / "nothing.json"))
    assert done.returncode == 2
    assert "needs --compare" in done.stderr
