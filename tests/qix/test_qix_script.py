"""Load scripts over QIX against a real `assoc serve`: session apps, folder connections,
reloads of stored apps, and the programs that use them (enigma.js, halyard.js)."""

from __future__ import annotations

import csv
import datetime
import io
import json
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qixclient import QixClient, QixError

import assoc
from appfiles import ServerProcess, package_bytes, run_node
from assoc.server.settings import Settings

pytestmark = pytest.mark.server

SCRIPT = Path(__file__).with_name("enigma_script.js")
NODE = shutil.which("node")
SHRIMP_DATES = ["20170103", "20170104", "20170105", "20170110", "20170211"]
MOVIES = [("Alien", 1979), ("Heat", 1995), ("Up", 2009), ("Her", 2013), ("Amélie", 2001)]
LOAD_MOVIES = "LOAD * FROM [lib://data/movies.csv] (txt, utf8, embedded labels, delimiter is ',');"
MOVIE_CUBE = {
    "qInfo": {"qType": "movies"},
    "qHyperCubeDef": {
        "qDimensions": [{"qDef": {"qFieldDefs": ["Movie"]}}],
        "qInitialDataFetch": [{"qHeight": 100, "qWidth": 1}],
    },
}


def _write_movies(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Movie", "Year"])
    writer.writerows(MOVIES)
    (folder / "movies.csv").write_text(out.getvalue(), encoding="utf-8")


class ScriptServer:
    """A server whose AllowedFolders is `files`; `outside` holds a file no connection may reach."""

    def __init__(self, root: Path) -> None:
        self.files = root / "files"
        self.outside = root / "outside"
        _write_movies(self.files)
        shrimps = "".join(f"{d},{i * 10}\n" for i, d in enumerate(SHRIMP_DATES))
        (self.files / "schrimp.csv").write_text("date,kilo\n" + shrimps)
        self.outside.mkdir()
        (self.outside / "secret.csv").write_text("Secret\n42\n")
        (self.files / "link.csv").symlink_to(self.outside / "secret.csv")
        (self.files / "linkdir").symlink_to(self.outside)
        self.process = ServerProcess(root / "data", f"AllowedFolders={self.files}").start()
        self.ws_base = "ws" + self.process.base_url.removeprefix("http")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScriptServer]:
    made = ScriptServer(Path(tmp_path_factory.mktemp("script")))
    try:
        yield made
    finally:
        made.process.stop()


def _movies(qix: QixClient, obj: int) -> list[str]:
    matrix = qix.result("GetLayout", [], obj)["qLayout"]["qHyperCube"]["qDataPages"][0]["qMatrix"]
    return sorted(row[0]["qText"] for row in matrix)


