"""Hostile nesting over QIX against a real `assoc serve`: a measure or a script nested beyond the
parsers' limits is a clear error (a layout qError, a failed reload naming the place), and the
server keeps serving."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qixclient import QixClient

from assoc.script.parser import MAX_EXPRESSION_NESTING
from conftest import QixServer

pytestmark = pytest.mark.server

CHART_LIMIT = 256


def _cube(measure: str) -> dict[str, Any]:
    return {
        "qInfo": {"qType": "table"},
        "qHyperCubeDef": {
            "qDimensions": [{"qDef": {"qFieldDefs": ["Region"]}}],
            "qMeasures": [{"qDef": {"qDef": measure}}],
            "qInitialDataFetch": [{"qHeight": 10, "qWidth": 2}],
        },
    }


def _layout(qix: QixClient, measure: str) -> dict[str, Any]:
    obj = qix.handle_of("CreateSessionObject", [_cube(measure)], 1)
    cube: dict[str, Any] = qix.result("GetLayout", [], obj)["qLayout"]["qHyperCube"]
    return cube


def _alive(qix_server: QixServer, qix: QixClient) -> None:
    assert "qVersion" in qix.result("EngineVersion")
    with qix_server.process.client() as rest:
        assert rest.get("/health").status_code == 200
    assert qix_server.process.proc is not None
    assert qix_server.process.proc.poll() is None


def test_a_measure_nested_too_deep_is_a_layout_error(qix_server: QixServer, qix: QixClient) -> None:
    plain = _layout(qix, "Sum(Amount)")
    inside = CHART_LIMIT - 1  # Sum(Amount) is a level of its own
    at_limit = _layout(qix, "(" * inside + "Sum(Amount)" + ")" * inside)
    assert "qError" not in at_limit
    assert at_limit["qDataPages"] == plain["qDataPages"]
    for depth in (CHART_LIMIT + 1, 30_000):
        cube = _layout(qix, "(" * depth + "Sum(Amount)" + ")" * depth)
        assert cube["qError"]["qErrorCode"] == 7000
        message = cube["qError"]["qExtendedMessage"]
        assert "nested deeper than 256 levels at position 256" in message
        assert len(message) < 400
        _alive(qix_server, qix)


def test_a_script_nested_too_deep_fails_its_reload(qix_server: QixServer) -> None:
    with QixClient(qix_server.ws_base + "/app/") as qix:
        doc = qix.result("CreateSessionApp")["qReturn"]["qHandle"]
        deep = "(" * MAX_EXPRESSION_NESTING + "7" + ")" * MAX_EXPRESSION_NESTING
        qix.result("SetScript", [f"T: LOAD {deep} AS A AUTOGENERATE 1;"], doc)
        assert qix.result("DoReload", [], doc)["qReturn"] is True
        for depth in (MAX_EXPRESSION_NESTING + 1, 20_000):
            deep = "(" * depth + "7" + ")" * depth
            qix.result("SetScript", [f"SET x = 1;\nT: LOAD {deep} AS A AUTOGENERATE 1;"], doc)
            [syntax] = qix.result("CheckScriptSyntax", [], doc)["qErrors"]
            assert syntax["qLineInTab"] == 1  # the second line, from 0
            assert qix.result("DoReload", [], doc)["qReturn"] is False
            [error] = qix.result("GetProgress", [0])["qProgressData"]["qErrorData"]
            assert error["qLineNumber"] == 2
            assert f"nested deeper than {MAX_EXPRESSION_NESTING} levels" in error["qErrorString"]
            _alive(qix_server, qix)


_JSON_TREES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=2), inner, max_size=4)
    ),
    max_leaves=40,
)


def _deepest(value: Any, depth: int = 1) -> int:
    """The level of the deepest container (0: none)."""
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, list):
        return 0
    return max([depth, *(_deepest(v, depth + 1) for v in value)])


def _all_finite(value: Any) -> bool:
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return all(_all_finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


@settings(max_examples=400, deadline=None)
@given(_JSON_TREES, st.integers(1, 5))
def test_parameter_trees_are_refused_exactly_when_too_deep_or_not_finite(
    tree: Any, max_depth: int
) -> None:
    from assoc.server.qix.rpc import RpcError, check_tree

    if _deepest(tree) <= max_depth and _all_finite(tree):
        check_tree(tree, "qProp", max_depth)
    else:
        with pytest.raises(RpcError) as refused:
            check_tree(tree, "qProp", max_depth)
        assert refused.value.code == -32602
