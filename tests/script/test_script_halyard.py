"""A script in the shape halyard.js writes: its SET header from GetLocaleInfo, then LOADs from
folder connections and inline data."""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

import assoc
from assoc import Dual
from assoc.script import locale_info


def halyard_header(info: dict) -> str:
    """The SET statements halyard.js writes from GetLocaleInfo (convertQixGetLocalInfo)."""
    cal = info["qCalendarStrings"]
    values = {
        "ThousandSep": info["qThousandSep"],
        "DecimalSep": info["qDecimalSep"],
        "MoneyThousandSep": info["qMoneyThousandSep"],
        "MoneyDecimalSep": info["qMoneyDecimalSep"],
        "MoneyFormat": info["qMoneyFmt"],
        "TimeFormat": info["qTimeFmt"],
        "DateFormat": info["qDateFmt"],
        "TimestampFormat": info["qTimestampFmt"],
        "FirstWeekDay": info["qFirstWeekDay"],
        "ReferenceDay": info["qReferenceDay"],
        "FirstMonthOfYear": info["qFirstMonthOfYear"],
        "CollationLocale": info["qCollation"],
        "MonthNames": cal["qMonthNames"],
        "LongMonthNames": cal["qLongMonthNames"],
        "DayNames": cal["qDayNames"],
        "LongDayNames": cal["qLongDayNames"],
    }
    return "\n".join(
        f"SET {k}='{';'.join(v) if isinstance(v, list) else v}';" for k, v in values.items()
    )


MOVIES = [
    ["Movie", "Year", "Adjusted Costs", "Released", "imdbRating"],
    ["Avatar", "2009", "$220000000", "2009-12-18", "7.8"],
    ["Titanic", "1997", "$200000000", "1997-12-19", "7.7"],
    ["The Dark Knight, part 2", "2008", "$185000000", "2008-07-18", "9.0"],
]


def test_halyard_script_loads_with_header_names_and_money(tmp_path: Path) -> None:
    with open(tmp_path / "movies.csv", "w", newline="") as f:
        csv.writer(f).writerows(MOVIES)
    script = "\n\n".join(
        [
            halyard_header(locale_info()),
            '"Movies":\nLOAD\n  "Movie" AS "Movie",\n  "Year" AS "Year",\n'
            '  "Adjusted Costs" AS "Adjusted Costs",\n'
            '  DATE(DATE#("Released", \'YYYY-MM-DD\')) AS "Released",\n'
            '  "imdbRating" AS "imdbRating"\n'
            "FROM [lib://dir_5f1c-8a2b/movies.csv]\n(txt, utf8, delimiter is ',');",
            '"Ratings":\nLOAD\n*\nINLINE "\nimdbRating,Label\n7.8,""good""\n9.0,great\n"\n(txt);',
        ]
    )
    from assoc.script import check_syntax

    assert check_syntax(script) == []
    app = assoc.App.from_script(script, folders={"dir_5f1c-8a2b": tmp_path})
    assert app.tables == ["Movies", "Ratings"]
    movies = app.table("Movies")
    assert movies.fields == MOVIES[0]
    assert movies.column("Movie") == [r[0] for r in MOVIES[1:]]
    assert movies.column("Adjusted Costs") == [Dual(float(r[2][1:]), r[2]) for r in MOVIES[1:]]
    released = [dt.date.fromisoformat(r[3]) for r in MOVIES[1:]]
    assert movies.column("Released") == [
        Dual(float((d - dt.date(1899, 12, 30)).days), f"{d.month}/{d.day}/{d.year}")
        for d in released
    ]
    ratings = app.table("Ratings")
    assert ratings.column("Label") == ["good", "great"]
    # The two tables link through imdbRating.
    with app.session() as s:
        s.select("Label", ["great"])
        assert s.state("Movie")["possible"] == ["The Dark Knight, part 2"]