def _session_app(qix: QixClient, folder: Path) -> int:
    doc: int = qix.result("CreateSessionApp")["qReturn"]["qHandle"]
    connection = {"qName": "data", "qConnectionString": str(folder), "qType": "folder"}
    qix.result("CreateConnection", [connection], doc)
    return doc


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_enigma_and_halyard_programs(server: ScriptServer, node_packages: Path) -> None:
    seen = run_node(SCRIPT, server.ws_base, str(server.files))
    titles = sorted(m for m, _ in MOVIES)

    # hello-data
    assert seen["reloaded"] is True
    assert sorted(seen["movies"]) == titles
    assert seen["size"] == {"qcx": 1, "qcy": len(MOVIES)}
    assert seen["badReload"] is False
    [error] = seen["badProgress"]
    assert (error["qLineNumber"], error["qColumn"]) == (2, 14)
    assert "embedded" in error["qErrorString"]
    assert error["qLine"] == "  (txt, utf8 embedded labels);"
    [syntax] = seen["badSyntax"]
    bad_script = "LOAD * FROM [lib://data/movies.csv]\n  (txt, utf8 embedded labels);"
    assert (syntax["qLineInTab"], syntax["qColInLine"]) == (1, 13)
    assert bad_script[syntax["qTextPos"] :].startswith("embedded")
    assert seen["changedAfterBad"] == 0
    assert sorted(seen["moviesAfterBad"]) == titles
    assert seen["secondReload"] is True
    assert seen["changedAfterGood"] == 1
    assert sorted(seen["moviesAfterGood"]) == sorted(m for m, y in MOVIES if y > 2000)
    assert seen["script"].startswith("LOAD Movie FROM")
    assert seen["appLayout"]["qIsSessionApp"] is True
    assert seen["appLayout"]["qHasScript"] is True
    assert seen["appLayout"]["qLastReloadTime"]
    [connection] = seen["connections"]
    assert connection["qId"] == seen["connectionId"]
    assert (connection["qName"], connection["qType"]) == ("data", "folder")
    assert connection["qConnectionString"] == str(server.files)
    assert seen["duplicate"] == 2000

    # enigma.js list-object example: 100 generated rows of distinct random values
    assert seen["listReloaded"] is True
    assert seen["listInfo"]["qType"] == "my-list-object"
    assert seen["listBefore"]["qOption"] == 100
    assert len(seen["listValues"]) == 3
    assert all(0 <= v < 1 for v in seen["listValues"])
    assert seen["listAfter"]["qSelected"] == 1
    assert seen["listAfter"]["qAlternative"] == 99
    assert seen["listStates"] == ["S", "A", "A"]
    assert seen["listTables"] == [["TempTable", 100]]

    # halyard.js: its script, and its enigma mixin's flow (2000 tolerated, GetProgress, syntax)
    assert "FROM [lib://" in seen["halyardScript"]
    assert sorted(seen["halyardMovies"]) == titles
    missing = seen["halyardErrors"]["missing"]
    assert missing["type"] == "Loading Error"
    assert "no-such-file.csv" in missing["message"]
    syntax_error = seen["halyardErrors"]["syntax"]
    assert syntax_error["type"] == "Syntax Error"
    assert syntax_error["item"] == "Broken"  # found by the error's qTextPos

    # halyard.js with stored apps: CreateApp, then the app reopened by name and reloaded
    assert seen["storedLayout"]["qTitle"] == "Movies built by halyard"
    assert seen["storedLayout"]["qHasData"] is True
    assert sorted(seen["storedMovies"]) == titles
    assert sorted(seen["storedFilms"]) == titles
    assert seen["storedTables"] == ["Films"]
    assert seen["storedDuplicate"] == 1000
    assert len(seen["storedDocs"]) == 1

    # hello-data-halyard as written (schema 3.2): DATE(DATE#(date, 'YYYYMMDD')) as day numbers
    epoch = datetime.date(1899, 12, 30)
    expected = []
    for text in SHRIMP_DATES:
        day = datetime.datetime.strptime(text, "%Y%m%d").date()
        expected.append([f"{day.month}/{day.day}/{day.year}", (day - epoch).days])
    assert sorted(seen["shrimpDates"], key=lambda d: d[1]) == expected


def test_connections_are_confined(server: ScriptServer) -> None:
    with QixClient(server.ws_base + "/app/") as qix:
        doc = _session_app(qix, server.files)

        def create(name: str, path: str, kind: str = "folder") -> int:
            connection = {"qName": name, "qConnectionString": path, "qType": kind}
            with pytest.raises(QixError) as caught:
                qix.result("CreateConnection", [connection], doc)
            code: int = caught.value.code
            return code

        assert create("data", str(server.files)) == 2000
        assert create("DATA", str(server.files)) == 2000  # names are case-insensitive
        assert create("out", str(server.outside)) == 10000
        assert create("up", f"{server.files}/..") == 10000
        assert create("dots", f"{server.files}/../outside") == 10000
        assert create("link", str(server.files / "linkdir")) == 10000
        assert create("relative", "files") == 10000
        assert create("a/b", str(server.files)) == 2004
        assert create("web", "https://example.com/", "internet") == 20
        assert qix.call("CreateConnection", [{"qName": 5}], doc)["error"]["code"] == 8

        sub = server.files / "sub"
        sub.mkdir(exist_ok=True)
        made = qix.result(
            "CreateConnection",
            [{"qName": "sub", "qConnectionString": str(sub), "qType": "FOLDER"}],
            doc,
        )["qConnectionId"]
        names = [c["qName"] for c in qix.result("GetConnections", [], doc)["qConnections"]]
        assert names == ["data", "sub"]
        qix.result("DeleteConnection", [made], doc)
        names = [c["qName"] for c in qix.result("GetConnections", [], doc)["qConnections"]]
        assert names == ["data"]
        with pytest.raises(QixError) as caught:
            qix.result("DeleteConnection", [made], doc)
        assert caught.value.code == 2001


