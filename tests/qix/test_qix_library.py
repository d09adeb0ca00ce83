"""Master items, variables and bookmarks over QIX: each method, its edges and errors."""

from __future__ import annotations

import pytest
from qixclient import QixClient, QixError

from conftest import QixServer

DIM = {
    "qInfo": {"qType": "dimension"},
    "qDim": {"qFieldDefs": ["Customer"]},
    "qMetaDef": {"title": "Who"},
}
MEASURE = {"qInfo": {"qId": "m1"}, "qMeasure": {"qDef": "Sum(Amount)", "qLabel": "Total"}}


def _cube(dim_id: str, measure_id: str) -> dict[str, object]:
    return {
        "qInfo": {"qType": "chart"},
        "qHyperCubeDef": {
            "qDimensions": [{"qLibraryId": dim_id, "qDef": {"cId": "d"}}],
            "qMeasures": [{"qLibraryId": measure_id}],
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": 10}],
        },
    }


def _rows(layout: dict) -> list[list[str]]:
    return [[c["qText"] for c in row] for row in layout["qHyperCube"]["qDataPages"][0]["qMatrix"]]


def test_master_items_are_made_read_changed_and_used_by_cubes(
    qix_server: QixServer, app_id: str
) -> None:
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        doc = qix.open_doc(app_id)
        made = qix.result("CreateDimension", [DIM], doc)
        dim_id = made["qInfo"]["qId"]
        assert made["qInfo"]["qType"] == "dimension"
        assert made["qReturn"]["qType"] == "GenericDimension"
        dim = made["qReturn"]["qHandle"]
        measure = qix.result("CreateMeasure", [MEASURE], doc)
        assert measure["qInfo"] == {"qId": "m1", "qType": "measure"}
        # The same handle each time it is asked for.
        assert qix.handle_of("GetDimension", [dim_id], doc) == dim
        layout = qix.result("GetLayout", [], dim)["qLayout"]
        assert layout["qDim"]["qFieldDefs"] == ["Customer"]
        assert layout["qMeta"]["title"] == "Who"
        assert qix.result("GetDimension", [], dim)["qDim"]["qFieldDefs"] == ["Customer"]
        chart = qix.handle_of("CreateSessionObject", [_cube(dim_id, "m1")], doc)
        cube = qix.result("GetLayout", [], chart)["qLayout"]["qHyperCube"]
        assert [d["qFallbackTitle"] for d in cube["qDimensionInfo"]] == ["Who"]
        assert cube["qDimensionInfo"][0]["cId"] == "d"
        assert cube["qMeasureInfo"][0]["qFallbackTitle"] == "Total"
        assert _rows({"qHyperCube": cube}) == [
            ["a", "15"],
            ["b", "21"],
            ["c", "7"],
            ["d", "3"],
            ["e", "0"],
        ]
        # Changing the master item changes the chart at its next layout.
        qix.result(
            "ApplyPatches",
            [[{"qOp": "replace", "qPath": "/qDim/qFieldDefs/0", "qValue": '"Region"'}]],
            dim,
        )
        assert qix.result("GetDimension", [], dim)["qDim"]["qFieldDefs"] == ["Region"]
        layout = qix.result("GetLayout", [], chart)["qLayout"]
        assert _rows(layout) == [["North", "22"], ["South", "21"], ["West", "0"], ["-", "3"]]
        qix.result(
            "SetProperties",
            [{"qMeasure": {"qDef": "Count(OrderId)"}}],
            measure["qReturn"]["qHandle"],
        )
        layout = qix.result("GetLayout", [], chart)["qLayout"]
        assert _rows(layout) == [["North", "3"], ["South", "2"], ["West", "0"], ["-", "1"]]
        # A list object can name a master dimension too.
        lst = qix.handle_of(
            "CreateSessionObject",
            [
                {
                    "qInfo": {"qType": "l"},
                    "qListObjectDef": {
                        "qLibraryId": dim_id,
                        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 9}],
                    },
                }
            ],
            doc,
        )
        values = qix.result("GetLayout", [], lst)["qLayout"]["qListObject"]["qDataPages"][0]
        assert sorted(r[0]["qText"] for r in values["qMatrix"]) == ["North", "South", "West"]
        linked = qix.result("GetLinkedObjects", [], dim)["qItems"]
        assert {i["qInfo"]["qId"] for i in linked} == {
            qix.result("GetInfo", [], chart)["qInfo"]["qId"],
            qix.result("GetInfo", [], lst)["qInfo"]["qId"],
        }
        # Lists.
        listing = qix.handle_of(
            "CreateSessionObject",
            [
                {
                    "qInfo": {"qType": "DimensionList"},
                    "qDimensionListDef": {
                        "qType": "dimension",
                        "qData": {"title": "/qMetaDef/title", "f": "/qDim/qFieldDefs/0"},
                    },
                }
            ],
            doc,
        )
        items = qix.result("GetLayout", [], listing)["qLayout"]["qDimensionList"]["qItems"]
        assert [(i["qInfo"]["qId"], i["qData"]) for i in items] == [
            (dim_id, {"title": None, "f": "Region"})
        ] or [(i["qInfo"]["qId"], i["qData"]["f"]) for i in items] == [(dim_id, "Region")]
        # Destroying: the handle closes; a second destroy answers false; get answers 2.
        gone = qix.call("DestroyDimension", [dim_id], doc)
        assert gone["result"] == {"qSuccess": True}
        assert gone["close"] == [dim]
        assert qix.result("DestroyDimension", [dim_id], doc) == {"qSuccess": False}
        with pytest.raises(QixError) as missing:
            qix.result("GetDimension", [dim_id], doc)
        assert missing.value.code == 2
        with pytest.raises(QixError) as closed:
            qix.result("GetLayout", [], dim)
        assert closed.value.code == -32602
        assert qix.result("GetLayout", [], listing)["qLayout"]["qDimensionList"]["qItems"] == []
        # A measure is not a dimension.
        with pytest.raises(QixError) as wrong_kind:
            qix.result("GetDimension", ["m1"], doc)
        assert wrong_kind.value.code == 2


