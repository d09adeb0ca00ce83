"""Section access over QIX: the token's user opens the app reduced to their rows, in cubes,
list objects and GetTableData; a user the access table lacks is refused."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from qixclient import QixClient, QixError

import assoc
from appfiles import SECURED_SALES, ServerProcess
from assoc.package import Manifest, write_package
from assoc.server.store import AppStore

SECRET = "a-secret-that-is-long-enough-for-sha256"
SCRIPT = (
    """
Section Access;
LOAD * INLINE [
ACCESS, USERID, GROUP, REGION, OMIT
USER, ann, , EAST,
USER, bob, , WEST, PRICE
USER, , north team, NORTH,
];
"""
    + SECURED_SALES
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, str]]:
    data = Path(tmp_path_factory.mktemp("secaccess")) / "data"
    process = ServerProcess(data, "ValidateJsonWebTokens=2", f"JsonWebTokenSecret={SECRET}").start()
    try:
        app = assoc.App.from_script(SCRIPT)
        out = io.BytesIO()
        write_package(app.stored_tables, app.write_qvd, Manifest(tables=[]), None, out)
        token = jwt.encode({"sub": "ann"}, SECRET, algorithm="HS256")
        with process.client() as client:
            response = client.post(
                "/v1/apps/import",
                content=out.getvalue(),
                headers={"Authorization": f"Bearer {token}"},
            )
            assert response.status_code == 200, response.text
            yield process, response.json()["attributes"]["id"]
    finally:
        process.stop()


def _client(server: tuple[ServerProcess, str], claims: dict[str, Any]) -> QixClient:
    process, app_id = server
    token = jwt.encode(claims, SECRET, algorithm="HS256")
    url = "ws" + process.base_url.removeprefix("http") + f"/app/{app_id}"
    return QixClient(url, {"Authorization": f"Bearer {token}"})


def _everything(qix: QixClient, app_id: str) -> dict[str, Any]:
    doc = qix.open_doc(app_id)
    cube_props = {
        "qInfo": {"qType": "table"},
        "qHyperCubeDef": {
            "qDimensions": [{"qDef": {"qFieldDefs": ["Product"]}}],
            "qMeasures": [{"qDef": {"qDef": "Sum(AMOUNT)"}}],
            "qInitialDataFetch": [{"qHeight": 50, "qWidth": 2}],
        },
    }
    cube = qix.result("GetLayout", [], qix.handle_of("CreateSessionObject", [cube_props], doc))
    cube = cube["qLayout"]["qHyperCube"]
    lists = {}
    for field in ("REGION", "Product"):
        props = {
            "qInfo": {"qType": "listbox"},
            "qListObjectDef": {
                "qDef": {"qFieldDefs": [field]},
                "qShowAlternatives": True,
                "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 50}],
            },
        }
        obj = qix.handle_of("CreateSessionObject", [props], doc)
        page = qix.result("GetLayout", [], obj)["qLayout"]["qListObject"]["qDataPages"][0]
        lists[field] = {row[0]["qText"]: row[0]["qState"] for row in page["qMatrix"]}
    table = qix.result("GetTableData", [0, 100, True, "Sales"], doc)["qData"]
    return {
        "rows": [[c["qText"] for c in row] for row in cube["qDataPages"][0]["qMatrix"]],
        "total": [c["qText"] for c in cube["qGrandTotalRow"]],
        "lists": lists,
        "table": [[v["qText"] for v in row["qValue"]] for row in table],
    }


def test_each_user_sees_only_their_rows(server: tuple[ServerProcess, str]) -> None:
    _, app_id = server
    with _client(server, {"sub": "ANN"}) as qix:
        ann = _everything(qix, app_id)
    with _client(server, {"sub": "bob"}) as qix:
        bob = _everything(qix, app_id)
    with _client(server, {"sub": "carl", "groups": ["North Team"]}) as qix:
        carl = _everything(qix, app_id)
    assert ann["rows"] == [["A", "10"], ["B", "20"]]
    assert ann["total"] == ["30"]
    assert ann["lists"] == {"REGION": {"EAST": "O"}, "Product": {"A": "O", "B": "O"}}
    assert ann["table"] == [["EAST", "A", "10"], ["EAST", "B", "20"]]
    assert bob["rows"] == [["C", "5"]]
    assert bob["total"] == ["5"]
    assert bob["lists"] == {"REGION": {"WEST": "O"}, "Product": {"C": "O"}}
    assert bob["table"] == [["WEST", "C", "5"]]
    assert carl["table"] == [["NORTH", "D", "7"]]


def test_absent_user_refused(server: tuple[ServerProcess, str]) -> None:
    _, app_id = server
    for claims in ({"sub": "zed"}, {"sub": "carl", "groups": ["south"]}):
        with _client(server, claims) as qix, pytest.raises(QixError) as refused:
            qix.open_doc(app_id)
        assert (refused.value.code, refused.value.message) == (5, "Access denied")


def _evaluate(qix: QixClient, doc: int, expression: str) -> str:
    return str(qix.result("Evaluate", {"qExpression": expression}, doc)["qReturn"])


@pytest.mark.parametrize(
    ("expression", "for_ann", "for_bob"),
    [
        ("Sum({1} AMOUNT)", "30", "5"),
        ("Sum({<REGION=, Product=>} AMOUNT)", "30", "5"),
        ("Sum({<REGION={'WEST'}>} AMOUNT)", "0", "5"),
        ("Sum({1-$} AMOUNT)", "20", "0"),  # Product A (ann) / C (bob) selected
        ("Count({1} DISTINCT Product)", "2", "1"),
        ("Sum(Aggr(Sum({1} AMOUNT), Product))", "30", "5"),
    ],
)
def test_sets_stay_inside_the_reduction(
    server: tuple[ServerProcess, str], expression: str, for_ann: str, for_bob: str
) -> None:
    _, app_id = server
    for user, picked, expected in (("ann", "A", for_ann), ("bob", "C", for_bob)):
        with _client(server, {"sub": user}) as qix:
            doc = qix.open_doc(app_id)
            field = qix.handle_of("GetField", {"qFieldName": "Product"}, doc)
            qix.result("SelectValues", [[{"qText": picked}]], field)
            assert _evaluate(qix, doc, expression) == expected, user


def _tables(qix: QixClient, doc: int) -> dict[str, Any]:
    found = qix.result("GetTablesAndKeys", [{}, {}, 0, False, False], doc)
    return {
        t["qName"]: (t["qNoOfRows"], {f["qName"]: f["qnTotalDistinctValues"] for f in t["qFields"]})
        for t in found["qtr"]
    }


def _field_list(qix: QixClient, doc: int) -> dict[str, int]:
    props = {"qInfo": {"qType": "fields"}, "qFieldListDef": {"qShowSystem": False}}
    obj = qix.handle_of("CreateSessionObject", [props], doc)
    items = qix.result("GetLayout", [], obj)["qLayout"]["qFieldList"]["qItems"]
    return {i["qName"]: i["qCardinal"] for i in items}


def test_model_counts_are_the_users(server: tuple[ServerProcess, str]) -> None:
    _, app_id = server
    with _client(server, {"sub": "ann"}) as qix:
        doc = qix.open_doc(app_id)
        assert _tables(qix, doc) == {
            "Sales": (2, {"REGION": 1, "Product": 2, "AMOUNT": 2}),
            "Prices": (2, {"Product": 2, "PRICE": 2}),
        }
        assert _field_list(qix, doc) == {"REGION": 1, "Product": 2, "AMOUNT": 2, "PRICE": 2}
        region = qix.result("GetFieldDescription", {"qFieldName": "REGION"}, doc)["qReturn"]
        assert (region["qCardinal"], region["qTotalCount"]) == (1, 2)
    with _client(server, {"sub": "bob"}) as qix:
        doc = qix.open_doc(app_id)
        # PRICE is omitted for bob: in no listing, and unknown when named
        assert _tables(qix, doc) == {
            "Sales": (1, {"REGION": 1, "Product": 1, "AMOUNT": 1}),
            "Prices": (1, {"Product": 1}),
        }
        assert _field_list(qix, doc) == {"REGION": 1, "Product": 1, "AMOUNT": 1}
        data = qix.result("GetTableData", [0, 10, False, "Prices"], doc)["qData"]
        assert [[v["qText"] for v in row["qValue"]] for row in data] == [["C"]]
        with pytest.raises(QixError) as unknown:
            qix.result("GetField", {"qFieldName": "PRICE"}, doc)
        assert unknown.value.code == 2
        props = {
            "qInfo": {"qType": "listbox"},
            "qListObjectDef": {"qDef": {"qFieldDefs": ["PRICE"]}},
        }
        obj = qix.handle_of("CreateSessionObject", [props], doc)
        listed = qix.result("GetLayout", [], obj)["qLayout"]["qListObject"]
        error = listed["qDimensionInfo"]["qError"]
        assert error["qExtendedMessage"] == "unknown field 'PRICE'"
        assert listed["qDataPages"] == []
        with pytest.raises(QixError, match="PRICE"):
            _evaluate(qix, doc, "Sum(PRICE)")


def test_rest_metadata_is_the_token_users(server: tuple[ServerProcess, str]) -> None:
    process, app_id = server

    def metadata(claims: dict[str, Any]) -> Any:
        token = jwt.encode(claims, SECRET, algorithm="HS256")
        with process.client() as client:
            return client.get(
                f"/v1/apps/{app_id}/data/metadata", headers={"Authorization": f"Bearer {token}"}
            )

    ann = metadata({"sub": "ann"})
    assert ann.status_code == 200, ann.text
    assert {t["name"]: t["no_of_rows"] for t in ann.json()["tables"]} == {"Sales": 2, "Prices": 2}
    bob = metadata({"sub": "bob"}).json()
    assert {f["name"]: f["cardinal"] for f in bob["fields"] if not f["is_system"]} == {
        "REGION": 1,
        "Product": 1,
        "AMOUNT": 1,
    }
    refused = metadata({"sub": "zed"})
    assert refused.status_code == 403
    assert refused.json()["errors"][0]["detail"] == "Access denied"


def test_rest_and_qix_byte_sizes_are_the_users(server: tuple[ServerProcess, str]) -> None:
    """Two users' byte sizes: those of the rows and values each holds, not the model's."""
    process, app_id = server
    local = assoc.App.from_script(SCRIPT)

    def sizes(found: dict[str, Any]) -> dict[str, int]:
        out = {f["name"]: f["byte_size"] for f in found["fields"] if not f["is_system"]}
        out.update({"table " + t["name"]: t["byte_size"] for t in found["tables"]})
        return out

    full = sizes(local.metadata())
    for user in ("ann", "bob"):
        token = jwt.encode({"sub": user}, SECRET, algorithm="HS256")
        with process.client() as client:
            found = client.get(
                f"/v1/apps/{app_id}/data/metadata", headers={"Authorization": f"Bearer {token}"}
            ).json()
        expected = sizes(local.metadata(local.reduction(user)))
        assert sizes(found) == expected
        assert any(expected[k] < full[k] for k in expected), user
        with _client(server, {"sub": user}) as qix:
            doc = qix.open_doc(app_id)
            description = qix.result("GetFieldDescription", ["Product"], doc)["qReturn"]
            assert description["qByteSize"] == expected["Product"]


def test_system_fields_are_the_users(server: tuple[ServerProcess, str]) -> None:
    _, app_id = server
    with _client(server, {"sub": "bob"}) as qix:
        doc = qix.open_doc(app_id)
        props = {
            "qInfo": {"qType": "fields"},
            "qFieldListDef": {"qShowSystem": True, "qShowHidden": True},
        }
        obj = qix.handle_of("CreateSessionObject", [props], doc)
        items = qix.result("GetLayout", [], obj)["qLayout"]["qFieldList"]["qItems"]
        system = {i["qName"]: i["qCardinal"] for i in items if i["qIsSystem"]}
        assert system == {"$Table": 2, "$Field": 3}  # no PRICE, no counts of hidden rows
        fields = {"qInfo": {"qType": "listbox"}, "qListObjectDef": {"qDef": {"qFieldDefs": []}}}
        shown = {}
        for field in ("$Field", "$Rows"):
            fields["qListObjectDef"]["qDef"]["qFieldDefs"] = [field]  # type: ignore[index]
            fields["qListObjectDef"]["qInitialDataFetch"] = [  # type: ignore[index]
                {"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 20}
            ]
            listed = qix.handle_of("CreateSessionObject", [fields], doc)
            shown[field] = qix.result("GetLayout", [], listed)["qLayout"]["qListObject"]
        page = shown["$Field"]["qDataPages"][0]["qMatrix"]
        assert sorted(row[0]["qText"] for row in page) == ["AMOUNT", "Product", "REGION"]
        error = shown["$Rows"]["qDimensionInfo"]["qError"]
        assert error["qExtendedMessage"] == "unknown field '$Rows'"
        with pytest.raises(QixError, match=r"\$Rows"):
            _evaluate(qix, doc, "Sum($Rows)")


def test_the_access_table_is_nobodys(server: tuple[ServerProcess, str]) -> None:
    _, app_id = server
    with _client(server, {"sub": "ann"}) as qix:
        doc = qix.open_doc(app_id)
        with pytest.raises(QixError) as unknown:
            qix.result("GetField", {"qFieldName": "$SA.USERID"}, doc)
        assert unknown.value.code == 2
        props = {
            "qInfo": {"qType": "listbox"},
            "qListObjectDef": {
                "qDef": {"qFieldDefs": ["$SA.USERID"]},
                "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 20}],
            },
        }
        obj = qix.handle_of("CreateSessionObject", [props], doc)
        listed = qix.result("GetLayout", [], obj)["qLayout"]["qListObject"]
        assert [page["qMatrix"] for page in listed["qDataPages"]] in ([], [[]])
        assert listed["qDimensionInfo"]["qError"]["qExtendedMessage"] == (
            "unknown field '$SA.USERID'"
        )
        with pytest.raises(QixError, match=r"\$SA\.USERID"):
            _evaluate(qix, doc, "Concat($SA.USERID, ',')")
        with pytest.raises(QixError):
            qix.result("GetTableData", [0, 10, False, "$SectionAccess"], doc)


def test_reloaded_session_app_reduced_the_same_way(server: tuple[ServerProcess, str]) -> None:
    with _client(server, {"sub": "bob"}) as qix:
        doc: int = qix.result("CreateSessionApp")["qReturn"]["qHandle"]
        qix.result("SetScript", [SCRIPT], doc)
        assert qix.result("DoReload", [], doc)["qReturn"] is True
        assert _evaluate(qix, doc, "Sum({1} AMOUNT)") == "5"
        assert _tables(qix, doc) == {
            "Sales": (1, {"REGION": 1, "Product": 1, "AMOUNT": 1}),
            "Prices": (1, {"Product": 1}),
        }


def test_only_a_user_who_sees_everything_may_export(server: tuple[ServerProcess, str]) -> None:
    """The package holds every row and the access table: a reduced user may not take it."""
    process, app_id = server
    token = jwt.encode({"sub": "ann"}, SECRET, algorithm="HS256")
    with process.client() as client:
        refused = client.get(
            f"/v1/apps/{app_id}/export", headers={"Authorization": f"Bearer {token}"}
        )
    assert refused.status_code == 403
    assert refused.json()["errors"][0]["detail"] == "Access denied"


def test_export_of_a_secured_app_in_the_store(tmp_path: Path) -> None:
    script = SCRIPT.replace(
        "USER, ann, , EAST,", "USER, ann, , EAST,\nADMIN, root, , ,\nADMIN, half, , WEST,"
    )
    with AppStore(tmp_path) as store:
        path = store.new_upload_path()
        app = assoc.App.from_script(script)
        out = io.BytesIO()
        write_package(app.stored_tables, app.write_qvd, Manifest(tables=[]), None, out)
        path.write_bytes(out.getvalue())
        app_id = str(store.import_file(path)["id"])
        for user in ("ann", "half", "zed", ""):  # reduced, an ADMIN reduced, absent, no token
            with pytest.raises(assoc.Error, match="Access denied"):
                store.export(app_id, io.BytesIO(), user)
        package = io.BytesIO()
        store.export(app_id, package, "root")
    copy = assoc.App.from_package(package.getvalue())
    with copy.session("root") as s:
        assert s.possible_rows("Sales") == 4
    with copy.session("ann") as s:
        assert s.possible_rows("Sales") == 2
