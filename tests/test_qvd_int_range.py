"""QVD int fields whose symbols are consecutive integers (ids 0..N-1, as a table of row
numbers stores them) are held as the range alone, with no array of ints. The reader only
takes that form when every symbol is checked to be the next integer; anything else (a gap,
a repeat, a wrap past int32, another type, rows in another order) loads as before. Every
file here must load with the values its writer wrote, and every consumer of the field
(selections, hypercubes, Arrow export, the QVD writer, scripts, linked fields) must see them."""

from __future__ import annotations

import io
import struct
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pyqvd import QvdTable

import assoc
from appfiles import package_bytes, qvd_bytes, split
from assoc import App
from test_qvd import loaded_on_one_thread_and_all as loads  # the range is checked in chunks

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)


def pyqvd_column(data: bytes, field: str) -> list[Any]:
    """One column as pyqvd (an independent reader) reads it."""
    table = QvdTable.from_stream(io.BytesIO(data))
    i = list(table.columns).index(field)
    return [None if row[i] is None else row[i].calculation_value for row in table.data]


def symbol_span(data: bytes, field: str) -> tuple[int, int]:
    """Where a field's symbols lie in the file, and their count."""
    header, _ = split(data)
    for f in ET.fromstring(header).iter("QvdFieldHeader"):
        if f.findtext("FieldName") == field:
            start = len(header) + 1 + int(f.findtext("Offset") or 0)
            return start, int(f.findtext("NoOfSymbols") or 0)
    raise KeyError(field)


def int32_symbols(data: bytes, field: str) -> list[int]:
    """A field's symbols, walked here: each must be an int32 (type byte 1)."""
    start, n = symbol_span(data, field)
    assert all(data[start + 5 * i] == 1 for i in range(n))
    return [struct.unpack_from("<i", data, start + 5 * i + 1)[0] for i in range(n)]


def with_symbol(data: bytes, field: str, i: int, value: int) -> bytes:
    """The file with int32 symbol i of a field set to `value` (records unchanged)."""
    start, _ = symbol_span(data, field)
    out = bytearray(data)
    out[start + 5 * i + 1 : start + 5 * i + 5] = struct.pack("<i", value)
    return bytes(out)


def field_meta(app: App, field: str) -> dict[str, Any]:
    return next(f for f in app.metadata()["fields"] if f["name"] == field)


def assert_loads_as(
    data: bytes, field: str, rows: Sequence[int | None], symbols: Sequence[int]
) -> None:
    """Every load of the file has these rows and symbols; the symbols' bytes are counted:
    none for a range, 4 a symbol for an array of ints."""
    first = symbols[0]
    is_range = len(symbols) > 1 and list(symbols) == list(range(first, first + len(symbols)))
    for app in loads(data):
        assert app.symbols(field) == list(symbols)
        assert app.table(app.tables[0]).column(field) == list(rows)
        meta = field_meta(app, field)
        assert meta["byte_size"] == (0 if is_range else 4 * len(symbols))
        assert "$integer" in meta["tags"]
        assert "$numeric" in meta["tags"]


N = 150_003  # several parallel chunks of the range check and a ragged end


def assoc_file(columns: dict[str, Any], table: str = "T") -> bytes:
    return App.from_tables({table: columns})._impl.write_qvd(table)


@pytest.mark.parametrize("first", [0, 1, -70_000, INT32_MIN, INT32_MAX - N + 1])
def test_identity_range_loads_exactly(first: int) -> None:
    # Ids first, first+1, … on rows 0, 1, …: the benchmark's Id, starting anywhere in int32
    # (negative, at its least value, ending at its largest).
    ids = np.arange(first, first + N, dtype=np.int64)
    data = assoc_file({"Id": ids, "Half": ids % 2})
    assert int32_symbols(data, "Id") == ids.tolist()
    assert_loads_as(data, "Id", ids.tolist(), ids.tolist())


def test_range_in_symbol_order_but_not_in_row_order() -> None:
    # The symbols are 0..n-1 in file order, the rows name them shuffled (and repeated).
    rng = np.random.default_rng(7)
    ids = np.concatenate([np.arange(N), rng.integers(0, N, 1000)])
    rng.shuffle(ids[1:])
    order = list(dict.fromkeys(ids.tolist()))
    data = assoc_file({"Id": ids})
    symbols = int32_symbols(data, "Id")
    assert symbols == order
    assert sorted(symbols) == list(range(N))
    assert symbols != list(range(N))
    assert_loads_as(data, "Id", ids.tolist(), order)
    # Written with the first-seen order sorted: a range whose rows are not the row numbers.
    sorted_ids = App.from_tables({"T": {"Id": np.sort(ids)}})._impl.write_qvd("T")
    assert int32_symbols(sorted_ids, "Id") == list(range(N))
    assert_loads_as(sorted_ids, "Id", np.sort(ids).tolist(), list(range(N)))


