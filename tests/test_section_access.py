"""Section access: the access table a script loads decides who opens the app and which rows
each user's session sees, in every answer."""

from __future__ import annotations

import io

import pytest

import assoc
from appfiles import SECURED_SALES
from assoc.package import Manifest, write_package
from assoc.script import ScriptError

SCRIPT = (
    """
Section Access;
LOAD * INLINE [
ACCESS, USERID, REGION, OMIT
USER, ann, east,
USER, BOB, WEST, PRICE
ADMIN, BOSS, *,
ADMIN, ROOT, ,
];
"""
    + SECURED_SALES
)


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


def test_an_access_table_of_many_users_grants_each_their_rows() -> None:
    """Users, e-mails, groups and `*` rows among 20,000: each user gets the union of the rows
    that name them, their groups or everyone."""
    from assoc.access import AccessTable

    n = 20_000
    columns = {
        "ACCESS": ["USER"] * n + ["USER", "USER", "ADMIN"],
        "USERID": [f"u{i}" for i in range(n)] + ["", "*", "boss"],
        "USER.EMAIL": [""] * n + ["", "", ""],
        "GROUP": [""] * n + ["team", "", ""],
        "REGION": [f"r{i % 500}" for i in range(n)] + ["TEAM", "ALL", ""],
    }
    columns["USER.EMAIL"][7] = "seven@example.com"
    table = AccessTable(columns)
    assert table.grant("U7").reduction == {"REGION": frozenset({"R7", "ALL"})}
    assert table.grant("seven@example.com").reduction == {"REGION": frozenset({"R7", "ALL"})}
    assert table.grant("u19999", ["Team"]).reduction == {
        "REGION": frozenset({"R499", "TEAM", "ALL"})
    }
    assert table.grant("nobody").reduction == {"REGION": frozenset({"ALL"})}
    assert table.grant("boss").reduction == {}  # ADMIN with no value: every value
    assert table.sees_everything("boss")
    assert not table.sees_everything("u1")
    with pytest.raises(assoc.Error, match="Access denied"):
        table.grant("")


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


# Each user's answer and what it would be were the other users' rows there too (ROOT).
SETS = [
    ("Sum({1} AMOUNT)", 30.0, 5.0),
    ("Sum({<REGION=>} AMOUNT)", 10.0, 5.0),
    ("Sum({<REGION=, Product=>} AMOUNT)", 30.0, 5.0),
    ("Sum({<REGION={'WEST'}>} AMOUNT)", 0.0, 5.0),
    ("Sum({<Product={'D'}>} AMOUNT)", 0.0, 0.0),
    ("Sum({1-$} AMOUNT)", 20.0, 0.0),  # after selecting Product A (ann) / C (bob)
    ("Sum({$<Product=>} AMOUNT)", 30.0, 5.0),
    ("Sum({<Product=-{'A'}>} AMOUNT)", 20.0, 5.0),
    ("Count({<Product=E(Product)>} DISTINCT Product)", 1.0, 0.0),
    ("Sum({1} TOTAL AMOUNT)", 30.0, 5.0),
    ("Sum(Aggr(Sum({1} AMOUNT), REGION))", 30.0, 5.0),
    ("Sum({B} AMOUNT)", 30.0, 5.0),  # an alternate state with no selection
    ("Count({1} DISTINCT REGION)", 1.0, 1.0),
    ("Sum(AMOUNT) + $(=Sum({1} AMOUNT))", 40.0, 10.0),
]


@pytest.mark.parametrize(("measure", "for_ann", "for_bob"), SETS)
def test_sets_stay_inside_the_reduction(
    app: assoc.App, measure: str, for_ann: float, for_bob: float
) -> None:
    for user, picked, expected in (("ann", "A", for_ann), ("bob", "C", for_bob)):
        with app.session(user) as s:
            s.add_state("B")
            s.select("Product", [picked])
            assert s.evaluate(measure) == expected, user
            assert s.hypercube([], [measure]).rows == [(expected,)], user
    with app.session("ROOT") as root:  # an unreduced ADMIN row reads every row
        assert root.hypercube([], ["Sum({1} AMOUNT)"]).rows == [(42.0,)]