def test_master_item_errors(qix_server: QixServer, app_id: str) -> None:
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        doc = qix.open_doc(app_id)
        for method, prop, parameter in [
            ("CreateDimension", {"qDim": {}}, "qDim.qFieldDefs"),
            ("CreateDimension", {}, "qDim"),
            ("CreateMeasure", {"qMeasure": {"qDef": " "}}, "qMeasure.qDef"),
            ("CreateMeasure", {"qMeasure": 3}, "qMeasure"),
        ]:
            with pytest.raises(QixError) as bad:
                qix.result(method, [prop], doc)
            assert (bad.value.code, bad.value.parameter) == (8, parameter)
        with pytest.raises(QixError) as deep:
            qix.result(
                "CreateMeasure", [{"qMeasure": {"qDef": "1", "x": {"y": float("nan")}}}], doc
            )
        assert deep.value.code == -32602
        # An unknown library id in a cube is error 2; nothing is made.
        with pytest.raises(QixError) as unknown:
            qix.result("CreateSessionObject", [_cube("nope", "nope")], doc)
        assert unknown.value.code == 2
        assert qix.result("DestroyMeasure", ["nope"], doc) == {"qSuccess": False}
        # Methods of the types' schema that assoc does not implement answer 20.
        dim = qix.result("CreateDimension", [DIM], doc)["qReturn"]["qHandle"]
        with pytest.raises(QixError) as later:
            qix.result("StepCycle", [1], dim)
        assert later.value.code == 20


def test_variables(qix_server: QixServer, app_id: str) -> None:
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        doc = qix.open_doc(app_id)
        made = qix.result(
            "CreateVariableEx", [{"qName": "vLimit", "qDefinition": "10", "qComment": "c"}], doc
        )
        var_id, var = made["qInfo"]["qId"], made["qReturn"]["qHandle"]
        assert made["qReturn"]["qType"] == "GenericVariable"
        layout = qix.result("GetLayout", [], var)["qLayout"]
        assert (layout["qText"], layout["qNum"], layout["qIsScriptCreated"]) == ("10", 10, False)
        qix.result("SetStringValue", ["north"], var)
        layout = qix.result("GetLayout", [], var)["qLayout"]
        assert (layout["qText"], layout["qNum"]) == ("north", "NaN")
        qix.result("SetNumValue", [2.5], var)
        assert qix.result("GetProperties", [], var)["qProp"]["qDefinition"] == "2.5"
        assert qix.handle_of("GetVariableByName", ["vLimit"], doc) == var
        assert qix.handle_of("GetVariableById", [var_id], doc) == var
        session_var = qix.handle_of(
            "CreateSessionVariable", [{"qName": "vTmp", "qDefinition": "x"}], doc
        )
        assert qix.result("GetLayout", [], session_var)["qLayout"]["qText"] == "x"
        # Names are unique (exact case); a missing or empty name, a non-string definition: 8.
        for prop in (
            {"qName": "vLimit"},
            {"qName": ""},
            {"qDefinition": "1"},
            {"qName": "v2", "qDefinition": 3},
        ):
            with pytest.raises(QixError) as bad:
                qix.result("CreateVariableEx", [prop], doc)
            assert bad.value.code == 8
        with pytest.raises(QixError) as rename:
            qix.result("SetProperties", [{"qName": "vTmp"}], var)
        assert rename.value.code == 8
        with pytest.raises(QixError) as not_number:
            qix.result("SetNumValue", ["1"], var)
        assert not_number.value.code == -32602
        listing = qix.handle_of(
            "CreateSessionObject",
            [
                {
                    "qInfo": {"qType": "VariableList"},
                    "qVariableListDef": {"qType": "variable", "qData": {"d": "/qDefinition"}},
                }
            ],
            doc,
        )
        items = qix.result("GetLayout", [], listing)["qLayout"]["qVariableList"]["qItems"]
        assert [(i["qName"], i["qDefinition"], i["qData"]["d"]) for i in items] == [
            ("vLimit", "2.5", "2.5"),
            ("vTmp", "x", "x"),
        ]
        assert qix.result("DestroyVariableByName", ["vTmp"], doc) == {"qSuccess": True}
        assert qix.result("DestroyVariableByName", ["vTmp"], doc) == {"qSuccess": False}
        assert qix.result("DestroyVariableById", [var_id], doc) == {"qSuccess": True}
        with pytest.raises(QixError) as gone:
            qix.result("GetVariableByName", ["vLimit"], doc)
        assert gone.value.code == 2


