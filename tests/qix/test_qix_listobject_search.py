"""List object searches (SearchListObjectFor / AcceptListObjectSearch /
AbortListObjectSearch) and continuous range selections of list objects and cubes, over a real
`assoc serve`; every expectation computed in the test from the same table."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from qixclient import QixClient

from conftest import QixServer

pytestmark = pytest.mark.server

CITIES = {
    "City": ["New York", "York", "Newark", "old york city", "Amsterdam", "Yorkshire"],
    "Pop": [8.3, 0.2, 0.3, 1.5, 0.9, 5.4],
}


@pytest.fixture(scope="module")
def cities_app(qix_server: QixServer) -> str:
    return qix_server.import_app({"Cities": CITIES})


@pytest.fixture
def qix(qix_server: QixServer, cities_app: str) -> Iterator[QixClient]:
    with QixClient(qix_server.ws_base + "/app/engineData") as client:
        client.open_doc(cities_app)
        yield client


def listbox(qix: QixClient, field: str) -> int:
    props = {
        "qInfo": {"qType": "njsListbox"},
        "qListObjectDef": {
            "qDef": {"qFieldDefs": [field], "qSortCriterias": [{"qSortByLoadOrder": 1}]},
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 50}],
        },
    }
    return qix.handle_of("CreateSessionObject", [props], 1)


def shown(qix: QixClient, obj: int) -> tuple[int, dict[str, str]]:
    """qcy and the value -> state pairs the layout's first page shows."""
    lo = qix.result("GetLayout", [], obj)["qLayout"]["qListObject"]
    rows = lo["qDataPages"][0]["qMatrix"]
    return lo["qSize"]["qcy"], {r[0]["qText"]: r[0]["qState"] for r in rows}


def words_match(search: str, value: str) -> bool:
    starts = [m.start() for m in re.finditer(r"\w+", value.lower())]
    return all(any(value.lower().startswith(w, s) for s in starts) for w in search.lower().split())


def selected(qix: QixClient, obj: int) -> set[str]:
    return {v for v, s in shown(qix, obj)[1].items() if s == "S"}


@pytest.mark.parametrize("text", ["york", "YO", "new york", "ork", "city old", "zzz"])
def test_word_search_shows_the_matches(qix: QixClient, text: str) -> None:
    obj = listbox(qix, "City")
    answer = qix.call("SearchListObjectFor", ["/qListObjectDef", text], obj)
    assert answer["result"] == {"qSuccess": True}
    assert obj in answer["change"]
    expected = [c for c in CITIES["City"] if words_match(text, c)]
    count, states = shown(qix, obj)
    assert count == len(expected)
    assert list(states) == expected
    page = qix.result(
        "GetListObjectData", ["/qListObjectDef", [{"qTop": 0, "qWidth": 1, "qHeight": 9}]], obj
    )["qDataPages"][0]
    assert [r[0]["qText"] for r in page["qMatrix"]] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("*york*", [c for c in CITIES["City"] if "york" in c.lower()]),
        ("york*", [c for c in CITIES["City"] if c.lower().startswith("york")]),
        ("?ork", ["York"]),
        (">1", [c for c, p in zip(CITIES["City"], CITIES["Pop"], strict=True) if p > 1]),
        (
            ">=0.3<=1.5",
            [c for c, p in zip(CITIES["City"], CITIES["Pop"], strict=True) if 0.3 <= p <= 1.5],
        ),
    ],
)
def test_wildcard_and_numeric_searches(qix: QixClient, text: str, expected: list[str]) -> None:
    field = "Pop" if text[0] in "<>" else "City"
    obj = listbox(qix, field)
    qix.result("SearchListObjectFor", ["/qListObjectDef", text], obj)
    count, states = shown(qix, obj)
    if field == "Pop":
        pops = dict(zip(CITIES["City"], CITIES["Pop"], strict=True))
        assert sorted(float(v) for v in states) == sorted(pops[c] for c in expected)
    else:
        assert list(states) == expected
    assert count == len(expected)


