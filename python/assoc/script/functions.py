"""Script functions over value vectors (each value is one row or one distinct value)."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from assoc.script.numbers import Interpretation, date_serial, read_plain
from assoc.script.values import NAN, Values, booleans, map_texts


@dataclass
class CallContext:
    """What a function may need beyond its arguments."""

    n: int  # values per vector
    interpretation: Interpretation
    recno: np.ndarray | None = None
    rowno: np.ndarray | None = None
    script: Any = None  # the running script (its tables, maps): ScriptRunner


def numbers_of(v: Values, interp: Interpretation) -> np.ndarray:
    """Each value's number: its number part, else its text read as a number; NaN otherwise."""
    nums = v.nums
    if v.texts is None:
        return nums
    missing = np.isnan(nums)
    if not missing.any():
        return nums
    out = nums.copy()
    for i in np.flatnonzero(missing):
        t = v.texts[i]
        if t is not None:
            r = interp.read(t)
            if r is not None:
                out[i] = r
    return out


def _numeric(fn: Callable[..., np.ndarray]) -> Callable[[list[Values], CallContext], Values]:
    def call(args: list[Values], ctx: CallContext) -> Values:
        with np.errstate(all="ignore"):
            out = fn(*[numbers_of(a.broadcast(ctx.n), ctx.interpretation) for a in args])
        out = np.asarray(out, dtype=np.float64)
        out[~np.isfinite(out)] = NAN
        return Values(out)

    return call


def _text(fn: Callable[..., str | None]) -> Callable[[list[Values], CallContext], Values]:
    return lambda args, ctx: map_texts(fn, *[a.broadcast(ctx.n) for a in args])


def _int_arg(a: str) -> int:
    try:
        return int(float(a))
    except ValueError:
        return 0


def _mid(s: str, start: str, count: str | None = None) -> str:
    b = max(_int_arg(start) - 1, 0)
    return s[b:] if count is None else s[b : b + max(_int_arg(count), 0)]


def _index(s: str, sub: str, occurrence: str = "1") -> str:
    k = _int_arg(occurrence)
    pos = -1
    if k > 0:
        for _ in range(k):
            pos = s.find(sub, pos + 1)
            if pos < 0:
                return "0"
    elif k < 0:
        pos = len(s)
        for _ in range(-k):
            pos = s.rfind(sub, 0, pos)
            if pos < 0:
                return "0"
    else:
        return "0"
    return str(pos + 1)


def subfield_parts(text: str | None, sep: str | None) -> list[str]:
    """The parts of `text` between `sep`s; NULL text reads as empty (Qlik: one empty part)."""
    text = text or ""
    return text.split(sep) if sep else [text]


def _subfield(args: list[Values], ctx: CallContext) -> Values:
    # Outside a LOAD's field list (WHERE, LET) SubField without an index gives the first part;
    # in a LOAD's fields it makes one row per part (the runner splits those rows).
    cols = [a.broadcast(ctx.n).text_list() for a in args]
    out: list[str | None] = []
    for row in zip(*cols, strict=True):
        text, sep = row[0], row[1]
        if sep is None:
            out.append(None)
            continue
        parts = subfield_parts(text, sep)
        if len(row) == 2:
            out.append(parts[0])
            continue
        if row[2] is None:
            out.append(None)
            continue
        k = _int_arg(row[2])
        if 0 < k <= len(parts):
            out.append(parts[k - 1])
        else:
            out.append(parts[k] if 0 < -k <= len(parts) else None)
    return Values.of_texts(out)


def _if(args: list[Values], ctx: CallContext) -> Values:
    if len(args) not in (2, 3):
        raise ValueError("If takes 2 or 3 arguments")
    cond = numbers_of(args[0].broadcast(ctx.n), ctx.interpretation)
    truth = ~np.isnan(cond) & (cond != 0)
    a = args[1].broadcast(ctx.n)
    b = args[2].broadcast(ctx.n) if len(args) == 3 else Values.nulls(ctx.n)
    nums = np.where(truth, a.nums, b.nums)
    if a.texts is None and b.texts is None:
        return Values(nums)
    ta = a.texts if a.texts is not None else np.full(ctx.n, None, dtype=object)
    tb = b.texts if b.texts is not None else np.full(ctx.n, None, dtype=object)
    return Values(nums, np.where(truth, ta, tb))


