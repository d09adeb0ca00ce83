"""Delta answers (`"delta": true` on a request, as enigma.js sends it): JSON-Patch operations
against what the socket last received for the same handle, method and result member. Checked
over raw WebSockets with this suite's own applier (qixclient.apply_patch) against a socket
that asks for full answers, through enigma.js's own applier on replayed answers, and with the
real enigma.js against the server."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qixclient import QixClient, apply_patch

from appfiles import run_node
from assoc.server.qix.delta import DeltaBases, NotExpressible
from assoc.server.qix.rpc import RawJson, result_message
from conftest import QixServer

pytestmark = pytest.mark.server

NODE = shutil.which("node")
REPLAY = Path(__file__).with_name("enigma_delta_replay.js")
ENIGMA_LAYOUTS = Path(__file__).with_name("enigma_delta.js")
CUBE = {
    "qInfo": {"qId": "bar", "qType": "barchart"},
    "qHyperCubeDef": {
        "qDimensions": [{"qDef": {"qFieldDefs": ["Customer"]}}],
        "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": 20}],
        "qSuppressMissing": True,
    },
}
LIST = {
    "qInfo": {"qId": "list", "qType": "listbox"},
    "qListObjectDef": {
        "qDef": {"qFieldDefs": ["Customer"]},
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 20}],
    },
}
MEASURE = "/qHyperCubeDef/qMeasures/0/qDef/qDef"


def canonical(value: Any) -> str:
    """A value's JSON as a client sees it: true is not 1, 1.0 is 1; members in order."""

    def plain(v: Any) -> Any:
        if isinstance(v, RawJson):
            return plain(json.loads(v.text))
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [plain(x) for x in v]
        if type(v) is float and v.is_integer():
            return int(v)
        return v

    return json.dumps(plain(value), sort_keys=True)


def ops_of(qix: QixClient, member: str) -> list[dict[str, Any]]:
    """The operations of the latest (delta) answer for one result member."""
    assert qix.raw["delta"] is True
    found: list[dict[str, Any]] = qix.raw["result"][member]
    return found


@pytest.fixture
def pair(qix_server: QixServer, app_id: str) -> Iterator[tuple[QixClient, QixClient]]:
    """Two sessions on the app: one asks for delta answers, the other for full ones."""
    url = qix_server.ws_base + f"/app/{app_id}"
    with QixClient(url) as delta, QixClient(url, delta=False) as full:
        delta.open_doc(app_id)
        full.open_doc(app_id)
        yield delta, full


def both(pair: tuple[QixClient, QixClient], method: str, params: Any, handle: int) -> Any:
    """One request on both sessions; the delta session's patched result, checked against the
    full one (and the full answer never says delta)."""
    delta, full = pair
    patched = delta.result(method, params, handle)
    whole = full.result(method, params, handle)
    assert "delta" not in full.raw
    assert canonical(patched) == canonical(whole)
    return patched


