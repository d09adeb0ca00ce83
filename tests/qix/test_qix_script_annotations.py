"""Tags and comments a load script gives (TAG, COMMENT) in the QIX data-model answers."""

from __future__ import annotations

import pytest
from qixclient import QixClient

from conftest import QixServer

pytestmark = pytest.mark.server


def test_tags_and_comments_in_get_tables_and_keys(qix_server: QixServer) -> None:
    script = """T: LOAD * INLINE [
Amount, Note
1, a
];
Tag Field Amount With 'kpi';
Comment Field Note With 'free text';
Comment Table T With 'the facts';"""
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        doc = qix.handle_of("CreateSessionApp")
        qix.result("SetScript", [script], doc)
        assert qix.result("DoReload", [], doc)["qReturn"] is True
        (table,) = qix.result("GetTablesAndKeys", [{}, {}, 0, False, False], doc)["qtr"]
        fields = {f["qName"]: f for f in table["qFields"]}
        assert table["qComment"] == "the facts"
        assert "kpi" in fields["Amount"]["qTags"]
        assert fields["Note"]["qComment"] == "free text"