def test_a_connection_read_and_modified_by_id(server: ScriptServer) -> None:
    """GetConnection and ModifyConnection (corectl's `connection get` and its build's update
    of a connection that exists), checked as CreateConnection is."""
    with QixClient(server.ws_base + "/app/") as qix:
        doc = _session_app(qix, server.files)
        data = qix.result("GetConnections", [], doc)["qConnections"][0]
        assert qix.result("GetConnection", [data["qId"]], doc) == {"qConnection": data}
        sub = server.files / "sub"
        sub.mkdir(exist_ok=True)
        other = {"qName": "other", "qConnectionString": str(sub), "qType": "folder"}
        other_id = qix.result("CreateConnection", [other], doc)["qConnectionId"]

        def modify(name: str, path: str, kind: str = "folder") -> dict[str, object]:
            connection = {"qName": name, "qConnectionString": path, "qType": kind}
            return qix.call("ModifyConnection", [other_id, connection, True], doc)

        assert modify("renamed", str(server.files))["result"] == {}
        got = qix.result("GetConnection", [other_id], doc)["qConnection"]
        assert (got["qId"], got["qName"], got["qConnectionString"]) == (
            other_id,
            "renamed",
            str(server.files),
        )
        assert modify("DATA", str(sub))["error"]["code"] == 2000  # another's name
        assert modify("renamed", str(server.outside))["error"]["code"] == 10000
        assert modify("a/b", str(sub))["error"]["code"] == 2004
        assert modify("web", "https://example.com/", "internet")["error"]["code"] == 20
        assert qix.call("ModifyConnection", [other_id, {"qName": 5}], doc)["error"]["code"] == 8
        # The refused changes changed nothing.
        assert qix.result("GetConnection", [other_id], doc)["qConnection"] == got
        for method, params in (
            ("GetConnection", ["no-such-id"]),
            ("ModifyConnection", ["no-such-id", other]),
        ):
            assert qix.call(method, params, doc)["error"]["code"] == 2001


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("lib://data/../outside/secret.csv", "outside"),
        ("lib://data/link.csv", "outside"),
        ("lib://data/linkdir/secret.csv", "outside"),
        ("/etc/hostname", "lib://"),
        ("lib://data/no-such.csv", "no-such.csv"),
        ("lib://nothere/movies.csv", "nothere"),
    ],
)
def test_failing_reload_keeps_the_data(server: ScriptServer, path: str, message: str) -> None:
    with QixClient(server.ws_base + "/app/") as qix:
        doc = _session_app(qix, server.files)
        qix.result("SetScript", [LOAD_MOVIES], doc)
        assert qix.result("DoReload", [], doc)["qReturn"] is True
        cube = qix.handle_of("CreateSessionObject", [MOVIE_CUBE], doc)
        before = _movies(qix, cube)
        assert before == sorted(m for m, _ in MOVIES)

        qix.result("SetScript", [f"SET x = 1;\nLOAD * FROM [{path}] (txt);"], doc)
        answer = qix.call("DoReload", [], doc)
        assert answer["result"] == {"qReturn": False}
        assert "change" not in answer
        [error] = qix.result("GetProgress", [0])["qProgressData"]["qErrorData"]
        assert error["qLineNumber"] == 2
        assert message in error["qErrorString"]
        assert qix.result("CheckScriptSyntax", [], doc)["qErrors"] == []  # it parses
        assert _movies(qix, cube) == before
        reload_ex = qix.result("DoReloadEx", [{}], doc)["qResult"]
        assert reload_ex["qSuccess"] is False


