"""Number interpretation: text read as numbers, dates and money under the script's
interpretation variables, and numbers written back in those formats. The engine does the
reading and writing (the charts use the same rules); this module names the variables."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping

from assoc import _core

# en-US, as Qlik's engine answers GetLocaleInfo for a new app.
DEFAULTS: dict[str, str] = {
    "ThousandSep": ",",
    "DecimalSep": ".",
    "MoneyThousandSep": ",",
    "MoneyDecimalSep": ".",
    "MoneyFormat": "$#,##0.00;($#,##0.00)",
    "TimeFormat": "h:mm:ss TT",
    "DateFormat": "M/D/YYYY",
    "TimestampFormat": "M/D/YYYY h:mm:ss[.fff] TT",
    "FirstWeekDay": "6",
    "BrokenWeeks": "1",
    "ReferenceDay": "0",
    "FirstMonthOfYear": "1",
    "CollationLocale": "en-US",
    "CreateSearchIndexOnReload": "1",
    "MonthNames": "Jan;Feb;Mar;Apr;May;Jun;Jul;Aug;Sep;Oct;Nov;Dec",
    "LongMonthNames": (
        "January;February;March;April;May;June;July;August;September;October;November;December"
    ),
    "DayNames": "Mon;Tue;Wed;Thu;Fri;Sat;Sun",
    "LongDayNames": "Monday;Tuesday;Wednesday;Thursday;Friday;Saturday;Sunday",
    "NumericalAbbreviation": (
        "3:k;6:M;9:G;12:T;15:P;18:E;21:Z;24:Y;-3:m;-6:μ;-9:n;-12:p;-15:f;-18:a;-21:z;-24:y"
    ),
}

_EPOCH = dt.date(1899, 12, 30).toordinal()


def date_serial(year: int, month: int, day: int) -> float:
    """Qlik's day number of a date (days since 1899-12-30)."""
    return float(dt.date(year, month, day).toordinal() - _EPOCH)


def interpretation_variables(variables: Mapping[str, str]) -> dict[str, str]:
    """The interpretation variables among `variables` (those an app keeps for its charts)."""
    return {k: variables[k] for k in DEFAULTS if k in variables}


class Interpretation(_core.Interpretation):
    """The interpretation variables in force: reads and writes numbers as the script says."""

    def __init__(self, variables: Mapping[str, str]) -> None:
        super().__init__(interpretation_variables(variables))

    def number_characters(self) -> str:
        """Every character a text that reads as a number may hold (a cheap first filter: a
        superset of what the number, money and date formats in force accept)."""
        chars = set("0123456789+-eE \t") | set(self.thousand + self.decimal)
        chars |= set(self.money_thousand + self.money_decimal + self.currency + "()")
        formats = (self.date_format, self.time_format, self.timestamp_format)
        for fmt in (*formats, "YYYY-MM-DD hh:mm:ss.fff", "YYYY-MM-DDThh:mm:ss"):
            chars |= {ch for ch in fmt if not ch.isalnum()} | {"T"}
        names = {
            "MMMM": self.long_month_names,
            "MMM": self.month_names,
            "WWWW": self.long_day_names,
            "WWW": self.day_names,
        }
        for fmt in formats:
            for tok, values in names.items():
                if tok in fmt.upper() if tok.startswith("W") else tok in fmt:
                    chars |= set("".join(values).upper() + "".join(values).lower())
            if "TT" in fmt.upper():
                chars |= set("AaPpMm")
        return "".join(sorted(chars))


def read_plain(s: str, decimal: str, thousand: str) -> float | None:
    """A number written with a decimal separator and optional thousand groups, or None."""
    return _core.read_plain(s, decimal, thousand)


def plain_text(value: float) -> str:
    """A number's shortest plain text (integers without a decimal point)."""
    if value == math.floor(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)