def test_set_dimensions_and_excluded_values_stay_inside(app: assoc.App) -> None:
    with app.session("ann") as s:
        s.select("Product", ["A"])
        cube = s.hypercube(["REGION", "Product"], ["Sum({1} AMOUNT)"])
        assert cube.rows == [("EAST", "A", 10.0), ("EAST", "B", 20.0)]
        assert s.state("Product") == {
            "selected": ["A"],
            "possible": [],
            "alternative": ["B"],
            "excluded": [],
        }
        assert s.counts("PRICE") == {"selected": 0, "possible": 1, "alternative": 0, "excluded": 1}
        assert s.state("PRICE")["excluded"] == [2.0]
        s.select("PRICE", [3, 4])  # other users' values: not there to select
        assert s.selections() == {"Product": ["A"]}
        s.clear()
        s.select_excluded("Product")  # nothing excluded: no value of bob's comes in
        assert s.selections() == {}
        assert s.counts("REGION") == {"selected": 0, "possible": 1, "alternative": 0, "excluded": 0}


def test_metadata_counts_are_the_users(app: assoc.App) -> None:
    def summary(user: str) -> tuple[dict[str, int], dict[str, tuple[int, int]]]:
        found = app.metadata(app.reduction(user))
        tables = {t["name"]: (t["no_of_rows"], t["no_of_fields"]) for t in found["tables"]}
        fields = {f["name"]: (f["cardinal"], f["total_count"]) for f in found["fields"]}
        return tables, fields

    tables, fields = summary("ann")
    assert tables == {"Sales": (2, 3), "Prices": (2, 2)}
    assert {k: fields[k] for k in ("REGION", "Product", "AMOUNT", "PRICE")} == {
        "REGION": (1, 2),
        "Product": (2, 2),
        "AMOUNT": (2, 2),
        "PRICE": (2, 2),
    }
    tables, fields = summary("bob")
    assert tables == {"Sales": (1, 3), "Prices": (1, 1)}
    assert "PRICE" not in fields  # omitted for bob
    assert fields["REGION"] == (1, 1)
    assert fields["$Table"] == (2, 4)  # $$SysTable 1: Sales' 3 columns and Prices' 1
    tables, fields = summary("root")
    assert tables == {"Sales": (4, 3), "Prices": (4, 2)}
    assert fields["REGION"] == (3, 4)


def test_system_fields_count_only_what_the_user_sees(app: assoc.App) -> None:
    """$Table and $Field name only the user's tables and fields; $Rows, $Fields and $FieldNo
    (counts of the shared model) are unknown to a user they would tell more."""
    counting = ("$Rows", "$Fields", "$FieldNo")

    def system(user: str) -> dict[str, object]:
        listed = {f["name"] for f in app.metadata(app.reduction(user))["fields"]}
        out: dict[str, object] = {}
        with app.session(user) as s:
            for field in ("$Table", "$Field", *counting):
                if field in listed:
                    out[field] = s.state(field)["possible"]
                    continue
                with pytest.raises(assoc.Error, match=rf"field not found: \{field}"):
                    s.state(field)
                out[field] = None
        return out

    bob = system("bob")  # WEST rows only, PRICE omitted
    assert bob["$Table"] == ["Sales", "Prices"]
    assert bob["$Field"] == ["REGION", "Product", "AMOUNT"]
    assert [bob[f] for f in counting] == [None, None, None]
    ann = system("ann")  # EAST rows only, every field
    assert ann["$Field"] == ["REGION", "Product", "AMOUNT", "PRICE"]
    assert ann["$Rows"] is None
    assert (ann["$Fields"], ann["$FieldNo"]) == ([3, 2], [1, 2, 3])
    root = system("root")  # every row and field: the model's own counts
    assert root["$Rows"] == [4]
    with app.session("ann") as s:
        for call in (
            lambda: s.hypercube(["$Table"], ["Sum($Rows)"]),
            lambda: s.evaluate("Max($Rows)"),
            lambda: s.select("$Rows", [4]),
        ):
            with pytest.raises(assoc.Error, match=r"field not found: \$Rows"):
                call()
    with app.session("bob") as s, pytest.raises(assoc.Error, match=r"field not found: \$Fields"):
        s.hypercube(["$Table"], ["Only($Fields)"])
    with app.session("root") as s:
        assert s.hypercube(["$Table"], ["Sum($Rows)"]).rows == [("Prices", 4.0), ("Sales", 4.0)]


