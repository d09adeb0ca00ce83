"""CSV import through the Python API: format rules, numbers, errors, threads, metadata."""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import math
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import assoc
from assoc import App, Dual


def columns(data: bytes, table: str = "Table1") -> dict[str, list[Any]]:
    """The table of a CSV as {field: values}."""
    t = App.from_csv(data, table).table(table)
    return {f: t.column(f) for f in t.fields}


@pytest.fixture
def threads() -> Iterator[None]:
    """Restores the default thread count after a test that changes it."""
    yield
    assoc.set_threads(0)


# ----------------------------------------------------------------------------------------------
# Format


@pytest.mark.parametrize("sep", [",", ";", "\t"])
def test_each_separator_is_sniffed_from_the_header(sep) -> None:
    text = f"a{sep}b{sep}c\n1{sep}x{sep}2.5\n3{sep}y{sep}4\n"
    assert columns(text.encode()) == {"a": [1, 3], "b": ["x", "y"], "c": [2.5, 4]}


def test_separator_is_the_most_frequent_outside_quotes() -> None:
    # The header holds commas only inside quotes, so ';' separates.
    data = b'"x,y";"p,q,r";z\n1;2;3\n'
    assert columns(data) == {"x,y": [1], "p,q,r": [2], "z": [3]}


def test_header_without_separator_is_one_column() -> None:
    assert columns(b"only\nx\ny\n") == {"only": ["x", "y"]}


def test_byte_order_mark_is_skipped() -> None:
    assert columns(b"\xef\xbb\xbfid,name\n1,a\n") == {"id": [1], "name": ["a"]}


def test_quoted_fields_hold_separators_line_ends_and_doubled_quotes() -> None:
    data = b'k,v\n1,"a,b"\n2,"two\nlines"\n3,"say ""hi"""\n4,"crlf\r\ninside"\n5,""""\n'
    assert columns(data) == {
        "k": [1, 2, 3, 4, 5],
        "v": ["a,b", "two\nlines", 'say "hi"', "crlf\r\ninside", '"'],
    }


def test_quoted_header_names() -> None:
    assert columns(b'"first name","say ""x"""\na,b\n') == {"first name": ["a"], 'say "x"': ["b"]}


def test_quote_inside_an_unquoted_field_is_a_character() -> None:
    assert columns(b'h,w\n5\'10",x"y\n') == {"h": ["5'10\""], "w": ['x"y']}


def test_crlf_line_ends_and_missing_final_newline() -> None:
    assert columns(b"a,b\r\n1,x\r\n2,y") == {"a": [1, 2], "b": ["x", "y"]}
    assert columns(b"a,b\r\n1,x\r\n2,y\r\n") == {"a": [1, 2], "b": ["x", "y"]}
    assert columns(b'a,b\n1,"x"') == {"a": [1], "b": ["x"]}


def test_blank_lines_are_skipped() -> None:
    assert columns(b"\na,b\n\n1,x\r\n\r\n2,y\n\n\n") == {"a": [1, 2], "b": ["x", "y"]}


def test_empty_cells_are_null() -> None:
    data = b'a,b,c\n,x,\n1,"",3\n,,\n'
    assert columns(data) == {"a": [None, 1, None], "b": ["x", None, None], "c": [None, 3, None]}
    # A quoted empty field is how a one-column file writes a NULL row.
    assert columns(b'a\nx\n""\ny\n') == {"a": ["x", None, "y"]}


def test_spaces_are_data() -> None:
    assert columns(b"a,b\n 1 ,x \n") == {"a": [" 1 "], "b": ["x "]}


def test_unicode_texts_and_names() -> None:
    data = "Städte,名前\nKöln,東京\nÅre,😀\n".encode()
    assert columns(data) == {"Städte": ["Köln", "Åre"], "名前": ["東京", "😀"]}


def test_header_only_file_has_zero_rows() -> None:
    app = App.from_csv(b"a,b,c\n", "T")
    t = app.table("T")
    assert t.num_rows == 0
    assert t.fields == ["a", "b", "c"]
    assert t.column("a") == []
    assert App.from_csv(b"a;b").table("Table1").num_rows == 0


def test_source_may_be_a_path(tmp_path: Path) -> None:
    path = tmp_path / "orders.csv"
    path.write_bytes(b"id,amount\n1,9.5\n")
    app = App.from_csv(path)
    assert app.tables == ["Table1"]
    assert app.table("Table1").column("amount") == [9.5]
    (tmp_path / "empty.csv").write_bytes(b"")
    with pytest.raises(assoc.Error, match="CSV data is empty"):
        App.from_csv(tmp_path / "empty.csv")
    with pytest.raises(assoc.Error, match="cannot read"):
        App.from_csv(tmp_path / "missing.csv")
    # Any bytes-like source reads the same.
    assert App.from_csv(memoryview(b"a\n1\n")).table("Table1").column("a") == [1]


# ----------------------------------------------------------------------------------------------
# Numbers