def test_script_variables_are_listed_after_a_reload(qix_server: QixServer) -> None:
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        doc = qix.handle_of("CreateSessionApp")
        qix.result(
            "SetScript",
            ["SET vColor = 'red';\nLET vTwo = 1 + 1;\nT: LOAD 1 AS A AUTOGENERATE 1;"],
            doc,
        )
        assert qix.result("DoReload", [], doc)["qReturn"] is True
        var = qix.handle_of("GetVariableByName", ["vTwo"], doc)
        layout = qix.result("GetLayout", [], var)["qLayout"]
        assert (layout["qText"], layout["qNum"], layout["qIsScriptCreated"]) == ("2", 2, True)
        listing = qix.handle_of(
            "CreateSessionObject",
            [{"qInfo": {"qType": "V"}, "qVariableListDef": {"qType": "variable"}}],
            doc,
        )
        items = qix.result("GetLayout", [], listing)["qLayout"]["qVariableList"]["qItems"]
        names = {i["qName"]: i["qIsScriptCreated"] for i in items}
        assert names["vColor"] is True
        assert names["vTwo"] is True


def test_bookmarks_keep_and_apply_selections(qix_server: QixServer, app_id: str) -> None:
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        doc = qix.open_doc(app_id)
        region = qix.handle_of("GetField", ["Region"], doc)
        assert qix.result("SelectValues", [[{"qText": "North"}]], region)["qReturn"] is True
        made = qix.result("CreateBookmark", [{"qMetaDef": {"title": "North only"}}], doc)
        bm_id, bm = made["qInfo"]["qId"], made["qReturn"]["qHandle"]
        assert made["qInfo"]["qType"] == "bookmark"
        layout = qix.result("GetLayout", [], bm)["qLayout"]
        items = layout["qBookmark"]["qStateData"][0]["qFieldItems"]
        assert [(i["qDef"]["qName"], [v["qText"] for v in i["qValues"]]) for i in items] == [
            ("Region", ["North"])
        ]
        qix.result("ClearAll", [], doc)
        applied = qix.call("ApplyBookmark", [bm_id], doc)
        assert applied["result"] == {"qSuccess": True}
        assert region in applied["change"]
        listing = qix.handle_of(
            "CreateSessionObject", [{"qInfo": {"qType": "S"}, "qSelectionObjectDef": {}}], doc
        )
        sel = qix.result("GetLayout", [], listing)["qLayout"]["qSelectionObject"]["qSelections"]
        assert [(s["qField"], s["qSelected"]) for s in sel] == [("Region", "North")]
        # Back undoes the whole bookmark in one step.
        qix.result("Back", [], doc)
        assert (
            qix.result("GetLayout", [], listing)["qLayout"]["qSelectionObject"]["qSelections"] == []
        )
        assert qix.result("Apply", [], bm) == {"qSuccess": True}
        listed = qix.result(
            "GetBookmarks", [{"qTypes": ["bookmark"], "qData": {"t": "/qMeta/title"}}], doc
        )
        assert [(b["qInfo"]["qId"], b["qData"]["t"]) for b in listed["qList"]] == [
            (bm_id, "North only")
        ]
        # A locked field: applying changes nothing and answers false.
        qix.result("LockAll", [], doc)
        assert qix.result("ApplyBookmark", [bm_id], doc) == {"qSuccess": False}
        qix.result("UnlockAll", [], doc)
        assert qix.result("ApplyBookmark", ["nope"], doc) == {"qSuccess": False}
        assert qix.result("DestroyBookmark", [bm_id], doc) == {"qSuccess": True}
        assert qix.result("GetBookmarks", [{}], doc) == {"qList": []}
