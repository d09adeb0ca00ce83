"""The QIX envelope without a server: URL forms, request parsing, parameter binding, answers."""

from __future__ import annotations

import json

import pytest

from assoc.server.qix.rpc import (
    InvalidRequest,
    Param,
    RawJson,
    RpcError,
    bind_params,
    parse_request,
    result_message,
)
from assoc.server.qix.urls import QixTarget, parse_qix_path


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ("/app/abc", QixTarget("abc")),
        ("/app/engineData", QixTarget()),
        ("/app", QixTarget()),
        ("/app/", QixTarget()),
        ("/", QixTarget()),
        ("", QixTarget()),
        ("/app/abc/identity/ann", QixTarget("abc", "ann")),
        ("/app/engineData/ttl/30", QixTarget(None, "", 30)),
        ("/app/abc/identity/x/ttl/60", QixTarget("abc", "x", 60)),
        ("/gateway/app/my%20doc.qvf", QixTarget("my doc.qvf")),
        ("/app/identity/x", QixTarget(None, "x")),
        ("/app/abc/ttl/soon", QixTarget()),
        ("/app/abc/extra", QixTarget()),
        ("/something/else", QixTarget()),
    ],
)
def test_url_forms(path: str, target: QixTarget) -> None:
    assert parse_qix_path(path) == target


def test_requests_are_checked() -> None:
    request = parse_request('{"jsonrpc":"2.0","id":3,"method":"M","handle":2,"params":{"a":1}}')
    assert request == (3, 2, "M", {"a": 1})
    assert parse_request('{"id":"x","method":"M"}').handle == -1
    with pytest.raises(RpcError) as bad:
        parse_request("{")
    assert bad.value.code == -32700
    for text in ('{"id":1,"method":true}', '{"id":1,"method":"M","handle":true}',
                 '{"id":1,"method":"M","params":5}', '{"id":[1],"method":"M"}'):  # fmt: skip
        with pytest.raises(InvalidRequest):
            parse_request(text)
    with pytest.raises(InvalidRequest) as kept:
        parse_request('{"id":9,"method":"M","handle":"1"}')
    assert kept.value.request_id == 9


SPECS = (Param("qName", "str", required=True), Param("qFlag", "bool", False), Param("qN", "int", 0))


def test_parameters_by_position_name_or_default() -> None:
    assert bind_params("M", SPECS, ["a"]) == {"qName": "a", "qFlag": False, "qN": 0}
    assert bind_params("M", SPECS, {"qN": 2, "qName": "b"}) == {
        "qName": "b",
        "qFlag": False,
        "qN": 2,
    }
    for raw, parameter in (
        ([], "qName"),
        (None, "qName"),
        ([1], "qName"),
        (["a", 1], "qFlag"),
        (["a", False, True], "qN"),
        (["a", False, 1.5], "qN"),
        ({"qName": "a", "qOther": 1}, "qOther"),
        (["a", False, 1, "extra"], "M"),
    ):
        with pytest.raises(RpcError) as error:
            bind_params("M", SPECS, raw)
        assert error.value.code == -32602
        assert error.value.parameter == parameter


def test_answers_carry_raw_json_and_refuse_nan() -> None:
    text = result_message(1, {"qDataPages": [{"qMatrix": RawJson('[[{"qText":"a"}]]')}]}, [1], [2])
    assert json.loads(text) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"qDataPages": [{"qMatrix": [[{"qText": "a"}]]}]},
        "change": [1],
        "close": [2],
    }
    with pytest.raises(ValueError, match="JSON"):
        result_message(1, {"x": float("nan")})
