"""Script functions of calendars: AddMonths, AddYears, the starts and ends of months,
quarters, years and weeks, MonthName, QuarterName, WeekYear, InYear, InMonth, InYearToDate,
MakeTime, Now and NetWorkDays. Dates are day numbers from 1899-12-30; a period's start is its
first day, its end the last millisecond of its last day, both shown in DateFormat."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import numpy as np

from assoc.script.functions import CallContext, _dual_of, numbers_of
from assoc.script.numbers import Interpretation
from assoc.script.values import NAN, Values, booleans

Function = Callable[[list[Values], CallContext], Values]

_EPOCH_DAYS = 25569  # day number of 1970-01-01
_MS = 1.0 / 86_400_000


def _arg(args: list[Values], i: int, ctx: CallContext, default: float) -> np.ndarray:
    """Argument i as numbers per row (the default where it is absent or no number)."""
    if len(args) <= i:
        return np.full(ctx.n, float(default))
    x = numbers_of(args[i].broadcast(ctx.n), ctx.interpretation)
    return np.where(np.isnan(x), float(default), x)


def _months(nums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each day number's month index (months since 1970-01), day of month (from 1) and the
    fraction of its day; rows without a number give 0s (the caller masks them)."""
    valid = ~np.isnan(nums)
    x = np.where(valid, nums, 0.0)
    day = np.floor(x)
    d = (day - _EPOCH_DAYS).astype(np.int64).astype("datetime64[D]")
    month = d.astype("datetime64[M]")
    dom = (d - month.astype("datetime64[D]")).astype(np.int64) + 1
    return month.astype(np.int64), dom, x - day


def _month_start(index: np.ndarray) -> np.ndarray:
    """The day number of the first day of month `index` (months since 1970-01)."""
    days = index.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    return (days + _EPOCH_DAYS).astype(np.float64)


def _dates(nums: np.ndarray, interp: Interpretation, fmt: str | None = None) -> Values:
    return _dual_of(nums, lambda x: interp.format_date(x, fmt))


def _shift_months(nums: np.ndarray, k: np.ndarray, mode: np.ndarray) -> np.ndarray:
    """AddMonths: k months on; a day past the new month's end falls on its last day (mode
    1: a day from the 28th on keeps its distance from the month's end)."""
    month, dom, frac = _months(nums)
    target = month + np.floor(k).astype(np.int64)
    length_old = _month_start(month + 1) - _month_start(month)
    length_new = _month_start(target + 1) - _month_start(target)
    day = np.minimum(dom, length_new)
    from_end = (mode == 1) & (dom >= 28)
    day = np.where(from_end, np.maximum(length_new - (length_old - dom), 1), day)
    out: np.ndarray = _month_start(target) + day - 1 + frac
    out[np.isnan(nums) | np.isnan(k)] = NAN
    return out


def _add_months(years: bool) -> Function:
    def call(args: list[Values], ctx: CallContext) -> Values:
        nums = numbers_of(args[0].broadcast(ctx.n), ctx.interpretation)
        k = numbers_of(args[1].broadcast(ctx.n), ctx.interpretation)
        mode = _arg(args, 2, ctx, 0) if not years else np.zeros(ctx.n)
        return _dates(_shift_months(nums, k * 12 if years else k, mode), ctx.interpretation)

    return call


