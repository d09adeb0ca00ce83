"""Hostile QIX requests against a real `assoc serve`: every frame gets one answer with its id
(or id null), never an internal error or a dropped socket. Frames and properties nest to a
limit, numbers JSON cannot carry and lone surrogates are refused, element numbers outside 64
bits are ignored, and data pages bound the work they ask for."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qixclient import QixClient

from assoc.server.qix.pages import MAX_PAGES
from assoc.server.qix.rpc import MAX_FRAME_DEPTH, MAX_PROPERTY_DEPTH
from assoc.server.qix.schema import schema
from assoc.server.qix.session import METHODS
from conftest import MAX_MESSAGE_BYTES, QixServer, symbols

pytestmark = pytest.mark.server


def engine_version(request_id: object, extra: str = "") -> str:
    """An EngineVersion frame with `extra` (members, from their comma) after its handle."""
    return f'{{"jsonrpc":"2.0","id":{request_id},"method":"EngineVersion","handle":-1{extra}}}'


LIST_PROPS = {
    "qInfo": {"qType": "filterbox"},
    "qListObjectDef": {"qDef": {"qFieldDefs": ["Customer"]}},
}
CUBE_PROPS = {
    "qInfo": {"qType": "table"},
    "qHyperCubeDef": {
        "qDimensions": [{"qDef": {"qFieldDefs": ["Customer"]}}],
        "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
    },
}


def nested(levels: int, inner: Any = 1) -> Any:
    """`inner` inside `levels` arrays (levels = 0: inner itself)."""
    value = inner
    for _ in range(levels):
        value = [value]
    return value


def nested_object(levels: int) -> dict[str, Any]:
    """An object nested `levels` deep counting itself: {"a": {"a": … {}}}."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def still_works(qix: QixClient) -> None:
    assert "qVersion" in qix.result("EngineVersion")


# ---- frames ---------------------------------------------------------------------------------


def test_frame_nesting_limit(qix_server: QixServer) -> None:
    # The request object is level 1: a member nested MAX_FRAME_DEPTH - 1 deeper is at the limit.
    at_limit = json.dumps(nested(MAX_FRAME_DEPTH - 1))
    beyond = json.dumps(nested(MAX_FRAME_DEPTH))
    with QixClient(qix_server.ws_base + "/app") as qix:
        answer = qix.send_raw(engine_version(1, ',"x":' + at_limit))
        assert answer["id"] == 1
        assert "qVersion" in answer["result"]
        answer = qix.send_raw(engine_version(2, ',"x":' + beyond))
        assert answer["id"] == 2
        assert answer["error"]["code"] == -32602
        assert str(MAX_FRAME_DEPTH) in answer["error"]["message"]
        still_works(qix)


@pytest.mark.parametrize("levels", [1_000, 30_000])
def test_deep_well_formed_frame_answers_its_id_and_keeps_the_socket(
    qix_server: QixServer, levels: int
) -> None:
    deep = "[" * levels + "]" * levels
    assert len(deep) < MAX_MESSAGE_BYTES
    with QixClient(qix_server.ws_base + "/app") as qix:
        answer = qix.send_raw(engine_version('"deep"', ',"params":' + deep))
        assert answer == {
            "jsonrpc": "2.0",
            "id": "deep",
            "error": {
                "code": -32602,
                "parameter": "params",
                "message": f"Invalid Params: JSON nested deeper than {MAX_FRAME_DEPTH} levels",
            },
        }
        # A deep id is no id: the request is invalid and its answer has id null.
        answer = qix.send_raw('{"jsonrpc":"2.0","method":"EngineVersion","id":' + deep + "}")
        assert answer["id"] is None
        assert answer["error"]["code"] == -32600
        # A deep array is not a request at all.
        assert qix.send_raw(deep) == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "parameter": "", "message": "Invalid Request"},
        }
        still_works(qix)


@pytest.mark.parametrize(
    "frame",
    [
        "[" * 5_000,  # never closed
        '{"id":1,"method":"EngineVersion","params":' + "[" * 5_000 + "}" * 5_000 + "}",
        '{"id":1,"method":"EngineVersion"' + "," * 2 + '"params":' + "[" * 500 + "]" * 500 + "}",
        '{"id":1,"params":' + '[1 "' * 300 + "}",
    ],
)
def test_deep_broken_frame_is_a_parse_error(qix_server: QixServer, frame: str) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        answer = qix.send_raw(frame)
        assert answer["id"] is None
        assert answer["error"]["code"] == -32700
        still_works(qix)


