"""Load scripts: Qlik's script language run over folder connections into an app's model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assoc.script.connections import FolderConfinement, FolderConnections
from assoc.script.errors import ScriptError
from assoc.script.numbers import DEFAULTS, Interpretation
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


def locale_info(variables: Mapping[str, str] | None = None) -> dict[str, Any]:
    """GetLocaleInfo's answer: the interpretation variables an app's script left (`variables`),
    the en-US defaults for the others; settings that are no number keep their defaults."""
    import datetime as dt

    d = {**DEFAULTS, **(variables or {})}
    ix = Interpretation(d)
    return {
        "qDecimalSep": ix.decimal,
        "qThousandSep": ix.thousand,
        "qListSep": ",",
        "qMoneyDecimalSep": ix.money_decimal,
        "qMoneyThousandSep": ix.money_thousand,
        "qCurrentYear": dt.date.today().year,
        "qMoneyFmt": ix.money_format,
        "qTimeFmt": ix.time_format,
        "qDateFmt": ix.date_format,
        "qTimestampFmt": ix.timestamp_format,
        "qCalendarStrings": {
            "qDayNames": ix.day_names,
            "qMonthNames": ix.month_names,
            "qLongDayNames": ix.long_day_names,
            "qLongMonthNames": ix.long_month_names,
        },
        "qFirstWeekDay": ix.first_week_day,
        "qBrokenWeeks": ix.broken_weeks,
        "qReferenceDay": ix.reference_day,
        "qFirstMonthOfYear": ix.first_month_of_year,
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
