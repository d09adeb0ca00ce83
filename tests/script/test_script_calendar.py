"""Calendar and text functions of scripts, each over a column of values against the same
function computed here with the standard library."""

from __future__ import annotations

import base64
import calendar
import datetime as dt
import hashlib
import re
from typing import Any

import pytest

import assoc
from assoc import Dual
from assoc.script import ScriptError

MS = 1 / 86_400_000
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
# Every 5th day over three years and a half, leap days and year ends included.
DATES = [dt.date(2011, 11, 3) + dt.timedelta(days=5 * k) for k in range(260)]


def serial(d: dt.date) -> int:
    return (d - dt.date(1899, 12, 30)).days


def iso(d: dt.date) -> str:
    return d.isoformat()


def load(fields: str, header: str = "SET DateFormat='YYYY-MM-DD';") -> assoc.App:
    rows = "\n".join(iso(d) for d in DATES)
    return assoc.App.from_script(f"{header}\nT: LOAD D, {fields} INLINE [\nD\n{rows}\n];")


def column(app: assoc.App, name: str) -> list[Any]:
    return app.table("T").column(name)


def shift_month(y: int, m: int, k: int) -> tuple[int, int]:
    y2, m2 = divmod(y * 12 + m - 1 + k, 12)
    return y2, m2 + 1


