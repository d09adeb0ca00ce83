"""Inputs the fuzzers found (fuzz/regressions/): each is refused with assoc.Error, or loads."""

from __future__ import annotations

from pathlib import Path

import pytest

import assoc

REGRESSIONS = Path(__file__).resolve().parents[1] / "fuzz" / "regressions"
READERS = {
    "qvd": assoc.App.from_qvd,
    "csv": assoc.App.from_csv,
    "package": assoc.App.from_package,
}
CASES = sorted(
    (kind, path)
    for kind in READERS
    if (REGRESSIONS / kind).is_dir()
    for path in (REGRESSIONS / kind).iterdir()
)


@pytest.mark.parametrize(("kind", "path"), CASES, ids=[f"{k}/{p.name}" for k, p in CASES])
def test_fuzz_finding_is_a_clean_error_or_loads(kind: str, path: Path) -> None:
    message = ""
    try:
        app = READERS[kind](path.read_bytes())
    except assoc.Error as exc:
        message = str(exc)
        assert message  # a message a user can read
    if not message:
        assert isinstance(app.metadata(), dict)
