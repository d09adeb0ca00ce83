"""The facts QIX keeps per loaded app (field values, counts) must not keep the app loaded:
once the store lets an app go (evicted, replaced, deleted), its memory is freed."""

from __future__ import annotations

import weakref

import assoc
from assoc.server.qix.facts import app_facts


def test_facts_do_not_keep_their_app() -> None:
    app = assoc.App.from_script(
        "SECTION ACCESS; LOAD * INLINE [ACCESS, USERID, K\nUSER, ANN, 1\n];\n"
        "SECTION APPLICATION; T: LOAD * INLINE [K, A\n1, x\n2, y\n];"
    )
    facts = app_facts(app)
    assert app_facts(app) is facts
    facts.values("A")
    facts.column("T", "A")
    with app.session("ANN") as session:
        reduced = facts.for_session(session)
        assert reduced.values("A").texts == ["x", "y"]
    gone = weakref.ref(app)
    del app, facts, reduced, session
    assert gone() is None  # freed at once, without waiting for the cycle collector
