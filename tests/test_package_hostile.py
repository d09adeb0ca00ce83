"""The package reader under hostile input, embedded (no service): clean assoc.Error, bounded
memory."""

from __future__ import annotations

import io
import json
import random
import tracemalloc
import zipfile
from pathlib import Path

import pytest

import assoc
from assoc.package import AppPackage, Manifest, PackageLimits, PackageTooLarge

HEAD = {"format": "assoc-app", "formatVersion": 1, "tables": [{"name": "T", "file": "t.csv"}]}


def _package(manifest: str | bytes, entries: dict[str, bytes] | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("app.json", manifest)
        for name, data in (entries or {"t.csv": b"a\n1\n"}).items():
            archive.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize(
    "text",
    [
        '{"format": "assoc-app", "formatVersion": ' + "1" * 5000 + "}",
        "[" * 100_000 + "]" * 100_000,
        json.dumps({**HEAD, "attributes": {"name": "x"}})[:-1] + ', "objects": ["\\ud800"]}',
        json.dumps({**HEAD, "attributes": {"description": "\ud800"}}, ensure_ascii=True),
    ],
    ids=["digits", "depth", "surrogate-in-objects", "surrogate-attribute"],
)
def test_manifest_json_limits_are_clean_errors(text: str) -> None:
    with pytest.raises(assoc.Error, match=r"app\.json"):
        Manifest.parse(text.encode())
    with pytest.raises(assoc.Error):
        assoc.App.from_package(_package(text))


def test_tables_over_the_limit_are_refused_before_reading() -> None:
    data = _package(json.dumps(HEAD), {"t.csv": b"a\n" + b"1\n" * 100_000})
    with pytest.raises(PackageTooLarge, match="one import may load"):
        AppPackage.open(data, PackageLimits(max_table_bytes=100_000))
    with AppPackage.open(data, PackageLimits(max_table_bytes=300_000)) as package:
        assert package.manifest.tables[0].name == "T"


def test_entries_are_copied_without_being_read_whole(tmp_path: Path) -> None:
    big = b"a\n" + random.Random(2).randbytes(8_000_000).hex().encode() + b"\n"  # 16 MB
    data = _package(json.dumps(HEAD), {"t.csv": big})
    with AppPackage.open(data) as package:
        tracemalloc.start()
        package.copy_entry("t.csv", tmp_path / "t.csv")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert (tmp_path / "t.csv").read_bytes() == big
    assert peak < 8 << 20  # a megabyte chunk at a time, not the 16 MB entry
