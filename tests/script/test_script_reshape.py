"""INTERVALMATCH, GENERIC LOAD, AUTONUMBER, NullAsValue / NullAsNull, TAG / UNTAG / COMMENT
and BINARY, each against the same reshaping computed here over the same rows."""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import pytest

import assoc
from assoc.annotations import Annotations
from assoc.package import Manifest, write_package
from assoc.script import ScriptError, check_syntax


def rows_of(app: assoc.App, table: str) -> list[tuple[Any, ...]]:
    t = app.table(table)
    return list(zip(*(t.column(f) for f in t.fields), strict=True))


def inline(header: str, rows: list[tuple[Any, ...]]) -> str:
    body = "\n".join(", ".join("" if v is None else str(v) for v in r) for r in rows)
    return f"INLINE [\n{header}\n{body}\n]"


RNG = random.Random(11)
TIMES = [RNG.randint(0, 300) for _ in range(400)]
INTERVALS = [(lo, lo + RNG.randint(0, 40)) for lo in (RNG.randint(-20, 300) for _ in range(40))]


def test_interval_match_links_each_value_to_every_interval_holding_it() -> None:
    intervals = [*INTERVALS, ("x", 10), (5, None)]  # bounds that are no number match nothing
    app = assoc.App.from_script(
        f"""Events: LOAD Time, RecNo() AS Id {inline("Time", [(t,) for t in TIMES])};
Intervals: LOAD Lo, Hi, RecNo() AS Iv {inline("Lo, Hi", intervals)};
Bridge: IntervalMatch (Time) LOAD Lo, Hi RESIDENT Intervals;"""
    )
    expected = []
    for lo, hi in intervals:
        if isinstance(lo, int) and isinstance(hi, int):
            expected += [(lo, hi, t) for t in sorted(set(TIMES)) if lo <= t <= hi]
    assert app.table("Bridge").fields == ["Lo", "Hi", "Time"]
    assert rows_of(app, "Bridge") == expected


def test_interval_match_with_keys_matches_within_each_key() -> None:
    points = [(RNG.choice("ABC"), t) for t in TIMES]
    intervals = [(lo, hi, RNG.choice("ABCD")) for lo, hi in INTERVALS]
    app = assoc.App.from_script(
        f"""Events: LOAD Key, Time {inline("Key, Time", points)};
Intervals: LOAD Lo, Hi, Key {inline("Lo, Hi, Key", intervals)};
Inner Join (Intervals) IntervalMatch (Time, Key) LOAD Lo, Hi, Key RESIDENT Intervals;"""
    )
    combos = sorted(set(points))
    expected = []
    for lo, hi, key in intervals:
        expected += [(lo, hi, key, t) for k, t in combos if k == key and lo <= t <= hi]
    t = app.table("Intervals")
    assert t.fields == ["Lo", "Hi", "Key", "Time"]
    assert sorted(rows_of(app, "Intervals")) == sorted(expected)


def test_generic_load_makes_a_table_per_attribute() -> None:
    facts = [
        ("ball", "color", "red"),
        ("ball", "size", 3),
        ("box", "color", "blue"),
        ("box", "weight", 12),
        ("cone", "size", 7),
    ]
    app = assoc.App.from_script(
        f"Obj: GENERIC LOAD Object, Attribute, Value {inline('Object, Attribute, Value', facts)};"
    )
    attributes = list(dict.fromkeys(a for _, a, _ in facts))
    assert app.tables == [f"Obj.{a}" for a in attributes]
    for a in attributes:
        assert app.table(f"Obj.{a}").fields == ["Object", a]
        assert rows_of(app, f"Obj.{a}") == [(o, v) for o, at, v in facts if at == a]


def test_autonumber_statement_per_field_and_in_a_namespace() -> None:
    rows = [
        (RNG.choice(["n", "s", "e"]), RNG.choice([2013, 2014]), RNG.randint(1, 9))
        for _ in range(50)
    ]
    other = [(RNG.choice(["w", "n"]),) for _ in range(10)]
    app = assoc.App.from_script(
        f"""Sales: LOAD Region, Year, Amount {inline("Region, Year, Amount", rows)};
More: LOAD Region AS Region2 {inline("Region", other)};
AutoNumber Year;
AutoNumber 'Region*' Using regions;"""
    )

    def numbering(values: list[Any], seen: dict[Any, int]) -> list[int]:
        return [seen.setdefault(v, len(seen) + 1) for v in values]

    shared: dict[Any, int] = {}
    assert app.table("Sales").column("Year") == numbering([y for _, y, _ in rows], {})
    assert app.table("Sales").column("Region") == numbering([r for r, _, _ in rows], shared)
    assert app.table("More").column("Region2") == numbering([r for (r,) in other], shared)
    assert app.table("Sales").column("Amount") == [a for _, _, a in rows]