def test_session_app_methods(server: ScriptServer) -> None:
    with QixClient(server.ws_base + "/app/") as qix:
        answer = qix.result("CreateSessionApp")
        assert answer["qSessionAppId"].startswith("SessionApp_")
        assert answer["qReturn"]["qType"] == "Doc"
        doc = answer["qReturn"]["qHandle"]
        assert qix.result("GetActiveDoc")["qReturn"]["qHandle"] == doc
        assert qix.call("CreateSessionApp")["error"]["code"] == 1002
        assert qix.result("GetScript", [], doc) == {"qScript": ""}
        layout = qix.result("GetAppLayout", [], doc)["qLayout"]
        assert (layout["qHasData"], layout["qHasScript"]) == (False, False)
        empty = qix.result("GetEmptyScript", [], doc)["qReturn"]
        assert "SET DateFormat='M/D/YYYY';" in empty
        locale = qix.result("GetLocaleInfo", [], doc)["qReturn"]
        assert (locale["qDecimalSep"], locale["qDateFmt"]) == (".", "M/D/YYYY")
        assert qix.result("ConfigureReload", [True, True, False]) == {}
        progress = qix.result("GetProgress", [0])["qProgressData"]
        assert (progress["qFinished"], progress["qErrorData"]) == (False, [])
        qix.result("SetScript", [empty + "T: LOAD RecNo() AS N AUTOGENERATE 7;\nTRACE done;"], doc)
        qix.result("AddAlternateState", ["Compare"], doc)
        assert qix.result("DoReloadEx", [{}], doc)["qResult"]["qSuccess"] is True
        # The reload serves new data; the document's alternate states stay.
        assert qix.result("GetAppLayout", [], doc)["qLayout"]["qStateNames"] == ["Compare"]
        n_in_state = qix.handle_of("GetField", ["N", "Compare"], doc)
        assert qix.result("SelectValues", [[{"qNumber": 3, "qIsNumeric": True}]], n_in_state)
        progress = qix.result("GetProgress", [0])["qProgressData"]
        assert progress["qFinished"] is True
        assert progress["qCompleted"] == progress["qTotal"]
        assert "done" in progress["qPersistentProgress"]
        data = qix.result("GetTableData", [0, 10, False, "T"], doc)["qData"]
        assert [row["qValue"][0]["qNumber"] for row in data] == [1, 2, 3, 4, 5, 6, 7]
        assert qix.call("DoReload", [0, True], doc)["error"]["code"] == 20  # partial


