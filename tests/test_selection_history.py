"""Session selection primitives beyond select/clear: state selections, locks, history, rollback."""

from __future__ import annotations

import pytest

import assoc
from assoc import App

ORDERS = {"Customer": ["a", "b", "a", "c"], "Amount": [10, 20, 5, 7]}
CUSTOMERS = {"Customer": ["a", "b", "c", "e"], "Region": ["North", "South", "North", "West"]}


@pytest.fixture
def session() -> assoc.Session:
    app = App.from_tables({"Orders": ORDERS, "Customers": CUSTOMERS})
    return app.session()


def selected(session: assoc.Session) -> dict[str, set[object]]:
    return {f: set(v) for f, v in session.selections().items()}


def test_state_selections_follow_the_states(session: assoc.Session) -> None:
    session.select("Region", ["North"])  # customers a, c possible; b, e excluded
    assert session.select_possible("Customer")
    assert selected(session)["Customer"] == {"a", "c"}
    # Customer has a selection now: b and e are alternatives (Region North allows only a, c).
    session.clear_field("Region")
    assert session.select_alternative("Customer")
    assert selected(session)["Customer"] == {"b", "e"}
    assert session.select_excluded("Customer")  # the inverse
    assert selected(session)["Customer"] == {"a", "c"}
    assert session.select_all("Customer")
    assert selected(session)["Customer"] == {"a", "b", "c", "e"}
    # Nothing alternative when every value is selected: no change, False.
    assert not session.select_alternative("Customer")
    assert selected(session)["Customer"] == {"a", "b", "c", "e"}
    with pytest.raises(assoc.Error):
        session.select_all("Nope")


def test_locked_fields_keep_their_selection(session: assoc.Session) -> None:
    assert not session.lock("Region")  # nothing selected: nothing to lock
    session.select("Region", ["North"])
    assert session.lock("Region")
    assert session.is_locked("Region")
    assert session.locked() == ["Region"]
    assert not session.select("Region", ["South"])
    assert not session.select_indices("Region", [1])
    assert not session.clear_field("Region")
    assert not session.select_all("Region")
    session.select("Customer", ["a"])
    session.clear()  # keeps the locked field
    assert selected(session) == {"Region": {"North"}}
    assert session.unlock("Region")
    assert not session.unlock("Region")
    assert session.select("Region", ["South"])
    session.lock_all()
    assert session.locked() == ["Region"]
    session.clear(locked_also=True)
    assert selected(session) == {}
    assert session.locked() == []
    session.select("Region", ["West"])
    session.lock_all()
    session.unlock_all()
    assert session.clear_field("Region")
    with pytest.raises(assoc.Error):
        session.lock("Nope")


def test_back_and_forward_walk_the_history(session: assoc.Session) -> None:
    session.select("Region", ["West"])  # no history kept yet: no step
    assert session.back_count == 0
    session.clear()
    session.keep_history = True
    assert session.back_count == 0
    assert not session.back()
    assert not session.forward()
    session.select("Region", ["North"])
    session.select("Customer", ["a"])
    session.select("Customer", ["a"])  # no change: no step
    assert session.back_count == 2
    assert session.back()
    assert selected(session) == {"Region": {"North"}}
    assert (session.back_count, session.forward_count) == (1, 1)
    assert session.back()
    assert selected(session) == {}
    assert session.counts("Customer")["possible"] == 4
    assert session.forward()
    assert session.forward()
    assert not session.forward()
    assert selected(session) == {"Region": {"North"}, "Customer": {"a"}}
    session.back()
    session.select("Region", ["South"])  # a new step drops the forward steps
    assert session.forward_count == 0
    with session.step():  # several changes, one step
        session.select("Customer", ["b"])
        session.select("Region", ["North", "South"])
    before = session.back_count
    session.back()
    assert selected(session) == {"Region": {"South"}}
    assert session.back_count == before - 1


def test_rollback_restores_selections_locks_and_history(session: assoc.Session) -> None:
    session.keep_history = True
    session.select("Region", ["North"])
    mark = session.checkpoint()
    session.select("Customer", ["c"])
    session.lock("Customer")
    session.clear_field("Region")
    assert session.rollback(mark)
    assert selected(session) == {"Region": {"North"}}
    assert session.locked() == []
    assert session.back_count == 1
    assert not session.rollback(mark)  # nothing to restore
    # The states follow the restored selections.
    assert set(session.state("Customer")["possible"]) == {"a", "c"}


def test_large_selections_are_kept_compactly_and_restored() -> None:
    n = 200_000
    app = App.from_tables({"T": {"A": list(range(n)), "B": [i % 3 for i in range(n)]}})
    with app.session() as s:
        s.keep_history = True
        s.select_indices("A", range(0, n, 2))  # more than the sparse form holds
        s.select_all("B")
        s.clear_field("A")
        assert s.back()
        assert s.back()
        assert s.counts("A")["selected"] == n // 2
        assert s.counts("B")["selected"] == 0
        assert s.forward()
        assert s.counts("B")["selected"] == 3
