"""Script functions of texts and conditions: Capitalize, PurgeChar, KeepChar, TextBetween,
Repeat, FindOneOf, SubStringCount, Ord, Chr, Alt, Coalesce, Match, MixMatch, WildMatch,
Pick, Class and Hash128/160/256. Those the chart expressions have too (functions.cpp)
follow the same rules here."""

from __future__ import annotations

import base64
import hashlib
import math
import re
from collections.abc import Callable

import numpy as np

from assoc.script.functions import CallContext, _text, numbers_of
from assoc.script.numbers import plain_text
from assoc.script.values import NAN, Values
from assoc.script.values import concatenate as concatenate_values

Function = Callable[[list[Values], CallContext], Values]


def _count(text: str) -> int | None:
    """A whole-number argument (None when it is not a number)."""
    try:
        x = float(text)
    except ValueError:
        return None
    return math.floor(x) if x == x and abs(x) < 2**53 else None


def _capitalize(s: str) -> str:
    """Each word's first letter upper case, the others lower case (words: runs without
    white space)."""
    return re.sub(r"\S+", lambda m: m.group(0)[:1].upper() + m.group(0)[1:].lower(), s)


def _text_between(s: str, first: str, second: str, n: str = "1") -> str | None:
    """The text between the n-th `first` and the `second` after it; NULL when either is
    missing (or n is past the pairs there are)."""
    k = _count(n)
    if k is None or k < 1 or not first or not second:
        return None
    at = -1
    end = 0
    for _ in range(k):
        at = s.find(first, end)
        if at < 0:
            return None
        stop = s.find(second, at + len(first))
        if stop < 0:
            return None
        end = stop + len(second)
        result = s[at + len(first) : stop]
    return result


def _repeat(s: str, n: str = "1") -> str | None:
    k = _count(n)
    if k is None:
        return None
    if k * len(s) > 100_000_000:  # beyond any sensible text, as in functions.cpp
        return None
    return s * max(k, 0)


def _find_one_of(s: str, chars: str, n: str = "1") -> str:
    """The position (from 1) of the n-th character of `s` that is in `chars`; 0 when none."""
    k = _count(n)
    if k is None or k < 1:
        return "0"
    seen = 0
    for i, ch in enumerate(s):
        if ch in chars:
            seen += 1
            if seen == k:
                return str(i + 1)
    return "0"


def _substring_count(s: str, sub: str) -> str:
    return str(s.count(sub)) if sub else "0"


def _numbers_of_text(fn: Callable[..., str | None]) -> Function:
    """A text function whose result is a number."""

    def call(args: list[Values], ctx: CallContext) -> Values:
        texts = _text(fn)(args, ctx)
        return Values(numbers_of(texts, ctx.interpretation))

    return call


def _ord(args: list[Values], ctx: CallContext) -> Values:
    texts = args[0].broadcast(ctx.n).text_list()
    return Values(np.array([float(ord(t[0])) if t else NAN for t in texts], dtype=np.float64))


def _chr(args: list[Values], ctx: CallContext) -> Values:
    nums = numbers_of(args[0].broadcast(ctx.n), ctx.interpretation)
    out: list[str | None] = []
    for x in nums.tolist():
        ok = x == x and x == math.floor(x) and 0 <= x <= 0x10FFFF and not 0xD800 <= x <= 0xDFFF
        out.append(chr(int(x)) if ok else None)
    return Values.of_texts(out)


def _chosen(args: list[Values], choice: np.ndarray, n: int) -> Values:
    """Per row, the value of argument `choice[row]` (-1: NULL)."""
    parts = [a.broadcast(n) for a in args] + [Values.nulls(n)]
    both = concatenate_values(parts)
    k = np.where(choice < 0, len(args), choice)
    return both.take(k * n + np.arange(n))


def _alt(args: list[Values], ctx: CallContext) -> Values:
    """Alt(a, b, …): the first argument with a number; else the last argument."""
    n = ctx.n
    choice = np.full(n, len(args) - 1, dtype=np.int64)
    for i in reversed(range(len(args) - 1)):
        has = ~np.isnan(numbers_of(args[i].broadcast(n), ctx.interpretation))
        choice[has] = i
    return _chosen(args, choice, n)


def _coalesce(args: list[Values], ctx: CallContext) -> Values:
    """Coalesce(a, b, …): the first argument that is not NULL."""
    n = ctx.n
    choice = np.full(n, -1, dtype=np.int64)
    for i in reversed(range(len(args))):
        choice[~args[i].broadcast(n).is_null()] = i
    return _chosen(args, choice, n)


def _pick(args: list[Values], ctx: CallContext) -> Values:
    """Pick(n, a, b, …): the n-th of the values after n (NULL when there is none)."""
    n = ctx.n
    k = numbers_of(args[0].broadcast(n), ctx.interpretation)
    ok = (k == np.floor(k)) & (k >= 1) & (k <= len(args) - 1)
    choice = np.where(ok, np.nan_to_num(k), 0).astype(np.int64) - 1
    choice[~ok] = -1
    return _chosen(args[1:], choice, n)


def _wild(pattern: str) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body, re.IGNORECASE | re.DOTALL)


