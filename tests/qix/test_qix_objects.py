"""QIX objects against a real `assoc serve`: list object states, sorting and paging, selections
through Field and GenericObject methods, field lists, tables and keys, table data, field
descriptions; expected values worked out here from the imported data."""

from __future__ import annotations

from typing import Any

import pytest
from qixclient import QixClient

from conftest import CUSTOMERS, ORDERS, QixServer, symbols

pytestmark = pytest.mark.server


def list_props(field: str, sort: dict[str, int] | None = None, **more: Any) -> dict[str, Any]:
    qdef: dict[str, Any] = {"qFieldDefs": [field]}
    if sort is not None:
        qdef["qSortCriterias"] = [sort]
    return {
        "qInfo": {"qType": "listbox"},
        "qListObjectDef": {
            "qDef": qdef,
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 100}],
            **more,
        },
        "custom": {"kept": [1, 2]},
    }


def cells(layout: dict[str, Any]) -> list[dict[str, Any]]:
    return [row[0] for row in layout["qListObject"]["qDataPages"][0]["qMatrix"]]


def states_by_value(qix: QixClient, obj: int, field: str) -> dict[object, str]:
    layout = qix.result("GetLayout", [], obj)["qLayout"]
    return {symbols(field)[c["qElemNumber"]]: c["qState"] for c in cells(layout)}


def test_list_object_states_follow_selections(qix: QixClient) -> None:
    region = qix.handle_of("CreateSessionObject", [list_props("Region", qShowAlternatives=True)], 1)
    customer = qix.handle_of(
        "CreateSessionObject", [list_props("Customer", qShowAlternatives=True)], 1
    )
    hidden_alt = qix.handle_of("CreateSessionObject", [list_props("Customer")], 1)
    assert set(states_by_value(qix, customer, "Customer").values()) == {"O"}

    north = symbols("Region").index("North")
    answer = qix.call("SelectListObjectValues", ["/qListObjectDef", [north], False], region)
    assert answer["result"] == {"qSuccess": True}
    assert sorted(answer["change"]) == [1, region, customer, hidden_alt]
    # North customers (a, c) are possible; b and e are in other regions; d has no customer row.
    assert states_by_value(qix, region, "Region") == {"North": "S", "South": "A", "West": "A"}
    assert states_by_value(qix, customer, "Customer") == {
        "a": "O", "b": "X", "c": "O", "d": "X", "e": "X"
    }  # fmt: skip

    b = symbols("Customer").index("b")
    qix.result("SelectListObjectValues", ["/qListObjectDef", [b], True], customer)
    # b is selected but North excludes it; a and c would be possible without Customer's selection.
    assert states_by_value(qix, customer, "Customer") == {
        "a": "A", "b": "XS", "c": "A", "d": "X", "e": "X"
    }  # fmt: skip
    assert states_by_value(qix, hidden_alt, "Customer") == {
        "a": "X", "b": "XS", "c": "X", "d": "X", "e": "X"
    }  # fmt: skip
    info = qix.result("GetLayout", [], customer)["qLayout"]["qListObject"]["qDimensionInfo"]
    assert info["qStateCounts"] == {
        "qLocked": 0,
        "qSelected": 0,
        "qOption": 0,
        "qDeselected": 0,
        "qAlternative": 2,
        "qExcluded": 2,
        "qSelectedExcluded": 1,
        "qLockedExcluded": 0,
    }
    assert info["qCardinal"] == len(symbols("Customer"))

    clear = qix.call("ClearSelections", ["/qListObjectDef"], region)
    assert clear["result"] == {}
    assert states_by_value(qix, customer, "Customer")["b"] == "S"
    qix.result("ClearAll", [], 1)
    assert set(states_by_value(qix, customer, "Customer").values()) == {"O"}


