"""Shared fixtures: the real Qlik QVD files beside the project (or where
ASSOC_QLIK_QVD_DIR points)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
