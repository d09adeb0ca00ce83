"""Shared fixtures: the real Qlik QVD files beside the project."""

from __future__ import annotations

from pathlib import Path

import pytest

QLIK_QVD_DIR = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "qlik-qvd"


@pytest.fixture(scope="session")
def qlik_qvd_dir() -> Path:
    """The folder of QVD files written by Qlik; tests skip when it is absent."""
    if not QLIK_QVD_DIR.is_dir():
        pytest.skip("shared/testdata/qlik-qvd is not beside this checkout")
    return QLIK_QVD_DIR