def period_start(d: dt.date, size: int, shift: int = 0, first_month: int = 1) -> dt.date:
    index = d.year * 12 + d.month - 1
    base = (first_month - 1) % size
    start = (index - base) // size * size + base + shift * size
    return dt.date(start // 12, start % 12 + 1, 1)


def add_months(d: dt.date, k: int, mode: int = 0) -> dt.date:
    y, m = shift_month(d.year, d.month, k)
    new_len = calendar.monthrange(y, m)[1]
    old_len = calendar.monthrange(d.year, d.month)[1]
    day = min(d.day, new_len)
    if mode == 1 and d.day >= 28:
        day = max(new_len - (old_len - d.day), 1)
    return dt.date(y, m, day)


def as_date(d: dt.date) -> Dual:
    return Dual(float(serial(d)), iso(d))


def assert_ends(values: list[Any], expected: list[dt.date]) -> None:
    """Period ends: the last millisecond of the expected day, shown as that day."""
    assert [v.text for v in values] == [iso(d) for d in expected]
    assert [v.number for v in values] == pytest.approx(
        [serial(d) + 1 - MS for d in expected], abs=1e-9
    )


def test_add_months_and_years() -> None:
    app = load("AddMonths(D, 1) AS A1, AddMonths(D, -13, 1) AS A2, AddYears(D, 2) AS Y2")
    assert column(app, "A1") == [as_date(add_months(d, 1)) for d in DATES]
    assert column(app, "A2") == [as_date(add_months(d, -13, 1)) for d in DATES]
    assert column(app, "Y2") == [as_date(add_months(d, 24)) for d in DATES]


def test_starts_and_ends_of_months_quarters_years() -> None:
    app = load(
        "MonthStart(D) AS MS, MonthEnd(D, -1) AS ME, QuarterStart(D) AS QS,"
        " QuarterEnd(D, 1, 2) AS QE, YearStart(D, 0, 4) AS YS, YearEnd(D) AS YE"
    )

    def end(d: dt.date, size: int, shift: int = 0, first: int = 1) -> dt.date:
        return period_start(d, size, shift + 1, first) - dt.timedelta(days=1)

    assert column(app, "MS") == [as_date(period_start(d, 1)) for d in DATES]
    assert_ends(column(app, "ME"), [end(d, 1, -1) for d in DATES])
    assert column(app, "QS") == [as_date(period_start(d, 3)) for d in DATES]
    assert_ends(column(app, "QE"), [end(d, 3, 1, 2) for d in DATES])
    assert column(app, "YS") == [as_date(period_start(d, 12, 0, 4)) for d in DATES]
    assert_ends(column(app, "YE"), [end(d, 12) for d in DATES])


def test_first_month_of_year_steers_quarters_and_years() -> None:
    app = load(
        "YearStart(D) AS YS, QuarterName(D) AS QN",
        "SET DateFormat='YYYY-MM-DD'; SET FirstMonthOfYear=7;",
    )
    assert column(app, "YS") == [as_date(period_start(d, 12, 0, 7)) for d in DATES]
    names = []
    for d in DATES:
        s = period_start(d, 3, 0, 7)
        names.append(
            Dual(float(serial(s)), f"{MONTHS[s.month - 1]}-{MONTHS[(s.month + 1) % 12]} {s.year}")
        )
    assert column(app, "QN") == names


def test_week_start_end_and_week_year() -> None:
    app = load(
        "WeekStart(D) AS WS, WeekStart(D, 1, 0) AS WS1, WeekEnd(D, 0, 2) AS WE,"
        " WeekYear(D, 0, 0, 4) AS ISO, WeekYear(D) AS WY"
    )

    def start(d: dt.date, first_day: int) -> dt.date:
        return d - dt.timedelta(days=(d.weekday() - first_day) % 7)

    # FirstWeekDay is 6 (Sunday) by default.
    assert column(app, "WS") == [as_date(start(d, 6)) for d in DATES]
    assert column(app, "WS1") == [as_date(start(d, 0) + dt.timedelta(days=7)) for d in DATES]
    assert_ends(column(app, "WE"), [start(d, 2) + dt.timedelta(days=6) for d in DATES])
    assert column(app, "ISO") == [d.isocalendar()[0] for d in DATES]
    # Broken weeks (the default): the week belongs to the date's own year.
    assert column(app, "WY") == [d.year for d in DATES]


def test_month_and_quarter_names() -> None:
    app = load("MonthName(D) AS MN, MonthName(D, -2) AS MN2, QuarterName(D, 0, 3) AS QN")
    expected = []
    for d in DATES:
        s = period_start(d, 1)
        expected.append(Dual(float(serial(s)), f"{MONTHS[s.month - 1]} {s.year}"))
    assert column(app, "MN") == expected
    before = [period_start(d, 1, -2) for d in DATES]
    assert column(app, "MN2") == [
        Dual(float(serial(s)), f"{MONTHS[s.month - 1]} {s.year}") for s in before
    ]
    quarters = [period_start(d, 3, 0, 3) for d in DATES]
    assert column(app, "QN") == [
        Dual(float(serial(s)), f"{MONTHS[s.month - 1]}-{MONTHS[(s.month + 1) % 12]} {s.year}")
        for s in quarters
    ]


def test_in_year_in_month_in_year_to_date() -> None:
    base = dt.date(2013, 5, 15)
    app = load(
        f"InYear(D, '{iso(base)}', -1) AS IY, InYear(D, '{iso(base)}', 0, 4) AS IYF,"
        f" InMonth(D, '{iso(base)}', 2) AS IM, InYearToDate(D, '{iso(base)}', 0) AS YTD,"
        f" InYearToDate(D, '{iso(base)}', -1) AS YTD1"
    )
    truth = {True: -1, False: 0}
    assert column(app, "IY") == [truth[d.year == 2012] for d in DATES]
    fiscal = dt.date(2013, 4, 1)
    assert column(app, "IYF") == [truth[fiscal <= d < dt.date(2014, 4, 1)] for d in DATES]
    assert column(app, "IM") == [truth[(d.year, d.month) == (2013, 7)] for d in DATES]
    assert column(app, "YTD") == [truth[dt.date(2013, 1, 1) <= d <= base] for d in DATES]
    assert column(app, "YTD1") == [
        truth[dt.date(2012, 1, 1) <= d <= dt.date(2012, 5, 15)] for d in DATES
    ]


def test_network_days_with_holidays() -> None:
    holidays = [dt.date(2012, 12, 25), dt.date(2012, 12, 26), dt.date(2013, 1, 1)]
    listed = ", ".join(f"'{iso(h)}'" for h in holidays)
    app = load(
        f"NetWorkDays(D, D + 23) AS N, NetWorkDays(D, D + 40, {listed}) AS H,"
        " NetWorkDays(D, D - 3) AS Back"
    )

    def count(a: dt.date, b: dt.date, skip: list[dt.date]) -> int:
        days = [a + dt.timedelta(days=k) for k in range((b - a).days + 1)]
        return sum(1 for x in days if x.weekday() < 5 and x not in skip)

    assert column(app, "N") == [count(d, d + dt.timedelta(days=23), []) for d in DATES]
    assert column(app, "H") == [count(d, d + dt.timedelta(days=40), holidays) for d in DATES]
    assert column(app, "Back") == [0] * len(DATES)


def one(expr: str, header: str = "") -> Any:
    app = assoc.App.from_script(f"{header}\nT: LOAD {expr} AS v AUTOGENERATE 1;")
    return app.table("T").column("v")[0]


def test_make_time_and_now() -> None:
    assert one("MakeTime(22, 17, 30)") == Dual((22 * 3600 + 17 * 60 + 30) / 86400, "10:17:30 PM")
    assert one("MakeTime(6)") == Dual(0.25, "6:00:00 AM")
    before = dt.datetime.now()
    now = one("Now()")
    after = dt.datetime.now()

    def at(t: dt.datetime) -> float:
        return (
            serial(t.date())
            + (t - t.replace(hour=0, minute=0, second=0, microsecond=0)).total_seconds() / 86400
        )

    assert at(before) - 1e-6 <= now.number <= at(after) + 1e-6


WORDS = ["alpha beta", "GAMMA delta", "o'neil x-ray", "", "  two  spaces", "<a><bc><d>", "abcabcab"]


def words_table(fields: str) -> assoc.App:
    rows = "\n".join(f'"{w}"' for w in WORDS)
    return assoc.App.from_script(f"T: LOAD W, {fields} INLINE [\nW\n{rows}\n] (txt, msq);")


def test_text_functions_over_a_column() -> None:
    app = words_table(
        "Capitalize(W) AS C, PurgeChar(W, 'ab ') AS P, KeepChar(W, 'ab') AS K,"
        " TextBetween(W, '<', '>', 2) AS TB, Repeat(W, 2) AS R, FindOneOf(W, 'ae', 2) AS F,"
        " SubStringCount(W, 'ab') AS S, Ord(W) AS O"
    )
    texts = [w or None for w in app.table("T").column("W")]

    def cap(w: str) -> str:
        return re.sub(r"\S+", lambda m: m.group(0)[:1].upper() + m.group(0)[1:].lower(), w)

    def between(w: str, n: int) -> str | None:
        parts = re.findall(r"<([^>]*)>", w)
        return parts[n - 1] if len(parts) >= n else None

    def find(w: str, chars: str, n: int) -> int:
        hits = [i + 1 for i, c in enumerate(w) if c in chars]
        return hits[n - 1] if len(hits) >= n else 0

    t = app.table("T")
    assert t.column("C") == [None if w is None else cap(w) for w in texts]
    assert t.column("P") == [
        None if w is None else "".join(c for c in w if c not in "ab ") for w in texts
    ]
    assert t.column("K") == [
        None if w is None else "".join(c for c in w if c in "ab") for w in texts
    ]
    assert t.column("TB") == [None if w is None else between(w, 2) for w in texts]
    assert t.column("R") == [None if w is None else w * 2 for w in texts]
    assert t.column("F") == [None if w is None else find(w, "ae", 2) for w in texts]
    assert t.column("S") == [None if w is None else w.count("ab") for w in texts]
    assert t.column("O") == [None if not w else ord(w[0]) for w in texts]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("TextBetween('<abc>', '<', '>')", "abc"),
        ("TextBetween('<a<b', '<', '>')", None),
        ("TextBetween('<abc>', '<', '>', 2)", None),
        ("Repeat('x')", "x"),
        ("Repeat('ab', 0)", ""),
        ("Chr(8364)", "€"),
        ("Chr(-1)", None),
        ("Ord('€uro')", 8364),
        ("Alt('x', 'y', 3, 4)", 3),
        ("Alt('x', 'y')", "y"),
        ("Coalesce(Null(), Null(), 'c', 'd')", "c"),
        ("Coalesce(Null())", None),
        ("Match('b', 'a', 'B', 'b')", 3),
        ("Match(Null(), 'a')", 0),
        ("MixMatch('b', 'a', 'B', 'b')", 2),
        ("WildMatch('M1234', 'x*', 'm?2*', 'M*')", 2),
        ("WildMatch('abc', 'b*')", 0),
        ("Pick(3, 'a', 'b', 7)", 7),
        ("Pick(4, 'a', 'b', 7)", None),
        ("Pick(0, 'a')", None),
        ("Class(23, 10)", Dual(20.0, "20 <= x < 30")),
        ("Class(23, 10, 'age', 5)", Dual(15.0, "15 <= age < 25")),
        ("Class(-3, 5)", Dual(-5.0, "-5 <= x < 0")),
        ("Class(3, 0)", None),
    ],
)
def test_text_and_conditional_values(expr: str, expected: Any) -> None:
    assert one(expr) == expected