def _len(args: list[Values], ctx: CallContext) -> Values:
    texts = args[0].broadcast(ctx.n).text_list()
    return Values(np.array([NAN if t is None else float(len(t)) for t in texts], dtype=np.float64))


def _dual_of(nums: np.ndarray, format_one: Callable[[float], str]) -> Values:
    """Duals: each number with its formatted text (NULL stays NULL); each distinct number is
    formatted once."""
    nums = np.asarray(nums, dtype=np.float64)
    if len(nums) <= 16:
        return Values.of_texts([None if x != x else format_one(x) for x in nums.tolist()], nums)
    uniq, inverse = np.unique(nums, return_inverse=True)
    texts = np.empty(len(uniq), dtype=object)
    texts[:] = [None if x != x else format_one(x) for x in uniq.tolist()]
    return Values(nums, texts[inverse.reshape(-1)])


def _format_args(args: list[Values], i: int) -> str | None:
    """A constant format argument (the first value of argument i), or None."""
    if len(args) <= i:
        return None
    t = args[i].text_list()
    return t[0] if t else None


def _num(args: list[Values], ctx: CallContext) -> Values:
    nums = numbers_of(args[0].broadcast(ctx.n), ctx.interpretation)
    fmt = _format_args(args, 1)
    if fmt is None:
        return Values(nums)
    dec, thou = _format_args(args, 2), _format_args(args, 3)
    interp = ctx.interpretation
    return _dual_of(nums, lambda x: interp.format_number(x, fmt, dec, thou))


def _num_hash(args: list[Values], ctx: CallContext) -> Values:
    v = args[0].broadcast(ctx.n)
    fmt = _format_args(args, 1)
    dec = _format_args(args, 2) or ctx.interpretation.decimal
    thou = _format_args(args, 3)
    if thou is None:
        thou = ctx.interpretation.thousand if fmt is None or "," in fmt else ""
    texts = v.text_list()
    nums = np.full(ctx.n, NAN)
    prefix = suffix = ""
    if fmt:
        core = fmt.split(";")[0]
        start = next((i for i, ch in enumerate(core) if ch in "#0"), len(core))
        end = max((i for i, ch in enumerate(core) if ch in "#0"), default=-1) + 1
        prefix, suffix = core[:start].strip(), core[end:].strip()
    for i, t in enumerate(texts):
        if t is None:
            continue
        s = t.strip()
        if prefix and s.startswith(prefix):
            s = s[len(prefix) :].strip()
        if suffix and s.endswith(suffix):
            s = s[: -len(suffix)].strip()
        r = read_plain(s, dec, thou)
        if r is not None:
            nums[i] = r / 100 if suffix == "%" else r
    return Values.of_texts(
        [t if not math.isnan(x) else None for t, x in zip(texts, nums.tolist(), strict=True)], nums
    )


def _text_fn(args: list[Values], ctx: CallContext) -> Values:
    return Values.of_texts(args[0].broadcast(ctx.n).text_list())


