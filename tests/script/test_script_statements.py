"""Load-script statements against expectations computed in plain Python over the same data."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

import assoc
from assoc import Dual


def rows_of(app: assoc.App, table: str) -> list[tuple]:
    """A table's rows as tuples in field order."""
    t = app.table(table)
    cols = [t.column(f) for f in t.fields]
    return list(zip(*cols, strict=True))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A folder with orders.csv (random, seeded) and a QVD written by the engine."""
    rng = random.Random(7)
    names = ["alpha", "Beta", "gamma ", "delta"]
    with open(tmp_path / "orders.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["OrderID", "Name", "Amount", "OrderDate"])
        for i in range(1, 201):
            d = f"{rng.randint(1, 12)}/{rng.randint(1, 28)}/{rng.randint(2019, 2022)}"
            w.writerow([i, rng.choice(names), rng.randint(1, 500) / 4, d])
    return tmp_path


def read_orders(folder: Path) -> list[dict[str, str]]:
    with open(folder / "orders.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_load_star_from_csv_matches_from_csv(data: Path) -> None:
    app = assoc.App.from_script(
        "LOAD * FROM [lib://data/orders.csv] (txt, utf8, embedded labels, delimiter is ',');",
        folders={"data": data},
    )
    direct = assoc.App.from_csv(data / "orders.csv", "orders")
    assert app.tables == ["orders"]
    assert app.table("orders").fields == direct.table("orders").fields
    assert rows_of(app, "orders")[:3] != []
    assert [r[:3] for r in rows_of(app, "orders")] == [r[:3] for r in rows_of(direct, "orders")]
    # Dates become duals under the default DateFormat M/D/YYYY.
    first = rows_of(app, "orders")[0][3]
    assert isinstance(first, Dual)
    assert first.text == read_orders(data)[0]["OrderDate"]


def test_qvd_store_and_load_round_trip(data: Path) -> None:
    script = """
    Orders: LOAD * FROM lib://data/orders.csv (txt);
    STORE Orders INTO [lib://data/orders.qvd] (qvd);
    DROP TABLE Orders;
    Again: LOAD * FROM [lib://data/orders.qvd] (qvd);
    """
    app = assoc.App.from_script(script, folders={"data": data})
    assert app.tables == ["Again"]
    assert (data / "orders.qvd").is_file()
    direct = assoc.App.from_qvd(data / "orders.qvd")
    assert rows_of(app, "Again") == rows_of(direct, direct.tables[0])
    assert len(rows_of(app, "Again")) == 200


def test_store_txt_writes_csv(data: Path) -> None:
    script = """
    T: LOAD * INLINE [
    k, v
    1, a
    2, "b, c"
    ];
    STORE T INTO lib://data/out.csv (txt);
    """
    assoc.App.from_script(script, folders={"data": data})
    with open(data / "out.csv", newline="") as f:
        assert list(csv.reader(f)) == [["k", "v"], ["1", "a"], ["2", "b, c"]]


def test_resident_where_distinct_and_expressions(data: Path) -> None:
    script = """
    Orders: LOAD * FROM lib://data/orders.csv (txt, delimiter is ',');
    Big: NOCONCATENATE LOAD DISTINCT Upper(Trim(Name)) AS U, Amount * 2 AS A2, Year(OrderDate) AS Y
    RESIDENT Orders WHERE Amount > 60 and Name <> 'delta';
    DROP TABLE Orders;
    """
    app = assoc.App.from_script(script, folders={"data": data})
    expected: list[tuple] = []
    for r in read_orders(data):
        amount = float(r["Amount"])
        if amount > 60 and r["Name"] != "delta":
            row = (r["Name"].strip().upper(), amount * 2, int(r["OrderDate"].rsplit("/", 1)[1]))
            if row not in expected:
                expected.append(row)
    got = [(u, float(a), y) for u, a, y in rows_of(app, "Big")]
    assert got == expected


def test_preceding_load_and_recno(data: Path) -> None:
    script = """
    T: LOAD Name, Amount + 1 AS Plus, RecNo() AS R WHERE Amount >= 100;
    LOAD Name, Amount FROM [lib://data/orders.csv];
    """
    app = assoc.App.from_script(script, folders={"data": data})
    src = read_orders(data)
    expected = [
        (r["Name"], float(r["Amount"]) + 1, i + 1)
        for i, r in enumerate(src)
        if float(r["Amount"]) >= 100
    ]
    assert [(n, float(p), r) for n, p, r in rows_of(app, "T")] == expected


def test_concatenation_rules() -> None:
    script = """
    A: LOAD * INLINE [
    x, y
    1, a
    ];
    B: LOAD * INLINE [
    y, x
    b, 2
    ];
    QUALIFY x, y;
    C: NOCONCATENATE LOAD * INLINE [
    x, y
    3, c
    ];
    UNQUALIFY x, y;
    CONCATENATE (A) LOAD * INLINE [
    x, z
    4, q
    ];
    """
    app = assoc.App.from_script(script)
    # B has A's field set: appended to A. C asked not to be (its fields qualified so that it does
    # not link). The last one is forced into A.
    assert app.tables == ["A", "C"]
    assert rows_of(app, "C") == [(3, "c")]
    assert app.table("C").fields == ["C.x", "C.y"]
    assert rows_of(app, "A") == [(1, "a", None), (2, "b", None), (4, None, "q")]
    assert app.table("A").fields == ["x", "y", "z"]


def test_autogenerate_set_let_and_expansion() -> None:
    script = """
    SET n = 4;
    LET m = $(n) * 2 + 1;
    SET label = 'Gen';
    $(label): LOAD RecNo() AS ID, RowNo() AS Row, Mod(RecNo(), 3) AS M, $(m) AS Const
    AUTOGENERATE $(n);
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "Gen") == [(i, i, i % 3, 9) for i in range(1, 5)]


def test_drop_rename_fields_and_tables() -> None:
    script = """
    T: LOAD * INLINE [
    a, b, c
    1, 2, 3
    ];
    U: LOAD a AS k, b AS u2 RESIDENT T;
    DROP FIELD c;
    DROP FIELDS b FROM T;
    RENAME FIELD a TO alpha;
    RENAME TABLE T TO Tee;
    RENAME FIELD u2 TO beta;
    """
    app = assoc.App.from_script(script)
    assert app.tables == ["Tee", "U"]
    assert app.table("Tee").fields == ["alpha"]
    assert app.table("U").fields == ["k", "beta"]


def test_qualify_unqualify() -> None:
    script = """
    QUALIFY *;
    UNQUALIFY id;
    A: LOAD * INLINE [
    id, name
    1, x
    ];
    UNQUALIFY *;
    B: LOAD * INLINE [
    id, name
    1, y
    ];
    """
    app = assoc.App.from_script(script)
    assert app.table("A").fields == ["id", "A.name"]
    assert app.table("B").fields == ["id", "name"]


def test_trace_exit_and_comments() -> None:
    from assoc.script import ScriptRunner

    script = """// a comment
    /* a block
       comment */
    REM a remark;
    TRACE hello there;
    T: LOAD 1 AS one AUTOGENERATE 1;
    EXIT SCRIPT;
    U: LOAD 2 AS two AUTOGENERATE 1;
    """
    result = ScriptRunner(script).run()
    assert "hello there" in result.log
    assert result.model.table_names() == ["T"]
    assert result.cpu_time_ms >= 0


def test_inline_options_and_no_labels() -> None:
    script = """
    T: LOAD @1 AS first, @2 AS second INLINE [
    1;x
    2;y
    ] (delimiter is ';', no labels);
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "T") == [(1, "x"), (2, "y")]


def test_txt_options_read_in_python(tmp_path: Path) -> None:
    (tmp_path / "semi.txt").write_bytes("skip me\nA;B\n1,5;'x;y'\n2,25;z\n".encode("cp1252"))
    script = """
    SET DecimalSep = ',';
    SET ThousandSep = '.';
    T: LOAD A, B FROM [lib://d/semi.txt]
    (txt, codepage is 1252, header is 1 lines, delimiter is ';', msq);
    """
    app = assoc.App.from_script(script, folders={"d": tmp_path})
    got = rows_of(app, "T")
    assert [a.number for a, _ in got] == [1.5, 2.25]
    assert got[0][0].text == "1,5"


def test_tab_delimited_file(tmp_path: Path) -> None:
    (tmp_path / "t.tsv").write_text("a\tb\n1\tx\n2\ty\n")
    app = assoc.App.from_script(
        "T: LOAD * FROM [lib://d/t.tsv] (txt, delimiter is '\\t', embedded labels);",
        folders={"d": tmp_path},
    )
    assert rows_of(app, "T") == [(1, "x"), (2, "y")]


def test_expansion_of_expressions_and_let_strings() -> None:
    script = """
    LET greeting = 'hello' & ' ' & 'world';
    SET two = 2;
    T: LOAD '$(greeting)' AS g, $(=1 + $(two)) AS three AUTOGENERATE 1;
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "T") == [("hello world", 3)]


def test_concatenate_without_a_name_and_drop_tables() -> None:
    script = """
    A: LOAD 1 AS a AUTOGENERATE 2;
    B: LOAD 'x' AS b AUTOGENERATE 1;
    CONCATENATE LOAD 'y' AS b, 5 AS c AUTOGENERATE 1;
    C: LOAD 3 AS c3 AUTOGENERATE 1;
    D: LOAD 4 AS d AUTOGENERATE 1;
    DROP TABLES C, D;
    """
    app = assoc.App.from_script(script)
    assert app.tables == ["A", "B"]
    assert rows_of(app, "B") == [("x", None), ("y", 5)]


def test_space_delimited_and_no_quotes(tmp_path: Path) -> None:
    (tmp_path / "s.txt").write_text('k   v\n1   "a\n2   b"\n')
    script = "T: LOAD * FROM [lib://d/s.txt] (txt, delimiter is spaces, no quotes);"
    app = assoc.App.from_script(script, folders={"d": tmp_path})
    assert rows_of(app, "T") == [(1, '"a'), (2, 'b"')]


def test_store_stays_inside_the_connection(tmp_path: Path) -> None:
    from assoc.script import ScriptError

    inside = tmp_path / "in"
    inside.mkdir()
    script = "T: LOAD 1 AS a AUTOGENERATE 1;\nSTORE T INTO [lib://d/../out.qvd] (qvd);"
    with pytest.raises(ScriptError, match=r"line 2, column 1: .*outside"):
        assoc.App.from_script(script, folders={"d": inside})
    assert not (tmp_path / "out.qvd").exists()


def test_reload_cpu_time_is_in_the_metadata(data: Path) -> None:
    from assoc.script import FolderConnections, ScriptRunner

    script = "T: LOAD *, Upper(Name) AS U FROM [lib://data/orders.csv] (txt);"
    result = ScriptRunner(script, FolderConnections({"data": data})).run()
    md = result.model.metadata()
    assert result.cpu_time_ms == md["reload_meta"]["cpu_time_spent_ms"]
    assert result.statement_seconds[0][0] == 1
    assert result.log == ["T << T 200 Lines fetched"]


def test_store_star_and_a_field_list(tmp_path: Path) -> None:
    script = """
    T: LOAD RecNo() AS a, RecNo() * 10 AS b AUTOGENERATE 2;
    STORE * FROM T INTO [lib://d/all.qvd] (qvd);
    STORE b FROM T INTO [lib://d/b.csv] (txt);
    """
    assoc.App.from_script(script, folders={"d": tmp_path})
    assert rows_of(assoc.App.from_qvd(tmp_path / "all.qvd"), "T") == [(1, 10), (2, 20)]
    assert (tmp_path / "b.csv").read_bytes() == b"b\r\n10\r\n20\r\n"


def test_computed_numbers_keep_first_seen_symbols_nulls_and_near_equal_values() -> None:
    # A computed field of numbers is interned at once: its symbols keep the order they are
    # first seen, NULLs stay NULL, -0 is 0's symbol, and 0.1 + 0.2 stays apart from 0.3 (both
    # are 30 hundredths, the key numbers are found by).
    app = assoc.App.from_script(
        "T: LOAD RecNo() as R, Mod(RecNo() * 7, 5) as M, "
        "If(RecNo() = 2, 0.1 + 0.2, If(RecNo() = 4, 0.3, If(RecNo() = 5, Null(), "
        "If(RecNo() = 6, -0.0 * 1, RecNo() / 100)))) as D "
        "AUTOGENERATE 8;"
    )
    t = app.table("T")
    m = [(r * 7) % 5 for r in range(1, 9)]
    assert t.column("M") == m
    assert app.symbols("M") == list(dict.fromkeys(m))
    d = [0.01, 0.1 + 0.2, 0.03, 0.3, None, 0, 0.07, 0.08]
    assert t.column("D") == d
    assert app.symbols("D") == [0.01, 0.1 + 0.2, 0.03, 0.3, 0, 0.07, 0.08]
    assert app.symbols("R") == list(range(1, 9))