def _period_start(kind: str, nums: np.ndarray, shift: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The month index of the start of the month/quarter/year holding each date, `shift`
    periods on; quarters and years begin in month `first` (1..12)."""
    month, _, _ = _months(nums)
    size = {"month": 1, "quarter": 3, "year": 12}[kind]
    base = (np.clip(np.floor(first), 1, 12).astype(np.int64) - 1) % size
    start = (month - base) // size * size + base
    out: np.ndarray = start + np.floor(shift).astype(np.int64) * size
    return out


_SIZES = {"month": 1, "quarter": 3, "year": 12}


def _start_end(kind: str, end: bool) -> Function:
    """MonthStart/End(date [, period]), QuarterStart/End and YearStart/End(date [, period
    [, first_month_of_year]]) (FirstMonthOfYear when the last is not given)."""

    def call(args: list[Values], ctx: CallContext) -> Values:
        interp = ctx.interpretation
        nums = numbers_of(args[0].broadcast(ctx.n), interp)
        first = _arg(args, 2, ctx, interp.first_month_of_year) if kind != "month" else np.ones(1)
        start = _period_start(kind, nums, _arg(args, 1, ctx, 0), first)
        out = _month_start(start + _SIZES[kind]) - _MS if end else _month_start(start)
        out[np.isnan(nums)] = NAN
        return _dates(out, interp)

    return call


def _names(kind: str) -> Function:
    """MonthName(date [, period]): `Mon YYYY`; QuarterName(date [, period [, first month]]):
    `Mon-Mon YYYY` (the quarter's first and last months); the number is the period's start."""

    def call(args: list[Values], ctx: CallContext) -> Values:
        interp = ctx.interpretation
        nums = numbers_of(args[0].broadcast(ctx.n), interp)
        first = _arg(args, 2, ctx, interp.first_month_of_year) if kind != "month" else np.ones(1)
        start = _period_start(kind, nums, _arg(args, 1, ctx, 0), first)
        serial = _month_start(start)
        serial[np.isnan(nums)] = NAN
        names = interp.month_names
        label: dict[float, str] = {}
        for s, m in zip(serial.tolist(), start.tolist(), strict=True):
            if s == s and s not in label:
                year, month = divmod(int(m), 12)
                text = names[month]
                if kind == "quarter":
                    text += "-" + names[(month + 2) % 12]
                label[s] = f"{text} {year + 1970}"
        return _dual_of(serial, lambda x: label[x])

    return call


def _week_start(nums: np.ndarray, shift: np.ndarray, first_day: np.ndarray) -> np.ndarray:
    day = np.floor(np.where(np.isnan(nums), 0.0, nums))
    weekday = (day + 5) % 7  # 1899-12-30 was a Saturday: Monday is 0
    out: np.ndarray = day - (weekday - np.floor(first_day)) % 7 + 7 * np.floor(shift)
    return out


def _week_bound(end: bool) -> Function:
    """WeekStart/WeekEnd(date [, period [, first_week_day]]) (FirstWeekDay by default)."""

    def call(args: list[Values], ctx: CallContext) -> Values:
        interp = ctx.interpretation
        nums = numbers_of(args[0].broadcast(ctx.n), interp)
        start = _week_start(nums, _arg(args, 1, ctx, 0), _arg(args, 2, ctx, interp.first_week_day))
        out = start + 7 - _MS if end else start
        out[np.isnan(nums)] = NAN
        return _dates(out, interp)

    return call


def _week_year(args: list[Values], ctx: CallContext) -> Values:
    """WeekYear(date [, first_week_day [, broken_weeks [, reference_day]]]): the year the
    date's week number (Week) belongs to: with broken weeks the date's year; with unbroken
    ones the year whose first week (the week holding January `reference day`) began on or
    before the date's week, and whose next year's first week did not."""
    interp = ctx.interpretation
    nums = numbers_of(args[0].broadcast(ctx.n), interp)
    first_day = _arg(args, 1, ctx, interp.first_week_day)
    broken = _arg(args, 2, ctx, int(interp.broken_weeks)) != 0
    reference = _arg(args, 3, ctx, interp.reference_day)
    reference = np.where(reference == 0, np.where(broken, 1, 4), reference)
    month, _, _ = _months(nums)
    year = month // 12
    week = _week_start(nums, np.zeros(ctx.n), first_day)

    def first_week(y: np.ndarray) -> np.ndarray:
        ref = _month_start(y * 12) + reference - 1
        return _week_start(ref, np.zeros(len(ref)), first_day)

    later = week >= first_week(year + 1)
    earlier = week < first_week(year)
    out = np.where(broken, year, np.where(later, year + 1, np.where(earlier, year - 1, year)))
    return Values(np.where(np.isnan(nums), NAN, out.astype(np.float64) + 1970))


def _in_period(kind: str, to_date: bool = False) -> Function:
    """InYear/InMonth(timestamp, base_date, period [, first_month_of_year]): whether the
    timestamp lies in the year/month holding base_date, `period` years/months on.
    InYearToDate: in that year up to the end of base_date's day (moved as far)."""

    def call(args: list[Values], ctx: CallContext) -> Values:
        interp = ctx.interpretation
        ts = numbers_of(args[0].broadcast(ctx.n), interp)
        base = numbers_of(args[1].broadcast(ctx.n), interp)
        shift = numbers_of(args[2].broadcast(ctx.n), interp)
        first = _arg(args, 3, ctx, interp.first_month_of_year) if kind != "month" else np.ones(1)
        start_month = _period_start(kind, base, shift, first)
        low = _month_start(start_month)
        high = _month_start(start_month + _SIZES[kind])
        if to_date:
            own = _month_start(_period_start(kind, base, np.zeros(ctx.n), first))
            high = low + (np.floor(np.where(np.isnan(base), 0.0, base)) - own) + 1
        bad = np.isnan(ts) | np.isnan(base) | np.isnan(shift)
        return booleans((ts >= low) & (ts < high) & ~bad)

    return call


def _make_time(args: list[Values], ctx: CallContext) -> Values:
    """MakeTime(hh [, mm [, ss]]): a time (fraction of a day) shown in TimeFormat."""
    h = numbers_of(args[0].broadcast(ctx.n), ctx.interpretation)
    m = _arg(args, 1, ctx, 0) if len(args) > 1 else np.zeros(ctx.n)
    s = _arg(args, 2, ctx, 0) if len(args) > 2 else np.zeros(ctx.n)
    if len(args) > 1:
        m = np.where(np.isnan(numbers_of(args[1].broadcast(ctx.n), ctx.interpretation)), NAN, m)
    if len(args) > 2:
        s = np.where(np.isnan(numbers_of(args[2].broadcast(ctx.n), ctx.interpretation)), NAN, s)
    out = (h * 3600 + m * 60 + s) / 86400.0
    interp = ctx.interpretation
    return _dates(out, interp, interp.time_format)


def _now(args: list[Values], ctx: CallContext) -> Values:
    """Now(): the local date and time, shown in TimestampFormat."""
    t = dt.datetime.now()
    midnight = t.replace(hour=0, minute=0, second=0, microsecond=0)
    serial = (t.date().toordinal() - dt.date(1899, 12, 30).toordinal()) + (
        (t - midnight).total_seconds() / 86400.0
    )
    interp = ctx.interpretation
    return _dates(np.array([serial]), interp, interp.timestamp_format)


def _weekdays_before(day: np.ndarray) -> np.ndarray:
    """Monday-to-Friday days before day number `day` (from a Monday long ago)."""
    d = day - 2  # day 2 (1900-01-01) was a Monday
    weeks, rest = np.floor_divide(d, 7), np.mod(d, 7)
    out: np.ndarray = weeks * 5 + np.minimum(rest, 5)
    return out


def _network_days(args: list[Values], ctx: CallContext) -> Values:
    """NetWorkDays(start, end [, holiday, …]): the Monday-to-Friday days from start to end,
    both included, less the holidays among them (each day once); 0 when end is before start."""
    interp = ctx.interpretation
    start = numbers_of(args[0].broadcast(ctx.n), interp)
    end = numbers_of(args[1].broadcast(ctx.n), interp)
    bad = np.isnan(start) | np.isnan(end)
    a = np.floor(np.where(bad, 0.0, start))
    b = np.floor(np.where(bad, 0.0, end))
    out = np.maximum(_weekdays_before(b + 1) - _weekdays_before(a), 0).astype(np.float64)
    holidays = np.unique(
        np.concatenate(
            [np.floor(numbers_of(h.broadcast(ctx.n), interp)) for h in args[2:]] or [np.empty(0)]
        )
    )
    holidays = holidays[~np.isnan(holidays) & (((holidays + 5) % 7) < 5)]
    for h in holidays.tolist():
        out -= (a <= h) & (h <= b)
    return Values(np.where(bad, NAN, out))


DATE_FUNCTIONS: dict[str, tuple[Function, int, int]] = {
    "ADDMONTHS": (_add_months(False), 2, 3),
    "ADDYEARS": (_add_months(True), 2, 2),
    "MONTHSTART": (_start_end("month", False), 1, 2),
    "MONTHEND": (_start_end("month", True), 1, 2),
    "QUARTERSTART": (_start_end("quarter", False), 1, 3),
    "QUARTEREND": (_start_end("quarter", True), 1, 3),
    "YEARSTART": (_start_end("year", False), 1, 3),
    "YEAREND": (_start_end("year", True), 1, 3),
    "WEEKSTART": (_week_bound(False), 1, 3),
    "WEEKEND": (_week_bound(True), 1, 3),
    "WEEKYEAR": (_week_year, 1, 4),
    "MONTHNAME": (_names("month"), 1, 2),
    "QUARTERNAME": (_names("quarter"), 1, 3),
    "INYEAR": (_in_period("year"), 3, 4),
    "INMONTH": (_in_period("month"), 3, 3),
    "INYEARTODATE": (_in_period("year", to_date=True), 3, 4),
    "MAKETIME": (_make_time, 1, 3),
    "NOW": (_now, 0, 1),
    "NETWORKDAYS": (_network_days, 2, 1000),
}

__all__ = ["DATE_FUNCTIONS"]