def test_layouts_patched_equal_full_answers(pair: tuple[QixClient, QixClient]) -> None:
    delta, full = pair
    cube = delta.handle_of("CreateSessionObject", [CUBE], 1)
    assert full.handle_of("CreateSessionObject", [CUBE], 1) == cube
    first = both(pair, "GetLayout", [], cube)
    # The first answer adds the whole value at "/".
    assert ops_of(delta, "qLayout") == [{"op": "add", "path": "/", "value": first["qLayout"]}]
    # Nothing changed: no operations.
    both(pair, "GetLayout", [], cube)
    assert ops_of(delta, "qLayout") == []
    # A selection: the changed parts only (the matrix by row, the rest untouched).
    for qix in pair:
        qix.result("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [0], False], cube)
    both(pair, "GetLayout", [], cube)
    ops = ops_of(delta, "qLayout")
    assert ops
    assert all(op["path"] != "/" and op["op"] in ("add", "replace", "remove") for op in ops)
    paths = {op["path"] for op in ops}
    assert "/qHyperCube/qSize/qcy" in paths
    assert "/qHyperCube/qDimensionInfo/0/qStateCounts/qSelected" in paths  # by member
    assert not any(op["path"].startswith("/qInfo") for op in ops)
    # A patched measure (its layout made ahead), then the selection cleared.
    patch = {"qOp": "replace", "qPath": MEASURE, "qValue": json.dumps("Sum(Amount)*2")}
    for qix in pair:
        qix.result("ApplyPatches", [[patch], False], cube)
    patched = both(pair, "GetLayout", [], cube)
    assert all(op["path"] != "/" for op in ops_of(delta, "qLayout"))
    assert patched["qLayout"]["qHyperCube"]["qMeasureInfo"][0]["qFallbackTitle"] == "Sum(Amount)*2"
    for qix in pair:
        qix.result("ClearAll", [], 1)
    both(pair, "GetLayout", [], cube)
    both(pair, "GetProperties", [], cube)
    page = {"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": 20}
    both(pair, "GetHyperCubeData", ["/qHyperCubeDef", [page]], cube)
    both(pair, "GetHyperCubeData", ["/qHyperCubeDef", [page]], cube)
    assert ops_of(delta, "qDataPages") == []


def test_bases_per_handle_and_method(pair: tuple[QixClient, QixClient]) -> None:
    delta, _ = pair
    cube = delta.handle_of("CreateSessionObject", [CUBE], 1)
    listbox = delta.handle_of("CreateSessionObject", [LIST], 1)
    pair[1].handle_of("CreateSessionObject", [CUBE], 1)
    pair[1].handle_of("CreateSessionObject", [LIST], 1)
    both(pair, "GetLayout", [], cube)
    both(pair, "GetLayout", [], cube)
    assert ops_of(delta, "qLayout") == []
    # Another method on the same handle, and the same method on another handle: each has a
    # base of its own, so their first answers add the whole value.
    properties = both(pair, "GetProperties", [], cube)
    assert ops_of(delta, "qProp") == [{"op": "add", "path": "/", "value": properties["qProp"]}]
    layout = both(pair, "GetLayout", [], listbox)
    assert ops_of(delta, "qLayout") == [{"op": "add", "path": "/", "value": layout["qLayout"]}]
    for qix in pair:
        qix.result("SelectListObjectValues", ["/qListObjectDef", [1], False], listbox)
    both(pair, "GetLayout", [], listbox)
    both(pair, "GetLayout", [], cube)
    both(pair, "GetProperties", [], cube)
    assert ops_of(delta, "qProp") == []


def test_full_answers_leave_the_base(pair: tuple[QixClient, QixClient]) -> None:
    """A request without delta between two with it: the base stays what the client kept."""
    delta, _ = pair
    cube = delta.handle_of("CreateSessionObject", [CUBE], 1)
    pair[1].handle_of("CreateSessionObject", [CUBE], 1)
    before = both(pair, "GetLayout", [], cube)
    for qix in pair:
        qix.result("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [1], False], cube)
    delta.delta = False
    plain = delta.result("GetLayout", [], cube)
    assert "delta" not in delta.raw
    assert canonical(plain) != canonical(before)
    delta.delta = True
    both(pair, "GetLayout", [], cube)
    # Patched from the layout before the selection (the one this client keeps).
    assert apply_patch(before["qLayout"], ops_of(delta, "qLayout")) == plain["qLayout"]


def test_errors_carry_no_delta(qix_server: QixServer, app_id: str) -> None:
    with QixClient(qix_server.ws_base + f"/app/{app_id}") as qix:
        doc = qix.open_doc(app_id)
        for method, params, handle in (
            ("GetObject", ["no-such-object"], doc),
            ("GetLayout", [], 99),
            ("NoSuchMethod", [], doc),
            ("GetField", [7], doc),
        ):
            answer = qix.call(method, params, handle)
            assert "error" in answer
            assert "delta" not in answer
            assert "result" not in answer


def test_each_socket_of_a_shared_session_has_its_own_bases(
    qix_server: QixServer, app_id: str
) -> None:
    url = qix_server.ws_base + f"/app/{app_id}"
    headers = {"X-Qlik-Session": "delta-two-tabs"}
    with (
        QixClient(url, headers) as first,
        QixClient(url, headers) as second,
        QixClient(url, delta=False) as full,
    ):
        doc = first.open_doc(app_id)
        cube = first.handle_of("CreateSessionObject", [CUBE], doc)
        full.open_doc(app_id)
        assert full.handle_of("CreateSessionObject", [CUBE], 1) == cube
        whole = full.result("GetLayout", [], cube)
        layout = first.result("GetLayout", [], cube)
        assert canonical(layout) == canonical(whole)
        assert first.result("GetLayout", [], cube) == layout
        assert ops_of(first, "qLayout") == []
        # The second socket received nothing yet: its first answer is the whole value.
        assert canonical(second.result("GetLayout", [], cube)) == canonical(whole)
        assert ops_of(second, "qLayout")[0]["path"] == "/"
        # A change on the first socket (its layout made ahead against its own bases); each
        # socket's answer is patched from what it received.
        first.result("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [2], False], cube)
        full.result("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [2], False], cube)
        whole = full.result("GetLayout", [], cube)
        assert canonical(second.result("GetLayout", [], cube)) == canonical(whole)
        assert all(op["path"] != "/" for op in ops_of(second, "qLayout"))
        assert canonical(first.result("GetLayout", [], cube)) == canonical(whole)
        assert all(op["path"] != "/" for op in ops_of(first, "qLayout"))


# ---- the operations themselves, against enigma.js's applier ---------------------------------

NAMES = ["a", "b", "qX", "_p", "$$h", "0", "1", "01", "1e3", " 1", "Infinity", "NaN", "a/b"]
NAMES += ["a~b", "~1", "", "constructor", "prototype", "__proto__", "qMatrix", "-1", ".5"]


def _scalar(rng: random.Random) -> Any:
    return rng.choice([0, 1, 2.5, -0.0, True, False, None, "", "x", "1", 1e300, 7])


def _value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth <= 0 or roll < 0.35:
        return _scalar(rng)
    if roll < 0.65:
        return {rng.choice(NAMES): _value(rng, depth - 1) for _ in range(rng.randint(0, 4))}
    if roll < 0.9:
        return [_value(rng, depth - 1) for _ in range(rng.randint(0, 5))]
    rows = [json.dumps([_scalar(rng) for _ in range(2)]) for _ in range(rng.randint(0, 5))]
    return RawJson("[" + ",".join(rows) + "]", rows)


def _mutate(value: Any, rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if roll < 0.15:
        return _value(rng, depth)
    if isinstance(value, dict):
        out = {
            k: (_mutate(v, rng, depth - 1) if rng.random() < 0.4 else v) for k, v in value.items()
        }
        if out and rng.random() < 0.3:
            del out[rng.choice(list(out))]
        if rng.random() < 0.3:
            out[rng.choice(NAMES)] = _value(rng, depth - 1)
        return out
    if isinstance(value, list):
        items = [(_mutate(v, rng, depth - 1) if rng.random() < 0.3 else v) for v in value]
        if items and rng.random() < 0.3:
            items.pop(rng.randrange(len(items)))
        if rng.random() < 0.3:
            items.insert(rng.randint(0, len(items)), _value(rng, depth - 1))
        return items
    if isinstance(value, RawJson) and value.items is not None:
        rows = list(value.items)
        if rows and rng.random() < 0.6:
            rows[rng.randrange(len(rows))] = json.dumps([_scalar(rng), _scalar(rng)])
        if rng.random() < 0.3:
            rows.append(json.dumps([_scalar(rng)]))
        return RawJson("[" + ",".join(rows) + "]", rows)
    return _value(rng, depth) if roll < 0.5 else value


def _answer(bases: DeltaBases, method: str, result: dict[str, Any]) -> dict[str, Any]:
    """The answer the server sends (session.py): a delta one when it can be."""
    try:
        prepared = bases.prepare(-1, method, result)
    except NotExpressible:
        return dict(json.loads(result_message(0, result)))
    answer = json.loads(result_message(0, prepared.result, delta=True))
    bases.commit(prepared)
    return dict(answer)


def _sequences(count: int, steps: int) -> list[tuple[list[dict[str, Any]], list[str]]]:
    """Random answers for two Global methods of one socket (small bases: they give way),
    as the server makes them, and the value each step must hand the client."""
    rng = random.Random(21)
    out = []
    methods = [
        ("engineVersion", "EngineVersion", "qVersion"),
        ("getDocList", "GetDocList", "qDocList"),
    ]
    for n in range(count):
        bases = DeltaBases(max_bases=1 + n % 2)
        values: list[Any] = [{"a": _value(rng, 3), "b": [], "qX": _value(rng, 3)}, {"b": 1}]
        if n % 4 == 0:
            values[0] = [_value(rng, 3)]
        script, expected = [], []
        for _ in range(steps):
            which = rng.randrange(2) if n % 3 else 0
            js_name, method, member = methods[which]
            value = values[which]
            if isinstance(value, dict):  # changed in place (the kept base must not follow)
                for name in [k for k in value if rng.random() < 0.4]:
                    value[name] = _mutate(value[name], rng, 4)
                if rng.random() < 0.1:
                    value[rng.choice(NAMES)] = _value(rng, 3)
                value["stays"] = "the same"
            else:
                values[which] = _mutate(value, rng, 4)
            if n % 5 == 4 and rng.random() < 0.1:  # the whole changes kind, or is null
                values[which] = rng.choice([None, 3, "t", [1], {"_q": 1}, {"q": {"_r": 2}}])
            answer = _answer(bases, method, {member: values[which]})
            script.append({"method": js_name, "answer": answer})
            expected.append(canonical(values[which]))
        out.append((script, expected))
    # Each tricky name as a member whose object changes inside, becomes 0, an object again,
    # goes and comes back as an array.
    for name in NAMES:
        bases = DeltaBases()
        script, expected = [], []
        for value in (
            {"k": 1, name: {"x": 1, "w": 0}},
            {"k": 1, name: {"x": 2, "w": 0}},
            {"k": 1, name: 0},
            {"k": 1, name: {"z": 3}},
            {"k": 1},
            {"k": 1, name: [1]},
            {"k": 1, name: {"_s": 1, "t": 2}},
            {"k": 1, name: {"t": 3}},
        ):
            answer = _answer(bases, "EngineVersion", {"qVersion": value})
            script.append({"method": "engineVersion", "answer": answer})
            expected.append(canonical(value))
        out.append((script, expected))
    return out


def test_operations_rebuild_every_value() -> None:
    """This suite's applier, on the operations of random changes (tricky member names,
    changes of kind, bools and numbers, matrix rows): each value comes out as sent."""
    for script, expected in _sequences(60, 40):
        kept: dict[str, Any] = {}
        for step, want in zip(script, expected, strict=True):
            answer = step["answer"]
            ((member, value),) = answer["result"].items()
            if answer.get("delta"):
                kept[member] = value = apply_patch(kept.get(member), value)
            assert canonical(value) == want


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_enigma_js_applies_the_operations(node_packages: Path, tmp_path: Path) -> None:
    """enigma.js's own delta handling, on the same random answers: the values it hands back
    are those sent (its applier reads `/` as the whole value, member names that read as
    numbers as array indexes, and keeps `_…` members of an object it replaces)."""
    sequences = _sequences(60, 40)
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps({"sequences": [script for script, _ in sequences]}))
    seen = run_node(REPLAY, str(replay))
    assert len(seen) == len(sequences)
    for got, (_, expected) in zip(seen, sequences, strict=True):
        assert [canonical(step.get("value", step)) for step in got] == expected


def test_bases_are_bounded_and_forgotten() -> None:
    bases = DeltaBases(max_bases=2, max_bytes=10_000)
    for handle in (1, 2, 3):
        bases.commit(bases.prepare(handle, "GetLayout", {"qLayout": {"n": handle}}))
    assert len(bases) == 2  # the least recently used gave way
    # Its next answer replaces the whole value the client still keeps.
    again = bases.prepare(1, "GetLayout", {"qLayout": {"n": 1}})
    assert again.result == {"qLayout": [{"op": "replace", "path": "/", "value": {"n": 1}}]}
    bases.commit(again)
    big = {"qLayout": {"text": "x" * 20_000}}
    bases.commit(bases.prepare(4, "GetLayout", big))
    assert len(bases) == 0  # past the byte budget: kept by the client only
    assert bases.bytes == 0
    bases.commit(bases.prepare(5, "GetLayout", {"qLayout": {"n": 5}}))
    bases.commit(bases.prepare(5, "GetProperties", {"qProp": {"n": 5}}))
    bases.forget([5])
    assert len(bases) == 0
    first = bases.prepare(5, "GetLayout", {"qLayout": {"n": 5}})
    assert first.result["qLayout"][0]["op"] == "add"  # as after a close: nothing kept


def test_member_names_that_are_not_text() -> None:
    """A dict keyed by numbers (JSON writes them as text) is never on a path: replaced whole."""
    bases = DeltaBases()
    bases.commit(bases.prepare(1, "GetLayout", {"qLayout": {"k": 1, "m": {7: "a", "x": 0}}}))
    changed = {"k": 1, "m": {7: "b", "x": 0}}
    prepared = bases.prepare(1, "GetLayout", {"qLayout": changed})
    assert prepared.result == {"qLayout": [{"op": "replace", "path": "/m", "value": changed["m"]}]}


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_enigma_js_layouts_with_delta_equal_full_ones(
    qix_server: QixServer, app_id: str, node_packages: Path
) -> None:
    seen = run_node(ENIGMA_LAYOUTS, qix_server.ws_base, app_id)
    assert seen["deltaAnswers"] > 0  # enigma.js asked for delta answers and got them
    assert seen["fullDeltaAnswers"] == 0  # the later layouts came as patches
    assert seen["plainDeltaAnswers"] == 0
    assert seen["withDelta"] == seen["withoutDelta"]
    first, selected, patched = seen["withDelta"]
    assert first != selected != patched  # each change shows
    assert selected["qHyperCube"]["qSize"]["qcy"] == 1
    assert patched["qHyperCube"]["qMeasureInfo"][0]["qFallbackTitle"] == "Sum(Amount)*3"


def test_bases_are_copies_of_what_was_sent() -> None:
    """A base does not follow the live value changed in place; values compare as JSON does."""
    bases = DeltaBases()
    live: dict[str, Any] = {"rows": [{"a": 1}], "pair": (1, 2), "flag": True, "n": 1}
    bases.commit(bases.prepare(1, "GetLayout", {"qLayout": live}))
    live["rows"][0]["a"] = 2
    live["flag"] = 1  # true is not 1
    live["n"] = 1.0  # 1 is 1.0
    live["pair"] = [1, 2]  # a tuple was sent as an array
    prepared = bases.prepare(1, "GetLayout", {"qLayout": live})
    assert prepared.result == {
        "qLayout": [
            {"op": "replace", "path": "/rows/0/a", "value": 2},
            {"op": "replace", "path": "/flag", "value": 1},
        ]
    }
    bases.commit(prepared)
    assert bases.prepare(1, "GetLayout", {"qLayout": live}).result == {"qLayout": []}


def test_names_no_path_can_carry_replace_their_parent() -> None:
    bases = DeltaBases()
    bases.commit(bases.prepare(1, "GetLayout", {"qLayout": {"k": 1, "m": {"\ud800": 1}}}))
    changed = {"k": 1, "m": {"\ud800": 2}}  # a lone surrogate: no UTF-8 path
    prepared = bases.prepare(1, "GetLayout", {"qLayout": changed})
    assert prepared.result == {"qLayout": [{"op": "replace", "path": "/m", "value": changed["m"]}]}


def test_a_value_nested_past_the_interpreter_s_limit_raises() -> None:
    """RecursionError, as the interpreter's own walks give, never a crash of the process."""
    deep: dict[str, Any] = {}
    for _ in range(100_000):
        deep = {"d": deep}
    bases = DeltaBases()
    with pytest.raises(RecursionError):
        bases.prepare(1, "GetLayout", {"qLayout": deep})
    bases.commit(bases.prepare(1, "GetLayout", {"qLayout": {"d": {}}}))
    with pytest.raises(RecursionError):
        bases.prepare(1, "GetLayout", {"qLayout": deep})
