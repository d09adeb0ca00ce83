"""App packages: reading, every check on untrusted archives, writing and reading back."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path

import pytest

import assoc
from appfiles import (
    CUSTOMERS,
    ORDERS,
    needs_qvd_reader,
    needs_qvd_writer,
    package_bytes,
    qvd_bytes,
    zip_with,
)
from assoc.package import (
    AppPackage,
    Manifest,
    PackageLimits,
    check_entry_name,
    write_package,
)
from assoc.sources import SourceKind, UnsupportedFile, detect_kind

MANIFEST = {
    "format": "assoc-app",
    "formatVersion": 1,
    "tables": [{"name": "Orders", "file": "tables/Orders.qvd"}],
}


def test_detect_kind_by_content() -> None:
    assert detect_kind(b"PK\x03\x04rest") is SourceKind.PACKAGE
    assert detect_kind(b"PK\x05\x06" + b"\0" * 18) is SourceKind.PACKAGE
    header = b"<?xml version='1.0' encoding='utf-8'?>\r\n <QvdTableHeader>\r\n"
    assert detect_kind(header) is SourceKind.QVD
    assert detect_kind(b"\xef\xbb\xbf" + header) is SourceKind.QVD
    assert detect_kind(b"a;b\n1;2\n") is SourceKind.CSV
    assert detect_kind("Name\nZoë\n".encode()) is SourceKind.CSV
    with pytest.raises(UnsupportedFile):
        detect_kind(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(UnsupportedFile):
        detect_kind(b"\xff\xfe\xfa" * 100)
    with pytest.raises(assoc.Error, match="empty"):
        detect_kind(b"")


@pytest.mark.parametrize(
    "name",
    ["../x", "a/../../x", "/etc/passwd", "a//b", "./a", "a\\..\\b", "C:/x", "a/\x00b", "", ".."],
)
def test_entry_names_that_could_escape_are_refused(name: str) -> None:
    with pytest.raises(assoc.Error):
        check_entry_name(name)


@pytest.mark.parametrize("name", ["a", "media/a b/c.png", "tables/Orders.qvd", "dir/"])
def test_plain_entry_names_pass(name: str) -> None:
    check_entry_name(name)


def _open(data: bytes, limits: PackageLimits | None = None) -> AppPackage:
    return AppPackage.open(data, limits)


def test_not_a_zip_is_an_error() -> None:
    with pytest.raises(assoc.Error, match="ZIP"):
        _open(b"PK\x03\x04 this is not really a zip archive")


def test_truncated_zip_is_an_error() -> None:
    data = package_bytes({"Orders": ORDERS})
    with pytest.raises(assoc.Error):
        _open(data[: len(data) // 2])


@pytest.mark.parametrize("evil", ["../evil.txt", "/abs/evil.txt", "media/../../evil.txt"])
def test_escaping_entry_is_refused_before_reading(evil: str) -> None:
    data = zip_with({"app.json": json.dumps(MANIFEST).encode(), evil: b"x"})
    with pytest.raises(assoc.Error, match="entry name"):
        _open(data)


def test_symlink_entry_is_refused() -> None:
    link = zipfile.ZipInfo("media/link")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    data = zip_with({"app.json": json.dumps(MANIFEST).encode(), link: b"/etc/passwd"})
    with pytest.raises(assoc.Error, match="symbolic link"):
        _open(data)


def test_duplicate_entry_is_refused() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("app.json", json.dumps(MANIFEST))
        with pytest.warns(UserWarning, match="Duplicate"):
            archive.writestr("app.json", "{}")
    with pytest.raises(assoc.Error, match="twice"):
        _open(out.getvalue())


def test_too_many_entries_is_refused() -> None:
    entries: dict[str | zipfile.ZipInfo, bytes] = {f"media/{i}.txt": b"x" for i in range(20)}
    data = zip_with({"app.json": json.dumps(MANIFEST).encode(), **entries})
    with pytest.raises(assoc.Error, match="entries"):
        _open(data, PackageLimits(max_entries=10))


def test_decompression_bomb_is_refused_before_inflating() -> None:
    # 64 MiB of zeros deflate to about 64 KiB: a 1000:1 ratio.
    data = zip_with({"app.json": json.dumps(MANIFEST).encode(), "media/zeros": bytes(64 << 20)})
    assert len(data) < 1 << 20
    with pytest.raises(assoc.Error, match="bomb"):
        _open(data)


def test_total_unpacked_size_is_limited() -> None:
    data = zip_with({"app.json": json.dumps(MANIFEST).encode(), "media/a": b"y" * 5000})
    with pytest.raises(assoc.Error, match="unpacks to more"):
        _open(data, PackageLimits(max_unpacked_bytes=4096))


def test_encrypted_entry_is_refused() -> None:
    data = bytearray(zip_with({"app.json": json.dumps(MANIFEST).encode()}))
    # Set the "encrypted" flag in the central directory entry.
    cd = data.rfind(b"PK\x01\x02")
    data[cd + 8] |= 0x01
    with pytest.raises(assoc.Error, match="encrypted"):
        _open(bytes(data))


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ({"formatVersion": 1, "tables": MANIFEST["tables"]}, "format"),
        ({**MANIFEST, "format": "qvf"}, "format"),
        ({**MANIFEST, "formatVersion": 2}, "newer"),
        ({**MANIFEST, "formatVersion": "1"}, "formatVersion"),
        ({**MANIFEST, "tables": {}}, '"tables" must be an array'),
        ({"format": "assoc-app", "formatVersion": 1}, '"tables" must be an array'),
        ({**MANIFEST, "tables": [{"name": "T"}]}, "file"),
        ({**MANIFEST, "tables": [{"name": "T", "file": "../t.qvd"}]}, "entry name"),
        ({**MANIFEST, "tables": [{"name": "Orders", "file": "tables/missing.qvd"}]}, "no file"),
        ({**MANIFEST, "attributes": {"published": "yes"}}, "published"),
        ({**MANIFEST, "attributes": {"id": "../../x"}}, "app id"),
        ({**MANIFEST, "attributes": {"thumbnail": "../secret"}}, "entry name"),
        ({**MANIFEST, "objects": [{"type": "sheet"}]}, "id"),
        ({**MANIFEST, "objects": [{"id": "a"}, {"id": "a"}]}, "twice"),
        ({**MANIFEST, "annotations": []}, "annotations must be an object"),
        ({**MANIFEST, "properties": []}, '"properties" must be an object'),
        ({**MANIFEST, "properties": {"qTitle": 5}}, r"properties\.qTitle must be a name"),
        ({**MANIFEST, "annotations": {"tags": {}}}, "unknown member 'tags'"),
        ({**MANIFEST, "annotations": {"fieldTags": []}}, r"annotations\.fieldTags must be"),
        ({**MANIFEST, "annotations": {"fieldTags": {"A": "kpi"}}}, "array of strings"),
        ({**MANIFEST, "annotations": {"fieldTags": {"A": [1]}}}, "array of strings"),
        ({**MANIFEST, "annotations": {"fieldComments": {"A": 1}}}, "must be a string"),
        ({**MANIFEST, "annotations": {"tableComments": {"": "x"}}}, "must not be empty"),
    ],
)
def test_bad_manifest_is_refused(manifest: dict[str, object], message: str) -> None:
    data = zip_with({"app.json": json.dumps(manifest).encode(), "tables/Orders.qvd": b"<?xml"})
    with pytest.raises(assoc.Error, match=message):
        _open(data)


def test_missing_manifest_and_bad_json() -> None:
    with pytest.raises(assoc.Error, match=r"no app\.json"):
        _open(zip_with({"tables/Orders.qvd": b"x"}))
    with pytest.raises(assoc.Error, match="JSON"):
        _open(zip_with({"app.json": b"{not json"}))


def test_manifest_defaults() -> None:
    manifest = Manifest.parse(json.dumps(MANIFEST).encode())
    assert manifest.objects == []
    assert manifest.attributes["name"] == ""
    assert manifest.attributes["published"] is False
    assert manifest.attributes["custom"] == {}
    assert Manifest.parse(manifest.to_json()) == manifest
    assert "annotations" not in json.loads(manifest.to_json())


@needs_qvd_reader
def test_a_packages_tags_and_comments_reach_the_apps_metadata() -> None:
    annotations = {
        "fieldTags": {"Amount": ["kpi", "$measure", "kpi"], "Gone": ["x"]},
        "fieldComments": {"Customer": "who bought"},
        "tableComments": {"Orders": "the facts"},
    }
    manifest = {
        "format": "assoc-app",
        "formatVersion": 1,
        "tables": [{"name": "Orders", "file": "tables/Orders.qvd"}],
        "annotations": annotations,
    }
    data = package_bytes({"Orders": ORDERS}, manifest=manifest)
    with _open(data) as package:
        assert package.manifest.annotations.field_tags["Amount"] == ["kpi", "$measure"]
        assert Manifest.parse(package.manifest.to_json()) == package.manifest
    meta = assoc.App.from_package(data).metadata()
    fields = {f["name"]: f for f in meta["fields"]}
    assert fields["Amount"]["tags"][-2:] == ["kpi", "$measure"]
    assert fields["Customer"]["comment"] == "who bought"
    assert meta["tables"][0]["comment"] == "the facts"
    assert "Gone" not in fields


@needs_qvd_reader
def test_from_package_builds_linked_tables() -> None:
    app = assoc.App.from_package(package_bytes({"Orders": ORDERS, "Customers": CUSTOMERS}))
    assert sorted(app.tables) == ["Customers", "Orders"]
    assert app.table("Orders").column("Customer") == ORDERS["Customer"]
    customer = next(f for f in app.metadata()["fields"] if f["name"] == "Customer")
    assert "$key" in customer["tags"]


@needs_qvd_reader
def test_from_package_reads_a_path(tmp_path: Path) -> None:
    path = tmp_path / "app.zip"
    path.write_bytes(package_bytes({"Orders": ORDERS}))
    assert assoc.App.from_package(path).table("Orders").num_rows == 4


@needs_qvd_reader
def test_table_takes_the_name_app_json_gives_it() -> None:
    manifest = {**MANIFEST, "tables": [{"name": "Sales", "file": "tables/Orders.qvd"}]}
    data = zip_with(
        {
            "app.json": json.dumps(manifest).encode(),
            "tables/Orders.qvd": qvd_bytes("Orders", ORDERS),
        }
    )
    assert assoc.App.from_package(data).tables == ["Sales"]


@needs_qvd_reader
def test_corrupt_table_file_is_an_error() -> None:
    data = zip_with(
        {"app.json": json.dumps(MANIFEST).encode(), "tables/Orders.qvd": b"\x00\x01\x02garbage"}
    )
    with pytest.raises(assoc.Error):
        assoc.App.from_package(data)


@needs_qvd_writer
def test_written_package_reads_back_the_same(tmp_path: Path) -> None:
    app = assoc.App.from_tables({"Orders": ORDERS, "Customers": CUSTOMERS})
    media = tmp_path / "media"
    (media / "img").mkdir(parents=True)
    (media / "img" / "logo.png").write_bytes(b"\x89PNG...")
    (media / "empty").mkdir()
    manifest = Manifest(
        tables=[],
        attributes={"name": "Sales", "thumbnail": "img/logo.png"},
        objects=[{"id": "s1", "type": "sheet", "approved": True, "properties": {"t": 1}}],
    )
    out = io.BytesIO()
    write_package(app.tables, app.write_qvd, manifest, media, out)
    with AppPackage.open(out.getvalue()) as package:
        assert package.manifest.attributes["name"] == "Sales"
        assert package.manifest.objects == manifest.objects
        assert sorted(i.filename for i in package.media_entries()) == [
            "media/empty/",
            "media/img/logo.png",
        ]
        assert package.read("media/img/logo.png") == b"\x89PNG..."
    back = assoc.App.from_package(out.getvalue())
    for table in app.tables:
        for field in app.table(table).fields:
            assert back.table(table).column(field) == app.table(table).column(field)


# ---- packages whose tables share two or more fields (synthetic keys) ------------------

SHARED_TWO = {
    "Sales": {"Region": ["N", "S", "N"], "Year": [2024, 2024, 2025], "Amount": [1, 2, 3]},
    "Budget": {"Region": ["N", "S"], "Year": [2024, 2025], "Plan": [5, 6]},
}
SHARED_THREE = {
    "Orders": {"A": [1, 2, 3], "B": ["x", "y", "x"], "C": [0.5, 1.5, 0.5], "Qty": [4, 5, 6]},
    "Returns": {"A": [1, 3], "B": ["x", "x"], "C": [0.5, 0.5], "Reason": ["late", "broken"]},
}
# Two synthetic keys whose shared field sets overlap: {K1, K2} and {K2, K3}.
OVERLAPPING = {
    "T1": {"K1": [1, 2, 3], "K2": ["a", "b", "c"], "V1": [10, 20, 30]},
    "T2": {"K1": [1, 2], "K2": ["a", "b"], "K3": [7, 8], "V2": [1.5, 2.5]},
    "T3": {"K2": ["a", "c"], "K3": [7, 9], "V3": ["p", "q"]},
}


def _model_shape(metadata: dict[str, object]) -> tuple[object, object]:
    """What a user sees of a model's structure: tables with their counts, fields with their
    tables and key tags (byte sizes and number formats aside)."""
    key_tags = {"$key", "$keypart", "$syn", "$system", "$hidden"}
    tables = [
        (t["name"], t["no_of_rows"], t["no_of_fields"], t["no_of_key_fields"], t["is_loose"])
        for t in metadata["tables"]  # type: ignore[attr-defined]
    ]
    fields = [
        (f["name"], f["src_tables"], sorted(set(f["tags"]) & key_tags), f["cardinal"])
        for f in metadata["fields"]  # type: ignore[attr-defined]
    ]
    return tables, fields


@needs_qvd_reader
@pytest.mark.parametrize("tables", [SHARED_TWO, SHARED_THREE, OVERLAPPING])
def test_packages_with_synthetic_keys_load_like_from_tables(tables: dict) -> None:
    app = assoc.App.from_package(package_bytes(tables))
    expected = assoc.App.from_tables(tables)
    assert _model_shape(app.metadata()) == _model_shape(expected.metadata())
    assert any(name.startswith("$Syn ") for name in app.tables)
    for name in tables:
        assert app.table(name).num_rows == expected.table(name).num_rows


REAL_QVDS = [
    "qvdfile-tab1.qvd",  # ID, NAME, ONEVAL
    "qvdfile-tab2.qvd",  # ID, VAL, NAME, PHONE, SINGLE: a synthetic key on ID + NAME
    "qvd4js-small.qvd",  # Products: ProductKey
    "qvd4js-medium.qvd",  # Customers: CustomerKey
    "qvd4js-large.qvd",  # InternetSales_Fact: ProductKey, CustomerKey
    "qvd4js-empty.qvd",
    "qvdlib-Test.qvd",
    "qvdutils-test_qvd_null.qvd",
]


@needs_qvd_reader
def test_a_package_of_real_qlik_qvds_with_shared_fields_loads(qlik_qvd_dir: Path) -> None:
    files = {f"tables/{name}": (qlik_qvd_dir / name).read_bytes() for name in REAL_QVDS}
    manifest = {
        "format": "assoc-app",
        "formatVersion": 1,
        "tables": [{"name": Path(n).stem, "file": f"tables/{n}"} for n in REAL_QVDS],
    }
    app = assoc.App.from_package(zip_with({"app.json": json.dumps(manifest).encode(), **files}))
    listed = [Path(n).stem for n in REAL_QVDS]
    assert [t for t in app.tables if not t.startswith("$Syn ")] == listed
    # The same tables given as columns make the same model.
    columns = {}
    for name in REAL_QVDS:
        single = assoc.App.from_qvd(qlik_qvd_dir / name)
        table = single.table(single.tables[0])
        columns[Path(name).stem] = {f: table.column(f) for f in table.fields}
    expected = assoc.App.from_tables(columns)
    got_tables, got_fields = _model_shape(app.metadata())
    want_tables, want_fields = _model_shape(expected.metadata())
    assert got_tables == want_tables
    assert [f[:3] for f in got_fields] == [f[:3] for f in want_fields]
    syn = {f[0]: f for f in got_fields if f[0].startswith("$Syn")}
    assert syn == {f[0]: f for f in want_fields if f[0].startswith("$Syn")}
    assert syn  # tab1 and tab2 share ID and NAME
    by_name = {f[0]: f for f in got_fields}
    assert by_name["ID"][1] == ["$Syn 1 Table"]
    assert "$keypart" in by_name["NAME"][2]
    assert by_name["ProductKey"][1] == ["qvd4js-small", "qvd4js-large"]