def test_stored_app_reload_survives_a_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    files = data_dir / "files"  # the default AllowedFolders
    _write_movies(files)
    script = LOAD_MOVIES
    manifest = {
        "format": "assoc-app",
        "formatVersion": 1,
        "attributes": {"name": "Movies"},
        "tables": [{"name": "Old", "file": "tables/Old.qvd"}],
        "objects": [],
        "script": script,
        "connections": [{"name": "data", "path": str(files)}],
    }
    body = package_bytes({"Old": {"Movie": ["Old one"]}}, manifest=manifest)
    process = ServerProcess(data_dir).start()
    try:
        with process.client() as client:
            app_id = client.post("/v1/apps/import", content=body).json()["attributes"]["id"]
        ws = "ws" + process.base_url.removeprefix("http")
        with QixClient(ws + "/app/") as qix, QixClient(ws + "/app/") as other:
            doc = qix.open_doc(app_id)
            other_doc = other.open_doc(app_id)
            assert qix.result("GetScript", [], doc)["qScript"] == script
            cube = qix.handle_of("CreateSessionObject", [MOVIE_CUBE], doc)
            assert _movies(qix, cube) == ["Old one"]
            # A connection outside the default AllowedFolders is refused.
            outside = {"qName": "x", "qConnectionString": str(tmp_path), "qType": "folder"}
            assert qix.call("CreateConnection", [outside], doc)["error"]["code"] == 10000
            answer = qix.call("DoReload", [], doc)
            assert answer["result"] == {"qReturn": True}
            assert cube in answer["change"]
            assert _movies(qix, cube) == sorted(m for m, _ in MOVIES)
            tables = qix.result("GetTablesAndKeys", [{}, {}, 0, False, False], doc)["qtr"]
            assert [t["qName"] for t in tables] == ["movies"]
            # The other session held the old version: its handles close.
            assert other.call("GetAppLayout", [], other_doc)["error"]["code"] == -32602
            assert {"jsonrpc": "2.0", "close": [other_doc]} in other.pushed
            # A failing reload keeps the committed data and the committed script.
            qix.result("SetScript", ["LOAD * FROM [lib://data/gone.csv] (txt);"], doc)
            assert qix.result("DoReload", [], doc)["qReturn"] is False
            assert _movies(qix, cube) == sorted(m for m, _ in MOVIES)
        with process.client() as client:
            metadata = client.get(f"/v1/apps/{app_id}/data/metadata").json()
            assert [t["name"] for t in metadata["tables"]] == ["movies"]
            attributes = client.get(f"/v1/apps/{app_id}").json()["attributes"]
            assert attributes["lastReloadTime"]
    finally:
        process.stop()

    process = ServerProcess(data_dir).start()
    try:
        ws = "ws" + process.base_url.removeprefix("http")
        with QixClient(ws + "/app/") as qix:
            doc = qix.open_doc(app_id)
            assert qix.result("GetScript", [], doc)["qScript"] == script
            names = [c["qName"] for c in qix.result("GetConnections", [], doc)["qConnections"]]
            assert names == ["data"]
            cube = qix.handle_of("CreateSessionObject", [MOVIE_CUBE], doc)
            assert _movies(qix, cube) == sorted(m for m, _ in MOVIES)
    finally:
        process.stop()


def test_stored_connections_are_checked_when_the_reload_runs(server: ScriptServer) -> None:
    manifest = {
        "format": "assoc-app",
        "formatVersion": 1,
        "tables": [{"name": "Old", "file": "tables/Old.qvd"}],
        "script": LOAD_MOVIES,
        "connections": [{"name": "data", "path": str(server.outside)}],
    }
    body = package_bytes({"Old": {"Movie": ["Old one"]}}, manifest=manifest)
    with server.process.client() as client:
        app_id = client.post("/v1/apps/import", content=body).json()["attributes"]["id"]
    with QixClient(server.ws_base + "/app/") as qix:
        doc = qix.open_doc(app_id)
        assert qix.result("GetAppLayout", [], doc)["qLayout"]["qHasScript"] is True
        assert qix.result("DoReload", [], doc)["qReturn"] is False
        [error] = qix.result("GetProgress", [0])["qProgressData"]["qErrorData"]
        assert "outside the folders" in error["qErrorString"]
        cube = qix.handle_of("CreateSessionObject", [MOVIE_CUBE], doc)
        assert _movies(qix, cube) == ["Old one"]


def test_allowed_folders_setting(tmp_path: Path) -> None:
    assert Settings().allowed_folder_list(tmp_path) == [str(tmp_path / "files")]
    settings = Settings.from_sources([f"AllowedFolders={tmp_path}/a; {tmp_path}/b ;"])
    assert settings.allowed_folder_list("/ignored") == [f"{tmp_path}/a", f"{tmp_path}/b"]
    with pytest.raises(assoc.Error, match=r"AllowedFolders.*not an absolute path"):
        Settings.from_sources(["AllowedFolders=/srv/a;relative/b"])


