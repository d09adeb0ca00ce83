"""Script functions and number interpretation, each against a value computed here."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import assoc
from assoc import Dual
from assoc.script import empty_script, locale_info


def one(expr: str, header: str = "") -> Any:
    """The value of one expression, loaded as a one-row table."""
    app = assoc.App.from_script(f"{header}\nT: LOAD {expr} AS v AUTOGENERATE 1;")
    return app.table("T").column("v")[0]


def serial(d: dt.date) -> int:
    return (d - dt.date(1899, 12, 30)).days


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("7 / 2", 3.5),
        ("1 / 0", None),
        ("-(2 - 5)", 3),
        ("'a' & 1 & 'b'", "a1b"),
        ("'3' + 4", 7),
        ("2 > 1", -1),
        ("2 < 1", 0),
        ("'abc' = 'ABC'", 0),  # texts compare with case, as in charts (docs/scripts.md)
        ("'abc' = 'abc'", -1),
        ("1 = 1 and 2 = 3", 0),
        ("1 = 1 or 2 = 3", -1),
        ("not 1 = 2", -1),
        ("If(1 > 0, 'yes', 'no')", "yes"),
        ("If(1 < 0, 'yes')", None),
        ("Null()", None),
        ("IsNull(Null())", -1),
        ("IsNull(1)", 0),
        ("Upper('MiXed')", "MIXED"),
        ("Lower('MiXed')", "mixed"),
        ("Trim('  pad  ')", "pad"),
        ("Len('hello')", 5),
        ("Left('hello', 2)", "he"),
        ("Right('hello', 3)", "llo"),
        ("Mid('hello', 2, 3)", "ell"),
        ("Mid('hello', 3)", "llo"),
        ("Index('abcabc', 'c')", 3),
        ("Index('abcabc', 'c', 2)", 6),
        ("Index('abcabc', 'c', -1)", 6),
        ("Index('abc', 'z')", 0),
        ("Replace('a-b-c', '-', '+')", "a+b+c"),
        ("SubField('a;b;c', ';', 2)", "b"),
        ("SubField('a;b;c', ';', -1)", "c"),
        ("SubField('a;b;c', ';')", "a"),
        ("Floor(2.7)", 2),
        ("Floor(-2.5)", -3),
        ("Ceil(2.1)", 3),
        ("Round(2.5)", 3),
        ("Round(3.14159, 0.01)", 3.14),
        ("Mod(7, 3)", 1),
        ("Mod(-7, 3)", 2),
        ("Fabs(-4.5)", 4.5),
        ("Num(1234.5, '#,##0.00')", Dual(1234.5, "1,234.50")),
        ("Num(0.25, '0.0%')", Dual(0.25, "25.0%")),
        ("Num#('1,234.5')", Dual(1234.5, "1,234.5")),
        ("Num#('12,5', '#,#', ',', '.')", Dual(12.5, "12,5")),
        ("Text(12)", "12"),
        ("Year(MakeDate(2021, 3, 4))", 2021),
        ("Month(MakeDate(2021, 3, 4))", Dual(3.0, "Mar")),
        ("Day(MakeDate(2021, 3, 4))", 4),
        ("MakeDate(2021, 3, 4)", Dual(float(serial(dt.date(2021, 3, 4))), "3/4/2021")),
        (
            "Date(44000)",
            Dual(44000.0, (dt.date(1899, 12, 30) + dt.timedelta(44000)).strftime("%-m/%-d/%Y")),
        ),
        (
            "Date(44000, 'YYYY-MM-DD')",
            Dual(44000.0, (dt.date(1899, 12, 30) + dt.timedelta(44000)).isoformat()),
        ),
        (
            "Date#('2020-02-29', 'YYYY-MM-DD')",
            Dual(float(serial(dt.date(2020, 2, 29))), "2020-02-29"),
        ),
        (
            "Date#('31/12/1999', 'DD/MM/YYYY')",
            Dual(float(serial(dt.date(1999, 12, 31))), "31/12/1999"),
        ),
        ("Year(Date#('31/12/1999', 'DD/MM/YYYY'))", 1999),
        ("Date#('not a date', 'YYYY')", None),
    ],
)
def test_expression_values(expr: str, expected: Any) -> None:
    got = one(expr)
    if isinstance(expected, float) and isinstance(got, float):
        assert got == pytest.approx(expected)
    else:
        assert got == expected


def test_today_and_rand() -> None:
    today = dt.date.today()
    got = one("Today()")
    assert got.number == serial(today)
    app = assoc.App.from_script("T: LOAD Rand() AS r, RecNo() AS n AUTOGENERATE 50;")
    values = app.table("T").column("r")
    assert len(set(values)) == 50
    assert all(0 <= v < 1 for v in values)


def test_number_interpretation_keeps_text() -> None:
    script = """
    T: LOAD * INLINE [
    cost, when, plain, grouped, word
    $220000000, 12/31/2020, 42, "1,234", abc
    ($1.50), 1/2/2021, 007, "12,345.5", 12abc
    ];
    """
    app = assoc.App.from_script(script)
    t = app.table("T")
    assert t.column("cost") == [Dual(220000000.0, "$220000000"), Dual(-1.5, "($1.50)")]
    assert t.column("when") == [
        Dual(float(serial(dt.date(2020, 12, 31))), "12/31/2020"),
        Dual(float(serial(dt.date(2021, 1, 2))), "1/2/2021"),
    ]
    assert t.column("plain") == [42, Dual(7.0, "007")]
    assert t.column("grouped") == [Dual(1234.0, "1,234"), Dual(12345.5, "12,345.5")]
    assert t.column("word") == ["abc", "12abc"]


def test_interpretation_variables_steer_reading() -> None:
    header = """
    SET ThousandSep = ' ';
    SET DecimalSep = ',';
    SET MoneyThousandSep = '.';
    SET MoneyDecimalSep = ',';
    SET MoneyFormat = '#.##0,00 kr;-#.##0,00 kr';
    SET DateFormat = 'DD.MM.YYYY';
    SET MonthNames = 'jan;feb;mar;apr;maj;jun;jul;aug;sep;okt;nov;dec';
    """
    script = (
        header
        + """
    T: LOAD *, Month(d) AS m INLINE [
    n; money; d
    1 234,5; 1.234,50 kr; 24.12.2020
    ] (delimiter is ';');
    """
    )
    t = assoc.App.from_script(script).table("T")
    assert t.column("n") == [Dual(1234.5, "1 234,5")]
    assert t.column("money") == [Dual(1234.5, "1.234,50 kr")]
    assert t.column("d") == [Dual(float(serial(dt.date(2020, 12, 24))), "24.12.2020")]
    assert t.column("m") == [Dual(12.0, "dec")]
    assert one("Date(MakeDate(2020, 1, 5))", header) == Dual(
        float(serial(dt.date(2020, 1, 5))), "05.01.2020"
    )


def test_single_field_expressions_follow_the_rows() -> None:
    # Evaluated once per distinct value, the results still land on the right rows (NULLs too).
    script = """
    S: LOAD * INLINE [
    k, name
    1, a
    2,
    3, b
    4, a
    ];
    T: LOAD k, Upper(name) AS U, IsNull(name) AS missing, name & '!' AS bang RESIDENT S;
    DROP TABLE S;
    """
    t = assoc.App.from_script(script).table("T")
    assert t.column("U") == ["A", None, "B", "A"]
    assert t.column("missing") == [0, -1, 0, 0]
    assert t.column("bang") == ["a!", "!", "b!", "a!"]


def test_locale_info_and_empty_script_agree() -> None:
    info = locale_info()
    assert info["qDateFmt"] == "M/D/YYYY"
    assert info["qMoneyFmt"] == "$#,##0.00;($#,##0.00)"
    assert info["qCalendarStrings"]["qMonthNames"][0] == "Jan"
    script = empty_script()
    assert "SET DateFormat='M/D/YYYY';" in script
    # The empty script runs and loads nothing.
    from assoc.script import ScriptRunner

    runner = ScriptRunner(script)
    runner.statements(execute=True)
    assert runner.tables == {}
    assert runner.variables["MoneyFormat"] == info["qMoneyFmt"]


def test_per_value_and_per_row_paths_agree_with_python(tmp_path) -> None:
    import csv
    import random

    rng = random.Random(3)
    rows = []
    for _ in range(2000):
        name = rng.choice(["ab", "Cd", "ef", ""])
        amount = rng.choice(["", str(rng.randint(-50, 50))])
        rows.append((name, amount))
    with open(tmp_path / "t.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Name", "Amount"])
        w.writerows(rows)
    script = """
    S: LOAD * FROM [lib://d/t.csv] (txt);
    T: LOAD Upper(Name) AS U, If(Amount > 0, Amount * 2) AS P, Name & ':' & Amount AS NA,
            IsNull(Amount) AS Missing
    RESIDENT S WHERE Len(Name) > 0 or Amount < 0;
    DROP TABLE S;
    """
    t = assoc.App.from_script(script, folders={"d": tmp_path}).table("T")
    kept = [(n, a) for n, a in rows if len(n) > 0 or (a != "" and int(a) < 0)]
    assert t.column("U") == [n.upper() or None for n, _ in kept]
    assert t.column("P") == [int(a) * 2 if a and int(a) > 0 else None for _, a in kept]
    assert t.column("NA") == [f"{n}:{a}" for n, a in kept]
    assert t.column("Missing") == [-1 if a == "" else 0 for _, a in kept]