def test_numbers_integers_decimals_signs_exponents() -> None:
    data = b"v\n0\n42\n-17\n3.25\n-0.5\n1e3\n2.5E-3\n123456789012345\n0.1\n"
    assert columns(data)["v"] == [
        0,
        42,
        -17,
        3.25,
        -0.5,
        Dual(1000.0, "1e3"),
        Dual(0.0025, "2.5E-3"),
        123456789012345,
        0.1,
    ]


def test_non_canonical_number_text_is_kept_as_a_dual() -> None:
    data = b"v\n007\n1.50\n+3\n-0\n.5\n5.\n0010\n-01.20\n"
    assert columns(data)["v"] == [
        Dual(7.0, "007"),
        Dual(1.5, "1.50"),
        Dual(3.0, "+3"),
        Dual(-0.0, "-0"),
        Dual(0.5, ".5"),
        Dual(5.0, "5."),
        Dual(10.0, "0010"),
        Dual(-1.2, "-01.20"),
    ]


def test_canonical_form_follows_the_shortest_notation() -> None:
    # 0.0001 is written 1e-04 canonically, so the fixed form is kept as a dual; 0.005 is not.
    assert columns(b"v\n0.0001\n0.005\n1e-04\n")["v"] == [
        Dual(0.0001, "0.0001"),
        0.005,
        Dual(0.0001, "0.0001"),
    ]


def test_numbers_are_one_symbol_per_value_first_text_wins() -> None:
    app = App.from_csv(b"v\n1.50\n1.5\n7\n007\n1.500\n")
    assert app.table("Table1").column("v") == [
        Dual(1.5, "1.50"),
        Dual(1.5, "1.50"),
        7,
        7,
        Dual(1.5, "1.50"),
    ]
    assert app.symbols("v") == [Dual(1.5, "1.50"), 7]


def test_things_that_are_not_numbers_are_text() -> None:
    data = b"v\n1,5\n0x10\ninf\nnan\n1e\n--1\n2024-01-31\n12abc\n-\n.\n"
    values = ["1,5", "0x10", "inf", "nan", "1e", "--1", "2024-01-31", "12abc", "-", "."]
    assert columns(data.replace(b"1,5", b'"1,5"'))["v"] == values
    # Out of range for a double: text, not infinity.
    assert columns(b"v\n1e999\n")["v"] == ["1e999"]


def test_one_symbol_per_number_through_every_lookup_path() -> None:
    # Narrow integers, then more fraction digits, then a number far outside the range, then
    # repeats in other spellings: every number stays one symbol, in first-occurrence order.
    rng = random.Random(9)
    texts = [str(rng.randrange(1000)) for _ in range(3000)]
    texts += ["1.5", "0.25", "-3", "1e12", "2.5e-7", "999999999999999"]
    texts += ["7", "7.0", "1.50", "0.250", "1000000000000", "1e3", "1000", "-3.00", "2.5E-7"]
    texts += [str(rng.randrange(-5000, 5000)) for _ in range(3000)]
    app = App.from_csv(("v\n" + "\n".join(texts) + "\n").encode())
    first: dict[float, int] = {}
    for t in texts:
        first.setdefault(float(t), len(first))
    expected = [first[float(t)] for t in texts]
    assert list(app.table("Table1").column_indices("v")) == expected
    numbers = [s.number if isinstance(s, Dual) else s for s in app.symbols("v")]
    assert numbers == list(first)


@pytest.mark.parametrize(
    "texts",
    [
        ["0.25", "123456789012345", "0.25", "123456789012345"],
        ["1.5", "-999999999999999", "7", "-999999999999999", "1.50"],
        ["0.000001", "999999999", "2", "999999999.0"],
    ],
)
def test_a_number_too_wide_for_the_direct_table_is_hashed(texts) -> None:
    # Fewer fraction digits than the column's numbers so far, but too many digits to be
    # keyed at their scale: hashed beside the direct table, still one symbol per number.
    app = App.from_csv(("v\n" + "\n".join(texts) + "\n").encode())
    first: dict[float, int] = {}
    for t in texts:
        first.setdefault(float(t), len(first))
    assert list(app.table("Table1").column_indices("v")) == [first[float(t)] for t in texts]


@pytest.mark.parametrize("late", ["2147483648", "-2147483649", "-0", "0.5", "x", "1e3"])
def test_integers_then_one_other_value_keep_every_value(late) -> None:
    # Int32 integers are held as such until a value that is not one arrives.
    texts = [str(i * 7 - 50) for i in range(2000)] + [late, "12", "-2147483648", "2147483647"]
    app = App.from_csv(("v\n" + "\n".join(texts) + "\n").encode())
    firsts, indices = _first_occurrences(texts)
    assert list(app.table("Table1").column_indices("v")) == indices
    _assert_symbols(app.symbols("v"), firsts)


def test_quoted_numbers_are_numbers() -> None:
    assert columns(b'v\n"12"\n"0.5"\n')["v"] == [12, 0.5]


