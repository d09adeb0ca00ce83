"""Script functions whose meaning reaches past one value, as Qlik's help documents them:
RowNo over concatenated loads, SubField splitting rows, Mod on integers only."""

from __future__ import annotations

from typing import Any

import pytest

import assoc


def rows_of(app: assoc.App, table: str) -> list[tuple[Any, ...]]:
    """A table's rows as tuples in field order."""
    t = app.table(table)
    return list(zip(*(t.column(f) for f in t.fields), strict=True))


# ---- RecNo and RowNo -------------------------------------------------------------------


def test_rowno_continues_over_an_automatic_concatenation_and_recno_restarts() -> None:
    # Qlik's RecNo/RowNo example: two loads of the same fields make one table.
    script = """
    Raw: LOAD * INLINE [
    A, B
    1, aa
    2, cc
    3, ee
    ];
    Raw2: LOAD * INLINE [
    C, D
    5, xx
    4, yy
    6, zz
    ];
    QTab: LOAD A, B, RecNo() AS Rec, RowNo() AS Row RESIDENT Raw WHERE A <> 2;
    LOAD C AS A, D AS B, RecNo() AS Rec, RowNo() AS Row RESIDENT Raw2 WHERE C <> 5;
    DROP TABLES Raw, Raw2;
    """
    app = assoc.App.from_script(script)
    assert app.tables == ["QTab"]
    assert rows_of(app, "QTab") == [
        (1, "aa", 1, 1),
        (3, "ee", 3, 2),
        (4, "yy", 2, 3),
        (6, "zz", 3, 4),
    ]


def test_rowno_continues_over_concatenate_into_a_named_table() -> None:
    script = """
    T: LOAD RecNo() AS Rec, RowNo() AS Row AUTOGENERATE 2;
    U: LOAD 'u' AS Other AUTOGENERATE 1;
    CONCATENATE (T) LOAD RecNo() AS Rec, RowNo() AS Row, 'x' AS Extra AUTOGENERATE 3;
    CONCATENATE (U) LOAD RowNo() AS Other AUTOGENERATE 2;
    CONCATENATE LOAD RowNo() AS Other, 'y' AS Note AUTOGENERATE 1;
    V: NOCONCATENATE LOAD RecNo() AS RecV, RowNo() AS RowV AUTOGENERATE 2;
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "T") == [
        (1, 1, None),
        (2, 2, None),
        (1, 3, "x"),
        (2, 4, "x"),
        (3, 5, "x"),
    ]
    assert rows_of(app, "U") == [("u", None), (2, None), (3, None), (4, "y")]
    assert rows_of(app, "V") == [(1, 1), (2, 2)]


def test_rowno_of_a_preceding_load_continues_the_table_it_is_appended_to() -> None:
    script = """
    T: LOAD RowNo() AS Row, 'first' AS Src AUTOGENERATE 2;
    LOAD RowNo() AS Row, Src & '/' & Inner AS Src;
    LOAD 'second' AS Src, RowNo() AS Inner AUTOGENERATE 3;
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "T") == [
        (1, "first"),
        (2, "first"),
        (3, "second/1"),
        (4, "second/2"),
        (5, "second/3"),
    ]


# ---- SubField --------------------------------------------------------------------------


def test_subfield_without_an_index_makes_one_row_per_part() -> None:
    script = """
    T: LOAD Id, SubField(Tags, ';') AS Tag, RecNo() AS Rec, RowNo() AS Row INLINE [
    Id, Tags
    1, a;b;c
    2, d
    ];
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "T") == [
        (1, "a", 1, 1),
        (1, "b", 1, 2),
        (1, "c", 1, 3),
        (2, "d", 2, 4),
    ]


def test_several_subfields_without_an_index_give_every_combination() -> None:
    script = """
    T: LOAD Id, SubField(Xs, '|') AS X, SubField(Ys, '|') AS Y INLINE [
    Id, Xs, Ys
    1, a|b, p|q|r
    2, c, s
    ];
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "T") == [
        (1, "a", "p"),
        (1, "a", "q"),
        (1, "a", "r"),
        (1, "b", "p"),
        (1, "b", "q"),
        (1, "b", "r"),
        (2, "c", "s"),
    ]


def test_subfield_rows_feed_the_expression_around_them() -> None:
    script = """
    T: LOAD Id, Upper(SubField(SubField(Path, '/'), '.')) & '!' AS Part INLINE [
    Id, Path
    1, a.b/c
    ];
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "T") == [(1, "A!"), (1, "B!"), (1, "C!")]


def test_subfield_of_an_empty_text_keeps_the_row_with_an_empty_part() -> None:
    # Qlik: SubField(Null, ';', 1) is an empty string; the row is kept once.
    script = """
    T: LOAD Id, SubField(Tags, ';') AS Tag, SubField(Tags, ';', 1) AS First INLINE [
    Id, Tags
    1, x;y
    2,
    ];
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "T") == [(1, "x", "x"), (1, "y", "x"), (2, "", "")]


@pytest.mark.parametrize(
    ("index", "expected"),
    [("1", "a"), ("2", "b"), ("3", "c"), ("-1", "c"), ("-3", "a"), ("4", None), ("-4", None)],
)
def test_subfield_with_an_index_returns_that_part(index: str, expected: Any) -> None:
    app = assoc.App.from_script(f"T: LOAD SubField('a;b;c', ';', {index}) AS v AUTOGENERATE 2;")
    assert app.table("T").column("v") == [expected, expected]


def test_subfield_outside_the_fields_of_a_load_reads_the_first_part() -> None:
    script = """
    LET first = SubField('k;l', ';');
    T: LOAD '$(first)' AS v AUTOGENERATE 1 WHERE SubField('1;0', ';') = 1;
    """
    assert assoc.App.from_script(script).table("T").column("v") == ["k"]


# ---- Mod -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("Mod(7, 3)", 1),
        ("Mod(-4, 3)", 2),
        ("Mod(-7, 3)", 2),
        ("Mod(6, 3)", 0),
        ("Mod(7.5, 2)", None),
        ("Mod(7, 2.5)", None),
        ("Mod(4, -3)", None),
        ("Mod(4, 0)", None),
        ("Mod('9', '4')", 1),
        ("Mod(Null(), 3)", None),
    ],
)
def test_mod_is_defined_for_integers_only(expr: str, expected: Any) -> None:
    app = assoc.App.from_script(f"T: LOAD {expr} AS v AUTOGENERATE 1;")
    assert app.table("T").column("v") == [expected]


def test_mod_over_a_field_is_null_for_fractions() -> None:
    script = """
    T: LOAD x, Mod(x, 4) AS m INLINE [
    x
    10
    -5
    2.5
    ];
    """
    assert rows_of(assoc.App.from_script(script), "T") == [(10, 2), (-5, 3), (2.5, None)]