def test_null_as_value_and_null_as_null() -> None:
    rows = [(1, None, None), (2, "x", None), (3, None, "y")]
    data = inline("A, B, C", rows)
    app = assoc.App.from_script(
        f"""NullAsValue B, C;
T1: LOAD * {data};
SET NullValue = '<NULL>';
NullAsNull C;
T2: NOCONCATENATE LOAD * {data};"""
    )
    assert app.table("T1").column("B") == [v or "" for _, v, _ in rows]
    assert app.table("T1").column("C") == [v or "" for _, _, v in rows]
    assert app.table("T2").column("B") == [v or "<NULL>" for _, v, _ in rows]
    assert app.table("T2").column("C") == [v for _, _, v in rows]


def test_tags_and_comments_reach_the_metadata() -> None:
    app = assoc.App.from_script(
        """T: LOAD * INLINE [
Amount, Region, Note
1, n, a
];
Tags: MAPPING LOAD * INLINE [
F, Tag
Amount, $measure
Region, $dimension
];
Tag Fields Amount, Region With 'kpi';
Tag Fields * Using Tags;
Untag Field Region With 'kpi';
Comment Field Note With 'free text';
Comment Table T With 'the facts';"""
    )
    meta = app.metadata()
    fields = {f["name"]: f for f in meta["fields"]}
    assert fields["Amount"]["tags"][-2:] == ["kpi", "$measure"]
    assert "kpi" not in fields["Region"]["tags"]
    assert fields["Region"]["tags"][-1] == "$dimension"
    assert fields["Note"]["comment"] == "free text"
    assert fields["Amount"]["comment"] == ""
    assert {t["name"]: t["comment"] for t in meta["tables"]} == {"T": "the facts"}


def test_binary_loads_a_stored_apps_tables(tmp_path: Path) -> None:
    source = assoc.App.from_tables(
        {
            "Orders": {"Id": [1, 2, 3], "Amount": [10.5, 20.0, 7.25]},
            "Customers": {"Id": [1, 3], "Name": ["ann", "bob"]},
        }
    )
    out = io.BytesIO()
    write_package(source.stored_tables, source.write_qvd, Manifest(tables=[]), None, out)
    (tmp_path / "stored.zip").write_bytes(out.getvalue())
    app = assoc.App.from_script(
        """Binary [lib://data/stored.zip];
Totals: LOAD Sum(Amount) AS Total RESIDENT Orders;""",
        folders={"data": str(tmp_path)},
    )
    assert app.tables == ["Orders", "Customers", "Totals"]
    assert rows_of(app, "Orders") == rows_of(source, "Orders")
    assert rows_of(app, "Customers") == rows_of(source, "Customers")
    assert app.table("Totals").column("Total") == [37.75]
    with pytest.raises(ScriptError) as err:
        assoc.App.from_script(
            "SET a = 1;\n  Binary [lib://data/stored.zip];", folders={"data": str(tmp_path)}
        )
    assert (err.value.line, err.value.column) == (2, 3)
    assert "first statement" in err.value.message
    with pytest.raises(ScriptError, match="no such file"):
        assoc.App.from_script("Binary [lib://data/none.zip];", folders={"data": str(tmp_path)})