# ----------------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "CSV data is empty"),
        (b"\xef\xbb\xbf\r\n\n", "CSV data is empty"),
        (b"a,b,a\n1,2,3\n", "CSV line 1: the header names the field 'a' twice"),
        (b"a,,b\n1,2,3\n", "CSV line 1: field 2 of the header has no name"),
        (b'a,""\n1,2\n', "CSV line 1: field 2 of the header has no name"),
        (b"a,b\n1,2\n3,4,5\n", "CSV line 3: more fields than the 2 of the header"),
        (b"a,b,c\n1,2,3\n4,5\n", "CSV line 3: 2 fields, the header has 3"),
        (b'a,b\n"x\ny",2\n1\n', "CSV line 4: 1 field, the header has 2"),
        (
            b'a,b\n1,2\n3,"open\n4,5\n',
            "CSV line 3: a quoted field starts here and its closing quote is missing",
        ),
        (b'a,b\n1,"x"y\n', "CSV line 2: text after the closing quote"),
        (b'"a"b,c\n1,2\n', "CSV line 1: text after the closing quote"),
        (b"a,b\n1,2\n3,\xff\n", "CSV line 3: invalid UTF-8"),
        (b"a,b\n1,\xc3\n", "CSV line 2: invalid UTF-8"),
        (b"a,b\n1,\xed\xa0\x80\n", "CSV line 2: invalid UTF-8"),  # a UTF-16 surrogate
        (b"a,b\n1,\xc0\xaf\n", "CSV line 2: invalid UTF-8"),  # overlong
        (b"a\xfe,b\n1,2\n", "CSV line 1: invalid UTF-8"),
    ],
)
def test_malformed_csv_raises_an_error_naming_the_line(data, message) -> None:
    with pytest.raises(assoc.Error, match=re.escape(message)):
        App.from_csv(data)


def test_truncated_and_garbage_inputs_never_crash() -> None:
    rng = random.Random(3)
    base = b'id,name,v\n1,"a ""b""",2.5\n2,"multi\nline",-3\n3,x,\n'
    for _ in range(400):
        data = bytearray(base[: rng.randrange(len(base) + 1)])
        for _ in range(rng.randrange(3)):
            if data:
                data[rng.randrange(len(data))] = rng.choice(b'",;\n\r\xff\x00a1')
        # Either a table or assoc.Error: never another exception, a crash or a hang.
        with contextlib.suppress(assoc.Error):
            App.from_csv(bytes(data))


# ----------------------------------------------------------------------------------------------
# Threads: the same table from one thread and from several, whatever the chunk boundaries cut


def _random_csv(rng: random.Random, n_rows: int, stray_quotes: bool = False) -> bytes:
    """A CSV with many long quoted fields that hold separators, line ends and doubled quotes."""
    words = [
        "alpha",
        "beta",
        "gam,ma",
        'quo"te',
        "new\nline",
        "crlf\r\nend",
        "ünï",
        "",
        "007",
        "1.50",
    ]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n" if rng.random() < 0.5 else "\n")
    w.writerow(["id", "key", "note", "amount", "code"])
    for i in range(n_rows):
        note = " ".join(rng.choice(words) for _ in range(rng.randrange(0, 30)))
        amount = rng.choice([str(rng.randrange(-500, 500)), f"{rng.random() * 100:.2f}", ""])
        code = rng.choice(words) + str(rng.randrange(300))
        w.writerow([i, rng.randrange(5000), note, amount, code])
    data = out.getvalue()
    if stray_quotes:
        # Unquoted fields with a quote in them flip the quote parity that guides the split.
        data = data.replace(",7,", ",5'7\",", 200)
    return data.encode()


def _snapshot(app: App) -> tuple[Any, ...]:
    t = app.table(app.tables[0])
    return (
        t.num_rows,
        {f: t.column(f) for f in t.fields},
        {f: app.symbols(f) for f in t.fields},
    )


@pytest.mark.parametrize("stray_quotes", [False, True])
def test_one_thread_and_several_threads_read_the_same_table(threads, stray_quotes) -> None:
    data = _random_csv(random.Random(11 + stray_quotes), 24_000, stray_quotes)
    assert len(data) > 2_500_000  # a chunk for each of up to 8 threads
    assoc.set_threads(1)
    one = _snapshot(App.from_csv(data))
    for n in (2, 5, 8):
        assoc.set_threads(n)
        assert _snapshot(App.from_csv(data)) == one, n
    # And all equal what Python's csv module reads.
    text = data.decode()
    reference = list(csv.reader(io.StringIO(text, newline="")))
    assert one[0] == len(reference) - 1
    notes = one[1]["note"]
    for row, got in zip(reference[1:], notes, strict=True):
        assert (row[2] or None) == (got.text if isinstance(got, Dual) else got)