def test_the_locale_is_the_one_the_script_left(server: ScriptServer) -> None:
    script = (
        "SET DateFormat='DD.MM.YYYY'; SET DecimalSep=','; SET ThousandSep='.';\n"
        "SET FirstWeekDay=0; SET BrokenWeeks=0; SET ReferenceDay=4; SET FirstWeekDay=x;\n"
        "SET MonthNames='jan;feb;mar;apr;mai;jun;jul;aug;sep;okt;nov;des';\n"
        "T: LOAD 44199 + RecNo() AS D AUTOGENERATE 3;"
    )
    with QixClient(server.ws_base + "/app/") as qix:
        doc = qix.result("CreateSessionApp")["qReturn"]["qHandle"]
        qix.result("SetScript", [script], doc)
        assert qix.result("DoReloadEx", [{}], doc)["qResult"]["qSuccess"] is True
        locale = qix.result("GetLocaleInfo", [], doc)["qReturn"]
        layout = qix.result("GetAppLayout", [], doc)["qLayout"]["qLocaleInfo"]
        for answer in (locale, layout):
            assert (answer["qDateFmt"], answer["qDecimalSep"], answer["qThousandSep"]) == (
                "DD.MM.YYYY",
                ",",
                ".",
            )
            # The last FirstWeekDay (x) is no number: the default (6, Sunday) stays.
            assert (answer["qFirstWeekDay"], answer["qBrokenWeeks"], answer["qReferenceDay"]) == (
                6,
                False,
                4,
            )
            assert answer["qCalendarStrings"]["qMonthNames"][4] == "mai"
        # The app's charts write dates and months the same way.
        value = qix.result("Evaluate", ["Date(Min(D)) & ' ' & Month(Max(D))"], doc)
        assert value == {"qReturn": "04.01.2021 jan"}


def test_a_debug_reload_reads_at_most_the_fetch_limit(server: ScriptServer) -> None:
    # corectl's `reload --limit`: SetFetchLimit, then DoReload in debug mode.
    script = (
        f"Movies: {LOAD_MOVIES}\n"
        "Numbers: LOAD RecNo() as N AUTOGENERATE 10;\n"
        "Few: FIRST 3 LOAD N as Few RESIDENT Numbers WHERE N > 4;\n"
    )
    with QixClient(server.ws_base + "/app/") as qix:
        doc = _session_app(qix, server.files)
        qix.result("SetScript", [script], doc)

        def rows() -> dict[str, int]:
            tk = qix.result(
                "GetTablesAndKeys",
                [{"qcx": 9, "qcy": 9}, {"qcx": 0, "qcy": 0}, 30, True, False],
                doc,
            )
            return {t["qName"]: t["qNoOfRows"] for t in tk["qtr"]}

        assert qix.result("DoReload", [], doc) == {"qReturn": True}
        assert rows() == {"Movies": len(MOVIES), "Numbers": 10, "Few": 3}
        assert qix.result("SetFetchLimit", [2], doc) == {}
        assert qix.result("DoReload", [], doc) == {"qReturn": True}  # not in debug mode
        assert rows() == {"Movies": len(MOVIES), "Numbers": 10, "Few": 3}
        assert qix.result("DoReload", [0, False, True], doc) == {"qReturn": True}
        assert rows() == {"Movies": 2, "Numbers": 2, "Few": 0}  # N of 1 and 2 only
        qix.result("SetFetchLimit", [4], doc)
        done = qix.result("DoReloadEx", [{"qDebug": True}], doc)
        assert done["qResult"]["qSuccess"] is True
        assert rows() == {"Movies": 4, "Numbers": 4, "Few": 0}
        qix.result("SetFetchLimit", [7], doc)
        assert qix.result("DoReload", {"qDebug": True}, doc) == {"qReturn": True}
        assert rows() == {"Movies": len(MOVIES), "Numbers": 7, "Few": 3}  # FIRST 3 the lesser
        for bad, code in ((-1, 8), ("2", -32602), (None, -32602)):
            with pytest.raises(QixError) as refused:
                qix.result("SetFetchLimit", [bad], doc)
            assert refused.value.code == code