def test_deep_frame_counts_brackets_outside_strings_only(qix_server: QixServer) -> None:
    brackets = '[{\\"\\\\' * 400  # brackets, escaped quotes and backslashes inside one string
    with QixClient(qix_server.ws_base + "/app") as qix:
        frame = engine_version(5, ',"x":"' + brackets + '"')
        answer = qix.send_raw(frame)
        assert answer["id"] == 5
        assert "qVersion" in answer["result"]
        shallow = ',"x":' + json.dumps([[1, [2]]] * 300)  # many brackets, 4 levels
        assert "qVersion" in qix.send_raw(engine_version(6, shallow))["result"]


# ---- properties -----------------------------------------------------------------------------


def test_property_nesting_limit(qix_server: QixServer, app_id: str) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.open_doc(app_id)
        # qProp is level 1; its member "deep" holds the rest.
        props = {"qInfo": {"qType": "deep"}, "deep": nested_object(MAX_PROPERTY_DEPTH - 1)}
        handle = qix.handle_of("CreateSessionObject", [props], doc)
        layout = qix.result("GetLayout", [], handle)["qLayout"]
        assert layout["deep"] == props["deep"]
        props["deep"] = nested_object(MAX_PROPERTY_DEPTH)
        error = qix.call("CreateSessionObject", [props], doc)["error"]
        assert error["code"] == -32602
        assert error["parameter"] == "qProp"
        assert str(MAX_PROPERTY_DEPTH) in error["message"]
        # 600 levels: beyond the frame's limit too, still -32602 with the request's id.
        props["deep"] = nested_object(600)
        answer = qix.call("CreateSessionObject", [props], doc)
        assert answer["error"]["code"] == -32602
        still_works(qix)


def test_property_nesting_limit_in_session_app_objects(qix_server: QixServer) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.handle_of("CreateSessionApp")
        props = {"qInfo": {"qType": "deep"}, "deep": nested(MAX_PROPERTY_DEPTH - 1)}
        assert qix.result("CreateObject", [props], doc)["qInfo"]["qType"] == "deep"
        props["deep"] = nested(MAX_PROPERTY_DEPTH)
        assert qix.call("CreateObject", [props], doc)["error"]["code"] == -32602


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e5000", "-1e400"])
def test_numbers_json_cannot_carry_are_refused_in_properties(
    qix_server: QixServer, app_id: str, number: str
) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.open_doc(app_id)
        frame = (
            f'{{"jsonrpc":"2.0","id":11,"method":"CreateSessionObject","handle":{doc},'
            f'"params":[{{"qInfo":{{"qType":"x"}},"a":{{"b":[1,{number}]}}}}]}}'
        )
        answer = qix.send_raw(frame)
        assert answer["id"] == 11
        assert answer["error"] == {
            "code": -32602,
            "parameter": "qProp/a/b/1",
            "message": "Invalid Params: numbers must be finite",
        }
        assert qix.call("GetObject", ["x"], doc)["error"]["code"] == 2
        # What is kept answers: a layout never holds such a number.
        handle = qix.handle_of("CreateSessionObject", [{"qInfo": {"qType": "x"}, "n": 1e308}], doc)
        assert qix.result("GetLayout", [], handle)["qLayout"]["n"] == 1e308
        still_works(qix)


# ---- lone surrogates ------------------------------------------------------------------------


def test_id_with_a_lone_surrogate_is_answered_with_id_null(qix_server: QixServer) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        answer = qix.send_raw(engine_version('"a\\ud800"', ""))
        assert answer == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "parameter": "", "message": "Invalid Request"},
        }
        # A surrogate pair is one character: a good id.
        assert qix.send_raw(engine_version('"\\ud83d\\ude00"', ""))["id"] == "\U0001f600"
        still_works(qix)