def _matcher(mode: str) -> Function:
    """Match (exact), MixMatch (no case), WildMatch (no case, `*` and `?`): the position of
    the first value after the first that matches it, 0 when none does."""

    def call(args: list[Values], ctx: CallContext) -> Values:
        n = ctx.n
        subject = args[0].broadcast(n).text_list()
        out = np.zeros(n, dtype=np.float64)
        for i in reversed(range(1, len(args))):
            candidates = args[i].broadcast(n).text_list()
            for row, (s, c) in enumerate(zip(subject, candidates, strict=True)):
                if s is None or c is None:
                    continue
                if mode == "exact":
                    hit = s == c
                elif mode == "mix":
                    hit = s.casefold() == c.casefold()
                else:
                    hit = _wild(c).fullmatch(s) is not None
                if hit:
                    out[row] = i
        return Values(out)

    return call


def _class(args: list[Values], ctx: CallContext) -> Values:
    """Class(x, width [, label [, offset]]): a dual, the class's lower bound and its text
    `low <= label < high`."""
    n = ctx.n
    interp = ctx.interpretation
    x = numbers_of(args[0].broadcast(n), interp)
    w = numbers_of(args[1].broadcast(n), interp)
    labels = args[2].broadcast(n).text_list() if len(args) > 2 else ["x"] * n
    offset = numbers_of(args[3].broadcast(n), interp) if len(args) > 3 else np.zeros(n)
    with np.errstate(all="ignore"):
        low = np.floor((x - offset) / w) * w + offset
    low[np.isnan(x) | np.isnan(w) | (w <= 0) | np.isnan(offset)] = NAN
    texts: list[str | None] = []
    for lo, width, label in zip(low.tolist(), w.tolist(), labels, strict=True):
        if lo != lo:
            texts.append(None)
        else:
            name = "x" if label is None else label
            texts.append(f"{plain_text(lo)} <= {name} < {plain_text(lo + width)}")
    return Values.of_texts(texts, low)


def _range(kind: str) -> Function:
    """RangeSum (0 without numbers), RangeAvg, RangeMin, RangeMax (NULL without numbers) over
    the arguments' numbers; RangeCount: the arguments that are not NULL."""

    def call(args: list[Values], ctx: CallContext) -> Values:
        n = ctx.n
        if kind == "count":
            counts = np.zeros(n)
            for a in args:
                counts += ~a.broadcast(n).is_null()
            return Values(counts)
        nums = np.stack([numbers_of(a.broadcast(n), ctx.interpretation) for a in args])
        has = ~np.isnan(nums)
        count = has.sum(axis=0)
        with np.errstate(all="ignore"):
            if kind == "sum":
                return Values(np.nansum(nums, axis=0))
            if kind == "avg":
                out = np.nansum(nums, axis=0) / count
            elif kind == "min":
                out = np.min(np.where(has, nums, np.inf), axis=0)
            else:
                out = np.max(np.where(has, nums, -np.inf), axis=0)
        return Values(np.where(count > 0, out, NAN))

    return call


_HASHES = {"HASH128": ("md5", 22), "HASH160": ("sha1", 27), "HASH256": ("sha256", 43)}


def _hash(name: str) -> Function:
    """Hash128/160/256(x, …): the MD5 / SHA-1 / SHA-256 of the arguments' texts (each with
    its length before it, so ('ab', 'c') and ('a', 'bc') differ), as 22 / 27 / 43 URL-safe
    base64 characters. NULL arguments count as empty texts."""
    algorithm, length = _HASHES[name]

    def call(args: list[Values], ctx: CallContext) -> Values:
        cols = [a.broadcast(ctx.n).text_list() for a in args]
        out: list[str | None] = []
        cache: dict[tuple[str | None, ...], str] = {}
        for row in zip(*cols, strict=True):
            got = cache.get(row)
            if got is None:
                h = hashlib.new(algorithm)
                for t in row:
                    data = (t or "").encode("utf-8")
                    h.update(len(data).to_bytes(8, "little") + data)
                got = base64.urlsafe_b64encode(h.digest()).decode("ascii")[:length]
                cache[row] = got
            out.append(got)
        return Values.of_texts(out)

    return call


TEXT_FUNCTIONS: dict[str, tuple[Function, int, int]] = {
    "CAPITALIZE": (_text(_capitalize), 1, 1),
    "PURGECHAR": (_text(lambda s, chars: "".join(c for c in s if c not in chars)), 2, 2),
    "KEEPCHAR": (_text(lambda s, chars: "".join(c for c in s if c in chars)), 2, 2),
    "TEXTBETWEEN": (_text(_text_between), 3, 4),
    "REPEAT": (_text(_repeat), 1, 2),
    "FINDONEOF": (_numbers_of_text(_find_one_of), 2, 3),
    "SUBSTRINGCOUNT": (_numbers_of_text(_substring_count), 2, 2),
    "ORD": (_ord, 1, 1),
    "CHR": (_chr, 1, 1),
    "ALT": (_alt, 1, 1000),
    "COALESCE": (_coalesce, 1, 1000),
    "MATCH": (_matcher("exact"), 2, 1000),
    "MIXMATCH": (_matcher("mix"), 2, 1000),
    "WILDMATCH": (_matcher("wild"), 2, 1000),
    "PICK": (_pick, 2, 1000),
    "CLASS": (_class, 2, 4),
    "RANGESUM": (_range("sum"), 1, 1000),
    "RANGEAVG": (_range("avg"), 1, 1000),
    "RANGEMIN": (_range("min"), 1, 1000),
    "RANGEMAX": (_range("max"), 1, 1000),
    "RANGECOUNT": (_range("count"), 1, 1000),
    **{name: (_hash(name), 1, 1000) for name in _HASHES},
}

__all__ = ["TEXT_FUNCTIONS"]