def _first_occurrences(texts: list[str | None]) -> tuple[list[Any], list[int | None]]:
    """Symbols in first-occurrence order (a number's first text) and each row's symbol index."""
    symbols: dict[Any, int] = {}
    firsts: list[str] = []
    indices: list[int | None] = []
    for t in texts:
        if t is None:
            indices.append(None)
            continue
        key: Any = float(t) if _is_number(t) else ("text", t)
        if key not in symbols:
            symbols[key] = len(firsts)
            firsts.append(t)
        indices.append(symbols[key])
    return firsts, indices


def _symbol_expectations(firsts: list[str]) -> list[tuple[float | None, str]]:
    """Each first text as the symbol it must read as: (its number, its text), or (None, the
    text) for a text."""
    return [(float(first) if _is_number(first) else None, first) for first in firsts]


def _assert_expected_symbols(got: list[Any], expected: list[tuple[float | None, str]]) -> None:
    assert len(got) == len(expected)
    for symbol, (number, first) in zip(got, expected, strict=True):
        if number is not None:
            value = symbol.number if isinstance(symbol, Dual) else symbol
            assert value == number
            assert symbol.text == first if isinstance(symbol, Dual) else number == value
        else:
            assert symbol == first


def _assert_symbols(got: list[Any], firsts: list[str]) -> None:
    _assert_expected_symbols(got, _symbol_expectations(firsts))


# Rows of the files the chunked-load tests read: a chunk for each of five threads.
CHUNKED_ROWS = 120_000


@pytest.mark.parametrize("n_threads", [1, 2, 5])
def test_merged_symbols_are_in_first_occurrence_order(threads, n_threads) -> None:
    # Columns that merge each way across chunks: rising ids (disjoint key ranges), integers
    # over many key slices with negative keys, integers too sparse for a direct table,
    # decimals whose chunks have different scales and texts that make duals, texts and
    # numbers too many for one hash partition.
    app = _load_and_check(_merged_columns, n_threads)
    tags = {f["name"]: f["tags"] for f in app.metadata()["fields"]}
    assert tags["id"] == ["$numeric", "$integer"]


def _merged_columns() -> dict[str, list[str | None]]:
    rng = random.Random(21)
    n = CHUNKED_ROWS
    columns_in: dict[str, list[str | None]] = {
        "id": [str(i + 1) for i in range(n)],
        "wide": [str(rng.randrange(-300_000, 300_000)) for _ in range(n)],
        "sparse": [str(rng.randrange(-(2**31), 2**31)) for _ in range(n)],
        # Rising in the first half (chunks apart from all others), then repeats within a range
        # of their own; some duals and NULLs.
        "stamp": [
            "" if i % 1009 == 0 else f"{v}.0" if i % 997 == 0 else str(v)
            for i, v in enumerate(
                i + 1 if i < n // 2 else rng.randrange(n, n + n // 4) for i in range(n)
            )
        ],
        "price": [
            str(rng.randrange(5000)) if i < n // 3 else f"{rng.randrange(500_000) / 100:.2f}"
            for i in range(n)
        ],
        "code": [rng.choice(["007", "7", "7.0", "1.50", "1.5", "x", ""]) for _ in range(n)],
        "text": [f"t{rng.randrange(100_000)}" for _ in range(n)],
        "real": [repr(rng.random() * 1e6) if rng.random() < 0.9 else "" for _ in range(n)],
    }
    return columns_in


@functools.cache
def _chunked_file(
    columns: Callable[[], dict[str, list[str | None]]],
) -> tuple[bytes, dict[str, tuple[list[int], list[tuple[float | None, str]]]]]:
    """The columns `columns()` makes ("" read as NULL) as one CSV, and each column's row
    indexes and symbols as Python's first occurrences give them; made once for every thread
    count that loads it."""
    columns_in = columns()
    for values in columns_in.values():
        for i, v in enumerate(values):
            if v == "":
                values[i] = None
    names = list(columns_in)
    lines = [",".join(names)]
    lines += [",".join(columns_in[c][i] or "" for c in names) for i in range(CHUNKED_ROWS)]
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > 5 * 256 * 1024  # a chunk for each of five threads
    expected = {}
    for c in names:
        firsts, indices = _first_occurrences(columns_in[c])
        expected[c] = ([-1 if i is None else i for i in indices], _symbol_expectations(firsts))
    return data, expected


def _load_and_check(columns: Callable[[], dict[str, list[str | None]]], n_threads: int) -> App:
    """The file of `columns` (_chunked_file) loaded on `n_threads`; each column's row indexes
    and symbols checked against Python's first occurrences."""
    data, expected = _chunked_file(columns)
    assoc.set_threads(n_threads)
    app = App.from_csv(data)
    table = app.table("Table1")
    for c, (indices, symbols) in expected.items():
        assert list(table.column_indices(c)) == indices, c
        _assert_expected_symbols(app.symbols(c), symbols)
    return app