def qhash(algorithm: str, length: int, *texts: str) -> str:
    h = hashlib.new(algorithm)
    for t in texts:
        data = t.encode()
        h.update(len(data).to_bytes(8, "little") + data)
    return base64.urlsafe_b64encode(h.digest()).decode()[:length]


def test_hash_functions() -> None:
    app = words_table("Hash128(W) AS H1, Hash160(W, 'salt') AS H2, Hash256(W, W) AS H3")
    texts = [w or "" for w in app.table("T").column("W")]
    t = app.table("T")
    assert t.column("H1") == [qhash("md5", 22, w) for w in texts]
    assert t.column("H2") == [qhash("sha1", 27, w, "salt") for w in texts]
    assert t.column("H3") == [qhash("sha256", 43, w, w) for w in texts]
    assert one("Hash128('ab', 'c')") != one("Hash128('a', 'bc')")


@pytest.mark.parametrize(
    ("expr", "column"),
    [
        ("AddMonths(1)", 12),
        ("MonthStart()", 12),
        ("InYear(1, 2)", 12),
        ("TextBetween('a', 'b')", 12),
        ("Pick(1)", 12),
        ("Class(1)", 12),
        ("Hash128()", 12),
        ("NetWorkDays(1)", 12),
    ],
)
def test_wrong_argument_counts_name_line_and_column(expr: str, column: int) -> None:
    with pytest.raises(ScriptError) as err:
        assoc.App.from_script(f"SET x = 1;\nT: LOAD 1 AS a,\n  {expr}  AS v AUTOGENERATE 1;")
    assert (err.value.line, err.value.column) == (3, 3)
    assert "arguments" in err.value.message