@pytest.mark.parametrize("user", ["ann", "bob", "root"])
def test_no_user_reads_the_access_table(app: assoc.App, user: str) -> None:
    """Its fields, rows and users are nobody's data, not even an ADMIN's with every row."""
    with app.session(user) as s:
        for call in (
            lambda: s.state("$SA.USERID"),
            lambda: s.select("$SA.USERID", ["BOB"]),
            lambda: s.hypercube(["$SA.USERID", "$SA.OMIT"], []),
            lambda: s.evaluate("Concat($SA.USERID, ',')"),
            lambda: s.hypercube(["Product"], ["Count({1} $SA.REGION)"]),
        ):
            with pytest.raises(assoc.Error, match=r"field not found: \$SA\."):
                call()
        for call in (lambda: s.table("$SectionAccess"), lambda: s.possible_rows("$SectionAccess")):
            with pytest.raises(assoc.Error, match="no table named '\\$SectionAccess'"):
                call()
        if user != "root":  # the system tables count what the user does not see
            with pytest.raises(assoc.Error, match=r"field not found: \$Rows"):
                s.table("$$SysTable 2")
    with app.session("root") as s:
        system = assoc.App.from_arrow({"t": s.table("$$SysTable 2")}).table("t")
        assert system.column("$Rows") == [4, 4]


def test_arrow_exports_hold_no_other_values(app: assoc.App) -> None:
    import pyarrow as pa

    with app.session("ann") as s:
        sales = pa.table(s.table("Sales"))
        cube = pa.table(s.hypercube(["REGION", "Product"], ["Sum(AMOUNT)"]).to_arrow())
        calculated = pa.table(s.hypercube(["=Lower(Product)"], ["Only({1} Product)"]).to_arrow())
    for column in calculated.columns:  # a calculated dimension's values, an Only()'s too
        assert column.combine_chunks().dictionary.to_pylist() in (["a", "b"], ["A", "B"])
    assert sales.column("REGION").combine_chunks().dictionary.to_pylist() == ["EAST"]
    assert sales.column("Product").combine_chunks().dictionary.to_pylist() == ["A", "B"]
    assert sales.column("Product").to_pylist() == ["A", "B"]
    assert cube.column("REGION").combine_chunks().dictionary.to_pylist() == ["EAST"]
    assert cube.column("Product").to_pylist() == ["A", "B"]
    with app.session("bob") as s:
        assert s.hypercube(["Product"], []).symbols("Product") == [None, None, "C", None]
        calculated = s.hypercube(["=Lower(Product)"], []).symbols(0)
        assert [v for v in calculated if v is not None] == ["c"]


def test_reloaded_app_sets_reduced_the_same_way() -> None:
    app = assoc.App.from_script(SCRIPT)
    out = io.BytesIO()
    write_package(app.stored_tables, app.write_qvd, Manifest(tables=[]), None, out)
    for copy in (assoc.App.from_package(out.getvalue()), assoc.App.from_script(SCRIPT)):
        with copy.session("bob") as s:
            assert s.evaluate("Sum({1} AMOUNT)") == 5.0
            assert copy.metadata(copy.reduction("bob"))["tables"][0]["no_of_rows"] == 1


def _regional_rows() -> list[tuple[str, int, float | int, str | None]]:
    """Sales rows: EAST has fractional amounts and long notes, WEST whole amounts and none."""
    rows: list[tuple[str, int, float | int, str | None]] = []
    for i in range(600):
        if i % 5 == 0:
            rows.append(("WEST", i, i * 3, None))
        else:
            rows.append(("EAST", i, i + 0.25, f"note number {i} of the eastern region"))
    return rows


def _regional_app() -> assoc.App:
    lines = [f"{r}, {i}, {a}, {n or ''}" for r, i, a, n in _regional_rows()]
    script = (
        "Section Access;\nLOAD * INLINE [\nACCESS, USERID, REGION\n"
        "USER, ANN, EAST\nUSER, BOB, WEST\nADMIN, BOSS, *\n];\nSection Application;\n"
        "Sales: LOAD REGION, Id, Amount, If(Len(Note) > 0, Note) AS Note INLINE [\n"
        "REGION, Id, Amount, Note\n" + "\n".join(lines) + "\n];\n"
    )
    return assoc.App.from_script(script)


def _sizes(metadata: dict[str, object]) -> tuple[dict[str, int], dict[str, int]]:
    """Byte sizes of the data fields and tables."""
    fields = {
        f["name"]: f["byte_size"]
        for f in metadata["fields"]  # type: ignore[attr-defined]
        if not f["is_system"]
    }
    tables = {t["name"]: t["byte_size"] for t in metadata["tables"]}  # type: ignore[attr-defined]
    return fields, tables