@pytest.mark.parametrize("n_threads", [1, 2, 5])
def test_rising_integer_columns_keep_their_symbols_and_rows(threads, n_threads) -> None:
    # Integers that rise above every key so far are new symbols without a table lookup, and a
    # column whose every row is a new symbol keeps no row array: each way such a run can end
    # (a repeat, a decimal, a text, a NULL, keys too sparse for a direct table, int32's limit,
    # texts that make duals) and runs that overlap across chunks must read as Python does.
    app = _load_and_check(_rising_columns, n_threads)
    n = CHUNKED_ROWS
    half = n // 2
    # A value is found by selection: "twice" holds each of its values on two rows.
    with app.session() as s:
        s.select("twice", [half])
        assert s.possible_rows("Table1") == 2
        assert s.state("limit")["possible"] == [2**31 - 100_000 + half - 1, 2**31 - 100_000 + n - 1]


def _rising_columns() -> dict[str, list[str | None]]:
    n = CHUNKED_ROWS
    half = n // 2
    columns_in: dict[str, list[str | None]] = {
        "twice": [str(i % half + 1) for i in range(n)],  # two runs: chunks overlap
        "repeat": [str(i // 3 + 1) if i == 70_001 else str(i + 1) for i in range(n)],
        "decimal": ["5.5" if i == 70_000 else str(i + 1) for i in range(n)],
        "text": ["x" if i == 80_000 else str(i + 1) for i in range(n)],
        "null": ["" if i % 50_000 == 49_999 else str(i + 1) for i in range(n)],
        "sparse": [str(1000 * i) for i in range(n)],
        "limit": [str(2**31 - 100_000 + i) for i in range(n)],
        "dual": [
            f"{i + 1}.0" if i % 7 == 3 else f"{i + 1:07d}" if i % 11 == 5 else str(i + 1)
            for i in range(n)
        ],
        "negative_zero": ["-0" if i == 0 else str(i) for i in range(n)],
        "first_null": [None if i < 300 else str(i) for i in range(n)],
    }
    return columns_in


def test_first_error_in_file_order_is_reported_whatever_the_threads(threads) -> None:
    lines = ["a,b,c"] + [f'{i},"x\ny",{i % 7}' for i in range(200_000)]
    lines[150_000] = "bad,row"
    lines[190_000] = "1,2,3,4"
    data = "\n".join(lines).encode()
    expected = (
        f"CSV line {150_000 * 2}: 2 fields, the header has 3"  # each row before spans two lines
    )
    for n in (1, 2, 5):
        assoc.set_threads(n)
        with pytest.raises(assoc.Error, match=re.escape(expected)):
            App.from_csv(data)


@pytest.mark.parametrize("quoted", [False, True])
@pytest.mark.parametrize("text", ["xy", "x\u00e9y"])
def test_invalid_utf8_is_found_in_any_chunk_before_a_later_error(threads, quoted, text) -> None:
    lines = ["a,b,c"] + [f"{i},{text},{i % 7}" for i in range(200_000)]
    lines[150_000] = '1,"\udcff",2' if quoted else "1,\udcff,2"
    lines[150_002] = "bad,row"  # the same 256-row block: the earlier error wins
    lines[190_000] = "1,2,3,4"
    data = "\n".join(lines).encode("utf-8", "surrogateescape")
    for n in (1, 2, 5):
        assoc.set_threads(n)
        with pytest.raises(assoc.Error, match=re.escape("CSV line 150001: invalid UTF-8")):
            App.from_csv(data)


def _numbers_csv(seed: int, n_rows: int) -> tuple[bytes, dict[str, list[Any]]]:
    """Columns big enough for the table's arrays (symbols, packed indexes) to take big blocks
    (1 MiB and more): a rising id, a repeating count, a decimal and a code; the CSV and its
    values."""
    rng = random.Random(seed)
    ids = list(range(seed, seed + n_rows))
    counts = [rng.randrange(100_000) for _ in range(n_rows)]
    prices = [rng.randrange(1_000_000) / 100 for _ in range(n_rows)]
    codes = [f"c{rng.randrange(1000)}" for _ in range(n_rows)]
    lines = ["id,count,price,code"]
    lines += [f"{a},{b},{c:.2f},{d}" for a, b, c, d in zip(ids, counts, prices, codes, strict=True)]
    return ("\n".join(lines) + "\n").encode(), {
        "id": ids,
        "count": counts,
        "price": prices,
        "code": codes,
    }


@pytest.mark.parametrize("n_threads", [1, 2])
def test_a_load_into_memory_another_load_freed_reads_its_own_values(threads, n_threads) -> None:
    # The second load takes blocks the first one freed, still holding its values: an array
    # read before it is written would show them (the slot tables by key take fresh pages).
    assoc.set_threads(n_threads)
    limit = assoc.memory_blocks()["kept_limit"]
    assoc.set_memory_blocks_kept(256 << 20)  # what another test left does not matter
    try:
        first, _ = _numbers_csv(1, 400_000)
        App.from_csv(first, "T")
        reused = assoc.memory_blocks()["reused"]
        data, expected = _numbers_csv(2, 400_000)
        got = columns(data, "T")
        assert assoc.memory_blocks()["reused"] > reused
        assert got == expected
    finally:
        assoc.set_memory_blocks_kept(limit)


# ----------------------------------------------------------------------------------------------
# Property: whatever Python's csv module writes reads back to the same values

NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
CELL_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
# Field names hold no control characters (a QVD header, XML, could not hold them).
NAME_CHARS = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters=";,")
cells = st.one_of(
    st.text(CELL_CHARS, max_size=6),
    st.text(alphabet=',;\t"\r\n ab', max_size=6),
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["007", "+3", "1.50", "-0", "1e3", ".5", "5.", "0.0001", "1e999", ""]),
)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[list[str]], str]:
    n_cols = draw(st.integers(1, 4))
    names = draw(
        st.lists(
            st.text(NAME_CHARS, min_size=1, max_size=5),
            min_size=n_cols,
            max_size=n_cols,
            unique=True,
        )
    )
    rows = draw(st.lists(st.lists(cells, min_size=n_cols, max_size=n_cols), max_size=25))
    # With one column nothing in the header shows the separator, so such files use commas.
    sep = draw(st.sampled_from([",", ";", "\t"])) if n_cols > 1 else ","
    return names, rows, sep


