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


# Findings whose input must be refused, and what the message says.
REFUSED = {
    "csv/nul-in-field.csv": "CSV line 2: a NUL byte",
    "csv/header-name-control-char.csv": "control character 27",
    "csv/header-name-control-char-2.csv": "control character 20",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_fuzz_finding_is_refused_with_a_message(name: str) -> None:
    kind = name.split("/", 1)[0]
    with pytest.raises(assoc.Error, match=REFUSED[name]):
        READERS[kind]((REGRESSIONS / name).read_bytes())


def test_nul_byte_deep_in_a_big_csv_names_its_line() -> None:
    lines = [f"{i},text {i}" for i in range(200_000)]
    lines[150_000] = "150000,te\0xt"
    data = ("Id,Text\n" + "\n".join(lines) + "\n").encode()
    with pytest.raises(assoc.Error, match="CSV line 150002: a NUL byte"):
        assoc.App.from_csv(data)
