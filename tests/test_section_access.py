"""Section access: the access table a script loads decides who opens the app and which rows
each user's session sees, in every answer."""

from __future__ import annotations

import io

import pytest

import assoc
from assoc.package import Manifest, write_package
from assoc.script import ScriptError

SCRIPT = """
Section Access;
LOAD * INLINE [
ACCESS, USERID, REGION, OMIT
USER, ann, east,
USER, BOB, WEST, PRICE
ADMIN, BOSS, *,
ADMIN, ROOT, ,
];
Section Application;
Sales:
LOAD * INLINE [
REGION, Product, AMOUNT
EAST, A, 10
EAST, B, 20
WEST, C, 5
NORTH, D, 7
];
Prices:
LOAD * INLINE [
Product, PRICE
A, 1
B, 2
C, 3
D, 4
];
"""


@pytest.fixture(scope="module")
def app() -> assoc.App:
    return assoc.App.from_script(SCRIPT)


def _answers(s: assoc.Session) -> dict[str, object]:
    cube = s.hypercube(["Product"], ["Sum(AMOUNT)"])
    field_values = {f: s.state(f) for f in ("REGION", "Product", "AMOUNT")}
    exported = assoc.App.from_arrow({"t": s.table("Sales")}).table("t").column("Product")
    return {
        "rows": cube.rows,
        "total": s.hypercube([], ["Sum(AMOUNT)"]).rows,
        "states": field_values,
        "counts": s.counts("Product"),
        "possible_rows": s.possible_rows("Sales"),
        "export": exported,
    }


def test_each_user_sees_only_their_rows(app: assoc.App) -> None:
    with app.session("ANN") as ann, app.session("bob") as bob:
        a, b = _answers(ann), _answers(bob)
    assert a["rows"] == [("A", 10.0), ("B", 20.0)]
    assert a["total"] == [(30.0,)]
    assert a["export"] == ["A", "B"]
    assert a["possible_rows"] == 2
    assert a["counts"] == {"selected": 0, "possible": 2, "alternative": 0, "excluded": 0}
    # the other users' values appear in no state at all (not even excluded)
    seen_a = str(a["states"])
    for other in ("WEST", "NORTH", "'C'", "'D'"):
        assert other not in seen_a
    assert a["states"]["REGION"] == {  # type: ignore[index]
        "selected": [],
        "possible": ["EAST"],
        "alternative": [],
        "excluded": [],
    }
    assert b["rows"] == [("C", 5.0)]
    assert b["total"] == [(5.0,)]
    assert b["export"] == ["C"]
    for other in ("EAST", "NORTH", "'A'", "'D'"):
        assert other not in str(b["states"])


def test_selections_stay_inside_the_reduction(app: assoc.App) -> None:
    with app.session("ann") as s:
        s.select("Product", ["A", "C", "D"])
        assert s.selections() == {"Product": ["A"]}
        assert s.state("Product")["alternative"] == ["B"]
        s.select("REGION", ["WEST", "NORTH"])  # values outside the reduction: nothing widens
        assert s.hypercube(["REGION"], ["Sum(AMOUNT)"]).rows == [("EAST", 10.0)]
        s.clear()
        assert s.selections() == {}
        assert s.hypercube(["Product"], ["Sum(AMOUNT)"]).rows == [("A", 10.0), ("B", 20.0)]
        s.select_all("Product")
        assert s.selections() == {"Product": ["A", "B"]}
        s.clear_field("REGION")
        assert s.state("REGION")["possible"] == ["EAST"]


def test_admin_wildcard_and_blank(app: assoc.App) -> None:
    with app.session("boss") as boss:  # `*`: every value the access table lists
        assert [r[0] for r in boss.hypercube(["REGION"], []).rows] == ["EAST", "WEST"]
    with app.session("root") as root:  # an ADMIN row with no value: everything
        assert root.possible_rows("Sales") == 4


def test_absent_user_refused(app: assoc.App) -> None:
    for user in ("zed", ""):
        with pytest.raises(assoc.Error, match=r"^Access denied$"):
            app.session(user)


def test_group_rows() -> None:
    script = SCRIPT.replace("ACCESS, USERID, REGION, OMIT", "ACCESS, USERID, GROUP, REGION, OMIT")
    script = script.replace("USER, ann, east,", "USER, ann, , east,\nUSER, , north team, NORTH,")
    script = script.replace("USER, BOB,", "USER, BOB, ,").replace("ADMIN, BOSS,", "ADMIN, BOSS, ,")
    script = script.replace("ADMIN, ROOT,", "ADMIN, ROOT, ,")
    app = assoc.App.from_script(script)
    with app.session("carl", groups=["North Team"]) as s:
        assert s.hypercube(["Product"], []).rows == [("D",)]
    with pytest.raises(assoc.Error, match="Access denied"):
        app.session("carl", groups=["south"])