def _is_number(text: str) -> bool:
    return bool(NUMBER.fullmatch(text)) and len(text) <= 400 and math.isfinite(float(text))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.booleans(), st.sampled_from(["\r\n", "\n"]), st.booleans())
def test_python_csv_round_trips(table, bom, line_end, final_newline) -> None:
    names, rows, sep = table
    if line_end == "\n":
        # The writer quotes a field for LF but not for a lone CR, whose end-of-line meaning
        # would then be ambiguous: such files are not well formed.
        rows = [[cell.replace("\r", "") for cell in row] for row in rows]
    out = io.StringIO()
    writer = csv.writer(out, delimiter=sep, lineterminator=line_end)
    writer.writerow(names)
    writer.writerows(rows)
    text = out.getvalue()
    if not final_newline:
        text = text[: -len(line_end)]
    data = ("\ufeff" if bom else "") + text
    got = columns(data.encode())
    assert list(got) == names
    for c, name in enumerate(names):
        first_text: dict[float, str] = {}
        for row, value in zip(rows, got[name], strict=True):
            cell = row[c]
            if cell == "":
                assert value is None
            elif _is_number(cell):
                number = float(cell)
                first = first_text.setdefault(
                    number, cell
                )  # one symbol per number: first text wins
                if isinstance(value, Dual):
                    assert value.number == number
                    assert value.text == first
                else:
                    assert isinstance(value, int | float)
                    assert value == number
                    assert float(first) == number
            else:
                assert value == cell


# ----------------------------------------------------------------------------------------------
# Metadata


def test_metadata_of_a_csv_app() -> None:
    data = (
        "id,amount,name,city,mixed,empty\n"
        "1,2.5,a,Köln,x,\n2,3,b,Åre,1,\n3,2.5,a,Köln,,\n,4,c,Köln,2,\n"
    ).encode()
    md = App.from_csv(data, "Orders").metadata()
    fields = {f["name"]: f for f in md["fields"] if not f["is_system"]}
    assert list(fields) == ["id", "amount", "name", "city", "mixed", "empty"]
    assert fields["id"]["tags"] == ["$numeric", "$integer"]
    assert fields["amount"]["tags"] == ["$numeric"]
    assert fields["name"]["tags"] == ["$ascii", "$text"]
    assert fields["city"]["tags"] == ["$text"]
    assert fields["mixed"]["tags"] == ["$ascii"]
    assert fields["empty"]["tags"] == []
    assert {n: f["cardinal"] for n, f in fields.items()} == {
        "id": 3,
        "amount": 3,
        "name": 3,
        "city": 2,
        "mixed": 3,
        "empty": 0,
    }
    assert {n: f["total_count"] for n, f in fields.items()} == {
        "id": 3,
        "amount": 4,
        "name": 4,
        "city": 4,
        "mixed": 3,
        "empty": 0,
    }
    assert all(f["src_tables"] == ["Orders"] for f in fields.values())
    assert [f["is_numeric"] for f in fields.values()] == [True, True, False, False, False, False]
    table = next(t for t in md["tables"] if t["name"] == "Orders")
    assert table["no_of_rows"] == 4
    assert table["no_of_fields"] == 6


def test_csv_tables_link_by_field_name() -> None:
    builder = assoc._core.ModelBuilder()
    builder.add_csv(b"OrderId,CustomerId\n1,c1\n2,c2\n", "Orders")
    builder.add_csv(b"CustomerId;Name\nc2;Bo\nc1;Al\n", "Customers")
    app = App(builder.build())
    assert app.symbols("CustomerId") == ["c1", "c2"]
    key = next(f for f in app.metadata()["fields"] if f["name"] == "CustomerId")
    assert "$key" in key["tags"]
    assert key["src_tables"] == ["Orders", "Customers"]


