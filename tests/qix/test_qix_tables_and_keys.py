"""GetTablesAndKeys over an app whose tables link through a synthetic key: the source view
(each table with the fields it was loaded with) and the model view (`$Syn` keys and tables)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from qixclient import QixClient

from conftest import QixServer

pytestmark = pytest.mark.server

FACTS = {"Cat": ["a", "b", "a"], "Sub": [1, 2, 2], "Amount": [5, 6, 7]}
DIMS = {"Label": ["x", "y", "z", "w"], "Cat": ["a", "b", "c", None], "Sub": [2, 2, 1, None]}


@pytest.fixture(scope="module")
def syn_app(qix_server: QixServer) -> str:
    return qix_server.import_app({"F": FACTS, "D": DIMS})


@pytest.fixture
def qix(qix_server: QixServer, syn_app: str) -> Iterator[QixClient]:
    with QixClient(qix_server.ws_base + f"/app/{syn_app}") as client:
        client.open_doc(syn_app)
        yield client


def tables_and_keys(qix: QixClient, synthetic: bool) -> dict[str, Any]:
    args = [{"qcx": 1000, "qcy": 1000}, {"qcx": 0, "qcy": 0}, 30, synthetic, False]
    result: dict[str, Any] = qix.result("GetTablesAndKeys", args, 1)
    return result


def fields_of(result: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    return {t["qName"]: {f["qName"]: f for f in t["qFields"]} for t in result["qtr"]}


def test_the_source_view_lists_each_table_with_the_fields_it_was_loaded_with(
    qix: QixClient,
) -> None:
    result = tables_and_keys(qix, False)
    tables = fields_of(result)
    assert {name: list(fields) for name, fields in tables.items()} == {
        "F": list(FACTS),
        "D": list(DIMS),
    }
    assert not any(t["qIsSynthetic"] for t in result["qtr"])
    cat = tables["D"]["Cat"]
    assert cat["qnNonNulls"] == 3
    assert cat["qHasNull"] is True
    assert cat["qnPresentDistinctValues"] == 3
    assert cat["qnTotalDistinctValues"] == 3  # a, b, c over both tables
    assert cat["qKeyType"] == "ANY_KEY"
    assert cat["qIsSynthetic"] is False
    assert tables["D"]["Label"]["qKeyType"] == "NOT_KEY"
    assert tables["F"]["Sub"]["qHasDuplicates"] is True
    assert result["qk"] == [
        {"qKeyFields": ["Cat"], "qTables": ["F", "D"]},
        {"qKeyFields": ["Sub"], "qTables": ["F", "D"]},
    ]


def test_the_model_view_shows_the_synthetic_key_and_its_table(qix: QixClient) -> None:
    result = tables_and_keys(qix, True)
    tables = fields_of(result)
    assert {name: list(fields) for name, fields in tables.items()} == {
        "F": ["$Syn 1", "Amount"],
        "D": ["Label", "$Syn 1"],
        "$Syn 1 Table": ["$Syn 1", "Cat", "Sub"],
    }
    assert [t["qIsSynthetic"] for t in result["qtr"]] == [False, False, True]
    assert tables["D"]["$Syn 1"]["qIsSynthetic"] is True
    assert tables["D"]["$Syn 1"]["qKeyType"] == "ANY_KEY"  # NULL in the row with no parts
    assert tables["$Syn 1 Table"]["Cat"]["qKeyType"] == "NOT_KEY"
    assert result["qk"] == [{"qKeyFields": ["$Syn 1"], "qTables": ["F", "D", "$Syn 1 Table"]}]


def test_the_source_view_is_the_default(qix: QixClient) -> None:
    answer = qix.result("GetTablesAndKeys", {"qWindowSize": {}, "qNullSize": {}}, 1)
    assert [t["qName"] for t in answer["qtr"]] == ["F", "D"]


def test_table_data_follows_the_synthetic_mode(qix: QixClient) -> None:
    source = qix.result("GetTableData", [0, 10, False, "D"], 1)["qData"]
    assert [[v["qText"] for v in row["qValue"]] for row in source][:2] == [
        ["x", "a", "2"],
        ["y", "b", "2"],
    ]
    model = qix.result("GetTableData", [0, 10, True, "D"], 1)["qData"]
    assert len(model) == 4
    assert all(len(row["qValue"]) == 2 for row in model)  # Label and the synthetic key
    assert [row["qValue"][0]["qText"] for row in model] == ["x", "y", "z", "w"]