@pytest.mark.parametrize("at", [1, 2, 64, 65_536 + 3, N // 2, N - 2, N - 1])
def test_a_symbol_off_the_range_anywhere_is_read_as_stored(at: int) -> None:
    # One symbol raised past the next one (a gap, or a repeat of a later value is avoided):
    # rows still name symbol i on row i, and must get the stored values.
    ids = np.arange(N, dtype=np.int64)
    data = with_symbol(assoc_file({"Id": ids}), "Id", at, N + 10)
    expected = ids.tolist()
    expected[at] = N + 10
    assert int32_symbols(data, "Id") == expected
    assert_loads_as(data, "Id", expected, expected)


def test_a_repeated_symbol_deep_in_a_range_is_merged() -> None:
    # Symbol 100,000 stores 99,999 again: not a range, and one value for the engine.
    ids = np.arange(N, dtype=np.int64)
    data = with_symbol(assoc_file({"Id": ids}), "Id", 100_000, 99_999)
    for app in loads(data):
        column = app.table("T").column("Id")
        assert column[99_999] == column[100_000] == 99_999
        assert len(app.symbols("Id")) == N - 1


def test_a_sequence_that_wraps_past_int32_is_no_range() -> None:
    # int32 symbols ..., MAX-1, MAX, MIN, MIN+1, ...: each the one before plus 1 in 32-bit
    # arithmetic, yet MIN is no successor of MAX.
    first = INT32_MAX - 70_000
    ids = np.arange(first, first + N, dtype=np.int64)
    ids[ids > INT32_MAX] -= 2**32
    data = assoc_file({"Id": ids})
    symbols = int32_symbols(data, "Id")
    assert symbols[70_000] == INT32_MAX
    assert symbols[70_001] == INT32_MIN
    assert_loads_as(data, "Id", ids.tolist(), ids.tolist())


def test_ids_past_int32_are_not_int32_symbols() -> None:
    # Crossing int32's largest value: those ids are written as float64, the field is mixed.
    ids = np.arange(INT32_MAX - 5, INT32_MAX + 5, dtype=np.int64)
    data = assoc_file({"Id": ids})
    for app in loads(data):
        assert app.symbols("Id") == ids.tolist()
        assert app.table("T").column("Id") == ids.tolist()


def test_descending_and_stepped_sequences_are_no_range() -> None:
    for ids in (np.arange(N, 0, -1), np.arange(0, 2 * N, 2), np.arange(N) - (np.arange(N) == 5)):
        data = assoc_file({"Id": ids})
        assert_loads_as(data, "Id", ids.tolist(), list(dict.fromkeys(ids.tolist())))


@pytest.mark.parametrize("at", [2, 64, 65_539, 100_001, 100_003, N - 2])
def test_another_symbol_type_inside_a_range_is_named(at: int) -> None:
    # One type byte made 7 (no type), its value kept: the values alone still run on, so
    # only the type bytes, checked in every lane of every chunk, show the section is bad.
    ids = np.arange(N, dtype=np.int64)
    data = assoc_file({"Id": ids})
    start, _ = symbol_span(data, "Id")
    bad = bytearray(data)
    bad[start + 5 * at] = 7
    for threads in (1, 0):
        try:
            assoc.set_threads(threads)
            with pytest.raises(
                assoc.Error, match=f"field 'Id': symbol {at} has the unknown type byte 7"
            ):
                App.from_qvd(bytes(bad))
        finally:
            assoc.set_threads(0)


def test_pyqvd_files_of_ranges_load_as_pyqvd_reads_them(tmp_path: Path) -> None:
    n = 5_003
    cases: dict[str, list[int | None]] = {
        "identity": list(range(n)),
        "negative": list(range(-2_500, n - 2_500)),
        "shuffled": list(np.random.default_rng(3).permutation(n).tolist()),
        "gap": list(range(100)) + list(range(101, n + 1)),
        "null row": [None if i == 17 else i for i in range(n)],
        "to int32 max": list(range(INT32_MAX - n + 1, INT32_MAX + 1)),
        "from int32 min": list(range(INT32_MIN, INT32_MIN + n)),
    }
    for name, ids in cases.items():
        data = qvd_bytes("T", {"Id": ids, "Category": [f"c{i % 7}" for i in range(n)]})
        assert pyqvd_column(data, "Id") == ids, name
        for app in loads(data):
            assert app.table("T").column("Id") == ids, name
            assert sorted(app.symbols("Id")) == sorted(v for v in ids if v is not None), name


def test_a_range_field_serves_every_consumer(tmp_path: Path) -> None:
    n = 100_000
    ids = np.arange(-10, n - 10, dtype=np.int64)
    category = [f"c{i % 10}" for i in range(n)]
    data = assoc_file({"Id": ids, "Category": category}, "Sales")
    app = App.from_qvd(data)
    assert field_meta(app, "Id")["byte_size"] == 0
    s = app.session()
    # Hypercubes: sums, counts and extremes over the range's numbers, with and without a dimension.
    measures = ["Sum(Id)", "Count(distinct Id)", "Min(Id)", "Max(Id)"]
    [[total, count, lo, hi]] = s.hypercube([], measures).rows
    assert (total, count, lo, hi) == (int(ids.sum()), n, -10, n - 11)
    by_category = {r[0]: r[1] for r in s.hypercube(["Category"], ["Sum(Id)"]).rows}
    assert by_category["c3"] == int(ids[3::10].sum())
    # Selections by value, both ways.
    assert s.select("Id", [-10, 5, n - 11])
    assert sorted(s.state("Category")["possible"]) == ["c0", "c5", "c9"]  # rows 0, 15 and n-1
    s.clear()
    assert s.select("Category", ["c2"])
    assert s.counts("Id")["possible"] == n // 10
    s.clear()
    # Arrow export.
    assert pa.table(s.table("Sales")).column("Id").to_pylist() == ids.tolist()
    assert pa.table(app.table("Sales").to_arrow()).column("Id").to_pylist() == ids.tolist()
    # The QVD writer, read back by pyqvd and by us.
    path = tmp_path / "again.qvd"
    app.write_qvd("Sales", path)
    assert pyqvd_column(path.read_bytes(), "Id") == ids.tolist()
    assert App.from_qvd(path).table("Sales").column("Id") == ids.tolist()


def test_scripts_link_and_concatenate_range_fields(tmp_path: Path) -> None:
    # Two files whose Id fields are ranges that overlap: a script loads one, concatenates the
    # other, and links a third table on Id; the field's symbols grow from the range.
    n = 80_000
    later = np.arange(n // 2, n // 2 + n)
    tags = [f"t{i}" for i in range(11)]
    tag_ids = [*range(-5, 5), 10**6]  # one id past the range: not its next value
    (tmp_path / "a.qvd").write_bytes(assoc_file({"Id": np.arange(n), "Src": ["a"] * n}))
    (tmp_path / "b.qvd").write_bytes(assoc_file({"Id": later, "Src": ["b"] * n}))
    (tmp_path / "c.qvd").write_bytes(assoc_file({"Id": tag_ids, "Tag": tags}))
    app = App.from_script(
        "T: LOAD * FROM [lib://d/a.qvd] (qvd);\n"
        "Concatenate (T) LOAD * FROM [lib://d/b.qvd] (qvd);\n"
        "Tags: LOAD * FROM [lib://d/c.qvd] (qvd);\n",
        folders={"d": tmp_path},
    )
    ids = list(range(n)) + list(range(n // 2, n // 2 + n))
    assert app.table("T").column("Id") == ids
    assert sorted(app.symbols("Id")) == [*range(-5, n // 2 + n), 10**6]
    s = app.session()
    assert s.select("Tag", ["t7"])  # Id 2, in file a only
    assert s.state("Src")["possible"] == ["a"]
    # Id is a key field (in T and Tags): its aggregations take its distinct values.
    [[total, count]] = s.hypercube([], ["Sum(DISTINCT Id)", "Count(DISTINCT Id)"]).rows
    assert (total, count) == (2, 1)
    s.clear()
    [[total, count]] = s.hypercube([], ["Sum(DISTINCT Id)", "Count(DISTINCT Id)"]).rows
    assert (total, count) == (sum(range(-5, n // 2 + n)) + 10**6, n // 2 + n + 6)
    assert s.select("Tag", ["t10"])
    assert s.state("Id")["possible"] == [10**6]


def test_tables_of_a_package_linked_on_a_range_field() -> None:
    # The first table's Id is a range; the second's adds values that do not continue it
    # (one below, one far above, a text), so the field's symbols are merged into numbers.
    n = 5_000
    ids = list(range(n))
    extra: list[Any] = [3, -1, 10**6, "x"]
    app = App.from_package(
        package_bytes(
            {
                "Facts": {"Id": ids, "Half": [i % 2 for i in ids]},
                "Notes": {"Id": extra, "Note": ["three", "minus one", "million", "text"]},
            }
        )
    )
    assert app.table("Facts").column("Id") == ids
    assert app.table("Notes").column("Id") == extra
    assert app.symbols("Id") == [*ids, -1, 10**6, "x"]
    s = app.session()
    assert s.select("Note", ["million", "minus one", "three"])
    assert s.state("Id")["possible"] == [3, -1, 10**6]
    assert s.state("Half")["possible"] == [1]