def test_lone_surrogates_elsewhere_are_refused_with_the_id(
    qix_server: QixServer, app_id: str
) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        method = qix.send_raw('{"jsonrpc":"2.0","id":3,"method":"Engine\\udfffVersion"}')
        assert method["id"] == 3
        assert method["error"]["code"] == -32600
        doc = qix.open_doc(app_id)
        for params in (
            '["Cust\\ud800"]',
            '{"qFieldName":"\\udc00"}',
            '[{"qInfo":{"qType":"x"},"k\\ud800":1}]',
        ):
            method_name = "CreateSessionObject" if "qInfo" in params else "GetField"
            frame = (
                f'{{"jsonrpc":"2.0","id":4,"method":"{method_name}","handle":{doc},'
                f'"params":{params}}}'
            )
            answer = qix.send_raw(frame)
            assert answer["id"] == 4
            assert answer["error"]["code"] == -32602
            assert answer["error"]["parameter"] == "params"
        frame = '{"jsonrpc":"2.0","id":5,"method":"SetScript","handle":%d,"params":["\\ud800"]}'
        assert qix.send_raw(frame % doc)["error"]["code"] == -32602
        assert qix.result("GetScript", [], doc)["qScript"] == ""
        still_works(qix)


# ---- element numbers and values -------------------------------------------------------------

HUGE = [2**70, -(2**70), 2**63, -(2**63) - 1]


def _selected(qix: QixClient, doc: int) -> list[str]:
    props = {
        "qInfo": {"qType": "check"},
        "qListObjectDef": {
            "qDef": {"qFieldDefs": ["Customer"], "qSortCriterias": [{"qSortByLoadOrder": 1}]},
            "qInitialDataFetch": [{"qWidth": 1, "qHeight": 100}],
        },
    }
    handle = qix.handle_of("CreateSessionObject", [props], doc)
    layout = qix.result("GetLayout", [], handle)["qLayout"]
    qix.result("DestroySessionObject", [layout["qInfo"]["qId"]], doc)
    matrix = layout["qListObject"]["qDataPages"][0]["qMatrix"]
    return [row[0]["qText"] for row in matrix if row[0]["qState"] == "S"]


def test_element_numbers_outside_64_bits_are_ignored(qix_server: QixServer, app_id: str) -> None:
    b = symbols("Customer").index("b")
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.open_doc(app_id)
        field = qix.handle_of("GetField", ["Customer"], doc)
        assert qix.result("LowLevelSelect", [[*HUGE, b]], field) == {"qReturn": True}
        assert _selected(qix, doc) == ["b"]
        assert qix.result("LowLevelSelect", [HUGE, True], field) == {"qReturn": True}
        assert _selected(qix, doc) == ["b"]
        qix.result("ClearAll", [], doc)
        lst = qix.handle_of("CreateSessionObject", [LIST_PROPS], doc)
        assert qix.result("SelectListObjectValues", ["/qListObjectDef", [*HUGE, b]], lst)
        assert _selected(qix, doc) == ["b"]
        qix.result("ClearAll", [], doc)
        cube = qix.handle_of("CreateSessionObject", [CUBE_PROPS], doc)
        assert qix.result("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [*HUGE, b]], cube)
        assert _selected(qix, doc) == ["b"]
        huge_dim = qix.call("SelectHyperCubeValues", ["/qHyperCubeDef", 2**70, [b]], cube)
        assert huge_dim["error"]["code"] == 8
        still_works(qix)


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "1" + "0" * 400])
def test_select_values_ignores_numbers_no_value_has(
    qix_server: QixServer, app_id: str, number: str
) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.open_doc(app_id)
        field = qix.handle_of("GetField", ["Customer"], doc)
        frame = (
            f'{{"jsonrpc":"2.0","id":9,"method":"SelectValues","handle":{field},"params":'
            f'[[{{"qIsNumeric":true,"qNumber":{number}}},{{"qText":"c"}}]]}}'
        )
        answer = qix.send_raw(frame)
        assert answer["id"] == 9
        assert answer["result"] == {"qReturn": True}
        assert _selected(qix, doc) == ["c"]


# ---- pages ----------------------------------------------------------------------------------


