"""Load scripts: Qlik's script language run over folder connections into an app's model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assoc.script.connections import FolderConfinement, FolderConnections
from assoc.script.errors import ScriptError
from assoc.script.numbers import DEFAULTS
from assoc.script.runner import Progress, ReloadResult, ScriptRunner


def check_syntax(text: str, variables: Mapping[str, str] | None = None) -> list[ScriptError]:
    """The script's syntax errors, each with line and column (empty when it parses)."""
    return ScriptRunner(text, variables=variables).check()


def empty_script() -> str:
    """The script a new app starts with: the en-US interpretation variables."""
    return (
        "".join(
            f"SET {k}='{v}';\n" for k, v in DEFAULTS.items() if k not in ("NumericalAbbreviation",)
        )
        + f"SET NumericalAbbreviation='{DEFAULTS['NumericalAbbreviation']}';\n"
    )


def locale_info() -> dict[str, Any]:
    """GetLocaleInfo's answer: the en-US interpretation defaults."""
    import datetime as dt

    d = DEFAULTS
    return {
        "qDecimalSep": d["DecimalSep"],
        "qThousandSep": d["ThousandSep"],
        "qListSep": ",",
        "qMoneyDecimalSep": d["MoneyDecimalSep"],
        "qMoneyThousandSep": d["MoneyThousandSep"],
        "qCurrentYear": dt.date.today().year,
        "qMoneyFmt": d["MoneyFormat"],
        "qTimeFmt": d["TimeFormat"],
        "qDateFmt": d["DateFormat"],
        "qTimestampFmt": d["TimestampFormat"],
        "qCalendarStrings": {
            "qDayNames": d["DayNames"].split(";"),
            "qMonthNames": d["MonthNames"].split(";"),
            "qLongDayNames": d["LongDayNames"].split(";"),
            "qLongMonthNames": d["LongMonthNames"].split(";"),
        },
        "qFirstWeekDay": int(d["FirstWeekDay"]),
        "qBrokenWeeks": d["BrokenWeeks"] == "1",
        "qReferenceDay": int(d["ReferenceDay"]),
        "qFirstMonthOfYear": int(d["FirstMonthOfYear"]),
        "qCollation": d["CollationLocale"],
        "qNumericalAbbreviation": d["NumericalAbbreviation"],
    }


__all__ = [
    "FolderConfinement",
    "FolderConnections",
    "Progress",
    "ReloadResult",
    "ScriptError",
    "ScriptRunner",
    "check_syntax",
    "empty_script",
    "locale_info",
]
