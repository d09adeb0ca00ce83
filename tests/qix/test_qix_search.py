"""Field search strings (`Select`, `ToggleSelect`): the matcher against a regular-expression
reference, a pattern that made a backtracking matcher run for hours, and the service answering
`/health` while a search runs."""

from __future__ import annotations

import re
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qixclient import QixClient

from assoc.server.qix.wildcard import Wildcard, fold
from conftest import QixServer

pytestmark = pytest.mark.server


def _reference(pattern: str, text: str) -> bool:
    """The search string as a regular expression (backtracking: small inputs only)."""
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in fold(pattern))
    return re.fullmatch("".join(parts), fold(text), re.DOTALL) is not None


ALPHABET = st.sampled_from("aAbB?*\u00e9\u00c9\u0130\u00df\n.")
VALUES = st.text(st.sampled_from("aAbB\u00e9\u00c9\u0130\u00df\n.?*"), max_size=12)


@settings(max_examples=1500, deadline=None)
@given(pattern=st.text(ALPHABET, max_size=10), text=VALUES)
def test_matches_the_reference(pattern: str, text: str) -> None:
    assert Wildcard(pattern).matches(text) == _reference(pattern, text)


@settings(max_examples=300, deadline=None)
@given(text=VALUES, data=st.data())
def test_a_pattern_cut_from_the_value_matches(text: str, data: st.DataObject) -> None:
    """Pieces of the value kept in order, the rest replaced by `*` or `?`: always a match."""
    marks = data.draw(st.lists(st.sampled_from("k*?"), min_size=len(text), max_size=len(text)))
    kept = zip(text, marks, strict=True)
    pattern = "".join(c if m == "k" else "?" if m == "?" else "*" for c, m in kept)
    upper = "".join(c.upper() if len(c.upper()) == 1 else c for c in pattern)
    assert Wildcard(upper).matches(text)


def test_explicit_cases() -> None:
    assert Wildcard("abc").matches("ABC")
    assert Wildcard("\u00c9t\u00e9").matches("\u00e9T\u00c9")
    assert not Wildcard("abc").matches("abcd")
    assert Wildcard("").matches("")
    assert not Wildcard("").matches("a")
    assert Wildcard("*").matches("")
    assert Wildcard("a**b").matches("ab")
    assert not Wildcard("a*a").matches("a")
    assert not Wildcard("ab*?*cd").matches("abcd")
    assert Wildcard("ab*?*cd").matches("abXcd")
    assert Wildcard("*.*").matches("a.b")
    assert Wildcard("?\n?").matches("a\nb")


def test_stars_over_long_values_are_linear() -> None:
    """`******Z` over 80-character values took ~3.5 s a value; eight stars, hours."""
    values = ["a" * 79 + "b"] * 2_000 + ["a" * 79 + "z"]
    for pattern in ("******Z", "*" * 40 + "Z", "*a" * 40 + "*Z", "*a?" * 30 + "*Z"):
        matcher = Wildcard(pattern).matches
        assert [i for i, v in enumerate(values) if matcher(v)] == [2_000]


def test_health_answers_while_a_search_runs(qix_server: QixServer) -> None:
    """A search over 100,000 long values: /health answers during it, and the search ends."""
    rows = 100_000
    values = [f"{'a' * 70}{i:010d}" for i in range(rows)]
    app_id = qix_server.import_app({"T": {"Long": values}})
    answer: dict[str, object] = {}
    with QixClient(qix_server.ws_base + "/app/") as qix:
        doc = qix.open_doc(app_id)
        field = qix.handle_of("GetField", ["Long"], doc)

        def search() -> None:
            answer.update(qix.call("Select", ["*a*a*a*a*a*a*a*a*0000099999"], field))

        thread = threading.Thread(target=search)
        thread.start()
        health = []
        with qix_server.process.client() as rest:
            while thread.is_alive() or not health:
                health.append(rest.get("/health").status_code)
                time.sleep(0.01)
        thread.join(60)
        assert set(health) == {200}
        assert answer["result"] == {"qReturn": True}
        assert qix.result("Select", ["*a*a*a*a*a*a*a*a*Z"], field) == {"qReturn": False}
