"""Shared fixtures: the real Qlik QVD files beside the project (or where
ASSOC_QLIK_QVD_DIR points), the pinned npm packages the QIX and browser tests load, and the
engine on one thread and on two."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import assoc

QLIK_QVD_DIR = Path(
    os.environ.get("ASSOC_QLIK_QVD_DIR")
    or Path(__file__).resolve().parents[2] / "shared" / "testdata" / "qlik-qvd"
)


@pytest.fixture(scope="session")
def qlik_qvd_dir() -> Path:
    """The folder of QVD files written by Qlik; tests skip when it is absent."""
    if not QLIK_QVD_DIR.is_dir():
        pytest.skip(f"no Qlik QVD files at {QLIK_QVD_DIR} (set ASSOC_QLIK_QVD_DIR)")
    return QLIK_QVD_DIR


TESTS_DIR = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def shared_weed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One SeaweedFS (seaweed.SeaweedFS; ~7 s to start) for the tests that keep their data
    under a store prefix of their own (`url()`) and read nothing else of the bucket."""
    from seaweed import start_seaweedfs

    server = start_seaweedfs(tmp_path_factory.mktemp("seaweedfs"))
    yield server
    server.stop()


@pytest.fixture(params=[1, 2])
def engine_threads(request: pytest.FixtureRequest) -> Iterator[int]:
    """Runs a test with the engine on 1 and 2 threads (each thread's accumulators merged)."""
    old = assoc.threads()
    assoc.set_threads(request.param)
    yield request.param
    assoc.set_threads(old)


@pytest.fixture(scope="session")
def node_packages() -> Path:
    """The pinned npm packages (tests/package.json, tests/package-lock.json), installed with
    `npm ci` on first use or when one is missing: the README's test command needs no step of
    its own. Their folder (tests/) is node's working dir."""
    wanted = json.loads((TESTS_DIR / "package.json").read_text())["dependencies"]
    if all((TESTS_DIR / "node_modules" / name).is_dir() for name in wanted):
        return TESTS_DIR
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("node is installed but npm is not: cannot install the pinned npm packages")
    run = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=TESTS_DIR,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"npm ci failed: {run.stderr[-2000:]}"
    return TESTS_DIR
