"""Layouts made ahead after a change: the GetLayout requests that follow answer what they would
have computed, whatever comes between (another selection, a patch, pipelined requests, a second
socket of the session)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest
from qixclient import QixClient

from assoc.server.qix import ahead
from assoc.server.qix.handles import ObjectTarget
from assoc.server.qix.objects import GenericObject
from assoc.server.qix.workload import Helper
from conftest import QixServer, symbols

pytestmark = pytest.mark.server

LIST = {
    "qInfo": {"qType": "listbox"},
    "qListObjectDef": {
        "qDef": {"qFieldDefs": ["Customer"], "qSortCriterias": [{"qSortByLoadOrder": 1}]},
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 20}],
    },
}
CUBE = {
    "qInfo": {"qType": "table"},
    "qHyperCubeDef": {
        "qDimensions": [{"qDef": {"qFieldDefs": ["Customer"]}}],
        "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": 20}],
        "qSuppressMissing": True,
    },
}


def laid_out(qix: QixClient) -> tuple[int, int]:
    """The list object and the cube, each laid out once (so a change makes them ahead)."""
    listbox = qix.handle_of("CreateSessionObject", [LIST], 1)
    cube = qix.handle_of("CreateSessionObject", [CUBE], 1)
    qix.result("GetLayout", [], listbox)
    qix.result("GetLayout", [], cube)
    return listbox, cube


def selected(layout: dict[str, Any]) -> list[str]:
    """The selected values of a list object's layout."""
    matrix = layout["qLayout"]["qListObject"]["qDataPages"][0]["qMatrix"]
    return [row[0]["qText"] for row in matrix if row[0]["qState"] == "S"]


def rows(layout: dict[str, Any]) -> list[tuple[str, float]]:
    """A cube layout's (customer, amount) rows."""
    matrix = layout["qLayout"]["qHyperCube"]["qDataPages"][0]["qMatrix"]
    return [(row[0]["qText"], row[1]["qNum"]) for row in matrix]


def select(qix: QixClient, listbox: int, customer: str) -> None:
    code = symbols("Customer").index(customer)
    answer = qix.call("SelectListObjectValues", ["/qListObjectDef", [code], False], listbox)
    assert answer["result"] == {"qSuccess": True}
    assert listbox in answer["change"]


def test_layouts_after_a_selection_are_the_selection_s(qix: QixClient) -> None:
    listbox, cube = laid_out(qix)
    select(qix, listbox, "b")
    assert selected(qix.result("GetLayout", [], listbox)) == ["b"]
    assert rows(qix.result("GetLayout", [], cube)) == [("b", 21)]
    # Asked again without a change, they are computed again: the same.
    assert selected(qix.result("GetLayout", [], listbox)) == ["b"]
    assert rows(qix.result("GetLayout", [], cube)) == [("b", 21)]


def test_a_change_before_the_layouts_are_asked_is_in_them(qix: QixClient) -> None:
    listbox, cube = laid_out(qix)
    select(qix, listbox, "a")
    select(qix, listbox, "c")  # the layouts made for "a" are dropped
    assert rows(qix.result("GetLayout", [], cube)) == [("c", 7)]
    assert selected(qix.result("GetLayout", [], listbox)) == ["c"]
    select(qix, listbox, "d")
    patch = {
        "qOp": "replace",
        "qPath": "/qHyperCubeDef/qMeasures/0/qDef/qDef",
        "qValue": '"Sum(Amount)*10"',
    }
    qix.result("ApplyPatches", [[patch], False], cube)  # the cube's layout made for "d" is dropped
    assert rows(qix.result("GetLayout", [], cube)) == [("d", 30)]
    # After the patch, the cube alone is made ahead; the list object is computed as asked.
    assert selected(qix.result("GetLayout", [], listbox)) == ["d"]
    assert rows(qix.result("GetLayout", [], cube)) == [("d", 30)]


def test_pipelined_layouts_answer_their_own_ids(qix: QixClient) -> None:
    listbox, cube = laid_out(qix)
    select(qix, listbox, "a")
    for request_id, handle in (("cube", cube), (7001, listbox), ("cube again", cube)):
        qix.ws.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": request_id, "method": "GetLayout", "handle": handle}
            )
        )
    answers = [qix.receive_answer() for _ in range(3)]
    assert [a["id"] for a in answers] == ["cube", 7001, "cube again"]
    assert rows(answers[0]["result"]) == rows(answers[2]["result"]) == [("a", 15)]
    assert selected(answers[1]["result"]) == ["a"]