def test_pages_per_call_are_limited(qix_server: QixServer, app_id: str) -> None:
    empty = {"qWidth": 0, "qHeight": 10**9}
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.open_doc(app_id)
        cube = qix.handle_of("CreateSessionObject", [CUBE_PROPS], doc)
        lst = qix.handle_of("CreateSessionObject", [LIST_PROPS], doc)
        many = qix.call("GetHyperCubeData", ["/qHyperCubeDef", [empty] * (MAX_PAGES + 1)], cube)
        assert many["error"]["code"] == 7009
        assert str(MAX_PAGES) in many["error"]["message"]
        # 15,000 pages of no cells (all members 0) fit in a frame: refused as well.
        many = qix.call("GetHyperCubeData", ["/qHyperCubeDef", [{}] * 15_000], cube)
        assert many["error"]["code"] == 7009
        many = qix.call("GetListObjectData", ["/qListObjectDef", [{}] * 15_000], lst)
        assert many["error"]["code"] == 7009
        props = dict(CUBE_PROPS)
        props["qHyperCubeDef"] = dict(
            CUBE_PROPS["qHyperCubeDef"], qInitialDataFetch=[empty] * (MAX_PAGES + 1)
        )
        assert qix.call("CreateSessionObject", [props], doc)["error"]["code"] == 7009
        # At the limit: every page answers, cut to the cube.
        pages = qix.result("GetHyperCubeData", ["/qHyperCubeDef", [empty] * MAX_PAGES], cube)
        assert len(pages["qDataPages"]) == MAX_PAGES
        rows = len(symbols("Customer"))  # one row per customer, with or without orders
        assert pages["qDataPages"][0]["qArea"] == {
            "qLeft": 0,
            "qTop": 0,
            "qWidth": 0,
            "qHeight": rows,
        }
        assert pages["qDataPages"][0]["qMatrix"] == []
        still_works(qix)


@pytest.mark.parametrize(
    "page",
    [
        {"qTop": 10**30, "qLeft": 0, "qWidth": 2, "qHeight": 5},
        {"qTop": 0, "qLeft": 10**30, "qWidth": 2, "qHeight": 5},
        {"qTop": 2**70, "qLeft": 2**70, "qWidth": 0, "qHeight": 0},
    ],
)
def test_pages_beyond_the_cube_are_empty(
    qix_server: QixServer, app_id: str, page: dict[str, int]
) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.open_doc(app_id)
        cube = qix.handle_of("CreateSessionObject", [CUBE_PROPS], doc)
        data = qix.result("GetHyperCubeData", ["/qHyperCubeDef", [page]], cube)["qDataPages"][0]
        assert data["qMatrix"] == []
        assert data["qArea"]["qHeight"] == 0 or data["qArea"]["qWidth"] == 0


@pytest.mark.parametrize(
    ("page", "code"),
    [
        ({"qWidth": 1, "qHeight": 10**30}, 7009),
        ({"qWidth": 10**30, "qHeight": 10**30}, 7009),
        ({"qWidth": 1.5, "qHeight": 1}, 8),
        ({"qWidth": 1, "qHeight": -1}, 8),
        ({"qWidth": 1, "qHeight": float("inf")}, 8),
        ({"qWidth": True, "qHeight": 1}, 8),
        ({"qWidth": "1", "qHeight": 1}, 8),
    ],
)
def test_bad_page_sizes_are_clear_errors(
    qix_server: QixServer, app_id: str, page: dict[str, Any], code: int
) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.open_doc(app_id)
        cube = qix.handle_of("CreateSessionObject", [CUBE_PROPS], doc)
        answer = qix.call("GetHyperCubeData", ["/qHyperCubeDef", [page]], cube)
        assert answer["error"]["code"] == code


# ---- every method, hostile parameters -------------------------------------------------------