def test_list_object_layout_shape(qix: QixClient) -> None:
    obj = qix.handle_of("CreateSessionObject", [list_props("Amount", {"qSortByNumeric": -1})], 1)
    layout = qix.result("GetLayout", [], obj)["qLayout"]
    assert layout["qInfo"]["qType"] == "listbox"
    assert layout["custom"] == {"kept": [1, 2]}  # other members are copied as they are
    assert layout["qSelectionInfo"] == {"qInSelections": False, "qMadeSelections": False}
    lo = layout["qListObject"]
    assert lo["qSize"] == {"qcx": 1, "qcy": len(set(ORDERS["Amount"]))}
    assert lo["qDimensionInfo"]["qFallbackTitle"] == "Amount"
    assert lo["qDimensionInfo"]["qMin"] == min(ORDERS["Amount"])
    assert lo["qDimensionInfo"]["qMax"] == max(ORDERS["Amount"])
    assert lo["qDimensionInfo"]["qSortIndicator"] == "D"
    assert [c["qNum"] for c in cells(layout)] == sorted(ORDERS["Amount"], reverse=True)
    assert [c["qText"] for c in cells(layout)] == [
        str(v) for v in sorted(ORDERS["Amount"], reverse=True)
    ]
    assert all(c["qElemNumber"] == symbols("Amount").index(c["qNum"]) for c in cells(layout))
    page = lo["qDataPages"][0]
    assert page["qArea"] == {"qLeft": 0, "qTop": 0, "qWidth": 1, "qHeight": 6}
    assert page["qTails"] == [{"qUp": 0, "qDown": 0}]

    text = qix.handle_of("CreateSessionObject", [list_props("Customer")], 1)
    text_cell = cells(qix.result("GetLayout", [], text)["qLayout"])[0]
    assert text_cell == {"qText": "a", "qNum": "NaN", "qElemNumber": 0, "qState": "O"}


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        (None, ["a", "b", "c", "d", "e"]),
        ({"qSortByAscii": -1}, ["e", "d", "c", "b", "a"]),
        ({"qSortByLoadOrder": 1}, symbols("Customer")),
        ({"qSortByLoadOrder": -1}, symbols("Customer")[::-1]),
        ({"qSortByState": 1, "qSortByAscii": -1}, ["c", "a", "e", "d", "b"]),
    ],
)
def test_list_object_sort_criteria(
    qix: QixClient, sort: dict[str, int] | None, expected: list[str]
) -> None:
    field = qix.handle_of("GetField", ["Customer"], 1)
    qix.result("SelectValues", [[{"qText": "a"}, {"qText": "c"}]], field)
    obj = qix.handle_of("CreateSessionObject", [list_props("Customer", sort)], 1)
    layout = qix.result("GetLayout", [], obj)["qLayout"]
    assert [c["qText"] for c in cells(layout)] == expected


def test_list_object_pages(qix: QixClient) -> None:
    props = list_props("Customer", {"qSortByLoadOrder": 1})
    props["qListObjectDef"]["qInitialDataFetch"] = [{"qHeight": 2, "qWidth": 0}]
    obj = qix.handle_of("CreateSessionObject", [props], 1)
    first = qix.result("GetLayout", [], obj)["qLayout"]["qListObject"]["qDataPages"][0]
    assert [r[0]["qText"] for r in first["qMatrix"]] == symbols("Customer")[:2]
    pages = [{"qTop": 3, "qLeft": 0, "qWidth": 1, "qHeight": 10}, {"qTop": 9, "qHeight": 1}]
    data = qix.result("GetListObjectData", ["/qListObjectDef", pages], obj)["qDataPages"]
    assert [r[0]["qText"] for r in data[0]["qMatrix"]] == symbols("Customer")[3:]
    assert data[0]["qArea"] == {"qLeft": 0, "qTop": 3, "qWidth": 1, "qHeight": 2}
    assert data[1]["qMatrix"] == []
    assert data[1]["qArea"]["qHeight"] == 0


def test_unknown_field_in_a_list_object_is_a_layout_error(qix: QixClient) -> None:
    obj = qix.handle_of("CreateSessionObject", [list_props("NoSuchField")], 1)
    lo = qix.result("GetLayout", [], obj)["qLayout"]["qListObject"]
    assert lo["qDimensionInfo"]["qError"]["qErrorCode"] == 7000
    assert lo["qSize"] == {"qcx": 1, "qcy": 0}


def test_field_selections(qix: QixClient) -> None:
    customer = qix.handle_of("GetField", ["Customer"], 1)
    amount = qix.handle_of("GetField", ["Amount"], 1)
    obj = qix.handle_of("CreateSessionObject", [list_props("Customer")], 1)

    def selected() -> list[object]:
        return sorted(v for v, s in states_by_value(qix, obj, "Customer").items() if s == "S")

    answer = qix.call("Select", ["?"], customer)
    assert answer["result"] == {"qReturn": True}
    assert sorted(answer["change"]) == sorted([1, customer, amount, obj])
    assert selected() == ["a", "b", "c", "d", "e"]
    qix.result("Select", ["A"], customer)  # whole value, any case
    assert selected() == ["a"]
    assert qix.result("Select", ["zz*"], customer) == {"qReturn": False}
    assert selected() == ["a"]
    qix.result("ToggleSelect", ["[bc]"], customer)  # no such literal value
    assert selected() == ["a"]
    qix.result("ToggleSelect", ["b"], customer)
    assert selected() == ["a", "b"]
    qix.result("LowLevelSelect", [[symbols("Customer").index("e")], True], customer)
    assert selected() == ["a", "b", "e"]
    qix.result("LowLevelSelect", [[symbols("Customer").index("e"), 999], False], customer)
    assert selected() == ["e"]
    qix.result("SelectValues", [[{"qText": "b"}, {"qText": "nope"}]], customer)
    assert selected() == ["b"]
    qix.result("SelectValues", [[{"qText": "c"}], True], customer)
    assert selected() == ["b", "c"]
    qix.result("Clear", [], customer)
    assert selected() == []
    # Numbers match by qNumber; the customers that ordered 20 or 7 are then possible.
    qix.result(
        "SelectValues",
        [[{"qIsNumeric": True, "qNumber": 20}, {"qIsNumeric": True, "qNumber": 7.0}]],
        amount,
    )
    states = states_by_value(qix, obj, "Customer")
    assert sorted(v for v, s in states.items() if s == "O") == ["b", "c"]
    assert (
        qix.call("SelectValues", [[{"qIsNumeric": True, "qNumber": "x"}]], amount)["error"]["code"]
        == 8
    )


