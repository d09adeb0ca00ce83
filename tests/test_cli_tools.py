"""`assoc inspect`, `pack`, `query`, `import` and `export`: what a user reads and gets."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import assoc
from appfiles import ORDERS, ServerProcess, needs_qvd_reader, qvd_bytes
from assoc.cli import main

ORDERS_CSV = "OrderId,Customer,Amount\n1,a,10\n2,b,20\n3,a,5.5\n4,c,7\n"
CUSTOMERS_CSV = "Customer;Name\na;Ann\nb;Bob\nc;Cid\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of one command."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder of two linked CSV tables, media and a script."""
    root = tmp_path / "shop"
    (root / "media" / "img").mkdir(parents=True)
    (root / "orders.csv").write_text(ORDERS_CSV)
    (root / "customers.csv").write_text(CUSTOMERS_CSV)
    (root / "media" / "img" / "logo.png").write_bytes(b"\x89PNG-logo")
    (root / "script.qvs").write_text("LOAD * FROM [lib://data/orders.csv];\n")
    (root / "notes.txt").write_text("not a table")
    return root


@pytest.fixture
def package(folder: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The folder packed."""
    out = folder.parent / "shop.zip"
    assert run(capsys, "pack", str(folder), "-o", str(out)) == (0, "", "")
    return out


def test_pack_writes_a_package_that_loads_with_tables_media_and_script(package: Path) -> None:
    app = assoc.App.from_package(package)
    assert sorted(app.tables) == ["customers", "orders"]
    assert app.table("orders").column("Amount") == [10, 20, 5.5, 7]
    with zipfile.ZipFile(package) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("app.json"))
        assert archive.read("script.qvs").startswith(b"LOAD")
    assert {"media/img/logo.png", "tables/orders.csv", "tables/customers.csv"} <= names
    assert "notes.txt" not in " ".join(names)
    assert manifest["attributes"]["name"] == "shop"


def test_pack_refuses_folders_without_tables_or_with_broken_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out.zip"
    status, _, err = run(capsys, "pack", str(empty), "-o", str(out))
    assert status == 1
    assert err.startswith("assoc pack: ")
    assert "no *.qvd or *.csv" in err
    (empty / "broken.qvd").write_bytes(b"<?xml version='1.0'?><QvdTableHeader>")
    status, _, err = run(capsys, "pack", str(empty), "-o", str(out))
    assert status == 1
    assert err.count("\n") == 1
    assert err.startswith("assoc pack: ")
    assert not out.exists()
    assert list(tmp_path.glob(".pack-*")) == []


def test_inspect_shows_tables_fields_and_keys(
    package: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "inspect", str(package))
    assert (status, err) == (0, "")
    for text in ("tables", "orders", "customers", "key fields", "Customer", "$key", "Amount"):
        assert text in out
    assert "$Table" not in out
    _, out, _ = run(capsys, "inspect", str(package), "--json", "--system")
    summary = json.loads(out)
    assert {t["name"]: t["rows"] for t in summary["tables"]} == {"customers": 3, "orders": 4}
    assert summary["keys"] == [
        {"field": "Customer", "tables": ["customers", "orders"], "cardinal": 3}
    ]
    assert "$Table" in [f["name"] for f in summary["fields"]]
    assert summary["synthetic_keys"] == []


def test_inspect_names_synthetic_keys_and_their_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "syn"
    root.mkdir()
    (root / "a.csv").write_text("K1,K2,X\n1,x,10\n2,y,20\n")
    (root / "b.csv").write_text("K1,K2,Y\n1,x,5\n3,z,6\n")
    assert run(capsys, "pack", str(root), "-o", str(tmp_path / "syn.zip"))[0] == 0
    status, out, _ = run(capsys, "inspect", str(tmp_path / "syn.zip"), "--json")
    assert status == 0
    summary = json.loads(out)
    assert summary["synthetic_keys"] == [
        {"key": "$Syn 1", "table": "$Syn 1 Table", "parts": ["K1", "K2"], "tables": ["a", "b"]}
    ]
    assert [t["name"] for t in summary["tables"] if t["synthetic"]] == ["$Syn 1 Table"]
    _, out, _ = run(capsys, "inspect", str(tmp_path / "syn.zip"))
    assert "synthetic keys" in out
    assert "synthetic key table" in out


def test_inspect_reports_missing_and_unreadable_files_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "inspect", str(tmp_path / "nope.csv"))
    assert (status, out) == (1, "")
    missing = tmp_path / "nope.csv"
    assert err == (
        f"assoc inspect: '{missing}' is not a file (an app on a service needs --server URL)\n"
    )
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x00\x01\x02garbage")
    status, _, err = run(capsys, "inspect", str(bad))
    assert status == 1
    assert err.startswith("assoc inspect: ")
    assert "neither an app package" in err


def test_query_prints_the_hypercube_under_selections(
    package: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["query", str(package), "--dimension", "Name", "--measure", "Sum(Amount)"]
    status, out, _ = run(capsys, *argv, "--measure", "Count(OrderId)", "--csv")
    assert status == 0
    assert list(csv.reader(io.StringIO(out))) == [
        ["Name", "Sum(Amount)", "Count(OrderId)"],
        ["Ann", "15.5", "2"],
        ["Bob", "20", "1"],
        ["Cid", "7", "1"],
    ]
    status, out, _ = run(capsys, *argv, "--select", "Customer=a,c", "--csv")
    assert out.splitlines() == ["Name,Sum(Amount)", "Ann,15.5", "Cid,7"]
    # Numbers are matched by value: 5.50 is the 5.5 of the data.
    status, out, _ = run(capsys, *argv, "--select", "Amount=5.50,20", "--csv")
    assert out.splitlines() == ["Name,Sum(Amount)", "Ann,5.5", "Bob,20"]
    status, out, _ = run(capsys, *argv, "--select", "Name=Bob")
    assert status == 0
    assert "Totals" in out
    assert "Bob" in out
    assert "Ann" not in out
    assert "1 rows" in out


def test_query_as_a_user_exports_only_their_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assoc.package import Manifest, write_package
    from test_section_access import SCRIPT

    app = assoc.App.from_script(SCRIPT)
    package = tmp_path / "secured.zip"
    with package.open("wb") as out:
        write_package(app.stored_tables, app.write_qvd, Manifest(tables=[]), None, out)
    argv = ["query", str(package), "--dimension", "Product", "--measure", "Sum({1} AMOUNT)"]
    status, out, _ = run(capsys, *argv, "--user", "bob", "--csv")
    assert (status, out.splitlines()) == (0, ["Product,Sum({1} AMOUNT)", "C,5"])
    status, out, _ = run(capsys, *argv, "--user", "ann", "--select", "REGION=WEST", "--csv")
    assert (status, out.splitlines()) == (0, ["Product,Sum({1} AMOUNT)", "A,10", "B,20"])
    status, _, err = run(capsys, *argv, "--user", "zed")
    assert (status, err) == (1, "assoc query: Access denied\n")


def test_query_errors_are_one_line_with_a_non_zero_status(
    package: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(
        capsys, "query", str(package), "--select", "Name=Zed", "--dimension", "Name"
    )
    assert (status, err) == (1, "assoc query: field 'Name' has no value 'Zed'\n")
    status, _, err = run(capsys, "query", str(package), "--dimension", "Nope")
    assert status == 1
    assert err.startswith("assoc query: ")
    assert "Nope" in err
    status, _, err = run(capsys, "query", str(package), "--measure", "Sum(")
    assert status == 1
    assert err.startswith("assoc query: ")
    status, _, err = run(capsys, "query", str(package))
    assert (status, err) == (1, "assoc query: give at least one --dimension or --measure\n")
    with pytest.raises(SystemExit) as exited:
        main(["query", str(package), "--select", "Name", "--dimension", "Name"])
    assert exited.value.code == 2
    assert "is not Field=value" in capsys.readouterr().err


# ---- against a real service ---------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One `assoc serve` for the service tests."""
    process = ServerProcess(tmp_path_factory.mktemp("cli") / "data").start()
    try:
        yield process
    finally:
        process.stop()


@pytest.mark.server
def test_import_inspect_and_export_through_a_service(
    server: ServerProcess, package: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "import", str(package), "--server", server.base_url)
    assert (status, err) == (0, "")  # no progress bar: stderr is not a terminal
    app_id = out.strip()
    with server.client() as client:
        assert client.get(f"/v1/apps/{app_id}").json()["attributes"]["name"] == "shop"

    _, remote, _ = run(capsys, "inspect", app_id, "--server", server.base_url, "--json")
    _, local, _ = run(capsys, "inspect", str(package), "--json")
    assert json.loads(remote) == {**json.loads(local), "name": "shop"}

    target = tmp_path / "back.zip"
    status, out, err = run(capsys, "export", app_id, "-o", str(target), "--server", server.base_url)
    assert (status, out, err) == (0, "", "")
    back = assoc.App.from_package(target)
    assert back.table("orders").column("Amount") == [10, 20, 5.5, 7]
    assert sorted(back.tables) == ["customers", "orders"]


@pytest.mark.server
def test_service_errors_are_one_line_with_a_non_zero_status(
    server: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x00\x01binary")
    status, out, err = run(capsys, "import", str(bad), "--server", server.base_url)
    assert (status, out) == (1, "")
    assert err.startswith("assoc import: ")
    assert "(HTTP 415)" in err
    assert err.count("\n") == 1
    target = tmp_path / "none.zip"
    status, _, err = run(
        capsys, "export", "no-such-app", "-o", str(target), "--server", server.base_url
    )
    assert status == 1
    assert "(HTTP 404)" in err
    assert "no-such-app" in err
    assert not target.exists()
    assert list(tmp_path.glob(".export-*")) == []
    status, _, err = run(
        capsys, "export", "x", "-o", str(tmp_path / "no" / "a.zip"), "--server", server.base_url
    )
    assert (status, err) == (1, f"assoc export: folder '{tmp_path / 'no'}' does not exist\n")
    good = tmp_path / "t.csv"
    good.write_text("A\n1\n")
    status, _, err = run(
        capsys, "import", str(good), "--mode", "autoreplace", "--server", server.base_url
    )
    assert status == 1
    assert "AUTOREPLACE needs the setting EFEMode=1 (HTTP 400)" in err
    status, out, _ = run(capsys, "import", str(good), "--json", "--server", server.base_url)
    assert status == 0
    assert json.loads(out)["attributes"]["name"] == "t"
    status, _, err = run(capsys, "inspect", "no-such-app", "--server", server.base_url)
    assert status == 1
    assert "(HTTP 404)" in err
    status, _, err = run(capsys, "inspect", "x", "--server", "http://127.0.0.1:9")
    assert status == 1
    assert err.startswith("assoc inspect: cannot reach http://127.0.0.1:9")
    status, _, err = run(capsys, "inspect", "x", "--server", "ftp://host")
    assert status == 1
    assert err == "assoc inspect: --server 'ftp://host' is not an http:// or https:// URL\n"


@pytest.mark.server
@needs_qvd_reader
def test_progress_bars_show_on_a_terminal_only(
    server: ServerProcess,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    qvd = tmp_path / "orders.qvd"
    qvd.write_bytes(qvd_bytes("Orders", ORDERS))
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich draws as on a terminal
    monkeypatch.setenv("TERM", "xterm-256color")  # ... that can draw (TERM=dumb cannot)
    status, out, err = run(capsys, "import", str(qvd), "--server", server.base_url)
    assert status == 0
    assert "uploading orders.qvd" in err
    assert out.strip()
    assert "uploading" not in out


@pytest.mark.server
def test_query_through_a_service_matches_the_embedded_engine(
    server: ServerProcess, package: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(capsys, "import", str(package), "--server", server.base_url)
    app_id = out.strip()
    for extra in ([], ["--select", "Customer=a,c"], ["--select", "Amount=5.50,20"]):
        argv = ["--dimension", "Name", "--measure", "Sum(Amount)", "--measure", "Count(OrderId)"]
        argv += [*extra, "--csv"]
        _, local, _ = run(capsys, "query", str(package), *argv)
        status, remote, err = run(capsys, "query", app_id, "--server", server.base_url, *argv)
        assert (status, err) == (0, "")
        assert remote == local
    status, out, _ = run(
        capsys,
        "query",
        app_id,
        "--server",
        server.base_url,
        "--dimension",
        "Name",
        "--measure",
        "Sum(Amount)",
        "--select",
        "Name=Bob",
    )
    assert status == 0
    assert "Totals" in out
    assert "Bob" in out
    assert "Ann" not in out
    status, _, err = run(
        capsys, "query", app_id, "--server", server.base_url, "--dimension", "Nope"
    )
    assert status == 1
    assert err.startswith("assoc query: ")
    status, _, err = run(
        capsys,
        "query",
        app_id,
        "--server",
        server.base_url,
        "--select",
        "Name=Bob,Zed",
        "--dimension",
        "Name",
    )
    assert (status, err) == (1, "assoc query: field 'Name' lacks some of the values 'Bob', 'Zed'\n")
    status, _, err = run(capsys, "query", "no-app", "--server", server.base_url, "--dimension", "X")
    assert status == 1
    assert "QIX error 1003" in err