def test_omit_hides_fields(app: assoc.App) -> None:
    with app.session("bob") as s:
        for call in (
            lambda: s.state("PRICE"),
            lambda: s.select("PRICE", [3]),
            lambda: s.hypercube(["PRICE"], []),
            lambda: s.hypercube(["Product"], ["Sum(PRICE)"]),
            lambda: s.table("Prices"),
        ):
            with pytest.raises(assoc.Error, match="field not found: PRICE"):
                call()
    with app.session("ann") as s:
        assert s.hypercube(["Product"], ["Sum(PRICE)"]).rows == [("A", 1.0), ("B", 2.0)]


def test_access_table_is_not_data(app: assoc.App) -> None:
    assert app.tables == ["Sales", "Prices"]
    assert not {"ACCESS", "USERID", "OMIT"} & set(app.fields)
    assert [t["name"] for t in app.metadata()["tables"]] == ["Sales", "Prices"]
    with app.session("ann") as s:
        assert s.state("$Table")["possible"] == ["Sales", "Prices"]


def test_app_without_section_access_unchanged() -> None:
    app = assoc.App.from_script("T: LOAD * INLINE [A\n1\n2];")
    assert app.access is None
    with app.session() as s, app.session("anyone", groups=["g"]) as t:
        assert s.possible_rows("T") == t.possible_rows("T") == 2


def test_exported_and_reloaded_app_reduced_the_same_way() -> None:
    app = assoc.App.from_script(SCRIPT)
    out = io.BytesIO()
    write_package(app.stored_tables, app.write_qvd, Manifest(tables=[]), None, out)
    back = assoc.App.from_package(out.getvalue())
    again = assoc.App.from_script(SCRIPT)  # a reload of the same script
    for copy in (back, again):
        assert copy.tables == ["Sales", "Prices"]
        with copy.session("bob") as s:
            assert s.hypercube(["Product"], ["Sum(AMOUNT)"]).rows == [("C", 5.0)]
            with pytest.raises(assoc.Error, match="field not found: PRICE"):
                s.state("PRICE")
        with pytest.raises(assoc.Error, match="Access denied"):
            copy.session("zed")


def test_unmatched_reduction_refused() -> None:
    script = SCRIPT.replace("USER, ann, east,", "USER, ann, south,")
    with pytest.raises(assoc.Error, match="Access denied"):
        assoc.App.from_script(script).session("ann")


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("Section Acces;", 1, 9),
        ("T: LOAD 1 AS A AUTOGENERATE 1;\nSection;", 2, 8),
        ("Section Access x;", 1, 16),
    ],
)
def test_section_syntax_errors(text: str, line: int, column: int) -> None:
    with pytest.raises(ScriptError) as info:
        assoc.App.from_script(text)
    assert (info.value.line, info.value.column) == (line, column)


def test_access_table_needs_access_field() -> None:
    with pytest.raises(ScriptError, match="ACCESS field"):
        assoc.App.from_script("Section Access; LOAD * INLINE [USERID\nA];")
    with pytest.raises(ScriptError, match="ADMIN or USER"):
        assoc.App.from_script("Section Access; LOAD * INLINE [ACCESS, USERID\nOWNER, A];")


def test_alternate_states_start_reduced(app: assoc.App) -> None:
    with app.session("bob") as s:
        s.add_state("B")
        assert s.hypercube(["Product"], ["Sum(AMOUNT)"], state="B").rows == [("C", 5.0)]
        s.select("REGION", ["EAST"], state="B")
        assert s.state("REGION", state="B")["possible"] == ["WEST"]
        s.clear(state="B")
        assert s.possible_rows("Sales", state="B") == 1


@pytest.mark.parametrize(
    "measure",
    [
        "Sum({1} AMOUNT)",
        "Sum({<REGION=>} AMOUNT)",
        "Sum({<REGION={'WEST'}>} AMOUNT)",
        "{1} Sum(AMOUNT) / Count(Product)",
        "Sum(AMOUNT) + $(=Sum({1} AMOUNT))",
    ],
)
def test_sets_cannot_read_past_the_reduction(app: assoc.App, measure: str) -> None:
    with app.session("ann") as s:
        with pytest.raises(assoc.Error, match="set expressions are not available under section"):
            s.hypercube(["Product"], [measure])
        with pytest.raises(assoc.Error, match="set expressions are not available under section"):
            s.evaluate(measure)
        # a brace inside a text or a field name in brackets is no set
        assert s.hypercube([], ["Sum(AMOUNT) & '{1}'"]).rows == [("30{1}",)]
    with app.session("ROOT") as root:  # an unreduced ADMIN row: sets as usual
        assert root.hypercube([], ["Sum({1} AMOUNT)"]).rows == [(42.0,)]
