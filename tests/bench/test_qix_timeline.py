"""benchmarks/qix_timeline.py still works: its server hooks still find the methods a QIX step
passes through, and a short run prints every hand-over of the step in the order it happens."""

from __future__ import annotations

from benchscripts import script_output


def timeline(*args: str) -> list[str]:
    """The events of a short run's timeline, checked to be in time order."""
    output = script_output("qix_timeline.py", "--rows", "20000", "--steps", "12", *args)
    rows = [line.split("|")[1:4] for line in output.splitlines() if line.startswith("| ")]
    at = [float(t) for _, t, _ in rows[1:]]  # the header row left out
    assert at == sorted(at)
    return [name.strip() for name, _, _ in rows[1:]]


def assert_in_order(events: list[str], order: list[str]) -> None:
    """The events named in `order` happen in that order, each once."""
    assert [e for e in events if e in order] == order


def test_a_short_run_prints_the_steps_hand_overs_in_order() -> None:
    events = timeline()
    order = [
        "client: ApplyPatches sent",
        "server: ApplyPatches frame received",
        "engine thread: request taken",
        "engine thread: patch",
        "engine thread: patch done",
        "engine thread: cube",
        "engine thread: cube done",
        "engine thread: qHyperCube layout done",
        "engine thread: delta diff done",
        "loop: layout handed over",
        "client: layout parsed",
    ]
    assert_in_order(events, order)
    assert "server: GetLayout frame received" in events


def test_the_select_step_s_layouts_are_made_once_its_answer_is_sending() -> None:
    # ("answer sent" is left out: on a small app the client may have the last answer of a
    # step, and begin the next, before the server's send returns.)
    events = timeline("--step", "select")
    order = [
        "client: SelectListObjectValues sent",
        "server: SelectListObjectValues frame received",
        "engine thread: request taken",
        "engine thread: select done",
        "server: answer sending",
        "engine thread: layout made ahead",
        "client: layouts parsed",
    ]
    assert_in_order(events, order)
    # The two layouts are made ahead by two engine threads, so the list object's and the
    # chart's events interleave; each object's own come in order.
    ahead = events[events.index(order[-2]) : events.index(order[-1])]
    assert_in_order(ahead, ["engine thread: qListObject layout done"])
    assert_in_order(ahead, ["engine thread: cube done", "engine thread: qHyperCube layout done"])


def test_the_page_step_makes_the_layouts_from_the_selection_on() -> None:
    events = timeline("--step", "page")
    order = [
        "client: BeginSelections sent",
        "server: BeginSelections frame received",
        "client: SelectHyperCubeValues sent",
        "engine thread: select done",
        "engine thread: layout made ahead",
        "client: layouts parsed",
    ]
    assert_in_order(events, order)
    assert_in_order(
        events,
        [
            "client: EndSelections sent",
            "server: EndSelections frame received",
            "client: GetLayout sent",
        ],
    )
    # Each of the six objects is laid out ahead once before the client has the six layouts,
    # the bar chart (in selection mode) once more when it was laid out before its confirmation
    # (after them, the untimed ClearAll's six).
    timed = events[: events.index("client: layouts parsed")]
    made = [e for e in timed if e.startswith("engine thread: layout made ahead done")]
    assert len(made) in (6, 7)
