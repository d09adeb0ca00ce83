"""Alternate states over a real `assoc serve`: adding and removing them, objects and fields in
a state, selections that stay in their state, current selections per state, selection mode
restoring an alternate state, and the errors for states the session does not have."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from qixclient import QixClient, QixError

from conftest import CUSTOMERS, ORDERS, QixServer, symbols

pytestmark = pytest.mark.server


@pytest.fixture
def qix(qix_server: QixServer, app_id: str) -> Iterator[tuple[QixClient, int]]:
    with QixClient(qix_server.ws_base + "/app/engineData") as client:
        yield client, client.open_doc(app_id)


def listbox(field: str, state: str | None = None) -> dict[str, Any]:
    definition: dict[str, Any] = {
        "qDef": {"qFieldDefs": [field]},
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 20}],
    }
    if state is not None:
        definition["qStateName"] = state
    return {"qInfo": {"qType": "listbox"}, "qListObjectDef": definition}


def cube(state: str | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {
        "qInfo": {"qType": "table"},
        "qHyperCubeDef": {
            "qDimensions": [{"qDef": {"qFieldDefs": ["Customer"]}}],
            "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": 20}],
        },
    }
    if state is not None:
        props["qStateName"] = state
    return props


def sums(customers: set[str] | None = None) -> dict[str, float]:
    """Sum(Amount) per customer over Orders (only `customers` when given); a customer without
    orders sums to 0."""
    out: dict[str, float] = {
        c: 0 for c in CUSTOMERS["Customer"] if customers is None or c in customers
    }
    for c, a in zip(ORDERS["Customer"], ORDERS["Amount"], strict=True):
        if customers is None or c in customers:
            out[c] = out.get(c, 0) + a
    return out


def layout(client: QixClient, handle: int) -> dict[str, Any]:
    found: dict[str, Any] = client.result("GetLayout", [], handle)["qLayout"]
    return found


def cube_rows(client: QixClient, handle: int) -> dict[str, float]:
    cube_layout = layout(client, handle)["qHyperCube"]
    assert "qError" not in cube_layout
    matrix = cube_layout["qDataPages"][0]["qMatrix"]
    return {row[0]["qText"]: row[1]["qNum"] for row in matrix}


def selected(client: QixClient, handle: int) -> list[str]:
    matrix = layout(client, handle)["qListObject"]["qDataPages"][0]["qMatrix"]
    return sorted(row[0]["qText"] for row in matrix if row[0]["qState"] == "S")


def code(field: str, value: object) -> int:
    return symbols(field).index(value)


def test_add_and_remove_states_in_the_app_layout(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    assert client.result("GetAppLayout", [], doc)["qLayout"]["qStateNames"] == []
    client.result("AddAlternateState", ["S1"], doc)
    client.result("AddAlternateState", {"qStateName": "S2"}, doc)
    assert client.result("GetAppLayout", [], doc)["qLayout"]["qStateNames"] == ["S1", "S2"]
    with pytest.raises(QixError) as exists:
        client.result("AddAlternateState", ["S1"], doc)
    assert exists.value.code == 3
    for bad in ("", "$"):
        with pytest.raises(QixError) as invalid:
            client.result("AddAlternateState", [bad], doc)
        assert invalid.value.code == 8
    client.result("RemoveAlternateState", ["S1"], doc)
    assert client.result("GetAppLayout", [], doc)["qLayout"]["qStateNames"] == ["S2"]
    with pytest.raises(QixError) as unknown:
        client.result("RemoveAlternateState", ["S1"], doc)
    assert unknown.value.code == 2
    with pytest.raises(QixError) as default:
        client.result("RemoveAlternateState", ["$"], doc)
    assert default.value.code == 8
    assert client.result("RemoveSessionAlternateState", ["nope"], doc) == {"qSuccess": False}
    assert client.result("RemoveSessionAlternateState", ["S2"], doc) == {"qSuccess": True}


def test_objects_compute_and_select_in_their_state(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    client.result("AddAlternateState", ["S1"], doc)
    in_default = client.handle_of("CreateSessionObject", [listbox("Customer")], doc)
    in_s1 = client.handle_of("CreateSessionObject", [listbox("Customer", "S1")], doc)
    cube_default = client.handle_of("CreateSessionObject", [cube()], doc)
    cube_s1 = client.handle_of("CreateSessionObject", [cube("S1")], doc)
    assert layout(client, in_s1)["qListObject"]["qStateName"] == "S1"
    assert layout(client, cube_s1)["qHyperCube"]["qStateName"] == "S1"

    answer = client.call(
        "SelectListObjectValues", ["/qListObjectDef", [code("Customer", "a")], False], in_s1
    )
    assert answer["result"] == {"qSuccess": True}
    assert selected(client, in_s1) == ["a"]
    assert selected(client, in_default) == []
    assert cube_rows(client, cube_s1) == sums({"a"})
    assert cube_rows(client, cube_default) == sums()

    # A selection through the S1 cube goes to S1; the default state stays empty.
    client.result(
        "SelectHyperCubeValues",
        ["/qHyperCubeDef", 0, [code("Customer", "b"), code("Customer", "a")], False],
        cube_s1,
    )
    assert cube_rows(client, cube_s1) == sums({"a", "b"})
    assert cube_rows(client, cube_default) == sums()
    # The default state's selection does not reach S1.
    client.result(
        "SelectListObjectValues", ["/qListObjectDef", [code("Customer", "d")], False], in_default
    )
    assert cube_rows(client, cube_default) == sums({"d"})
    assert cube_rows(client, cube_s1) == sums({"a", "b"})
    # Each state's selection object lists its own selections.
    current = client.handle_of(
        "CreateSessionObject",
        [
            {
                "qInfo": {"qType": "current-selections"},
                "qSelectionObjectDef": {"qStateName": "$"},
                "alternateStates": [
                    {"stateName": "S1", "qSelectionObjectDef": {"qStateName": "S1"}}
                ],
            }
        ],
        doc,
    )
    shown = layout(client, current)
    assert [s["qSelected"] for s in shown["qSelectionObject"]["qSelections"]] == ["d"]
    s1 = shown["alternateStates"][0]
    assert s1["stateName"] == "S1"
    assert s1["qSelectionObject"]["qStateName"] == "S1"
    assert [s["qSelected"] for s in s1["qSelectionObject"]["qSelections"]] == ["a, b"]
    assert s1["qSelectionObject"]["qBackCount"] == 0

    # ClearAll of S1 clears S1 only.
    client.result("ClearAll", [False, "S1"], doc)
    assert cube_rows(client, cube_s1) == sums()
    assert cube_rows(client, cube_default) == sums({"d"})


def test_child_objects_take_their_parents_state(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    client.result("AddAlternateState", ["S1"], doc)
    parent = client.handle_of(
        "CreateSessionObject", [{"qInfo": {"qType": "filterpane"}, "qStateName": "S1"}], doc
    )
    child = client.result("CreateChild", [listbox("Customer")], parent)["qReturn"]["qHandle"]
    own = client.result("CreateChild", [listbox("Customer", "$")], parent)["qReturn"]["qHandle"]
    client.result("SelectListObjectValues", ["/qListObjectDef", [code("Customer", "c")]], child)
    assert layout(client, child)["qListObject"]["qStateName"] == "S1"
    assert selected(client, child) == ["c"]
    assert selected(client, own) == []


def test_fields_per_state(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    client.result("AddAlternateState", ["S1"], doc)
    field_default = client.handle_of("GetField", ["Customer"], doc)
    field_s1 = client.handle_of("GetField", ["Customer", "S1"], doc)
    assert field_s1 != field_default
    assert client.handle_of("GetField", {"qFieldName": "Customer", "qStateName": "S1"}, doc) == (
        field_s1
    )
    cube_s1 = client.handle_of("CreateSessionObject", [cube("S1")], doc)
    cube_default = client.handle_of("CreateSessionObject", [cube()], doc)
    assert client.result("Select", ["c"], field_s1) == {"qReturn": True}
    assert cube_rows(client, cube_s1) == sums({"c"})
    assert cube_rows(client, cube_default) == sums()
    assert client.result("SelectAll", [], field_s1) == {"qReturn": True}
    assert cube_rows(client, cube_s1) == sums()
    client.result("LowLevelSelect", [[code("Customer", "b")], False], field_s1)
    assert client.result("SelectExcluded", [], field_s1) == {"qReturn": True}
    assert cube_rows(client, cube_s1) == sums({"a", "c", "d", "e"})
    # An alternate state has no locks.
    assert client.result("Lock", [], field_s1) == {"qReturn": False}
    assert client.result("Clear", [], field_s1) == {"qReturn": True}
    assert cube_rows(client, cube_s1) == sums()
    # A state copied from another with AddSessionAlternateState.
    client.result("Select", ["a"], field_default)
    client.result("AddSessionAlternateState", ["S2", "$"], doc)
    assert cube_rows(client, client.handle_of("CreateSessionObject", [cube("S2")], doc)) == sums(
        {"a"}
    )


def test_selection_mode_cancel_restores_an_alternate_state(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    client.result("AddAlternateState", ["S1"], doc)
    box = client.handle_of("CreateSessionObject", [listbox("Customer", "S1")], doc)
    client.result("SelectListObjectValues", ["/qListObjectDef", [code("Customer", "a")]], box)
    client.result("BeginSelections", [["/qListObjectDef"]], box)
    client.result("SelectListObjectValues", ["/qListObjectDef", [code("Customer", "b")]], box)
    assert selected(client, box) == ["b"]
    assert layout(client, box)["qSelectionInfo"]["qInSelections"] is True
    answer = client.call("EndSelections", [False], box)
    assert box in answer["change"]
    assert selected(client, box) == ["a"]
    # ResetMadeSelections too.
    client.result("BeginSelections", [["/qListObjectDef"]], box)
    client.result("SelectListObjectValues", ["/qListObjectDef", [code("Customer", "c")]], box)
    client.result("ResetMadeSelections", [], box)
    assert selected(client, box) == ["a"]
    client.result("EndSelections", [True], box)


def test_unknown_states_answer_errors(qix: tuple[QixClient, int]) -> None:
    client, doc = qix
    for method, params in (
        ("GetField", ["Customer", "nope"]),
        ("ClearAll", [False, "nope"]),
        ("LockAll", ["nope"]),
        ("UnlockAll", ["nope"]),
        ("AddSessionAlternateState", ["S9", "nope"]),
    ):
        with pytest.raises(QixError) as caught:
            client.result(method, params, doc)
        assert caught.value.code == 2, method
    with pytest.raises(QixError) as bad_type:
        client.result("CreateSessionObject", [{"qStateName": 7}], doc)
    assert bad_type.value.code == 8
    # An object in a state the session lacks: a layout error, no data; selecting: error 2.
    box = client.handle_of("CreateSessionObject", [listbox("Customer", "nope")], doc)
    table = client.handle_of("CreateSessionObject", [cube("nope")], doc)
    shown = layout(client, box)["qListObject"]
    assert shown["qDimensionInfo"]["qError"]["qErrorCode"] == 2
    assert shown["qSize"]["qcy"] == 0
    hypercube = layout(client, table)["qHyperCube"]
    assert hypercube["qError"]["qErrorCode"] == 2
    assert hypercube["qSize"]["qcy"] == 0
    with pytest.raises(QixError) as select:
        client.result("SelectListObjectValues", ["/qListObjectDef", [0]], box)
    assert select.value.code == 2
    with pytest.raises(QixError) as select_cube:
        client.result("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [0]], table)
    assert select_cube.value.code == 2
    # Once the state exists the same objects compute; removed again, a field handle fails.
    client.result("AddAlternateState", ["nope"], doc)
    assert cube_rows(client, table) == sums()
    field = client.handle_of("GetField", ["Customer", "nope"], doc)
    client.result("RemoveAlternateState", ["nope"], doc)
    with pytest.raises(QixError) as gone:
        client.result("Select", ["a"], field)
    assert gone.value.code == 2