def test_binary_keeps_the_stored_apps_tags_and_comments(tmp_path: Path) -> None:
    source = assoc.App.from_script(
        """T: LOAD * INLINE [
Amount, Region, Note
1, n, a
];
Tag Fields Amount, Region With 'kpi';
Comment Field Note With 'free text';
Comment Table T With 'the facts';"""
    )
    out = io.BytesIO()
    manifest = Manifest(tables=[], annotations=source.annotations or Annotations())
    write_package(source.stored_tables, source.write_qvd, manifest, None, out)
    (tmp_path / "tagged.zip").write_bytes(out.getvalue())
    app = assoc.App.from_script(
        """Binary [lib://data/tagged.zip];
Untag Field Region With 'kpi';
Comment Field Amount With 'euros';
Drop Field Note;""",
        folders={"data": str(tmp_path)},
    )
    meta = app.metadata()
    fields = {f["name"]: f for f in meta["fields"]}
    assert fields["Amount"]["tags"][-1] == "kpi"
    assert fields["Amount"]["comment"] == "euros"
    assert "kpi" not in fields["Region"]["tags"]
    assert meta["tables"][0]["comment"] == "the facts"
    assert app.annotations is not None
    assert "Note" not in app.annotations.field_comments
    # The app the statement loaded keeps its own tags (UNTAG changed the new app's only).
    assert source.annotations is not None
    assert "kpi" in source.annotations.field_tags["Region"]


def test_binary_keeps_the_stored_apps_section_access(tmp_path: Path) -> None:
    source = assoc.App.from_script(
        """Section Access;
LOAD * INLINE [
ACCESS, USERID, REGION
USER, ann, EAST
ADMIN, boss, *
];
Section Application;
Sales: LOAD * INLINE [
REGION, Amount
EAST, 1
WEST, 2
EAST, 4
];"""
    )
    out = io.BytesIO()
    write_package(source.stored_tables, source.write_qvd, Manifest(tables=[]), None, out)
    (tmp_path / "secured.zip").write_bytes(out.getvalue())
    app = assoc.App.from_script("Binary [lib://data/secured.zip];", folders={"data": str(tmp_path)})
    assert app.access is not None
    assert app.tables == ["Sales"]
    with app.session("ann") as s:
        assert s.hypercube(["REGION"], ["Sum(Amount)"]).rows == [("EAST", 5.0)]
    with pytest.raises(assoc.Error, match="Access denied"):
        app.session("eve")


@pytest.mark.parametrize(
    ("script", "line", "column", "message"),
    [
        (
            "X: LOAD 1 AS a AUTOGENERATE 1;\nB: IntervalMatch Time LOAD 1 AS a AUTOGENERATE 1;",
            2,
            18,
            "expected '('",
        ),
        ("X: LOAD 1 AS a AUTOGENERATE 1;\nGeneric  Drop Table X;", 2, 10, "expected LOAD"),
        ("Tag Table T With 'x';", 1, 11, "names fields"),
        ("Comment Field A  'x';", 1, 18, "expected WITH or USING"),
        ("T: LOAD 1 AS a AUTOGENERATE 1;\nAutoNumber ;", 2, 12, "expected a field name"),
        ("NullAsValue\n  , A;", 2, 3, "expected a field name"),
        ("Untag Field A With ;", 1, 20, "expected a text after WITH"),
        ("Binary ;", 1, 8, "expected the stored app's file"),
    ],
)
def test_syntax_errors_name_line_and_column(
    script: str, line: int, column: int, message: str
) -> None:
    (err,) = check_syntax(script)
    assert (err.line, err.column) == (line, column)
    assert message in err.message


@pytest.mark.parametrize(
    ("script", "line", "column", "message"),
    [
        (
            "I: LOAD * INLINE [\nLo, Hi\n1, 2\n];\n"
            "  B: IntervalMatch (Time) LOAD Lo, Hi RESIDENT I;",
            5,
            27,  # the LOAD the prefix stands before
            "no table loaded so far holds Time",
        ),
        (
            "E: LOAD 1 AS Time AUTOGENERATE 1;\n"
            "B: IntervalMatch (Time) LOAD 1 AS Lo AUTOGENERATE 1;",
            2,
            25,
            "2 fields",
        ),
        ("G: Generic LOAD 1 AS a, 2 AS b AUTOGENERATE 1;", 1, 12, "GENERIC LOAD needs"),
        ("T: LOAD 1 AS a AUTOGENERATE 1;\nAutoNumber b;", 2, 1, "no field matches b"),
        ("T: LOAD 1 AS a AUTOGENERATE 1;\n Tag Field a Using NoMap;", 2, 2, "no mapping table"),
    ],
)
def test_run_errors_name_line_and_column(script: str, line: int, column: int, message: str) -> None:
    with pytest.raises(ScriptError) as err:
        assoc.App.from_script(script)
    assert (err.value.line, err.value.column) == (line, column)
    assert message in err.value.message