@pytest.mark.parametrize(
    ("script", "column", "message"),
    [
        ("T: FIRST LOAD 1 as A AUTOGENERATE 1;", 10, "FIRST needs a number of records"),
        # Counts are known as the statement runs: its LOAD is where it failed.
        ("T: FIRST -2 LOAD 1 as A AUTOGENERATE 5;", 13, "FIRST needs a whole number"),
        ("T: FIRST 1.5 LOAD 1 as A AUTOGENERATE 5;", 14, "FIRST needs a whole number"),
    ],
)
def test_first_that_is_no_count_fails_where_it_is_written(
    server: ScriptServer, script: str, column: int, message: str
) -> None:
    with QixClient(server.ws_base + "/app/") as qix:
        doc = _session_app(qix, server.files)
        qix.result("SetScript", [script], doc)
        assert qix.result("DoReload", [], doc) == {"qReturn": False}
        [error] = qix.result("GetProgress", [0])["qProgressData"]["qErrorData"]
        assert error["qLineNumber"] == 1
        assert error["qColumn"] == column, error
        assert message in error["qErrorString"]


def _send(qix: QixClient, number: int, method: str, params: Any, handle: int = -1) -> None:
    request = {"jsonrpc": "2.0", "id": number, "method": method, "handle": handle}
    qix.ws.send(json.dumps({**request, "params": params}))


def _answers(qix: QixClient, count: int) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    while len(found) < count:
        answer = qix.receive_answer()
        found[answer["id"]] = answer
    return found


LONG_SCRIPT = "FOR i = 1 TO 100000000\n  LET x = i;\nNEXT i\nT: LOAD 1 as Never AUTOGENERATE 1;\n"


@pytest.mark.parametrize("how", ["CancelReload", "CancelRequest", "another socket"])
def test_a_reload_in_progress_shows_its_progress_and_is_cancelled(
    server: ScriptServer, how: str
) -> None:
    # As the data load editor and corectl do: GetProgress while DoReload runs, then a cancel.
    url, shared = server.ws_base + "/app/", {"X-Qlik-Session": uuid.uuid4().hex}
    with (
        QixClient(url, shared, delta=False) as qix,
        QixClient(url, shared, delta=False) as peer,
    ):
        doc = _session_app(qix, server.files)
        qix.result("SetScript", [LOAD_MOVIES], doc)
        assert qix.result("DoReload", [], doc) == {"qReturn": True}
        qix.result("SetScript", [LONG_SCRIPT], doc)
        _send(qix, 101, "DoReload", [], doc)
        deadline = time.monotonic() + 30
        while True:  # answered while the reload runs (at first maybe the one before's)
            _send(qix, 102, "GetProgress", [101])
            progress = _answers(qix, 1)[102]["result"]["qProgressData"]
            running = progress["qStarted"] and not progress["qFinished"]
            if running or time.monotonic() > deadline:
                break
        assert progress["qStarted"] is True
        assert progress["qFinished"] is False
        if how == "CancelReload":
            _send(qix, 103, "CancelReload", [])
        elif how == "CancelRequest":
            _send(qix, 103, "CancelRequest", [999])  # another id: nothing stops
            assert _answers(qix, 1)[103]["result"] == {}
            _send(qix, 103, "CancelRequest", [101])
        else:  # the session's other socket
            assert peer.result("CancelReload", []) == {}
        wanted = {101} if how == "another socket" else {101, 103}
        answers: dict[int, dict[str, Any]] = {}
        while not wanted <= answers.keys():
            answer = qix.receive_answer()
            answers[answer["id"]] = answer
        if how != "another socket":
            assert answers[103]["result"] == {}
        assert answers[101]["result"] == {"qReturn": False}
        [error] = qix.result("GetProgress", [0])["qProgressData"]["qErrorData"]
        assert "cancelled" in error["qErrorString"]
        cube = qix.handle_of("CreateSessionObject", [MOVIE_CUBE], doc)
        assert _movies(qix, cube) == sorted(m for m, _ in MOVIES)  # the data it had
        # The next reload runs to its end.
        qix.result("SetScript", [LOAD_MOVIES], doc)
        assert qix.result("DoReload", [], doc) == {"qReturn": True}
        assert qix.result("CancelReload", []) == {}  # nothing running: nothing happens
