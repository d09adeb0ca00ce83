"""Sessions: X-Qlik-Session sharing, /ttl/N keeping a session for a reconnect, the bound on
kept sessions."""

from __future__ import annotations

import time

import pytest
from qixclient import QixClient, QixError

from appfiles import ServerProcess
from conftest import QixServer


def _selected(qix: QixClient, doc: int) -> list[tuple[str, str]]:
    sel = qix.handle_of(
        "CreateSessionObject", [{"qInfo": {"qType": "S"}, "qSelectionObjectDef": {}}], doc
    )
    layout = qix.result("GetLayout", [], sel)["qLayout"]["qSelectionObject"]["qSelections"]
    return [(s["qField"], s["qSelected"]) for s in layout]


def test_sockets_with_one_session_id_share_selections_and_objects(
    qix_server: QixServer, app_id: str
) -> None:
    url = qix_server.ws_base + "/app/engineData"
    with QixClient(url, {"X-Qlik-Session": "shared-1"}) as first:
        assert first.connected["params"] == {"qSessionState": "SESSION_CREATED"}
        doc = first.open_doc(app_id)
        region = first.handle_of("GetField", ["Region"], doc)
        first.result("SelectValues", [[{"qText": "West"}]], region)
        first.result("CreateSessionObject", [{"qInfo": {"qId": "obj1", "qType": "x"}}], doc)
        with QixClient(url, {"X-Qlik-Session": "shared-1"}) as second:
            assert second.connected["params"] == {"qSessionState": "SESSION_ATTACHED"}
            same = second.handle_of("GetActiveDoc")
            assert same == doc
            assert _selected(second, same) == [("Region", "West")]
            assert second.handle_of("GetObject", ["obj1"], same) > 0
        with QixClient(url, {"X-Qlik-Session": "other"}) as third:
            assert third.connected["params"] == {"qSessionState": "SESSION_CREATED"}
            with pytest.raises(QixError) as no_doc:
                third.result("GetActiveDoc")  # another session id does not see the document
            assert no_doc.value.code == 1007
        # The first socket goes on after the second closed (no TTL: shared, not ended).
        assert _selected(first, doc) == [("Region", "West")]
    # Without a TTL the session ended with its last socket.
    with QixClient(url, {"X-Qlik-Session": "shared-1"}) as again:
        assert again.connected["params"] == {"qSessionState": "SESSION_CREATED"}


def test_ttl_keeps_a_session_for_a_reconnect_then_it_ends(tmp_path) -> None:
    server = ServerProcess(tmp_path / "data", "QixMaxKeptSessions=2").start()
    try:
        qix_server = QixServer(server)
        app_id = qix_server.import_app()
        url = qix_server.ws_base + "/app/engineData/ttl/2"
        headers = {"X-Qlik-Session": "resume-me"}
        with QixClient(url, headers) as qix:
            assert qix.connected["params"] == {"qSessionState": "SESSION_CREATED"}
            doc = qix.open_doc(app_id)
            region = qix.handle_of("GetField", ["Region"], doc)
            qix.result("SelectValues", [[{"qText": "North"}]], region)
            qix.result("CreateSessionObject", [{"qInfo": {"qId": "kept", "qType": "x"}}], doc)
        with QixClient(url, headers) as qix:
            assert qix.connected["params"] == {"qSessionState": "SESSION_ATTACHED"}
            doc = qix.handle_of("GetActiveDoc")
            assert _selected(qix, doc) == [("Region", "North")]
            assert qix.handle_of("GetObject", ["kept"], doc) > 0
        time.sleep(3)
        with QixClient(url, headers) as qix:
            assert qix.connected["params"] == {"qSessionState": "SESSION_CREATED"}
            with pytest.raises(QixError) as expired:
                qix.result("GetActiveDoc")  # the expired session is gone
            assert expired.value.code == 1007
        # A URL with /ttl/N and no header: the user's session at that URL.
        plain = qix_server.ws_base + "/app/engineData/identity/me/ttl/30"
        with QixClient(plain) as qix:
            qix.open_doc(app_id)
        with QixClient(plain) as qix:
            assert qix.connected["params"] == {"qSessionState": "SESSION_ATTACHED"}
        # At most 2 kept sessions: the oldest kept one ends when a third is kept.
        for name in ("k1", "k2", "k3"):
            with QixClient(
                qix_server.ws_base + "/app/engineData/ttl/30", {"X-Qlik-Session": name}
            ) as qix:
                qix.open_doc(app_id)
        states = {}
        for name in ("k3", "k2"):
            with QixClient(
                qix_server.ws_base + "/app/engineData/ttl/30", {"X-Qlik-Session": name}
            ) as qix:
                states[name] = qix.connected["params"]["qSessionState"]
        assert states == {"k3": "SESSION_ATTACHED", "k2": "SESSION_ATTACHED"}
        with QixClient(
            qix_server.ws_base + "/app/engineData/ttl/30", {"X-Qlik-Session": "k1"}
        ) as qix:
            assert qix.connected["params"] == {"qSessionState": "SESSION_CREATED"}
        assert server.stopped_gracefully()
    finally:
        server.stop()


def test_a_selection_on_one_socket_tells_the_sessions_other_sockets(
    qix_server: QixServer, app_id: str
) -> None:
    url = qix_server.ws_base + "/app/engineData"
    with (
        QixClient(url, {"X-Qlik-Session": "two-tabs"}) as first,
        QixClient(url, {"X-Qlik-Session": "two-tabs"}) as second,
        QixClient(url, {"X-Qlik-Session": "elsewhere"}) as other,
    ):
        doc = first.open_doc(app_id)
        chart = first.handle_of(
            "CreateSessionObject",
            [{"qInfo": {"qType": "list"}, "qListObjectDef": {"qDef": {"qFieldDefs": ["Region"]}}}],
            doc,
        )
        other.open_doc(app_id)
        assert second.handle_of("GetActiveDoc") == doc
        assert {"jsonrpc": "2.0", "change": [doc]} in second.pushed  # the first's OpenDoc
        second.pushed.clear()
        region = second.handle_of("GetField", ["Region"], doc)
        answer = second.call("SelectValues", [[{"qText": "West"}]], region)
        assert chart in answer["change"]
        # The first socket is told without asking: a message with no id names its chart.
        first.result("GetLayout", [], chart)
        told = [message for message in first.pushed if "change" in message]
        assert told
        assert "id" not in told[0]
        assert chart in told[0]["change"]
        assert second.pushed == []  # the answer itself carried the change
        # A read changes nothing: nothing more is pushed; another session hears nothing.
        second.result("GetLayout", [], chart)
        first.result("GetLayout", [], chart)
        assert len([m for m in first.pushed if "change" in m]) == 1
        other.result("GetActiveDoc")
        assert [m for m in other.pushed if "change" in m] == []
        # Destroying the object on one socket closes its handle on the other.
        second.result(
            "DestroySessionObject", [first.result("GetInfo", [], chart)["qInfo"]["qId"]], doc
        )
        first.result("GetActiveDoc")
        assert any(chart in m.get("close", []) for m in first.pushed)