def test_accept_selects_the_matches_and_ends_the_search(qix: QixClient) -> None:
    obj = listbox(qix, "City")
    qix.result("SearchListObjectFor", ["/qListObjectDef", "new"], obj)
    answer = qix.call("AcceptListObjectSearch", ["/qListObjectDef", False], obj)
    assert answer["result"] == {}
    assert obj in answer["change"]
    count, _states = shown(qix, obj)
    assert count == len(CITIES["City"])  # the search ended: every value again
    assert selected(qix, obj) == {c for c in CITIES["City"] if words_match("new", c)}
    # Toggle mode keeps what was selected; without it the matches replace it.
    qix.result("SearchListObjectFor", ["/qListObjectDef", "amst"], obj)
    qix.result("AcceptListObjectSearch", ["/qListObjectDef", True], obj)
    assert selected(qix, obj) == {"New York", "Newark", "Amsterdam"}
    qix.result("SearchListObjectFor", ["/qListObjectDef", "york"], obj)
    qix.result("AcceptListObjectSearch", ["/qListObjectDef", False], obj)
    assert selected(qix, obj) == {c for c in CITIES["City"] if words_match("york", c)}
    # A search selection shows its text (GetFieldSelections, the current selections).
    assert evaluate(qix, "GetFieldSelections(City)") == "york"
    assert current_selection(qix)["qTextSearch"] == "york"
    # A search matching nothing selects nothing and keeps the selection.
    before = selected(qix, obj)
    qix.result("SearchListObjectFor", ["/qListObjectDef", "zzz"], obj)
    qix.result("AcceptListObjectSearch", ["/qListObjectDef", False], obj)
    assert selected(qix, obj) == before
    # Accepting with no search running changes nothing.
    answer = qix.call("AcceptListObjectSearch", ["/qListObjectDef", False], obj)
    assert answer["result"] == {}
    assert "change" not in answer
    # A selection made otherwise shows its values again.
    qix.result("SelectListObjectValues", ["/qListObjectDef", [1], False], obj)
    assert evaluate(qix, "GetFieldSelections(City)") == "York"
    assert current_selection(qix)["qTextSearch"] == ""


def evaluate(qix: QixClient, expression: str) -> Any:
    return qix.result("Evaluate", [expression], 1)["qReturn"]


def current_selection(qix: QixClient) -> dict[str, Any]:
    props = {"qInfo": {"qType": "CurrentSelection"}, "qSelectionObjectDef": {}}
    obj = qix.handle_of("CreateSessionObject", [props], 1)
    layout = qix.result("GetLayout", [], obj)["qLayout"]
    [field] = layout["qSelectionObject"]["qSelections"]
    return dict(field)


def test_expression_search_is_a_cube_by_the_field(qix: QixClient) -> None:
    """`=expr` matches the values whose cube row (the field as dimension, under the
    selections) is true: excluded values have no row, unless the expression's set reaches
    them."""
    pops = dict(zip(CITIES["City"], CITIES["Pop"], strict=True))
    obj = listbox(qix, "City")
    qix.result("SearchListObjectFor", ["/qListObjectDef", "=Sum(Pop) > 1"], obj)
    count, states = shown(qix, obj)
    assert list(states) == [c for c in CITIES["City"] if pops[c] > 1]
    assert count == len(states)
    qix.result("SearchListObjectFor", ["/qListObjectDef", "=Count(Pop)"], obj)  # 1 is true
    assert shown(qix, obj)[0] == len(CITIES["City"])
    # Under a selection of small cities, the big ones are excluded: no match among them...
    pop = listbox(qix, "Pop")
    small = [i for i, p in enumerate(CITIES["Pop"]) if p < 1]
    qix.result("SelectListObjectValues", ["/qListObjectDef", small, False], pop)
    qix.result("SearchListObjectFor", ["/qListObjectDef", "=Sum(Pop) > 0.25"], obj)
    assert list(shown(qix, obj)[1]) == [c for c in CITIES["City"] if 0.25 < pops[c] < 1]
    # ...unless the set of the expression reaches them.
    qix.result("SearchListObjectFor", ["/qListObjectDef", "=Sum({1} Pop) > 5"], obj)
    assert list(shown(qix, obj)[1]) == ["New York", "Yorkshire"]
    # Accepting selects the matches that are not excluded.
    qix.result("SearchListObjectFor", ["/qListObjectDef", "=Sum(Pop) < 0.5"], obj)
    qix.result("AcceptListObjectSearch", ["/qListObjectDef", False], obj)
    assert selected(qix, obj) == {c for c in CITIES["City"] if pops[c] < 0.5}
    assert evaluate(qix, "GetFieldSelections(City)") == "=Sum(Pop) < 0.5"


