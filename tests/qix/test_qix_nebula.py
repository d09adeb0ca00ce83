"""What Qlik's front-end (nebula.js stardust and the sn-* charts) needs of generic objects,
against a real `assoc serve`: selection mode, properties and patches, child objects, the
selection methods of cubes, list objects, fields and the Doc, and the list object kinds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from qixclient import QixClient

from conftest import ORDERS, QixServer, symbols

pytestmark = pytest.mark.server

CUSTOMER = symbols("Customer")  # a b c d e
REGION = symbols("Region")  # North South West


@pytest.fixture
def qix(qix_server: QixServer, app_id: str) -> Iterator[QixClient]:
    with QixClient(qix_server.ws_base + "/app/engineData") as client:
        client.open_doc(app_id)
        yield client


def listbox(field: str, **more: Any) -> dict[str, Any]:
    return {
        "qInfo": {"qType": "njsListbox"},
        "qListObjectDef": {
            "qDef": {"qFieldDefs": [field], "qSortCriterias": [{"qSortByLoadOrder": 1}]},
            "qShowAlternatives": True,
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 50}],
        },
        **more,
    }


def bar(**more: Any) -> dict[str, Any]:
    return {
        "qInfo": {"qType": "barchart"},
        "visualization": "barchart",
        "color": {"auto": True},
        "qHyperCubeDef": {
            "qDimensions": [
                {
                    "qDef": {
                        "qFieldDefs": ["Customer"],
                        "cId": "dim1",
                        "textAlign": {"auto": True},
                        "qSortCriterias": [{"qSortByAscii": 1}],
                    }
                }
            ],
            "qMeasures": [{"qDef": {"qDef": "=Sum(Amount)", "cId": "m1", "isCustomFormatted": 0}}],
            "qInterColumnSortOrder": [0, 1],
            "qInitialDataFetch": [{"qWidth": 2, "qHeight": 50}],
        },
        **more,
    }


def states(qix: QixClient, obj: int) -> dict[object, str]:
    layout = qix.result("GetLayout", [], obj)["qLayout"]
    rows = layout["qListObject"]["qDataPages"][0]["qMatrix"]
    return {
        symbols(layout["qListObject"]["qDimensionInfo"]["qGroupFieldDefs"][0])[
            r[0]["qElemNumber"]
        ]: r[0]["qState"]
        for r in rows
    }


def selected(qix: QixClient) -> dict[str, str]:
    """The current selections as the selection object shows them: field -> qSelected."""
    obj = qix.handle_of(
        "CreateSessionObject", [{"qInfo": {"qType": "cs"}, "qSelectionObjectDef": {}}], 1
    )
    layout = qix.result("GetLayout", [], obj)["qLayout"]
    qix.result("DestroySessionObject", [layout["qInfo"]["qId"]], 1)
    return {s["qField"]: s["qSelected"] for s in layout["qSelectionObject"]["qSelections"]}


def error(answer: dict[str, Any]) -> tuple[int, str]:
    return answer["error"]["code"], answer["error"]["parameter"]


# ---- selection mode ---------------------------------------------------------------------


def test_cancelled_selections_return_to_the_state_at_begin(qix: QixClient) -> None:
    chart = qix.handle_of("CreateSessionObject", [bar()], 1)
    region = qix.handle_of("CreateSessionObject", [listbox("Region")], 1)
    qix.result("SelectListObjectValues", ["/qListObjectDef", [REGION.index("North")]], region)
    begun = qix.call("BeginSelections", [["/qHyperCubeDef"]], chart)
    assert begun["result"] == {}
    assert begun["change"] == [chart]
    layout = qix.result("GetLayout", [], chart)["qLayout"]
    assert layout["qSelectionInfo"] == {"qInSelections": True, "qMadeSelections": False}

    answer = qix.call(
        "SelectHyperCubeValues", ["/qHyperCubeDef", 0, [CUSTOMER.index("a")], False], chart
    )
    assert answer["result"] == {"qSuccess": True}
    assert sorted(answer["change"]) == [1, chart, region]
    layout = qix.result("GetLayout", [], chart)["qLayout"]
    assert layout["qSelectionInfo"] == {"qInSelections": True, "qMadeSelections": True}
    other = qix.result("GetLayout", [], region)["qLayout"]["qSelectionInfo"]
    assert other == {"qInSelections": False, "qMadeSelections": False}
    assert selected(qix) == {"Region": "North", "Customer": "a"}

    cancelled = qix.call("EndSelections", [False], chart)
    assert cancelled["result"] == {}
    assert sorted(cancelled["change"]) == [1, chart, region]
    assert selected(qix) == {"Region": "North"}
    layout = qix.result("GetLayout", [], chart)["qLayout"]
    assert layout["qSelectionInfo"]["qInSelections"] is False
    # Cancelled selections leave no step behind: Back goes to before North.
    qix.result("Back", [], 1)
    assert selected(qix) == {}


def test_accepted_selections_stay_and_reset_undoes_made_ones(qix: QixClient) -> None:
    chart = qix.handle_of("CreateSessionObject", [bar()], 1)
    qix.result("BeginSelections", [["/qHyperCubeDef"]], chart)
    qix.result("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [CUSTOMER.index("b")], False], chart)
    reset = qix.call("ResetMadeSelections", [], chart)
    assert chart in reset["change"]
    assert selected(qix) == {}
    layout = qix.result("GetLayout", [], chart)["qLayout"]
    assert layout["qSelectionInfo"] == {"qInSelections": True, "qMadeSelections": False}
    qix.result("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [CUSTOMER.index("c")], False], chart)
    accepted = qix.call("EndSelections", [True], chart)
    assert accepted["change"] == [chart]  # the selection was announced when it was made
    assert selected(qix) == {"Customer": "c"}
    # Not in selection mode: EndSelections changes nothing, ResetMadeSelections is 6002.
    assert qix.call("EndSelections", [False], chart)["result"] == {}
    assert selected(qix) == {"Customer": "c"}
    assert error(qix.call("ResetMadeSelections", [], chart))[0] == 6002


def test_one_object_at_a_time_is_in_selection_mode(qix: QixClient) -> None:
    chart = qix.handle_of("CreateSessionObject", [bar()], 1)
    region = qix.handle_of("CreateSessionObject", [listbox("Region")], 1)
    assert error(qix.call("BeginSelections", [["/qListObjectDef"]], chart)) == (
        2,
        "/qListObjectDef",
    )
    assert error(qix.call("BeginSelections", [[1]], chart))[0] == -32602
    qix.result("BeginSelections", [["/qHyperCubeDef"]], chart)
    qix.result("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [CUSTOMER.index("d")], False], chart)
    qix.result("BeginSelections", [["/qHyperCubeDef"]], chart)  # again: still the first state
    assert error(qix.call("BeginSelections", [["/qListObjectDef"]], region))[0] == 6003
    # Doc.AbortModal ends it (the retry stardust makes after 6003).
    aborted = qix.call("AbortModal", [False], 1)
    assert chart in aborted["change"]
    assert selected(qix) == {}
    assert qix.call("AbortModal", [True], 1)["result"] == {}  # nothing modal: nothing to do
    qix.result("BeginSelections", [["/qListObjectDef"]], region)
    qix.result("SelectListObjectValues", ["/qListObjectDef", [REGION.index("West")], True], region)
    qix.result("AbortModal", [True], 1)
    assert selected(qix) == {"Region": "West"}
    # A destroyed object leaves selection mode with it.
    qix.result("BeginSelections", [["/qListObjectDef"]], region)
    region_id = qix.result("GetInfo", [], region)["qInfo"]["qId"]
    qix.result("DestroySessionObject", [region_id], 1)
    qix.result("BeginSelections", [["/qHyperCubeDef"]], chart)


# ---- properties -------------------------------------------------------------------------


def test_properties_and_layouts_echo_what_clients_set(qix: QixClient) -> None:
    props = bar(
        qLayoutExclude={"qHyperCubeDef": {"qDimensions": [{"qDef": {"qFieldDefs": ["Nope"]}}]}}
    )
    chart = qix.handle_of("CreateSessionObject", [props], 1)
    info = qix.result("GetInfo", [], chart)["qInfo"]
    assert info["qType"] == "barchart"
    got = qix.result("GetProperties", [], chart)["qProp"]
    assert got["qInfo"] == info
    assert got["qLayoutExclude"] == props["qLayoutExclude"]
    assert got["color"] == {"auto": True}
    assert qix.result("GetEffectiveProperties", [], chart)["qProp"] == got
    layout = qix.result("GetLayout", [], chart)["qLayout"]
    assert "qLayoutExclude" not in layout
    assert layout["visualization"] == "barchart"
    assert layout["color"] == {"auto": True}
    dim = layout["qHyperCube"]["qDimensionInfo"][0]
    assert dim["cId"] == "dim1"
    assert dim["textAlign"] == {"auto": True}
    assert "qSortCriterias" not in dim
    measure = layout["qHyperCube"]["qMeasureInfo"][0]
    assert (measure["cId"], measure["isCustomFormatted"]) == ("m1", 0)

    changed = dict(got, color={"auto": False}, qInfo={"qId": "other", "qType": ""})
    answer = qix.call("SetProperties", [changed], chart)
    assert answer["result"] == {}
    assert answer["change"] == [chart]
    after = qix.result("GetProperties", [], chart)["qProp"]
    assert after["color"] == {"auto": False}
    assert after["qInfo"] == info  # the id stays; no type given keeps the type


@pytest.mark.parametrize("method", ["SetProperties", "CreateChild"])
def test_properties_keep_their_depth_and_number_checks(qix: QixClient, method: str) -> None:
    chart = qix.handle_of("CreateSessionObject", [bar()], 1)
    deep: Any = 1
    for _ in range(100):
        deep = {"a": deep}
    answer = qix.call(method, [{"qInfo": {"qType": "x"}, "deep": deep}], chart)
    assert error(answer) == (-32602, "qProp")
    frame = json.dumps({"jsonrpc": "2.0", "id": 7, "handle": chart, "method": method})
    frame = frame[:-1] + ', "params": [{"qInfo": {"qType": "x"}, "n": [1, NaN]}]}'
    assert error(qix.send_raw(frame)) == (-32602, "qProp/n/1")
    assert qix.result("GetProperties", [], chart)["qProp"]["color"] == {"auto": True}
    assert qix.result("GetChildInfos", [], chart)["qInfos"] == []


def test_patches_hard_and_soft(qix: QixClient) -> None:
    chart = qix.handle_of("CreateSessionObject", [bar(**{"a/b": {"m~n": 1}, "list": [1, 2]})], 1)
    patches = [
        {"qOp": "Replace", "qPath": "/qHyperCubeDef/qInterColumnSortOrder", "qValue": "[1,0]"},
        {
            "qOp": "replace",
            "qPath": "/qHyperCubeDef/qDimensions/0/qDef/qReverseSort",
            "qValue": "true",
        },
        {"qOp": "ADD", "qPath": "/a~1b/m~0n", "qValue": "2"},
        {"qOp": "add", "qPath": "/list/-", "qValue": '{"x":3}'},
        {"qOp": "add", "qPath": "/list/0", "qValue": "0"},
        {"qOp": "Remove", "qPath": "/color"},
    ]
    answer = qix.call("ApplyPatches", [patches, True], chart)
    assert answer["result"] == {}
    assert answer["change"] == [chart]
    effective = qix.result("GetEffectiveProperties", [], chart)["qProp"]
    assert effective["qHyperCubeDef"]["qInterColumnSortOrder"] == [1, 0]
    assert effective["qHyperCubeDef"]["qDimensions"][0]["qDef"]["qReverseSort"] is True
    assert effective["a/b"] == {"m~n": 2}
    assert effective["list"] == [0, 1, 2, {"x": 3}]
    assert "color" not in effective
    # Soft patches change the layout, not the properties.
    layout = qix.result("GetLayout", [], chart)["qLayout"]
    assert layout["qHyperCube"]["qEffectiveInterColumnSortOrder"] == [1, 0]
    assert "color" not in layout
    assert qix.result("GetProperties", [], chart)["qProp"]["color"] == {"auto": True}
    # A hard patch changes the properties; the soft ones stay on top.
    qix.result(
        "ApplyPatches", [[{"qOp": "replace", "qPath": "/visualization", "qValue": '"pie"'}]], chart
    )
    assert qix.result("GetProperties", [], chart)["qProp"]["visualization"] == "pie"
    assert "color" not in qix.result("GetEffectiveProperties", [], chart)["qProp"]
    qix.result("ClearSoftPatches", [], chart)
    effective = qix.result("GetEffectiveProperties", [], chart)["qProp"]
    assert effective == qix.result("GetProperties", [], chart)["qProp"]
    assert effective["color"] == {"auto": True}
    assert effective["qInfo"]["qType"] == "barchart"


@pytest.mark.parametrize(
    ("patch", "parameter"),
    [
        ({"qOp": "move", "qPath": "/color", "qValue": "1"}, "/color"),
        ({"qOp": "add", "qPath": "color", "qValue": "1"}, "color"),
        ({"qOp": "add", "qPath": "/", "qValue": "1"}, "/"),
        ({"qOp": "add", "qPath": "/missing/x", "qValue": "1"}, "/missing/x"),
        ({"qOp": "remove", "qPath": "/missing"}, "/missing"),
        ({"qOp": "replace", "qPath": "/list/2", "qValue": "1"}, "/list/2"),
        ({"qOp": "add", "qPath": "/list/x", "qValue": "1"}, "/list/x"),
        ({"qOp": "add", "qPath": "/list/01", "qValue": "1"}, "/list/01"),
        ({"qOp": "add", "qPath": "/visualization/x", "qValue": "1"}, "/visualization/x"),
        ({"qOp": "add", "qPath": "/x", "qValue": "{nope"}, "/x"),
        ({"qOp": "add", "qPath": "/x", "qValue": 1}, "/x"),
        ({"qOp": "add", "qPath": "/x", "qValue": "[1, NaN]"}, "qValue/x/1"),
        ({"qOp": "add", "qPath": "/x", "qValue": "[" * 100 + "]" * 100}, "qPatches"),
        ({"qOp": "add", "qPath": "/x", "qValue": "[" * 5000 + "]" * 5000}, "/x"),
    ],
)
def test_bad_patches_change_nothing(qix: QixClient, patch: dict[str, Any], parameter: str) -> None:
    chart = qix.handle_of("CreateSessionObject", [bar(list=[1, 2])], 1)
    before = qix.result("GetProperties", [], chart)["qProp"]
    good = {"qOp": "add", "qPath": "/added", "qValue": "1"}
    for soft in (False, True):
        answer = qix.call("ApplyPatches", [[good, patch], soft], chart)
        assert error(answer) == (-32602, parameter)
        assert "change" not in answer
    assert qix.result("GetProperties", [], chart)["qProp"] == before
    assert qix.result("GetEffectiveProperties", [], chart)["qProp"] == before


def test_patches_that_break_a_definition_are_refused(qix: QixClient) -> None:
    chart = qix.handle_of("CreateSessionObject", [bar()], 1)
    patch = {"qOp": "replace", "qPath": "/qHyperCubeDef/qInterColumnSortOrder", "qValue": "[5]"}
    assert error(qix.call("ApplyPatches", [[patch]], chart))[0] == 8
    order = qix.result("GetProperties", [], chart)["qProp"]["qHyperCubeDef"][
        "qInterColumnSortOrder"
    ]
    assert order == [0, 1]


# ---- child objects ----------------------------------------------------------------------


def test_filter_pane_children_from_a_full_property_tree(qix: QixClient) -> None:
    pane = qix.handle_of(
        "CreateSessionObject",
        [{"qInfo": {"qType": "filterpane"}, "qChildListDef": {"qData": {"title": "/title"}}}],
        1,
    )
    tree = {
        "qProperty": {
            "qInfo": {"qType": "filterpane"},
            "qChildListDef": {"qData": {"title": "/title"}},
            "v": 2,
        },
        "qChildren": [
            {"qProperty": listbox("Region", title="R", qStateName=""), "qChildren": []},
            {
                "qProperty": dict(
                    listbox("Customer", title="C"), qInfo={"qId": "cust", "qType": "njsListbox"}
                ),
                "qChildren": [],
            },
        ],
    }
    answer = qix.call("SetFullPropertyTree", [tree], pane)
    assert answer["result"] == {}
    layout = qix.result("GetLayout", [], pane)["qLayout"]
    items = layout["qChildList"]["qItems"]
    assert [i["qData"] for i in items] == [{"title": "R"}, {"title": "C"}]
    assert items[1]["qInfo"] == {"qId": "cust", "qType": "njsListbox"}
    assert layout["v"] == 2
    assert "qChildListDef" not in layout
    ids = [i["qInfo"]["qId"] for i in items]
    assert qix.result("GetChildInfos", [], pane)["qInfos"] == [i["qInfo"] for i in items]
    # Children open like any object, by id from the Doc or from their parent.
    child = qix.handle_of("GetObject", [ids[0]], 1)
    assert qix.handle_of("GetChild", [ids[0]], pane) == child
    assert qix.handle_of("GetParent", [], child) == pane
    assert error(qix.call("GetParent", [], pane)) == (2, layout["qInfo"]["qId"])
    assert qix.call("GetChild", ["nope"], pane)["error"]["message"] == "Object not found"
    assert qix.result("GetLayout", [], child)["qLayout"]["qListObject"]["qSize"]["qcy"] == len(
        REGION
    )
    full = qix.result("GetFullPropertyTree", [], pane)["qPropEntry"]
    assert [c["qProperty"]["title"] for c in full["qChildren"]] == ["R", "C"]
    assert full["qProperty"]["v"] == 2

    # Setting the tree again keeps children by id, makes new ones and destroys missing ones.
    tree["qChildren"] = [
        tree["qChildren"][1],
        {"qProperty": listbox("Amount", title="A"), "qChildren": []},
    ]
    tree["qChildren"][0]["qProperty"]["title"] = "C2"
    answer = qix.call("SetFullPropertyTree", [tree], pane)
    assert answer["close"] == [child]
    items = qix.result("GetLayout", [], pane)["qLayout"]["qChildList"]["qItems"]
    assert [i["qData"]["title"] for i in items] == ["C2", "A"]
    assert items[0]["qInfo"]["qId"] == "cust"
    # A bad child anywhere changes nothing.
    bad = {
        "qProperty": {"qInfo": {"qType": "x"}},
        "qChildren": [{"qProperty": {"n": 1e400}, "qChildren": []}],
    }
    assert error(qix.call("SetFullPropertyTree", [bad], pane))[0] == -32602
    assert len(qix.result("GetChildInfos", [], pane)["qInfos"]) == 2
    assert error(qix.call("SetFullPropertyTree", [{"qChildren": []}], pane))[0] == -32602

    # Destroying the parent closes its children.
    closed = qix.call("DestroySessionObject", [layout["qInfo"]["qId"]], 1)["close"]
    assert len(closed) == 3
    assert qix.call("GetObject", ["cust"], 1)["error"]["code"] == 2


def test_create_and_destroy_children(qix: QixClient) -> None:
    parent = qix.handle_of(
        "CreateSessionObject", [{"qInfo": {"qType": "sheet"}, "qChildListDef": {}}], 1
    )
    made = qix.result(
        "CreateChild",
        [listbox("Region"), {"qInfo": {"qType": "sheet"}, "qChildListDef": {}, "n": 1}],
        parent,
    )
    child_id = made["qInfo"]["qId"]
    assert made["qInfo"]["qType"] == "njsListbox"
    child = made["qReturn"]["qHandle"]
    assert made["qReturn"]["qGenericId"] == child_id
    assert qix.result("GetProperties", [], parent)["qProp"]["n"] == 1
    items = qix.result("GetLayout", [], parent)["qLayout"]["qChildList"]["qItems"]
    assert items == [{"qInfo": made["qInfo"], "qMeta": {}, "qData": {}}]
    changed = qix.call("SetProperties", [listbox("Customer")], child)["change"]
    assert changed == [child, parent]  # the parent lists its children
    assert qix.result("DestroyChild", ["nope"], parent) == {"qSuccess": False}
    answer = qix.call("DestroyChild", [child_id], parent)
    assert answer["result"] == {"qSuccess": True}
    assert answer["close"] == [child]
    assert qix.result("GetChildInfos", [], parent)["qInfos"] == []
    qix.result("CreateChild", [listbox("Region")], parent)
    qix.result("CreateChild", [listbox("Region")], parent)
    assert len(qix.call("DestroyAllChildren", [], parent)["close"]) == 2


# ---- selections -------------------------------------------------------------------------


def test_hypercube_cells_and_ranges(qix: QixClient) -> None:
    # Sum(Amount) by customer, ascii order: a 15, b 21, c 7, d 3, e 0.
    chart = qix.handle_of("CreateSessionObject", [bar()], 1)
    answer = qix.call("SelectHyperCubeCells", ["/qHyperCubeDef", [0, 2, 99], [0, 1]], chart)
    assert answer["result"] == {"qSuccess": True}
    assert 1 in answer["change"]
    assert selected(qix) == {"Customer": "a, c"}
    assert error(qix.call("SelectHyperCubeCells", ["/qHyperCubeDef", [0], [2]], chart)) == (
        8,
        "qColIndices",
    )
    assert qix.result("SelectHyperCubeCells", ["/qHyperCubeDef", [99], [0]], chart) == {
        "qSuccess": False
    }
    assert qix.result("SelectHyperCubeCells", ["/qHyperCubeDef", [0], [1]], chart) == {
        "qSuccess": False
    }
    qix.result("ClearAll", [], 1)

    ranges = [
        {
            "qRange": {"qMin": 7, "qMax": 21, "qMinInclEq": True, "qMaxInclEq": False},
            "qMeasureIx": 0,
        }
    ]
    assert qix.result("RangeSelectHyperCubeValues", ["/qHyperCubeDef", ranges], chart) == {
        "qSuccess": True
    }
    assert selected(qix) == {"Customer": "a, c"}
    qix.result("ClearAll", [], 1)
    two = [
        {
            "qRange": {"qMin": 10, "qMax": 100, "qMinInclEq": True, "qMaxInclEq": True},
            "qMeasureIx": 0,
        },
        {
            "qRange": {"qMin": -1, "qMax": 3, "qMinInclEq": True, "qMaxInclEq": True},
            "qMeasureIx": 0,
        },
    ]
    qix.result("RangeSelectHyperCubeValues", ["/qHyperCubeDef", two, [], True], chart)
    assert selected(qix) == {"Customer": "a, b, d, e"}
    assert qix.result("RangeSelectHyperCubeValues", ["/qHyperCubeDef", two, [0], False], chart) == {
        "qSuccess": False
    }
    assert (
        error(
            qix.call("RangeSelectHyperCubeValues", ["/qHyperCubeDef", [{"qMeasureIx": 3}]], chart)
        )[0]
        == 8
    )
    assert (
        error(qix.call("RangeSelectHyperCubeValues", ["/qHyperCubeDef", ranges, [1]], chart))[0]
        == 8
    )
    bad = [{"qRange": {"qMin": "x"}, "qMeasureIx": 0}]
    assert (
        error(qix.call("RangeSelectHyperCubeValues", ["/qHyperCubeDef", bad], chart))[0] == -32602
    )
    qix.result("ClearAll", [], 1)
    multi = [
        {"qRanges": ranges, "qColumnsToSelect": [0]},
        {"qRanges": two[1:], "qColumnsToSelect": []},
    ]
    assert qix.result("MultiRangeSelectHyperCubeValues", ["/qHyperCubeDef", multi], chart) == {
        "qSuccess": True
    }
    assert selected(qix) == {"Customer": "a, c, d, e"}


def test_state_selections_locks_and_history(qix: QixClient) -> None:
    region = qix.handle_of("CreateSessionObject", [listbox("Region")], 1)
    customer = qix.handle_of("CreateSessionObject", [listbox("Customer")], 1)
    field = qix.handle_of("GetField", ["Customer"], 1)
    qix.result("SelectListObjectValues", ["/qListObjectDef", [REGION.index("North")]], region)
    # North selected: South and West are alternatives, North is what they exclude.
    answer = qix.result("SelectListObjectAlternative", ["/qListObjectDef"], region)
    assert answer == {"qSuccess": True}
    assert selected(qix)["Region"] == "South, West"
    answer = qix.result("SelectListObjectExcluded", ["/qListObjectDef"], region)
    assert answer == {"qSuccess": True}
    assert selected(qix)["Region"] == "North"
    answer = qix.result("SelectListObjectPossible", ["/qListObjectDef"], customer)
    assert answer == {"qSuccess": True}
    assert selected(qix)["Customer"] == "a, c"
    assert qix.result("SelectListObjectAll", ["/qListObjectDef"], region) == {"qSuccess": True}
    assert selected(qix)["Region"] == "North, South, West"
    assert qix.result("SelectAll", [], field) == {"qReturn": True}
    assert qix.result("SelectExcluded", [], field) == {"qReturn": False}  # nothing to invert
    assert qix.result("SelectAlternative", [], field) == {"qReturn": False}
    qix.result("Clear", [], field)
    assert qix.result("SelectPossible", [], field) == {"qReturn": True}
    assert selected(qix)["Customer"] == "a, b, c, e"

    # Locks: a locked field keeps its selection; the selection object and list states say so.
    assert qix.result("Lock", [], field) == {"qReturn": True}
    assert qix.result("LowLevelSelect", [[0], False], field) == {"qReturn": False}
    assert qix.result("SelectListObjectValues", ["/qListObjectDef", [0]], customer) == {
        "qSuccess": False
    }
    assert qix.result("Clear", [], field) == {"qReturn": False}
    qix.result("ClearAll", [], 1)
    assert selected(qix) == {"Customer": "a, b, c, e"}
    cs = qix.handle_of(
        "CreateSessionObject", [{"qInfo": {"qType": "cs"}, "qSelectionObjectDef": {}}], 1
    )
    entry = qix.result("GetLayout", [], cs)["qLayout"]["qSelectionObject"]["qSelections"][0]
    assert entry["qLocked"] is True
    assert entry["qStateCounts"]["qLocked"] == 4
    assert entry["qSelectedFieldSelectionInfo"][0] == {
        "qName": "a",
        "qFieldSelectionMode": "LOCKED",
    }
    assert qix.result("Unlock", [], field) == {"qReturn": True}
    assert qix.result("Unlock", [], field) == {"qReturn": False}
    qix.result("LockAll", [], 1)
    assert qix.result("SelectAll", [], field) == {"qReturn": False}
    qix.result("UnlockAll", [], 1)
    qix.result("Lock", ["/qListObjectDef"], customer)
    qix.result("ClearAll", [True], 1)  # locked also
    assert selected(qix) == {}
    qix.result("Unlock", ["/qListObjectDef"], customer)

    # History: Back and Forward walk the steps; the selection object counts them.
    qix.result("SelectListObjectValues", ["/qListObjectDef", [REGION.index("West")]], region)
    qix.result("SelectListObjectValues", ["/qListObjectDef", [CUSTOMER.index("e")]], customer)
    layout = qix.result("GetLayout", [], cs)["qLayout"]["qSelectionObject"]
    back_count = layout["qBackCount"]
    assert layout["qForwardCount"] == 0
    answer = qix.call("Back", [], 1)
    assert sorted(answer["change"]) == sorted([1, region, customer, field, cs])
    assert selected(qix) == {"Region": "West"}
    layout = qix.result("GetLayout", [], cs)["qLayout"]["qSelectionObject"]
    assert (layout["qBackCount"], layout["qForwardCount"]) == (back_count - 1, 1)
    qix.result("Forward", [], 1)
    assert selected(qix) == {"Region": "West", "Customer": "e"}
    assert "change" not in qix.call("Forward", [], 1)  # nothing to redo: nothing changes


def test_object_kinds_for_the_toolbar(qix: QixClient) -> None:
    assert error(qix.call("GetObject", ["FieldList"], 1)) == (2, "FieldList")
    props = {
        "qInfo": {"qId": "FieldList", "qType": "FieldList"},
        "qFieldListDef": {
            "qShowSystem": False,
            "qShowHidden": False,
            "qShowSrcTables": True,
            "qShowSemantic": True,
        },
    }
    answer = qix.result("CreateSessionObject", [props], 1)["qReturn"]
    assert (answer["qGenericId"], answer["qGenericType"]) == ("FieldList", "FieldList")
    fields = qix.handle_of("GetObject", ["FieldList"], 1)
    items = qix.result("GetLayout", [], fields)["qLayout"]["qFieldList"]["qItems"]
    assert {i["qName"] for i in items} == {"OrderId", "Customer", "Amount", "Region"}
    for kind, key in [
        ("qDimensionListDef", "qDimensionList"),
        ("qMeasureListDef", "qMeasureList"),
        ("qBookmarkListDef", "qBookmarkList"),
        ("qVariableListDef", "qVariableList"),
        ("qAppObjectListDef", "qAppObjectList"),
    ]:
        obj = qix.handle_of(
            "CreateSessionObject", [{"qInfo": {"qType": "x"}, kind: {"qType": "x", "qData": {}}}], 1
        )
        assert qix.result("GetLayout", [], obj)["qLayout"][key] == {"qItems": []}
        assert error(qix.call("CreateSessionObject", [{kind: []}], 1))[0] == 8

    cs = qix.handle_of(
        "CreateSessionObject",
        [{"qInfo": {"qType": "cs"}, "qSelectionObjectDef": {"qStateName": "$"}}],
        1,
    )
    empty = qix.result("GetLayout", [], cs)["qLayout"]["qSelectionObject"]
    assert empty["qSelections"] == []
    field = qix.handle_of("GetField", ["OrderId"], 1)
    qix.result("LowLevelSelect", [list(range(len(ORDERS["OrderId"]) - 1))], field)
    entry = qix.result("GetLayout", [], cs)["qLayout"]["qSelectionObject"]["qSelections"][0]
    assert entry["qField"] == "OrderId"
    assert entry["qSelected"] == "1, 2, 3, 4, 5"
    assert entry["qSelectedCount"] == 5
    assert entry["qTotal"] == 6
    assert entry["qStateCounts"]["qSelected"] == 5
    assert [i["qName"] for i in entry["qSelectedFieldSelectionInfo"]] == ["1", "2", "3", "4", "5"]