# ----------------------------------------------------------------------------------------------
# The field splitter classifies 64 bytes at a time: every byte that matters must be read the
# same wherever a 16-, 32- or 64-byte boundary falls


def _reference_texts(data: bytes) -> dict[str, list[str | None]]:
    """What Python's csv module reads (blank lines skipped, empty cells None)."""
    rows = [r for r in csv.reader(io.StringIO(data.decode(), newline="")) if r]
    return {h: [r[i] or None for r in rows[1:]] for i, h in enumerate(rows[0])}


def _texts(data: bytes) -> dict[str, list[str | None]]:
    return {
        f: [v.text if isinstance(v, Dual) else v for v in values]
        for f, values in columns(data).items()
    }


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_fields_read_alike_wherever_a_block_boundary_falls(line_end) -> None:
    rows = [
        ["p", '"q,""\nr"', "s\u00e9t"],
        ['"a""b"', "", "c"],
        ['""', "x'y\"z", "\u20ac" * 9],
        ["w" * 40, '"' + "," * 20 + '"', "v"],
        ["", "", ""],
    ]
    body = line_end.join(",".join(r) for r in rows)
    for pad in range(130):
        data = ("a,b,c" + line_end + "k" + "x" * pad + body + line_end).encode()
        assert _texts(data) == _reference_texts(data), pad
        # A quote closed and followed by text is an error at the line it is on.
        bad = ("a,b,c" + line_end + "k" + "x" * pad + ',"ab"c,d' + line_end).encode()
        with pytest.raises(assoc.Error, match="CSV line 2: text after the closing quote"):
            App.from_csv(bad)
        # A quote opened and never closed, whatever block it stands in.
        with pytest.raises(assoc.Error, match="CSV line 2: a quoted field starts here"):
            App.from_csv(("a,b\n" + "x" * pad + ',"open\n').encode())


@pytest.mark.parametrize("size", [16, 31, 32, 63, 64, 65, 127, 128, 129])
@pytest.mark.parametrize("final_newline", [False, True])
def test_files_of_exactly_one_block_and_around_it(size, final_newline) -> None:
    head = "id,name\n1,x"
    end = "\n" if final_newline else ""
    data = (head + "y" * (size - len(head) - len(end)) + end).encode()
    assert len(data) == size
    assert _texts(data)["name"] == ["x" + "y" * (size - len(head) - len(end))]
    # The same size in many short records: the last one ends with the data.
    lines = "id,name\n"
    while size - len(lines) > 12:
        lines += "abcdefghij"[len(lines) % 10] + ",v\n"
    data = (lines + "q," + "z" * (size - len(lines) - 3) + end).encode()
    if not final_newline:
        data += b"z"
    assert len(data) == size
    assert _texts(data) == _reference_texts(data), data


@pytest.mark.parametrize("shift", range(0, 64, 3))
def test_invalid_utf8_at_the_start_of_a_row_block_is_found(shift) -> None:
    # Rows are read 256 at a time and their bytes checked as UTF-8 when a byte >= 0x80 was seen.
    # The first row of the second block shares its 64 bytes with the last row of the first.
    lines = ["a,b"] + ["r,x"] * 300
    lines[1] = "r," + "x" * (shift + 1)
    lines[257] = "r,\udcff"
    data = "\n".join(lines).encode("utf-8", "surrogateescape")
    with pytest.raises(assoc.Error, match=re.escape("CSV line 258: invalid UTF-8")):
        App.from_csv(data)


def test_chunk_starts_inside_long_quoted_fields_read_like_one_chunk(threads) -> None:
    # Quoted fields of ~100 KB with line ends, separators and doubled quotes: a chunk's nominal
    # start falls inside one of them for any number of threads.
    rng = random.Random(5)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(["id", "note", "tail"])
    for i in range(40):
        note = "".join(rng.choice(["a", ",", "\n", '""', '"', "b\r\n", " "]) for _ in range(30_000))
        w.writerow([f"n{i}", note, f"t{i}"])
    data = out.getvalue().encode()
    assert len(data) > 1_000_000
    expected = _reference_texts(data)
    for n in (1, 2, 3, 5, 8):
        assoc.set_threads(n)
        assert _texts(data) == expected, n


def _cell(app: App, field: str) -> list[Any]:
    return [(v.number, v.text) if isinstance(v, Dual) else v for v in app.table("T").column(field)]