_SURROGATES = st.sampled_from(["\ud800", "a\udfffb", "\udc00\ud800"])
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63, -(2**63) - 1, 2**70, 10**30, -1, 0, 1, 2]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    _SURROGATES,
    st.sampled_from(["", "Customer", "/qListObjectDef", "/qHyperCubeDef", "*", "=Sum(Amount)"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_DEEP = st.integers(MAX_FRAME_DEPTH - 2, MAX_FRAME_DEPTH + 50).map(lambda n: nested(n))
_HOSTILE = st.one_of(_VALUES, _DEEP)
_TYPES = ["Global", "Doc", "Field", "GenericObject"]


@st.composite
def _requests(draw: st.DrawFn) -> tuple[str, str, Any]:
    qix_type = draw(st.sampled_from(_TYPES))
    names = sorted(METHODS[qix_type]) + sorted(schema()[qix_type])[:5]
    name = draw(st.sampled_from(names))
    method = METHODS[qix_type].get(name)
    param_names = [p.name for p in method.params] if method is not None else []
    param_names = param_names or ["qX"]
    form = draw(st.sampled_from(["list", "named", "raw", "absent"]))
    params: Any
    if form == "list":
        params = draw(st.lists(_HOSTILE, max_size=len(param_names) + 1))
    elif form == "named":
        keys = st.one_of(st.sampled_from(param_names), st.text(max_size=6))
        params = draw(st.dictionaries(keys, _HOSTILE, max_size=len(param_names) + 1))
    elif form == "raw":
        params = draw(_HOSTILE)
    else:
        params = None
    return qix_type, name, params


# Methods that would end the session's document or leave the fuzzed state for good.
_SKIPPED = {"OpenDoc", "CreateSessionApp", "DoReload", "DoReloadEx"}


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(requests=st.lists(_requests(), min_size=1, max_size=8))
def test_every_method_answers_hostile_params(
    qix_server: QixServer, fuzz_app: str, requests: list[tuple[str, str, Any]]
) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.open_doc(fuzz_app)
        handles = {
            "Global": -1,
            "Doc": doc,
            "Field": qix.handle_of("GetField", ["Customer"], doc),
            "GenericObject": qix.handle_of("CreateSessionObject", [CUBE_PROPS], doc),
        }
        for number, (qix_type, name, params) in enumerate(requests, start=1):
            if name in _SKIPPED:
                continue
            frame: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "method": name}
            frame["handle"] = handles[qix_type]
            if params is not None:
                frame["params"] = params
            answer = qix.send_raw(json.dumps(frame))  # NaN, Infinity and \udXXX escapes
            assert answer["id"] == number, answer
            assert ("result" in answer) != ("error" in answer), answer
            if "error" in answer:
                assert answer["error"]["code"] != -32603, (name, params, answer)
        still_works(qix)
    with qix_server.process.client() as client:
        assert client.get("/health").status_code == 200


@pytest.fixture(scope="module")
def fuzz_app(qix_server: QixServer) -> str:
    """An app of its own: the fuzzed calls may change its script and connections."""
    return qix_server.import_app()


_DOC_ENDING = ["OpenDoc", "CreateSessionApp", "SetScript", "DoReload", "DoReloadEx"]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    requests=st.lists(
        st.tuples(st.sampled_from(_DOC_ENDING), st.one_of(st.none(), st.lists(_HOSTILE))),
        min_size=1,
        max_size=4,
    )
)
def test_session_app_methods_answer_hostile_params(
    qix_server: QixServer, requests: list[tuple[str, Any]]
) -> None:
    # On a session app of its own: a reload here changes no stored app.
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.handle_of("CreateSessionApp")
        for number, (name, params) in enumerate(requests, start=1):
            frame: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "method": name}
            frame["handle"] = -1 if name in ("OpenDoc", "CreateSessionApp") else doc
            if params is not None:
                frame["params"] = params
            answer = qix.send_raw(json.dumps(frame))
            assert answer["id"] == number, answer
            if "error" in answer:
                assert answer["error"]["code"] != -32603, (name, params, answer)
        still_works(qix)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    frames=st.lists(
        st.one_of(
            st.text(max_size=60),
            st.binary(max_size=60),
            st.text(alphabet='[]{}",:\\0123456789.eE-+ utrnfalsNIy', max_size=300),
        ),
        min_size=1,
        max_size=10,
    )
)
def test_any_frame_gets_one_answer(qix_server: QixServer, frames: list[str | bytes]) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        for frame in frames:
            answer = qix.send_raw(frame)
            assert answer["jsonrpc"] == "2.0"
            if "error" in answer:
                assert answer["error"]["code"] != -32603, (frame, answer)
        still_works(qix)