def _stepped(rounding: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """Round, Floor, Ceil: x to a multiple of `step` (1) plus `offset` (0), as `rounding` says."""

    def call(
        x: np.ndarray, step: np.ndarray | None = None, offset: np.ndarray | None = None
    ) -> np.ndarray:
        s = 1.0 if step is None else step
        o = 0.0 if offset is None else offset
        return rounding((x - o) / s) * s + o

    return call


def _mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # Qlik's Mod is defined for integers: the non-negative remainder of a by b > 0. A fraction
    # on either side, or a divisor below 1, gives NULL.
    out: np.ndarray = np.mod(a, b)
    out[(b <= 0) | (a != np.floor(a)) | (b != np.floor(b))] = NAN
    return out


def _date_parts(nums: np.ndarray) -> np.ndarray:
    """Day numbers as numpy dates (NaN rows as NaT)."""
    valid = ~np.isnan(nums)
    days = np.where(valid, np.floor(np.where(valid, nums, 0.0)), 0).astype(np.int64) - 25569
    out = days.astype("datetime64[D]")
    out[~valid] = np.datetime64("NaT")
    return out


def _year(args: list[Values], ctx: CallContext) -> Values:
    nums = numbers_of(args[0].broadcast(ctx.n), ctx.interpretation)
    d = _date_parts(nums)
    years = d.astype("datetime64[Y]").astype(np.int64) + 1970
    return Values(np.where(np.isnan(nums), NAN, years.astype(np.float64)))


def _month(args: list[Values], ctx: CallContext) -> Values:
    nums = numbers_of(args[0].broadcast(ctx.n), ctx.interpretation)
    d = _date_parts(nums)
    months = (d.astype("datetime64[M]").astype(np.int64) % 12 + 1).astype(np.float64)
    months = np.where(np.isnan(nums), NAN, months)
    names = ctx.interpretation.month_names
    return _dual_of(months, lambda m: names[int(m) - 1])


def _day(args: list[Values], ctx: CallContext) -> Values:
    nums = numbers_of(args[0].broadcast(ctx.n), ctx.interpretation)
    d = _date_parts(nums)
    days = (d - d.astype("datetime64[M]")).astype(np.int64) + 1
    return Values(np.where(np.isnan(nums), NAN, days.astype(np.float64)))


def _formats(kind: str, interp: Interpretation) -> str:
    """The default format of Date, Time, Timestamp or Interval."""
    return {
        "date": interp.date_format,
        "time": interp.time_format,
        "timestamp": interp.timestamp_format,
        "interval": "h:mm:ss",
    }[kind]


def _date_formatter(kind: str) -> Callable[[list[Values], CallContext], Values]:
    """Date(), Time(), Timestamp(), Interval(): numbers shown in a date/time format."""

    def call(args: list[Values], ctx: CallContext) -> Values:
        nums = numbers_of(args[0].broadcast(ctx.n), ctx.interpretation)
        fmt = _format_args(args, 1) or _formats(kind, ctx.interpretation)
        interp = ctx.interpretation
        if kind == "interval":
            return _dual_of(nums, _interval_text)
        return _dual_of(nums, lambda x: interp.format_date(x, fmt))

    return call


def _interval_text(days: float) -> str:
    total = round(abs(days) * 86400)
    h, rest = divmod(total, 3600)
    return ("-" if days < 0 else "") + f"{h}:{rest // 60:02d}:{rest % 60:02d}"


def _date_reader(kind: str) -> Callable[[list[Values], CallContext], Values]:
    """Date#(), Time#(), Timestamp#(), Interval#(): texts read in a date/time format."""
    return lambda args, ctx: _date_hash(args, ctx, kind)


def _date_hash(args: list[Values], ctx: CallContext, kind: str = "date") -> Values:
    v = args[0].broadcast(ctx.n)
    fmt = _format_args(args, 1) or _formats(kind, ctx.interpretation)
    texts = v.text_list()
    nums = np.array(
        [
            NAN
            if t is None
            else (lambda r: NAN if r is None else r)(ctx.interpretation.read_date(t, fmt))
            for t in texts
        ],
        dtype=np.float64,
    )
    return Values.of_texts(
        [t if x == x else None for t, x in zip(texts, nums.tolist(), strict=True)], nums
    )


def _makedate(args: list[Values], ctx: CallContext) -> Values:
    cols = [numbers_of(a.broadcast(ctx.n), ctx.interpretation) for a in args]
    y = cols[0]
    m = cols[1] if len(cols) > 1 else np.ones(ctx.n)
    d = cols[2] if len(cols) > 2 else np.ones(ctx.n)
    out = np.full(ctx.n, NAN)
    for i in range(ctx.n):
        with contextlib.suppress(ValueError, OverflowError):
            out[i] = date_serial(int(y[i]), int(m[i]), int(d[i]))
    interp = ctx.interpretation
    return _dual_of(out, lambda x: interp.format_date(x))


def _today(args: list[Values], ctx: CallContext) -> Values:
    t = dt.date.today()
    serial = date_serial(t.year, t.month, t.day)
    interp = ctx.interpretation
    return _dual_of(np.array([serial]), lambda x: interp.format_date(x))


def _row_numbers(which: str) -> Callable[[list[Values], CallContext], Values]:
    def call(args: list[Values], ctx: CallContext) -> Values:
        arr = ctx.recno if which == "recno" else ctx.rowno
        if arr is None:
            raise ValueError(f"{which.capitalize()}() is only known while rows are loaded")
        return Values(arr.astype(np.float64))

    return call


def _rand(args: list[Values], ctx: CallContext) -> Values:
    return Values(np.random.default_rng().random(ctx.n))


def _null(args: list[Values], ctx: CallContext) -> Values:
    return Values.nulls(1)


def _isnull(args: list[Values], ctx: CallContext) -> Values:
    return booleans(args[0].broadcast(ctx.n).is_null())


def _replace(s: str, old: str, new: str) -> str:
    return s.replace(old, new) if old else s


# name → (function, fewest arguments, most arguments)
FUNCTIONS: dict[str, tuple[Callable[[list[Values], CallContext], Values], int, int]] = {
    "IF": (_if, 2, 3),
    "RECNO": (_row_numbers("recno"), 0, 0),
    "ROWNO": (_row_numbers("rowno"), 0, 0),
    "RAND": (_rand, 0, 0),
    "NULL": (_null, 0, 0),
    "ISNULL": (_isnull, 1, 1),
    "UPPER": (_text(str.upper), 1, 1),
    "LOWER": (_text(str.lower), 1, 1),
    "TRIM": (_text(lambda s: s.strip(" ")), 1, 1),
    "LTRIM": (_text(lambda s: s.lstrip(" ")), 1, 1),
    "RTRIM": (_text(lambda s: s.rstrip(" ")), 1, 1),
    "LEN": (_len, 1, 1),
    "LEFT": (_text(lambda s, k: s[: max(_int_arg(k), 0)]), 2, 2),
    "RIGHT": (
        _text(lambda s, k: s[len(s) - max(_int_arg(k), 0) :] if _int_arg(k) > 0 else ""),
        2,
        2,
    ),
    "MID": (_text(_mid), 2, 3),
    "INDEX": (lambda a, c: _numeric(lambda x: x)([_text(_index)(a, c)], c), 2, 3),
    "REPLACE": (_text(_replace), 3, 3),
    "SUBFIELD": (_subfield, 2, 3),
    "NUM": (_num, 1, 4),
    "NUM#": (_num_hash, 1, 4),
    "TEXT": (_text_fn, 1, 1),
    "FLOOR": (_numeric(_stepped(np.floor)), 1, 3),
    "CEIL": (_numeric(_stepped(np.ceil)), 1, 3),
    "ROUND": (_numeric(_stepped(lambda q: np.floor(q + 0.5))), 1, 3),
    "MOD": (_numeric(_mod), 2, 2),
    "FABS": (_numeric(np.abs), 1, 1),
    "DATE": (_date_formatter("date"), 1, 2),
    "DATE#": (_date_reader("date"), 1, 2),
    "TIME": (_date_formatter("time"), 1, 2),
    "TIME#": (_date_reader("time"), 1, 2),
    "TIMESTAMP": (_date_formatter("timestamp"), 1, 2),
    "TIMESTAMP#": (_date_reader("timestamp"), 1, 2),
    "INTERVAL": (_date_formatter("interval"), 1, 2),
    "INTERVAL#": (_date_reader("interval"), 1, 2),
    "YEAR": (_year, 1, 1),
    "MONTH": (_month, 1, 1),
    "DAY": (_day, 1, 1),
    "MAKEDATE": (_makedate, 1, 3),
    "TODAY": (_today, 0, 1),
}


def _script(method: str) -> Callable[[list[Values], CallContext], Values]:
    """A function of the script's tables and maps (the runner answers it)."""

    def call(args: list[Values], ctx: CallContext) -> Values:
        if ctx.script is None:
            raise ValueError("only known while a script runs")
        out: Values = getattr(ctx.script, method)(args, ctx)
        return out

    return call


def _week(args: list[Values], ctx: CallContext) -> Values:
    """Week(date [, first_week_day [, broken_weeks [, reference_day]]]), steered by FirstWeekDay,
    BrokenWeeks and ReferenceDay: broken weeks count from the week holding January 1st;
    unbroken ones from the week holding January `reference day` (4 when 0: ISO)."""
    nums = numbers_of(args[0].broadcast(ctx.n), ctx.interpretation)
    interp = ctx.interpretation

    def setting(i: int, default: int) -> int:
        if len(args) <= i:
            return default
        v = numbers_of(args[i], interp)[0]
        return default if v != v else int(v)

    first_day = setting(1, interp.first_week_day)  # 0 Monday … 6 Sunday
    broken = setting(2, int(interp.broken_weeks)) != 0
    reference = setting(3, interp.reference_day) or (1 if broken else 4)
    valid = ~np.isnan(nums)
    day = np.floor(np.where(valid, nums, 0.0)).astype(np.int64)
    # Day numbers: 1899-12-30 was a Saturday (weekday 5 with Monday 0).
    weekday = (day + 5) % 7
    week_start = day - (weekday - first_day) % 7
    year = _date_parts(np.where(valid, nums, 0.0)).astype("datetime64[Y]").astype(np.int64)
    year = year + 1970

    def first_week(y: np.ndarray) -> np.ndarray:
        jan1 = (y - 1970).astype("datetime64[Y]").astype("datetime64[D]").astype(np.int64) + 25569
        ref = jan1 + reference - 1
        return ref - ((ref + 5) % 7 - first_day) % 7

    if broken:
        start = first_week(year)
    else:
        start = first_week(year)
        nxt = first_week(year + 1)
        before = first_week(year - 1)
        start = np.where(week_start >= nxt, nxt, np.where(week_start < start, before, start))
    week = (week_start - start) // 7 + 1
    return Values(np.where(valid, week.astype(np.float64), NAN))


def _weekday(args: list[Values], ctx: CallContext) -> Values:
    """WeekDay(date [, first_week_day]): a dual, 0 for the first day of the week and the day's
    name from DayNames."""
    nums = numbers_of(args[0].broadcast(ctx.n), ctx.interpretation)
    first_day = ctx.interpretation.first_week_day
    if len(args) > 1:
        v = numbers_of(args[1], ctx.interpretation)[0]
        first_day = first_day if v != v else int(v)
    valid = ~np.isnan(nums)
    weekday = (np.floor(np.where(valid, nums, 0.0)).astype(np.int64) + 5) % 7
    pos = np.where(valid, ((weekday - first_day) % 7).astype(np.float64), NAN)
    names = ctx.interpretation.day_names
    return _dual_of(pos, lambda x: names[(int(x) + first_day) % 7])


FUNCTIONS.update(
    {
        "WEEK": (_week, 1, 4),
        "WEEKDAY": (_weekday, 1, 2),
        "APPLYMAP": (_script("apply_map"), 2, 3),
        "EXISTS": (_script("exists"), 1, 2),
        "PEEK": (_script("peek"), 1, 3),
        "FIELDVALUE": (_script("field_value"), 2, 2),
        "FIELDVALUECOUNT": (_script("field_value_count"), 1, 1),
        "NOOFROWS": (_script("no_of_rows"), 1, 1),
        "NOOFFIELDS": (_script("no_of_fields"), 1, 1),
        "FIELDNAME": (_script("field_name"), 2, 2),
        "TABLENAME": (_script("table_name"), 1, 1),
        "NOOFTABLES": (_script("no_of_tables"), 0, 0),
        "AUTONUMBER": (_script("auto_number"), 1, 2),
    }
)

# Functions whose value differs from row to row even for equal arguments (AutoNumber numbers
# values in the order of their rows).
ROW_FUNCTIONS = frozenset({"RECNO", "ROWNO", "RAND", "AUTONUMBER"})

__all__ = ["FUNCTIONS", "ROW_FUNCTIONS", "CallContext", "numbers_of", "subfield_parts"]
