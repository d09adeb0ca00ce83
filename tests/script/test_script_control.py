"""Control statements, includes, table functions and a master calendar, against expectations
computed in plain Python."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pytest

import assoc
from assoc.script import FolderConnections, ScriptError, ScriptRunner, check_syntax
from assoc.script.control import MAX_CONTROL_NESTING


def rows_of(app: assoc.App, table: str) -> list[tuple]:
    t = app.table(table)
    return list(zip(*[t.column(f) for f in t.fields], strict=True))


def run(script: str, folders: dict[str, str] | None = None) -> tuple[assoc.App, list[str]]:
    result = ScriptRunner(script, FolderConnections(folders or {})).run()
    return assoc.App(result.model), result.log


def test_if_for_each_do_switch_and_exit() -> None:
    script = """
    FOR i = 1 TO 10 STEP 3
      T: LOAD $(i) AS I, 'for' AS Kind AUTOGENERATE 1;
    NEXT i
    FOR i = 3 TO 1 STEP -1
      T: LOAD $(i) * 100 AS I, 'down' AS Kind AUTOGENERATE 1;
    NEXT
    FOR EACH v IN 'a', 'b', 'c', 'd'
      IF '$(v)' = 'a' THEN
        T: LOAD '$(v)' AS I, 'if' AS Kind AUTOGENERATE 1;
      ELSEIF '$(v)' = 'b' THEN
        T: LOAD '$(v)' AS I, 'elseif' AS Kind AUTOGENERATE 1;
      ELSE
        EXIT FOR WHEN '$(v)' = 'd'
        T: LOAD '$(v)' AS I, 'else' AS Kind AUTOGENERATE 1;
      END IF
    NEXT v
    LET j = 0;
    DO WHILE j < 10
      LET j = j + 1;
      EXIT DO WHEN j = 4
    LOOP
    LET k = 0;
    DO
      LET k = k + 2;
    LOOP UNTIL k >= 7
    SWITCH j
    CASE 3
      SET sw = 'three';
    CASE 4, 5
      SET sw = 'four or five';
    DEFAULT
      SET sw = 'other';
    END SWITCH
    IF k = 8 THEN TRACE k is $(k);
    END IF
    T: LOAD '$(sw)' AS I, 'switch' AS Kind AUTOGENERATE 1;
    EXIT SCRIPT WHEN k = 8
    T: LOAD 'never' AS I, 'after exit' AS Kind AUTOGENERATE 1;
    """
    app, log = run(script)
    assert rows_of(app, "T") == [
        *[(i, "for") for i in range(1, 11, 3)],
        *[(i * 100, "down") for i in (3, 2, 1)],
        ("a", "if"),
        ("b", "elseif"),
        ("c", "else"),
        ("four or five", "switch"),
    ]
    assert "k is 8" in log


def test_sub_and_call_with_parameters_and_a_variable_given_by_name() -> None:
    script = """
    SUB AddRows(name, n)
      FOR r = 1 TO n
        T: LOAD '$(name)' AS Who, $(r) AS R AUTOGENERATE 1;
      NEXT
      EXIT SUB WHEN n > 1
      T: LOAD '$(name)' AS Who, 0 AS R AUTOGENERATE 1;
    END SUB
    SUB Twice(v)
      LET v = v * 2;
    END SUB
    LET x = 21;
    CALL Twice(x)
    CALL AddRows('a', 1)
    CALL AddRows('b', 2)
    T: LOAD 'x' AS Who, $(x) AS R AUTOGENERATE 1;
    """
    app, _ = run(script)
    assert rows_of(app, "T") == [("a", 1), ("a", 0), ("b", 1), ("b", 2), ("x", 42)]


def test_include_runs_a_file_and_must_include_needs_it(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "common.qvs").write_text(
        "SET fromlib = 'yes';\nSUB Mark(t)\n  T: LOAD '$(t)' AS M AUTOGENERATE 1;\nEND SUB\n"
    )
    (tmp_path / "bad.qvs").write_text("LOAD nothing;\n")
    folders = {"data": str(tmp_path)}
    app, _ = run(
        "$(Include=lib://data/lib/common.qvs);\n$(Include=lib://data/none.qvs);\n"
        "CALL Mark('$(fromlib)')",
        folders,
    )
    assert rows_of(app, "T") == [("yes",)]
    with pytest.raises(ScriptError) as err:
        run("TRACE x;\n  $(Must_Include=lib://data/none.qvs);", folders)
    assert (err.value.line, err.value.column) == (2, 3)
    with pytest.raises(ScriptError) as err:
        run("$(Include=lib://data/../outside.qvs);", folders)
    assert (err.value.line, err.value.column) == (1, 1)
    with pytest.raises(ScriptError) as err:
        run("$(Must_Include=lib://data/bad.qvs);", folders)
    assert "bad.qvs" in err.value.message
    assert err.value.line == 1


def test_control_statement_errors_name_line_and_column() -> None:
    cases = {
        "IF 1 = 1 THEN\nTRACE a;": (1, 1, "IF without END IF"),
        "FOR i = 1 TO 2\n  TRACE a;\nEND IF": (3, 1, "END IF without IF"),
        "DO\nNEXT": (2, 1, "NEXT without FOR"),
        "TRACE a;\n  ELSE": (2, 3, "ELSE without IF"),
        "SWITCH 1\nCASE 1\nDEFAULT\nCASE 2\nEND SWITCH": (4, 1, "CASE after DEFAULT"),
        "EXIT FOR": (1, 1, "EXIT FOR outside a FOR loop"),
        "IF 1 = 1\nEND IF": (1, 9, "expected THEN"),
        "FOR i = 1 TOO 3\nNEXT": (1, 11, "expected TO"),
        "SUB s(1)\nEND SUB": (1, 7, "expected a parameter name"),
    }
    for script, (line, column, message) in cases.items():
        errors = check_syntax(script)
        assert len(errors) == 1, script
        assert message in errors[0].message, (script, errors[0])
        assert (errors[0].line, errors[0].column) == (line, column), (script, errors[0])
    deep = "IF 1 THEN\n" * (MAX_CONTROL_NESTING + 1) + "END IF\n" * (MAX_CONTROL_NESTING + 1)
    errors = check_syntax(deep)
    assert errors[0].line == MAX_CONTROL_NESTING + 1
    assert "nested deeper" in errors[0].message
    with pytest.raises(ScriptError, match="no SUB named Missing"):
        run("CALL Missing")
    with pytest.raises(ScriptError, match="CALLs and includes nested deeper"):
        run("SUB Forever\n  CALL Forever\nEND SUB\nCALL Forever")


def test_a_runaway_loop_can_be_cancelled() -> None:
    runner = ScriptRunner("LET i = 0;\nDO WHILE 1 = 1\n  LET i = i + 1;\nLOOP")
    timer = threading.Timer(0.3, runner.cancel)
    timer.start()
    with pytest.raises(ScriptError, match="cancelled"):
        runner.run()
    assert runner.progress.error is not None
    assert int(runner.variables["i"]) > 0


def test_table_functions() -> None:
    script = """
    T: LOAD * INLINE [
    a, b
    x, 1
    y, 2
    x, 3
    ];
    U: LOAD a AS c, AutoNumber(a) AS n, AutoNumber(a & b, 'other') AS m,
        Previous(b) AS p RESIDENT T;
    LET rows = NoOfRows('T');
    LET fields = NoOfFields('U');
    LET second = FieldName(2, 'T');
    LET first_table = TableName(0);
    LET tables = NoOfTables();
    LET last_p = Peek('p');
    LET first_b = Peek('b', 0, 'T');
    LET before_last = Peek('b', -2, 'T');
    LET count_a = FieldValueCount('a');
    LET value2 = FieldValue('a', 2);
    LET is_there = Exists(a, 'y');
    LET not_there = Exists(a, 'z');
    V: LOAD '$(rows)|$(fields)|$(second)|$(first_table)|$(tables)|$(last_p)|$(first_b)' &
        '|$(before_last)|$(count_a)|$(value2)|$(is_there)|$(not_there)' AS S
    AUTOGENERATE 1;
    """
    app, _ = run(script)
    assert rows_of(app, "U") == [("x", 1, 1, None), ("y", 2, 2, 1), ("x", 1, 3, 2)]
    assert rows_of(app, "V") == [("3|4|b|T|2|2|1|2|2|y|-1|0",)]


def test_master_calendar_over_a_million_row_fact() -> None:
    n = 1_000_000
    base = 42000  # 2014-12-27
    script = f"""
    Facts: LOAD RecNo() AS ID, Date({base} + Mod(RecNo() * 7919, 2500)) AS OrderDate
    AUTOGENERATE {n};
    MinMax: LOAD Min(OrderDate) AS MinDate, Max(OrderDate) AS MaxDate RESIDENT Facts;
    LET vMin = Num(Peek('MinDate', 0, 'MinMax'));
    LET vMax = Num(Peek('MaxDate', 0, 'MinMax'));
    DROP TABLE MinMax;
    TempCalendar: LOAD $(vMin) + IterNo() - 1 AS Num AUTOGENERATE 1
    WHILE $(vMin) + IterNo() - 1 <= $(vMax);
    Calendar: LOAD Date(Num) AS OrderDate, Year(Num) AS Year, Month(Num) AS Month,
        Week(Num) AS Week, 'Q' & Ceil(Month(Num) / 3) AS Quarter, WeekDay(Num) AS WeekDay
    RESIDENT TempCalendar ORDER BY Num;
    DROP TABLE TempCalendar;
    """
    app, _ = run(script)
    assert app.tables == ["Facts", "Calendar"]
    days = sorted({base + (i * 7919) % 2500 for i in range(1, n + 1)})
    lo, hi = days[0], days[-1]
    epoch = dt.date(1899, 12, 30)
    expected = []
    for d in range(lo, hi + 1):
        day = epoch + dt.timedelta(days=d)
        # US weeks (FirstWeekDay 6, BrokenWeeks 1): week 1 holds January 1st, weeks start Sunday.
        jan1 = dt.date(day.year, 1, 1)
        week1 = jan1 - dt.timedelta(days=(jan1.weekday() + 1) % 7)
        week_start = day - dt.timedelta(days=(day.weekday() + 1) % 7)
        expected.append(
            (
                d,
                day.year,
                day.month,
                (week_start - week1).days // 7 + 1,
                f"Q{(day.month + 2) // 3}",
                (day.weekday() + 1) % 7,
            )
        )
    got = rows_of(app, "Calendar")
    assert [
        (r[0].number, r[1], r[2].number, r[3], r[4], r[5].number)  # type: ignore[union-attr]
        for r in got
    ] == expected
    assert got[0][0].text == f"{(epoch + dt.timedelta(days=lo)):%-m/%-d/%Y}"  # type: ignore[union-attr]
    # Every fact date is a calendar date (the calendar links to the facts through OrderDate).
    assert app.session().hypercube(["Year"], ["Count(ID)"]).rows[-1][1] > 0