def test_metadata_byte_sizes_are_those_of_the_users_data() -> None:
    """A reduced user's byte sizes are those of an app loaded with only their rows."""
    app = _regional_app()
    full = app.metadata()
    for user, region in (("ann", "EAST"), ("bob", "WEST")):
        rows = [r for r in _regional_rows() if r[0] == region]
        alone = assoc.App.from_tables(
            {
                "Sales": {
                    "REGION": [r[0] for r in rows],
                    "Id": [r[1] for r in rows],
                    "Amount": [r[2] for r in rows],
                    "Note": [r[3] for r in rows],
                }
            }
        )
        reduced = app.metadata(app.reduction(user))
        assert _sizes(reduced) == _sizes(alone.metadata()), user
        assert _sizes(reduced) != _sizes(full)
        fields, tables = _sizes(reduced)
        assert reduced["static_byte_size"] >= sum(fields.values()) + sum(tables.values())
        assert reduced["static_byte_size"] < full["static_byte_size"]
    # Bob's whole amounts take 4 bytes a value, Ann's fractions 8; Bob has no note at all.
    assert _sizes(app.metadata(app.reduction("bob")))[0]["Amount"] == 4 * 120
    assert _sizes(app.metadata(app.reduction("ann")))[0]["Amount"] == 8 * 480
    assert _sizes(app.metadata(app.reduction("bob")))[0]["Note"] == 0
    # A user whose reduction keeps every row sees the model's own sizes.
    assert _sizes(app.metadata(app.reduction("boss"))) == _sizes(full)


def test_reduction_matches_numbers_and_duals_on_their_texts() -> None:
    """A reduction value matches a number by its text as shown (5, 2.5), a text as it is (a
    number written as "007" stays a text), a dual by its text only (never by its number)."""
    from assoc import _core
    from assoc.access import AccessTable

    codes = [5, 2.5, "007", assoc.Dual(7, "SEVEN"), "JAN", 10, 7.5]
    builder = _core.ModelBuilder()
    builder.add_columns("Data", {"CODE": codes, "Row": list(range(len(codes)))})
    AccessTable(
        {
            "ACCESS": ["USER"] * 7 + ["ADMIN"],
            "USERID": ["ANN"] * 4 + ["BOB"] * 3 + ["ROOT"],
            "CODE": ["5", "2.5", "007", "SEVEN", "10", "7.50", "7", ""],
        }
    ).add_to(builder)
    app = assoc.App(builder.build())
    with app.session("ann") as ann, app.session("bob") as bob, app.session("root") as root:
        assert sorted(ann.state("Row")["possible"]) == [0, 1, 2, 3]
        # "7.50" is not the text 7.5 is shown with; the dual SEVEN is not matched by its number.
        assert sorted(bob.state("Row")["possible"]) == [5]
        assert sorted(root.state("Row")["possible"]) == list(range(len(codes)))


def test_reduction_keeps_every_value_that_has_the_granted_text() -> None:
    """Two values with one text (duals of different numbers) and a number shown with the same
    text as a stored text are all kept when that text is granted; each user's values are
    looked up in the same per-app match without changing another's."""
    from assoc import _core
    from assoc.access import AccessTable

    codes = [assoc.Dual(1, "Q1"), assoc.Dual(13, "Q1"), 5, "5", "Q2", assoc.Dual(2, "Q2")]
    builder = _core.ModelBuilder()
    builder.add_columns("Data", {"CODE": codes, "Row": list(range(len(codes)))})
    AccessTable(
        {"ACCESS": ["USER"] * 3, "USERID": ["ANN", "ANN", "BOB"], "CODE": ["Q1", "5", "Q2"]}
    ).add_to(builder)
    app = assoc.App(builder.build())
    for _ in range(2):  # the second time from the kept match
        app._reductions.clear()
        app._shared_reductions.clear()
        with app.session("ann") as ann, app.session("bob") as bob:
            assert sorted(ann.state("Row")["possible"]) == [0, 1, 2, 3]
            assert sorted(bob.state("Row")["possible"]) == [4, 5]