def test_each_socket_of_a_shared_session_gets_the_layouts(
    qix_server: QixServer, app_id: str
) -> None:
    url = qix_server.ws_base + f"/app/{app_id}"
    with (
        QixClient(url, {"X-Qlik-Session": "ahead-1"}) as first,
        QixClient(url, {"X-Qlik-Session": "ahead-1"}) as second,
    ):
        first.open_doc(app_id)
        listbox, cube = laid_out(first)
        select(first, listbox, "b")
        # Both sockets ask the changed objects' layouts: both answers are the selection's.
        assert rows(second.result("GetLayout", [], cube)) == [("b", 21)]
        assert rows(first.result("GetLayout", [], cube)) == [("b", 21)]
        assert selected(first.result("GetLayout", [], listbox)) == ["b"]
        assert selected(second.result("GetLayout", [], listbox)) == ["b"]


def test_a_destroyed_object_s_layout_made_ahead_is_not_answered(qix: QixClient) -> None:
    listbox, cube = laid_out(qix)
    select(qix, listbox, "c")
    info = qix.result("GetLayout", [], listbox)["qLayout"]["qInfo"]
    select(qix, listbox, "a")
    destroyed = qix.call("DestroySessionObject", [info["qId"]], 1)
    assert destroyed["result"] == {"qSuccess": True}
    assert destroyed["close"] == [listbox]
    assert qix.call("GetLayout", [], listbox)["error"]["code"] == -32602
    assert rows(qix.result("GetLayout", [], cube)) == [("a", 15)]


def _in_selection_mode(qix: QixClient, cube: int, customer: str) -> None:
    """BeginSelections on the cube, then a selection of one customer in it."""
    assert qix.call("BeginSelections", [["/qHyperCubeDef"]], cube)["change"] == [cube]
    code = symbols("Customer").index(customer)
    answer = qix.call("SelectHyperCubeValues", ["/qHyperCubeDef", 0, [code], False], cube)
    assert answer["result"] == {"qSuccess": True}


def _selection_info(layout: dict[str, Any]) -> dict[str, bool]:
    return layout["qLayout"]["qSelectionInfo"]


def test_layouts_asked_in_selection_mode_then_after_accepting(qix: QixClient) -> None:
    # As nebula.js asks: the charts' layouts right after the selection, the modal chart's
    # again once the selection is accepted (its answer changes that chart alone).
    listbox, cube = laid_out(qix)
    _in_selection_mode(qix, cube, "b")
    modal = qix.result("GetLayout", [], cube)
    assert rows(modal) == [("b", 21)]
    assert _selection_info(modal) == {"qInSelections": True, "qMadeSelections": True}
    assert selected(qix.result("GetLayout", [], listbox)) == ["b"]
    assert qix.call("EndSelections", [True], cube)["change"] == [cube]
    accepted = qix.result("GetLayout", [], cube)
    assert rows(accepted) == [("b", 21)]
    assert _selection_info(accepted) == {"qInSelections": False, "qMadeSelections": False}


def test_layouts_asked_once_the_selection_is_accepted(qix: QixClient) -> None:
    # As enigma.js programs often ask: every layout after EndSelections(true). The ones made
    # ahead in selection mode are kept; the modal chart's is made out of selection mode.
    listbox, cube = laid_out(qix)
    _in_selection_mode(qix, cube, "c")
    assert qix.call("EndSelections", {"qAccept": True}, cube)["change"] == [cube]
    accepted = qix.result("GetLayout", [], cube)
    assert rows(accepted) == [("c", 7)]
    assert _selection_info(accepted) == {"qInSelections": False, "qMadeSelections": False}
    assert selected(qix.result("GetLayout", [], listbox)) == ["c"]
    assert _selection_info(qix.result("GetLayout", [], listbox))["qInSelections"] is False


def test_layouts_made_in_selection_mode_are_dropped_when_it_is_cancelled(
    qix: QixClient,
) -> None:
    listbox, cube = laid_out(qix)
    before = rows(qix.result("GetLayout", [], cube))
    _in_selection_mode(qix, cube, "a")
    assert qix.call("EndSelections", [False], cube)["result"] == {}
    assert rows(qix.result("GetLayout", [], cube)) == before
    assert selected(qix.result("GetLayout", [], listbox)) == []
    # Accepting in another object than the modal one changes nothing.
    _in_selection_mode(qix, cube, "a")
    assert qix.call("EndSelections", [True], listbox)["result"] == {}
    assert _selection_info(qix.result("GetLayout", [], cube))["qInSelections"] is True
    assert qix.call("EndSelections", [True], cube)["change"] == [cube]
    assert rows(qix.result("GetLayout", [], cube)) == [("a", 15)]