def test_short_numbers_read_alike_in_the_middle_and_at_the_end_of_the_data() -> None:
    # Fields of up to eight digits are read eight bytes at a time where the data goes on for
    # sixteen more; at its very end the byte-by-byte reader takes them. Both must agree.
    rng = random.Random(3)
    fixed = [
        "0",
        "-0",
        "00",
        "007",
        "1.50",
        "1.5",
        "0.5",
        "0.05",
        "0.0001",
        "0.00001",
        "-0.0",
        "12345678",
        "-12345678",
        "99999999",
        "1234567.8",
        "1.2.3",
        "1-2",
        "12a",
        "1;5",
        "10",
        "100.00",
        ".5",
        "5.",
        "-",
        "-.5",
        "+5",
        "1e5",
        "0.1",
        "01.5",
        "-01",
        "0.10",
        "9.99",
        "1 2",
        "1/2",
        "١٢",
        "0x10",
        "3:4",
        "12345.678",
        "-9.9",
        "8.",
        "-8",
    ]
    randoms = []
    for _ in range(400):
        k = rng.randrange(1, 9)
        digits = "".join(rng.choice("0123456789") for _ in range(k))
        if rng.random() < 0.5 and k > 1:
            at = rng.randrange(0, k + 1)
            digits = digits[:at] + rng.choice(".-x/") + digits[at:]
        randoms.append(("-" if rng.random() < 0.3 else "") + digits)
    for text in fixed + randoms:
        middle = App.from_csv(f"a,b\n{text},x\n{'z' * 40},y\n".encode(), "T")
        end = App.from_csv(f"a\n{text}".encode(), "T")
        assert _cell(middle, "a")[0] == _cell(end, "a")[0], text
        assert middle.symbols("a")[0] == end.symbols("a")[0], text


def _spans_csv(fraction: str) -> tuple[bytes, list[Any]]:
    """Three thirds of 40,000 rows, a chunk each at three threads, every line of one length
    (so that each chunk starts within a row of its third): C (even numbers 150,000-159,998,
    repeated), A (even numbers 100,000-179,998: wide, and C's values among them), B (odd numbers
    120,001-129,999, repeated). Sorted by their first number A, B, C: C overlaps A, not B, its
    neighbour. The rows around each third's start hold a value both thirds beside it hold.
    Numbers are v + `fraction` (".25": keys too thin for the direct table, merged by hash).
    Returns the CSV and the column's values."""
    third = 40_000
    base = [150_000 + 2 * (i % 5_000) for i in range(third)]
    base += [100_000 + 2 * i for i in range(third)]
    base += [120_001 + 2 * (i % 5_000) for i in range(third)]
    for r in range(third - 2, third + 3):
        base[r] = 155_000  # in C and in A
    for r in range(2 * third - 2, 2 * third + 3):
        base[r] = 125_000  # in A and within B's span
    texts = [f"{v}{fraction}" for v in base]
    data = ("r,x\n" + "".join(f"{100_000 + r},{t}\n" for r, t in enumerate(texts))).encode()
    return data, [float(t) if fraction else int(t) for t in texts]


@pytest.mark.parametrize("fraction", ["", ".25"])
def test_a_chunk_inside_another_chunks_span_is_merged(threads, fraction: str) -> None:
    """A chunk whose numbers span a range no other chunk's overlaps is merged without a
    look-up; one inside another chunk's range is looked up however the chunks between lie.
    Ints merge by key, numbers with a fraction by hash."""
    data, values = _spans_csv(fraction)
    expected = list(dict.fromkeys(values))
    for n in (1, 2, 3):
        assoc.set_threads(n)
        app = App.from_csv(data, "T")
        assert app.symbols("x") == expected, n
        assert app.table("T").column("x") == values, n
        with app.session() as s:  # C's rows and A's row of one value: one symbol
            s.select("x", [values[0]])
            assert s.possible_rows("T") == values.count(values[0]) > 1


@pytest.mark.parametrize("threads_n", [1, 2])
def test_rising_numbers_then_texts_and_repeats_keep_each_value_once(threads, threads_n) -> None:
    """Numbers that rise, each above every one before, are new without a look-up; texts
    among them, and then numbers that repeat earlier ones, find their symbols all the same."""
    rng = random.Random(9)
    cells: list[Any] = []
    for i in range(60_000):
        cells.append("n/a" if i % 997 == 3 else f"{i * 37}.{rng.randrange(10, 100)}")
    cells += [cells[i] for i in rng.sample(range(60_000), 2_000)]  # earlier ones again
    cells += [f"{60_000 * 37 + i}.5" for i in range(1_000)]  # rising again, above all
    cells.append(cells[5])
    data = ("x\n" + "\n".join(cells) + "\n").encode()
    values = [c if c == "n/a" else float(c) for c in cells]
    assoc.set_threads(threads_n)
    app = App.from_csv(data, "T")
    assert app.table("T").column("x") == values
    assert app.symbols("x") == list(dict.fromkeys(values))


def test_chunks_of_numbers_that_rise_each_keep_their_own(threads) -> None:
    """Decimals that rise all through the file: every chunk's numbers lie apart from the
    others', so no chunk is merged by hash; each value is one symbol, in file order."""
    cells = [f"{i * 37 // 10}.{i % 10}5" for i in range(150_000)]
    data = ("x\n" + "\n".join(cells) + "\n").encode()
    assert len(data) > 3 * 256 * 1024
    values = [float(c) for c in cells]
    for n in (1, 2, 3):
        assoc.set_threads(n)
        app = App.from_csv(data, "T")
        assert app.symbols("x") == values, n
        assert app.table("T").column("x") == values, n