def test_users_with_the_same_grant_share_one_reduction() -> None:
    """Users whose rows grant the same values and omit the same fields open the app with one
    row mask, made once; a user granted other values, or the same values but another OMIT,
    gets a mask of their own; each sees exactly their rows either way."""
    app = assoc.App.from_script(
        """
Section Access;
LOAD * INLINE [
ACCESS, USERID, GROUP, REGION, OMIT
USER, ann, , east,
USER, cid, , EAST,
USER, dan, , east, PRICE
USER, eve, , west,
USER, fay, , ,
USER, , sales, east,
ADMIN, ROOT, , ,
];
"""
        + SECURED_SALES
    )
    ann, cid, dan, eve = (app.reduction(u) for u in ("ann", "cid", "dan", "eve"))
    assert ann is cid  # one mask for both: the reduction kept by what it keeps
    assert ann.mask is not None
    assert dan.mask is not ann.mask  # the same values, another OMIT
    assert eve.mask is not ann.mask
    assert app.reduction("fay", ["Sales"]) is ann  # by group: east again
    for user in ("ann", "cid", "dan"):
        with app.session(user) as s:
            assert sorted(s.hypercube(["Product"], ["Sum(AMOUNT)"]).rows) == [
                ("A", 10.0),
                ("B", 20.0),
            ]
    with app.session("dan") as s, pytest.raises(assoc.Error):
        s.state("PRICE")
    with app.session("eve") as s:
        assert s.hypercube(["Product"], []).rows == [("C",)]


def test_a_users_symbols_read_from_their_rows_match_their_grant() -> None:
    """A reduction read from each access row's symbols keeps what the user's whole grant
    keeps: several rows, a group's rows, a value the data lacks, a reduction field the data
    lacks, and OMIT; a row with `*` or an empty value leaves the reduction to the grant."""
    from assoc import _core
    from assoc.access import AccessTable, ValueCodes

    access = AccessTable(
        {
            "ACCESS": ["USER", "USER", "USER", "USER", "USER", "ADMIN", "USER"],
            "USERID": ["ann", "ann", "bob", "", "cid", "boss", "dan"],
            "GROUP": ["", "", "", "team", "", "", ""],
            "REGION": ["east", "5", "seven", "north", "nowhere", "*", ""],
            "COUNTRY": ["se", "se", "no", "dk", "se", "", "se"],  # not in the data
            "OMIT": ["", "Row", "", "", "", "", ""],
        }
    )
    builder = _core.ModelBuilder()
    builder.add_columns(
        "Data",
        {
            "REGION": ["EAST", "WEST", "NORTH", "EAST", 5, assoc.Dual(7, "SEVEN")],
            "Row": list(range(6)),
        },
    )
    model = builder.build()
    values = ValueCodes(access, _core.AssociativeModel(model), model.field_names())
    read = {}
    for user, groups in [("ann", []), ("bob", ["team"]), ("cid", []), ("boss", []), ("dan", [])]:
        rows = access.rows_for(user, groups)
        from_rows = values.codes_of_rows(rows)
        grant = access.grant_of(rows)
        assert from_rows is None or from_rows == values.codes(grant), user
        read[user] = from_rows
    assert read["ann"] == {"REGION": [0, 3]}  # EAST, and the number 5 by its text
    assert access.omitted(access.rows_for("ann")) == frozenset({"ROW"})
    assert read["bob"] == {"REGION": [2, 4]}  # SEVEN, and NORTH by the team's row
    assert read["cid"] == {"REGION": []}  # granted nothing the data holds: refused later
    assert read["boss"] is None  # `*` and an empty value need the grant
    assert read["dan"] is None


def test_a_users_access_rows_come_in_order_each_once() -> None:
    """The rows naming a user: by USERID and by USER.EMAIL (the same row counted once), the
    rows of their groups, and the rows of `*` (every user) when the table has them."""
    from assoc.access import AccessTable

    columns = {
        "ACCESS": ["USER"] * 6,
        "USERID": ["ann", "bob", "ann", "", "", "bob"],
        "USER.EMAIL": ["ann", "", "", "ann", "", ""],
        "GROUP": ["", "", "", "", "team", "team"],
        "REGION": ["a", "b", "c", "d", "e", "f"],
    }
    access = AccessTable(columns)
    assert list(access.rows_for("ann")) == [0, 2, 3]
    assert list(access.rows_for(" Ann ")) == [0, 2, 3]
    assert list(access.rows_for("ann", ["team"])) == [0, 2, 3, 4, 5]
    assert list(access.rows_for("bob", ["TEAM", "team"])) == [1, 4, 5]
    assert list(access.rows_for("eve")) == []
    assert list(access.rows_for("")) == []
    everyone = AccessTable({**columns, "USERID": ["ann", "bob", "ann", "", "*", "bob"]})
    assert list(everyone.rows_for("ann")) == [0, 2, 3, 4]
    assert list(everyone.rows_for("eve")) == [4]