class _Engine:
    """Engine threads without a memory budget (what LayoutsAhead needs of EngineWork)."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(1)

    def submit(self, func: Any, *args: Any) -> asyncio.Future[Any]:
        return asyncio.get_running_loop().run_in_executor(self.pool, func, *args)

    def helper(self, func: Any, *args: Any) -> Helper:
        """No second thread: the one that asks makes every layout."""
        helper = Helper(func, args)
        helper.finish()
        return helper


def _hand_over(monkeypatch: pytest.MonkeyPatch, send: str, first: Any = LIST) -> list[str]:
    """The order of an engine answer, its send and the layout made ahead after it; `send`:
    "sent" (the loop sends the answer), "cancelled" (the request is given up); `first`: the
    properties of the object laid out ahead."""
    monkeypatch.setattr(ahead, "SEND_WAIT", 30.0)  # the layout waits for the send, not the clock
    events: list[str] = []
    made = threading.Event()

    def layout(*_: Any) -> None:
        events.append("layout made")
        made.set()

    monkeypatch.setattr(ahead, "_layout", layout)
    target = ObjectTarget(doc=None, obj=GenericObject.create(first, "o"))  # type: ignore[arg-type]
    session = SimpleNamespace(
        doc=SimpleNamespace(modal=None),
        handles=SimpleNamespace(open_handles=lambda: [7], get=lambda handle: target),
        notice=([7], []),
    )

    async def main() -> None:
        later = ahead.LayoutsAhead()
        later.asked(7)  # the object was laid out before: the change makes it ahead
        engine = _Engine()
        job, answered = later.answer_then_make(
            engine,  # type: ignore[arg-type]
            session,  # type: ignore[arg-type]
            lambda: events.append("answer made") or "answer",
        )
        if send == "cancelled":
            answered.cancel()
        else:
            assert await answered == "answer"
            await asyncio.sleep(0.05)  # the engine thread would have gone on by now
            events.append("answer sent")
            later.answer_sent()
        await asyncio.wait({job})
        engine.pool.shutdown()

    asyncio.run(main())
    assert made.is_set()
    return events


def test_layouts_ahead_are_made_once_the_answer_is_sent(monkeypatch) -> None:
    # The engine thread that made an answer leaves the interpreter and the cores to the loop
    # until the answer is sent: the client can ask for no layout before it has the answer.
    assert _hand_over(monkeypatch, "sent") == ["answer made", "answer sent", "layout made"]


def test_a_chart_s_layout_ahead_starts_before_the_answer_is_sent(monkeypatch) -> None:
    # A layout that starts with its cube starts at once: the cube leaves the interpreter to
    # the loop, and a thread that waited would go on only once the loop let go of it.
    assert _hand_over(monkeypatch, "sent", CUBE) == ["answer made", "layout made", "answer sent"]


def test_a_request_given_up_does_not_hold_its_layouts_back(monkeypatch) -> None:
    started = time.monotonic()
    assert _hand_over(monkeypatch, "cancelled")[-1] == "layout made"
    assert time.monotonic() - started < 10  # not the 30 s the send is waited for at most


def test_a_layout_begun_before_its_object_is_remade_is_not_answered(monkeypatch) -> None:
    # The engine thread is making object 7's layout when the loop learns that it changed
    # (EndSelections(true) of the modal object): the GetLayout that follows gets the layout
    # made after the change, never the one begun before it.
    begun, release = threading.Event(), threading.Event()
    made: list[str] = []

    def layout(*_: Any) -> SimpleNamespace:
        name = "before" if not made else "after"
        made.append(name)
        if name == "before":
            begun.set()
            release.wait(10)
        return SimpleNamespace(full=lambda request: name)

    monkeypatch.setattr(ahead, "_layout", layout)
    session = SimpleNamespace(
        doc=SimpleNamespace(modal=None), handles=SimpleNamespace(open_handles=lambda: [7])
    )

    async def main() -> str | None:
        later = ahead.LayoutsAhead()
        later.asked(7)
        engine = _Engine()
        later.start(engine, session, [7])  # type: ignore[arg-type]
        await asyncio.get_running_loop().run_in_executor(None, begun.wait, 10)
        later.remake(engine, session, [7])  # type: ignore[arg-type]
        release.set()
        answer = await later.serve(ahead.Request(1, 7, "GetLayout", None))
        await later.settle()
        engine.pool.shutdown()
        return answer

    assert asyncio.run(main()) == "after"
    assert made == ["before", "after"]
