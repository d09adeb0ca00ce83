"""Number interpretation: text read as numbers, dates and money under the script's
interpretation variables, and numbers written back in those formats."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from functools import lru_cache

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


def serial_date(serial: float) -> dt.date:
    """The date of a day number (its fraction ignored)."""
    return dt.date.fromordinal(math.floor(serial) + _EPOCH)


def _setting(text: str, default: int) -> int:
    """A whole-number interpretation variable (its default when it is not one)."""
    try:
        return int(text.strip())
    except ValueError:
        return default


class Interpretation:
    """The interpretation variables in force: reads and writes numbers as the script says."""

    def __init__(self, variables: Mapping[str, str]) -> None:
        v = {**DEFAULTS, **{k: variables[k] for k in DEFAULTS if k in variables}}
        self.thousand = v["ThousandSep"]
        self.decimal = v["DecimalSep"] or "."
        self.money_thousand = v["MoneyThousandSep"]
        self.money_decimal = v["MoneyDecimalSep"] or "."
        self.money_format = v["MoneyFormat"]
        self.date_format = v["DateFormat"]
        self.time_format = v["TimeFormat"]
        self.timestamp_format = v["TimestampFormat"]
        self.first_week_day = _setting(v["FirstWeekDay"], 6)
        self.broken_weeks = _setting(v["BrokenWeeks"], 1) != 0
        self.reference_day = _setting(v["ReferenceDay"], 0)
        self.first_month_of_year = min(max(_setting(v["FirstMonthOfYear"], 1), 1), 12)
        self.month_names = v["MonthNames"].split(";")
        self.long_month_names = v["LongMonthNames"].split(";")
        self.day_names = v["DayNames"].split(";")
        self.long_day_names = v["LongDayNames"].split(";")
        self._month_numbers = {n.casefold(): k + 1 for k, n in enumerate(self.month_names)}
        self._long_month_numbers = {
            n.casefold(): k + 1 for k, n in enumerate(self.long_month_names)
        }
        self._date_patterns = [
            self._pattern(fmt)
            for fmt in (
                self.date_format,
                self.timestamp_format,
                self.time_format,
                "YYYY-MM-DD",
                "YYYY-MM-DD hh:mm:ss[.fff]",
                "YYYY-MM-DDThh:mm:ss[.fff]",
            )
        ]
        positive = self.money_format.split(";")[0]
        self.currency = "".join(ch for ch in positive if ch not in "#0,.-() ")

    # --- reading
    def number_characters(self) -> str:
        """Every character a text that reads as a number may hold (a cheap first filter)."""
        chars = set("0123456789+-eE \t") | set(self.thousand + self.decimal)
        chars |= set(self.money_thousand + self.money_decimal + self.currency + "()")
        formats = (self.date_format, self.time_format, self.timestamp_format)
        for fmt in (*formats, "YYYY-MM-DD hh:mm:ss.fff", "YYYY-MM-DDThh:mm:ss"):
            chars |= {t for t in _tokens(fmt) if len(t) == 1 and not t.isalnum()} | {"T"}
            for tok in _tokens(fmt):
                if tok.startswith("["):
                    chars |= set(tok[1:-1]) - set("YMDWhmsfTt")
        names = {
            "MMM": self.month_names,
            "MMMM": self.long_month_names,
            "WWW": self.day_names,
            "WWWW": self.long_day_names,
        }
        for fmt in formats:
            tokens = set(_tokens(fmt))
            for tok, values in names.items():
                if tok in tokens:
                    chars |= set("".join(values).upper() + "".join(values).lower())
            if tokens & {"TT", "tt"}:
                chars |= set("AaPpMm")
        return "".join(sorted(chars))

    def read(self, text: str) -> float | None:
        """The number a text stands for, trying number, money, date, timestamp and time formats."""
        s = text.strip()
        if not s:
            return None
        n = read_plain(s, self.decimal, self.thousand)
        if n is not None:
            return n
        if self.currency and self.currency in s:
            # An amount in parentheses is negative, as the MoneyFormat's negative part writes it.
            negative = s.startswith("(") and s.endswith(")")
            amount = (s[1:-1] if negative else s).replace(self.currency, "", 1).strip()
            n = read_plain(amount, self.money_decimal, self.money_thousand)
            if n is not None:
                return -n if negative else n
        if not any(ch.isdigit() for ch in s):
            return None
        for pattern in self._date_patterns:
            m = pattern.fullmatch(s)
            if m is not None:
                n = self._date_value(m)
                if n is not None:
                    return n
        return None

    def read_date(self, text: str, fmt: str) -> float | None:
        """A date/time text in format `fmt` as a day number (with a fraction for the time)."""
        m = self._pattern(fmt).fullmatch(text.strip())
        return None if m is None else self._date_value(m)

    def _pattern(self, fmt: str) -> re.Pattern[str]:
        return _date_regex(
            fmt,
            tuple(self.month_names),
            tuple(self.long_month_names),
            tuple(self.day_names),
            tuple(self.long_day_names),
        )

    def _date_value(self, m: re.Match[str]) -> float | None:
        """The day number a matched date/time text stands for (None when out of range)."""
        g = m.groupdict()
        y4, y2, mon, mmm, mmmm, d = (
            g.get("Y4"),
            g.get("Y2"),
            g.get("M"),
            g.get("MMM"),
            g.get("MMMM"),
            g.get("D"),
        )
        try:
            if y4:
                year = int(y4)
            elif y2:
                year = 2000 + int(y2)
                year -= 100 if year > 2029 else 0
            else:
                year = 1899
            if mon:
                month = int(mon)
            elif mmmm:
                month = self._long_month_numbers[mmmm.casefold()]
            elif mmm:
                month = self._month_numbers[mmm.casefold()]
            else:
                month = 12
            days = (
                date_serial(year, month, int(d) if d else 30)
                if (y4 or y2 or mon or mmm or mmmm or d)
                else 0.0
            )
            h = g.get("h")
            if h is None:
                return days
            hour = int(h)
            minute = int(g["m"]) if g.get("m") else 0
            second = int(g["s"]) if g.get("s") else 0
            frac = float("0." + g["f"]) if g.get("f") else 0.0
        except (ValueError, KeyError):
            return None
        if g.get("TT"):
            if not 1 <= hour <= 12:
                return None
            hour = hour % 12 + (12 if g["TT"].upper() == "PM" else 0)
        if hour > 23 or minute > 59 or second > 59:
            return None
        return days + (hour * 3600 + minute * 60 + second + frac) / 86400.0

    # --- writing
    def format_number(
        self,
        value: float,
        fmt: str | None = None,
        decimal: str | None = None,
        thousand: str | None = None,
    ) -> str:
        """A number in a `#,##0.00`-style format (the shortest plain form without one)."""
        if fmt is None or not fmt:
            return plain_text(value)
        negative_fmt = None
        if ";" in fmt:
            fmt, negative_fmt = fmt.split(";", 1)
        if value < 0 and negative_fmt:
            return _apply_number_format(
                -value, negative_fmt, decimal or self.decimal, thousand or self.thousand
            )
        text = _apply_number_format(
            abs(value), fmt, decimal or self.decimal, thousand or self.thousand
        )
        return "-" + text if value < 0 and text.strip("0.,") else text

    def format_date(self, serial: float, fmt: str | None = None) -> str:
        """A day number in a date/time format (DateFormat without one)."""
        fmt = fmt or self.date_format
        day = serial_date(serial)
        seconds = round((serial - math.floor(serial)) * 86400.0, 3)
        hour, rest = divmod(seconds, 3600)
        minute, second = divmod(rest, 60)

        def token(tok: str) -> str:
            match tok:
                case "YYYY":
                    return f"{day.year:04d}"
                case "YY":
                    return f"{day.year % 100:02d}"
                case "MMMM":
                    return self.long_month_names[day.month - 1]
                case "MMM":
                    return self.month_names[day.month - 1]
                case "MM":
                    return f"{day.month:02d}"
                case "M":
                    return str(day.month)
                case "DD":
                    return f"{day.day:02d}"
                case "D":
                    return str(day.day)
                case "WWWW":
                    return self.long_day_names[day.weekday()]
                case "WWW":
                    return self.day_names[day.weekday()]
                case "hh" | "h":
                    h = int(hour)
                    if "TT" in fmt or "tt" in fmt:
                        h = h % 12 or 12
                    return f"{h:02d}" if tok == "hh" else str(h)
                case "mm":
                    return f"{int(minute):02d}"
                case "ss":
                    return f"{int(second):02d}"
                case "fff":
                    return f"{round((second - int(second)) * 1000):03d}"
                case "TT" | "tt":
                    return "PM" if hour >= 12 else "AM"
            return tok

        out = []
        for tok in _tokens(fmt):
            if tok.startswith("[") and tok.endswith("]"):
                out.append("".join(token(t) for t in _tokens(tok[1:-1])))
            else:
                out.append(token(tok))
        return "".join(out)


_DATE_TOKENS = (
    "YYYY",
    "YY",
    "MMMM",
    "MMM",
    "MM",
    "M",
    "DD",
    "D",
    "WWWW",
    "WWW",
    "hh",
    "h",
    "mm",
    "ss",
    "fff",
    "TT",
    "tt",
)


def _tokens(fmt: str) -> list[str]:
    """A date/time format cut into its tokens and literal characters ([…] kept whole)."""
    out: list[str] = []
    i = 0
    while i < len(fmt):
        if fmt[i] == "[":
            end = fmt.find("]", i)
            if end > 0:
                out.append(fmt[i : end + 1])
                i = end + 1
                continue
        for tok in _DATE_TOKENS:
            if fmt.startswith(tok, i) or (
                len(tok) <= 2
                and fmt[i : i + len(tok)].upper() == tok.upper()
                and tok.lower() == tok
                and fmt[i].islower()
            ):
                out.append(tok)
                i += len(tok)
                break
        else:
            out.append(fmt[i])
            i += 1
    return out


@lru_cache(maxsize=64)
def _date_regex(
    fmt: str,
    months: tuple[str, ...],
    long_months: tuple[str, ...],
    days: tuple[str, ...],
    long_days: tuple[str, ...],
) -> re.Pattern[str]:
    def one_of(names: tuple[str, ...], group: str = "") -> str:
        return f"(?{'P<' + group + '>' if group else ':'}" + "|".join(map(re.escape, names)) + ")"

    fixed = {
        "YYYY": r"(?P<Y4>\d{4})",
        "YY": r"(?P<Y2>\d{2})",
        "MM": r"(?P<M>\d{1,2})",
        "M": r"(?P<M>\d{1,2})",
        "DD": r"(?P<D>\d{1,2})",
        "D": r"(?P<D>\d{1,2})",
        "hh": r"(?P<h>\d{1,2})",
        "h": r"(?P<h>\d{1,2})",
        "mm": r"(?P<m>\d{1,2})",
        "ss": r"(?P<s>\d{1,2})",
        "fff": r"(?P<f>\d{1,9})",
        "TT": r"(?P<TT>[AaPp][Mm])",
        "tt": r"(?P<TT>[AaPp][Mm])",
        "MMMM": one_of(long_months, "MMMM"),
        "MMM": one_of(months, "MMM"),
        "WWWW": one_of(long_days),
        "WWW": one_of(days),
        " ": r"\s*",
    }

    def part(tok: str) -> str:
        return fixed.get(tok) or re.escape(tok)

    pieces = []
    for tok in _tokens(fmt):
        if tok.startswith("[") and tok.endswith("]"):
            pieces.append("(?:" + "".join(part(t) for t in _tokens(tok[1:-1])) + ")?")
        else:
            pieces.append(part(tok))
    return re.compile("".join(pieces), re.IGNORECASE)


_PLAIN = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def read_plain(s: str, decimal: str, thousand: str) -> float | None:
    """A number written with a decimal separator and optional thousand groups, or None."""
    t = s
    if thousand and thousand in t and thousand != decimal:
        head = t.split(decimal, 1)[0] if decimal else t
        groups = head.lstrip("+-").split(thousand)
        if not (1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:])):
            return None
        t = t.replace(thousand, "")
    if decimal and decimal != ".":
        if "." in t:
            return None
        t = t.replace(decimal, ".")
    if not _PLAIN.fullmatch(t):
        return None
    value = float(t)
    return value if math.isfinite(value) else None


def plain_text(value: float) -> str:
    """A number's shortest plain text (integers without a decimal point)."""
    if value == math.floor(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _apply_number_format(value: float, fmt: str, decimal: str, thousand: str) -> str:
    """A non-negative number in a `#,##0.00`-style pattern with literal prefix and suffix."""
    m = re.search(r"[#0][#0,.\s]*", fmt)
    if m is None:
        return fmt
    pattern = m.group(0).rstrip()
    prefix, suffix = fmt[: m.start()], fmt[m.start() + len(pattern) :]
    # A pattern's decimal point is the last '.' (or the separator itself when it is not ',').
    if "." in pattern:
        int_part, dec_part = pattern.rsplit(".", 1)
    else:
        int_part, dec_part = pattern, ""
    decimals = len(dec_part.replace(",", "").replace(" ", ""))
    percent = "%" in suffix
    if percent:
        value *= 100
    text = f"{value:.{decimals}f}"
    whole, _, frac = text.partition(".")
    min_int = int_part.count("0")
    whole = whole.rjust(min_int, "0") if min_int else ("" if whole == "0" and decimals else whole)
    grouped = "," in int_part or " " in int_part.strip()
    if grouped and thousand:
        rev = whole[::-1]
        whole = thousand.join(rev[i : i + 3] for i in range(0, len(rev), 3))[::-1]
    body = whole + (decimal + frac if decimals else "")
    return prefix + (body or "0") + suffix
