"""One function library for scripts and charts: the same function gives the same value in a
LOAD and in a chart measure, steered by the app's interpretation variables in both."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pytest

import assoc
from assoc import Dual, _core
from assoc.script.errors import ScriptError
from assoc.script.numbers import Interpretation

EPOCH = dt.date(1899, 12, 30)

DATA = """
T: LOAD Id, Date#(D, 'YYYY-MM-DD') AS D, Name, Amount INLINE [
Id, D, Name, Amount
1, 2020-02-29, hélène dupont, 12.5
2, 2021-01-03, OLE  olsen, -3
3, 2024-12-30, a;b;c, 1234.5678
4, 1999-12-31, <x> and <y>, 0
];
"""

# Functions the charts did not have before the library was one: each must give in a chart
# measure exactly what it gives in a LOAD over the same rows.
EXPRESSIONS = [
    "MonthName(D)",
    "QuarterName(D)",
    "MonthStart(D)",
    "MonthEnd(D)",
    "QuarterStart(D, 1)",
    "YearEnd(D, -1)",
    "WeekStart(D)",
    "WeekEnd(D, 1, 0)",
    "Week(D)",
    "Week(D, 0, 0, 4)",
    "WeekYear(D, 0, 0, 4)",
    "WeekDay(D)",
    "AddMonths(D, 1)",
    "AddMonths(D, -1, 1)",
    "AddYears(D, 1)",
    "InYear(D, MakeDate(2020, 6, 1), 0)",
    "InMonth(D, MakeDate(2021, 1, 15), 0)",
    "InYearToDate(D, MakeDate(2020, 3, 1), 0)",
    "NetWorkDays(D, D + 10)",
    "NetWorkDays(D, D + 30, MakeDate(2020, 3, 2))",
    "Timestamp(D + 0.75)",
    "Time(D + 0.5)",
    "Interval(Amount / 24)",
    "MakeTime(13, 5, Id)",
    "Capitalize(Name)",
    "PurgeChar(Name, 'aeiou')",
    "KeepChar(Name, 'aeiou ')",
    "TextBetween(Name, '<', '>', 2)",
    "FindOneOf(Name, 'lo', 2)",
    "SubField(Name, ';', -1)",
    "SubField(Name, ' ', 2)",
    "Upper(Name)",
    "Lower(Name)",
    "Num(Amount, '#,##0.00')",
    "Num(Amount, '0.0%')",
    "Date(D, 'WWW DD MMMM YYYY')",
    "Date#(Text(Date(D, 'DD/MM/YYYY')), 'DD/MM/YYYY')",
    "Num#(Text(Num(Amount, '#,##0.00')), '#,##0.00')",
    "Hash128(Name, Id)",
    "Hash160(Name)",
    "Hash256(Name, D)",
]


def script_values(app_script: str, expr: str) -> list[Any]:
    app = assoc.App.from_script(app_script + f"\nR: LOAD Id AS RId, {expr} AS v RESIDENT T;")
    return list(app.table("R").column("v"))


def chart_values(app: assoc.App, expr: str) -> list[Any]:
    with app.session() as s:
        rows = s.hypercube(["Id"], [f"Only({expr})"]).rows
    return [r[1] for r in sorted(rows, key=lambda r: r[0])]


def same(a: Any, b: Any) -> bool:
    """Equal values, numbers compared to the last few bits."""
    if isinstance(a, Dual) and isinstance(b, Dual):
        return a.text == b.text and same(a.number, b.number)
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-12)
    return bool(a == b)


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_chart_and_script_give_the_same_value(expr: str) -> None:
    app = assoc.App.from_script(DATA)
    in_script = script_values(DATA, expr)
    in_chart = chart_values(app, expr)
    assert len(in_script) == 4
    assert all(same(a, b) for a, b in zip(in_script, in_chart, strict=True)), (
        in_script,
        in_chart,
    )
    assert any(v is not None for v in in_chart)


ISO = "SET FirstWeekDay=0; SET BrokenWeeks=0; SET ReferenceDay=4;\n"


def test_charts_follow_the_scripts_week_variables() -> None:
    days = [dt.date(2019, 12, 20) + dt.timedelta(days=k) for k in range(2200)]
    rows = "\n".join(f"{(d - EPOCH).days}" for d in days)
    app = assoc.App.from_script(ISO + f"T: LOAD D INLINE [\nD\n{rows}\n];")
    with app.session() as s:
        got = {r[0]: (r[1], r[2]) for r in s.hypercube(["D"], ["Week(D)", "WeekYear(D)"]).rows}
    for d in days:
        iso = d.isocalendar()
        assert got[(d - EPOCH).days] == (iso.week, iso.year), d
    # The same dates under the defaults (weeks from Sunday, broken at January 1st).
    default = assoc.App.from_script(f"T: LOAD D INLINE [\nD\n{rows}\n];")
    with default.session() as s:
        plain = {r[0]: r[1] for r in s.hypercube(["D"], ["Week(D)"]).rows}
    jan2021 = (dt.date(2021, 1, 3) - EPOCH).days  # a Sunday: week 2 from Sunday, ISO week 53
    assert plain[jan2021] == 2
    assert got[jan2021][0] == 53


def test_charts_read_and_write_dates_in_the_apps_formats() -> None:
    script = "SET DateFormat='DD.MM.YYYY'; SET DecimalSep=','; SET ThousandSep='.';\n" + DATA
    app = assoc.App.from_script(script)
    with app.session() as s:
        [row] = s.hypercube(
            [],
            [
                "Year('15.01.2020')",
                "Only({<Id={1}>} Date(D))",
                "Num(1234.5, '#.##0,00', ',', '.')",
                "Num#('1.234,5')",
                "Date#('31.12.1999') + 1",
            ],
        ).rows
    assert row[0] == 2020
    assert row[1] == Dual(43890, "29.02.2020")
    assert row[2] == Dual(1234.5, "1.234,50")
    assert row[3] == Dual(1234.5, "1.234,5")
    assert row[4] == 36526
    # Under the defaults a day-first text is no date.
    with assoc.App.from_script(DATA).session() as s:
        [plain] = s.hypercube([], ["Year('15.01.2020')", "Date#('31.12.1999')"]).rows
    assert plain == (None, None)


def test_a_model_keeps_only_the_interpretation_variables() -> None:
    app = assoc.App.from_script("SET DateFormat='YYYY/MM/DD'; SET x = 1;\n" + DATA)
    kept = app._impl.interpretation_variables  # the model's own record
    assert kept["DateFormat"] == "YYYY/MM/DD"
    assert "x" not in kept


def test_wrong_argument_counts_are_errors_with_positions() -> None:
    with pytest.raises(ScriptError) as err:
        assoc.App.from_script("T: LOAD\n  Capitalize('a', 'b') AS c AUTOGENERATE 1;")
    assert "Capitalize" in str(err.value) or "CAPITALIZE" in str(err.value)
    assert (err.value.line, err.value.column) == (2, 3)
    app = assoc.App.from_script(DATA)
    with app.session() as s, pytest.raises(assoc.Error, match="TextBetween takes 3 to 4 arguments"):
        s.hypercube([], ["TextBetween('a')"])


def test_bad_values_give_null_never_a_crash() -> None:
    app = assoc.App.from_script(DATA)
    exprs = [
        "MakeDate(2021, 2, 30)",
        "MakeDate(1e300)",
        "AddMonths(1e300, 1)",
        "Week('x')",
        "MonthName(Null())",
        "Date#('2021-13-01', 'YYYY-MM-DD')",
        "Timestamp#('25:00', 'hh:mm')",
        "TextBetween('abc', '', 'c')",
        "SubField('a,b', ',', 0)",
        "Interval(1e300)",
        "NetWorkDays('x', 5)",
    ]
    with app.session() as s:
        [row] = s.hypercube([], exprs).rows
    assert row == (None,) * len(exprs)
    assert script_values(DATA, "MakeDate(2021, 2, 30)") == [None] * 4


# Each single-byte code page ApplyCodepage reads, by number, with the codec of its mapping.
CODEPAGES = {
    437: "cp437", 850: "cp850", 852: "cp852", 855: "cp855", 857: "cp857", 860: "cp860",
    861: "cp861", 862: "cp862", 863: "cp863", 865: "cp865", 866: "cp866", 869: "cp869",
    874: "cp874", 1250: "cp1250", 1251: "cp1251", 1252: "cp1252", 1253: "cp1253",
    1254: "cp1254", 1255: "cp1255", 1256: "cp1256", 1257: "cp1257", 1258: "cp1258",
    10000: "mac_roman", 10007: "mac_cyrillic", 20866: "koi8_r", 21866: "koi8_u",
    28591: "latin_1", 28592: "iso8859_2", 28593: "iso8859_3", 28594: "iso8859_4",
    28595: "iso8859_5", 28596: "iso8859_6", 28597: "iso8859_7", 28598: "iso8859_8",
    28599: "iso8859_9", 28603: "iso8859_13", 28605: "iso8859_15",
}  # fmt: skip


def misread(data: bytes) -> str:
    """The text a Windows-1252 read makes of `data` (a byte 1252 leaves undefined as the C1
    control of its value, as Windows reads it)."""
    out = []
    for b in data:
        try:
            out.append(bytes([b]).decode("cp1252"))
        except UnicodeDecodeError:
            out.append(chr(b))
    return "".join(out)


def apply_codepage(texts: list[str | None], page: Any) -> list[str | None]:
    numbers = np.array([page if isinstance(page, float | int) else np.nan])
    pages = (numbers, None if isinstance(page, float | int) else [page])
    ix = Interpretation({})
    words = (np.full(len(texts), np.nan), list(texts))
    _, out = _core.call_function("ApplyCodepage", [words, pages], len(texts), ix)
    return [None] * len(texts) if out is None else out


def test_apply_codepage_reads_every_byte_as_the_code_page_maps_it() -> None:
    """ApplyCodepage(text, page) takes the text back to the bytes a 1252 read made of them and
    reads those in `page`: every byte each single-byte code page defines gives the character
    its published mapping (Python's codecs) gives."""
    for page, codec in CODEPAGES.items():
        defined = []
        for b in range(256):
            try:
                bytes([b]).decode(codec)
                defined.append(b)
            except UnicodeDecodeError:
                pass
        data = bytes(defined)
        assert apply_codepage([misread(data)], page) == [data.decode(codec)], codec


def test_apply_codepage_in_scripts_and_charts(tmp_path: Any) -> None:
    """Texts a file held in Greek, Cyrillic, Hebrew, UTF-8 and UTF-16 but read as 1252 come
    back as they were written, alike in a LOAD and a chart; a text the code page cannot have
    made stays as it is; an unknown code page gives NULL."""
    written = [
        ("Καλημέρα", "cp1253", 1253),
        ("Привет, мир", "cp1251", 1251),
        ("Привет", "koi8_r", 20866),
        ("Ёлка", "cp866", 866),
        ("שלום", "cp1255", 1255),
        ("été naïve — “quotes” €", "utf-8", 65001),
        ("Ωλ€𝄞", "utf-16-le", 1200),
        ("Ωλ€𝄞", "utf-16-be", 1201),
    ]
    lines = ["Id\tText\tPage"] + [
        f"{i}\t{misread(text.encode(codec))}\t{page}"
        for i, (text, codec, page) in enumerate(written)
    ]
    lines += [f"{len(written)}\tΩ not from 1252\t1253", f"{len(written) + 1}\t\xc3(\t65001"]
    (tmp_path / "misread.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    app = assoc.App.from_script(
        "T: LOAD Id, Text, Page, ApplyCodepage(Text, Page) AS Fixed\n"
        "FROM [lib://d/misread.txt] (txt, utf8, embedded labels, delimiter is '\\t', no quotes);",
        folders={"d": tmp_path},
    )
    expected = [text for text, _, _ in written] + ["Ω not from 1252", "\xc3("]
    t = app.table("T")
    fixed = dict(zip(t.column("Id"), t.column("Fixed"), strict=True))
    assert [fixed[i] for i in range(len(expected))] == expected
    with app.session() as s:
        rows = s.hypercube(["Id"], ["Only(ApplyCodepage(Text, Page))"]).rows
    assert [text for _, text in sorted(rows)] == expected
    assert apply_codepage(["abc"], 932) == [None]  # Shift-JIS: not a code page read here
    assert apply_codepage(["abc"], "x") == [None]
    assert apply_codepage(["abc"], 1252.5) == [None]
    assert apply_codepage([None, "abc"], 1253) == [None, "abc"]
    with app.session() as s:
        [row] = s.hypercube([], ["ApplyCodepage(Null(), 1253)", "ApplyCodepage('a', 932)"]).rows
    assert row == (None, None)