def test_abort_shows_every_value_and_selects_nothing(qix: QixClient) -> None:
    obj = listbox(qix, "City")
    qix.result("SearchListObjectFor", ["/qListObjectDef", "york"], obj)
    assert shown(qix, obj)[0] < len(CITIES["City"])
    answer = qix.call("AbortListObjectSearch", ["/qListObjectDef"], obj)
    assert obj in answer["change"]
    count, states = shown(qix, obj)
    assert count == len(CITIES["City"])
    assert set(states.values()) == {"O"}
    # No search to abort: an empty answer, nothing changed.
    assert "change" not in qix.call("AbortListObjectSearch", ["/qListObjectDef"], obj)


def test_search_errors(qix: QixClient) -> None:
    obj = listbox(qix, "City")
    cases: list[tuple[str, list[Any], int]] = [
        ("SearchListObjectFor", ["/qListObjectDef", "=Sum(Pop"], 8),
        ("SearchListObjectFor", ["/qListObjectDef", "= "], 8),
        ("SearchListObjectFor", ["/qListObjectDef", ">abc"], 8),
        ("SearchListObjectFor", ["/qListObjectDef", "x" * 1001], 8),
        ("SearchListObjectFor", ["/qHyperCubeDef", "york"], 2),
        ("SearchListObjectFor", ["/qListObjectDef", 5], -32602),
        ("AcceptListObjectSearch", ["/nowhere", True], 2),
    ]
    for method, params, code in cases:
        answer = qix.call(method, params, obj)
        assert answer["error"]["code"] == code, (method, params, answer)
    assert "expression search" in qix.call(*cases[0][:2], obj)["error"]["message"]
    # A failed search leaves the list as it was.
    assert shown(qix, obj)[0] == len(CITIES["City"])


def test_list_object_continuous_range(qix: QixClient) -> None:
    obj = listbox(qix, "Pop")
    ranges = [
        {"qMin": 0.3, "qMax": 1.5, "qMinInclEq": True, "qMaxInclEq": False},
        {"qMin": 8, "qMax": 9},
    ]
    answer = qix.call("SelectListObjectContinuousRange", ["/qListObjectDef", ranges], obj)
    assert answer["result"] == {"qSuccess": True}
    expected = {p for p in CITIES["Pop"] if 0.3 <= p < 1.5 or 8 < p < 9}
    assert {float(v) for v in selected(qix, obj)} == expected
    # Nothing in range: qSuccess false, the selection stays.
    answer = qix.call(
        "SelectListObjectContinuousRange", ["/qListObjectDef", [{"qMin": 100, "qMax": 200}]], obj
    )
    assert answer["result"] == {"qSuccess": False}
    assert {float(v) for v in selected(qix, obj)} == expected
    bad = [{"qMin": "a", "qMax": 1}]
    answer = qix.call("SelectListObjectContinuousRange", ["/qListObjectDef", bad], obj)
    assert answer["error"]["code"] == -32602


def test_hypercube_continuous_range(qix: QixClient) -> None:
    props = {
        "qHyperCubeDef": {
            "qDimensions": [{"qDef": {"qFieldDefs": ["City"]}}, {"qDef": {"qFieldDefs": ["Pop"]}}],
            "qMeasures": [{"qDef": {"qDef": "Sum(Pop)"}}],
        }
    }
    cube = qix.handle_of("CreateSessionObject", [props], 1)
    ranges = [
        {"qRange": {"qMin": 1, "qMax": 6, "qMinInclEq": True, "qMaxInclEq": True}, "qDimIx": 1}
    ]
    answer = qix.call("SelectHyperCubeContinuousRange", ["/qHyperCubeDef", ranges], cube)
    assert answer["result"] == {"qSuccess": True}
    city = listbox(qix, "City")
    _, states = shown(qix, city)
    pops = dict(zip(CITIES["City"], CITIES["Pop"], strict=True))
    assert {c for c, s in states.items() if s == "O"} == {c for c, p in pops.items() if 1 <= p <= 6}
    bad = [{"qRange": {"qMin": 0, "qMax": 1}, "qDimIx": 5}]
    answer = qix.call("SelectHyperCubeContinuousRange", ["/qHyperCubeDef", bad], cube)
    assert answer["error"]["code"] == 8


def test_a_wildcard_field_select_shows_its_search_text(qix: QixClient) -> None:
    field = qix.handle_of("GetField", ["City"], 1)
    assert qix.result("Select", ["New*"], field) == {"qReturn": True}
    assert evaluate(qix, "GetFieldSelections(City)") == "New*"
    assert qix.result("Select", ["York"], field) == {"qReturn": True}  # one value, no search
    assert evaluate(qix, "GetFieldSelections(City)") == "York"
    assert current_selection(qix)["qTextSearch"] == ""