def test_selections_through_objects_do_not_leak_between_sockets(
    qix_server: QixServer, app_id: str, qix: QixClient
) -> None:
    customer = qix.handle_of("GetField", ["Customer"], 1)
    qix.result("Select", ["a"], customer)
    with QixClient(qix_server.ws_base + f"/app/{app_id}") as other:
        other.open_doc(app_id)
        obj = other.handle_of("CreateSessionObject", [list_props("Customer")], 1)
        assert set(states_by_value(other, obj, "Customer").values()) == {"O"}


def test_field_list(qix: QixClient) -> None:
    props = {"qInfo": {"qType": "fields"}, "qFieldListDef": {"qShowSrcTables": True}}
    obj = qix.handle_of("CreateSessionObject", [props], 1)
    items = qix.result("GetLayout", [], obj)["qLayout"]["qFieldList"]["qItems"]
    by_name = {i["qName"]: i for i in items}
    assert list(by_name) == ["OrderId", "Customer", "Amount", "Region"]
    assert by_name["Customer"]["qCardinal"] == len(symbols("Customer"))
    assert "$key" in by_name["Customer"]["qTags"]
    assert by_name["Customer"]["qSrcTables"] == ["Orders", "Customers"]
    system = {
        "qInfo": {"qType": "fields"},
        "qFieldListDef": {"qShowSystem": True, "qShowHidden": True},
    }
    obj = qix.handle_of("CreateSessionObject", [system], 1)
    names = [
        i["qName"] for i in qix.result("GetLayout", [], obj)["qLayout"]["qFieldList"]["qItems"]
    ]
    assert "$Table" in names


def test_tables_and_keys(qix: QixClient) -> None:
    result = qix.result(
        "GetTablesAndKeys", [{"qcx": 1000, "qcy": 1000}, {"qcx": 0, "qcy": 0}, 30, True, False], 1
    )
    tables = {t["qName"]: t for t in result["qtr"]}
    assert list(tables) == ["Orders", "Customers"]
    orders = tables["Orders"]
    assert orders["qNoOfRows"] == len(ORDERS["OrderId"])
    fields = {f["qName"]: f for f in orders["qFields"]}
    assert list(fields) == list(ORDERS)
    assert fields["OrderId"]["qKeyType"] == "NOT_KEY"
    c = fields["Customer"]
    assert c["qKeyType"] == "ANY_KEY"  # repeats in Orders
    assert c["qnPresentDistinctValues"] == len(set(ORDERS["Customer"]))
    assert c["qnTotalDistinctValues"] == len(symbols("Customer"))
    assert c["qHasDuplicates"] is True
    assert c["qnNonNulls"] == len(ORDERS["Customer"])
    in_customers = {f["qName"]: f for f in tables["Customers"]["qFields"]}["Customer"]
    assert in_customers["qKeyType"] == "PRIMARY_KEY"  # unique there, but d is missing
    assert result["qk"] == [{"qKeyFields": ["Customer"], "qTables": ["Orders", "Customers"]}]


def test_table_data_and_descriptions(qix: QixClient) -> None:
    data = qix.result("GetTableData", [1, 2, True, "Customers"], 1)["qData"]
    assert data == [
        {
            "qValue": [
                {"qText": CUSTOMERS["Customer"][r], "qIsNumeric": False, "qNumber": 0},
                {"qText": CUSTOMERS["Region"][r], "qIsNumeric": False, "qNumber": 0},
            ]
        }
        for r in (1, 2)
    ]
    amounts = qix.result("GetTableData", [0, 100, True, "Orders"], 1)["qData"]
    assert [row["qValue"][2]["qNumber"] for row in amounts] == ORDERS["Amount"]
    assert qix.call("GetTableData", [0, 10, True, "Nope"], 1)["error"]["code"] == 2
    assert qix.call("GetTableData", [0, 5000, True, "Orders"], 1)["error"]["code"] == 7009

    description = qix.result("GetFieldDescription", ["Customer"], 1)["qReturn"]
    assert description["qName"] == "Customer"
    assert description["qSrcTables"] == ["Orders", "Customers"]
    assert description["qCardinal"] == len(symbols("Customer"))
    assert description["qTotalCount"] == len(ORDERS["Customer"])
    assert description["qIsNumeric"] is False
    assert qix.call("GetFieldDescription", ["Nope"], 1)["error"]["code"] == 2

    layout = qix.result("GetAppLayout", [], 1)["qLayout"]
    assert layout["qFileName"] == qix.result("GetActiveDoc")["qReturn"]["qGenericId"]
    assert layout["qHasData"] is True
