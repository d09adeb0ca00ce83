"""QVD files: real Qlik files load exactly, broken files fail cleanly, and what we write
reads back here and in pyqvd with the same values."""

from __future__ import annotations

import io
import itertools
import math
import random
import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyqvd import QvdTable
from pyqvd.qvd import DualDoubleValue, DualIntegerValue, QvdValue

import assoc
from appfiles import split, with_header
from assoc import App, Dual

REAL_FILES = [
    "qvd4js-small.qvd",
    "qvd4js-medium.qvd",
    "qvd4js-large.qvd",
    "qvd4js-empty.qvd",
    "qvdutils-AAPL.qvd",
    "qvdutils-test_qvd.qvd",
    "qvdutils-test_qvd_null.qvd",
    "qvdfile-tab1.qvd",
    "qvdfile-tab2.qvd",
    "qvdlib-Test.qvd",
]
# pyqvd needs elements the old QlikView 7314 header lacks (Comment, Tags, Lineage).
PYQVD_READABLE = [f for f in REAL_FILES if not f.startswith("qvdfile-")]


def header_of(data: bytes) -> ET.Element:
    """The header parsed by Python's own XML parser, independent of ours."""
    return ET.fromstring(split(data)[0])


def from_pyqvd(value: QvdValue | None) -> Any:
    """A pyqvd value as the engine reports it: int, float, str, Dual or None."""
    if value is None:
        return None
    if isinstance(value, DualIntegerValue | DualDoubleValue):  # dates, money, … too
        return Dual(float(value.calculation_value), value.display_value)
    return value.calculation_value


def pyqvd_columns(data: bytes, rows: int | None = None) -> dict[str, list[Any]]:
    """Every column of a QVD file as pyqvd reads it (its first `rows` rows when given)."""
    table = None
    if rows is not None:  # pyqvd still reads the whole header and every symbol
        table = next(iter(QvdTable.from_stream(io.BytesIO(data), chunk_size=rows)), None)
    if table is None:  # no rows to chunk
        table = QvdTable.from_stream(io.BytesIO(data))
    return {c: [from_pyqvd(row[i]) for row in table.data] for i, c in enumerate(table.columns)}


def columns(app: App, table: str | None = None) -> dict[str, list[Any]]:
    """Every column of one table of an app."""
    t = app.table(table or app.tables[0])
    return {f: t.column(f) for f in t.fields}


def same_values(a: list[Any], b: list[Any]) -> bool:
    """Equal lists: numbers by value, -0.0 equal to 0 (one symbol), Duals by their text too."""
    pairs = zip(a, b, strict=False)
    return len(a) == len(b) and all(
        (x == y and type(x) is type(y) and (not isinstance(x, Dual) or x.text == y.text))
        or _same_number(x, y)
        for x, y in pairs
    )


def _same_number(x: Any, y: Any) -> bool:
    numbers = (int, float)
    return isinstance(x, numbers) and isinstance(y, numbers) and not isinstance(x, bool) and x == y


def record_layout(data: bytes) -> dict[str, dict[str, int]]:
    """BitOffset, BitWidth, Bias and NoOfSymbols of each field, read with Python's parser."""
    root = header_of(data)
    return {
        f.findtext("FieldName"): {
            k: int(f.findtext(k)) for k in ("BitOffset", "BitWidth", "Bias", "NoOfSymbols")
        }
        for f in root.iter("QvdFieldHeader")
    }


def symbol_types(data: bytes, field: str) -> list[int]:
    """The type byte of every symbol of one field, walked here (independent of the engine)."""
    root = header_of(data)
    body = split(data)[1]
    f = next(f for f in root.iter("QvdFieldHeader") if f.findtext("FieldName") == field)
    pos, end = int(f.findtext("Offset")), int(f.findtext("Offset")) + int(f.findtext("Length"))
    types = []
    while pos < end:
        t = body[pos]
        types.append(t)
        pos += 1 + {1: 4, 2: 8, 4: 0, 5: 4, 6: 8}[t]
        if t in (4, 5, 6):
            pos = body.index(b"\0", pos) + 1
    return types


@pytest.fixture(scope="module")
def small_qvd() -> bytes:
    """A small QVD of every symbol type, with NULLs, written by the engine."""
    app = App.from_tables(
        {
            "Small": {
                "I": [1, 2, None, 3, 2, -7],
                "F": [1.5, None, 2.25, 1.5, -0.5, 1e300],
                "S": ["a", "bc", None, "a", "ünï", ""],
                "D": [Dual(1, "one"), Dual(2.5, "two"), None, Dual(1, "one"), Dual(3, "x"), None],
            }
        }
    )
    return app._impl.write_qvd("Small")


# ---------------------------------------------------------------------------------------
# Real Qlik files


@pytest.mark.parametrize("name", REAL_FILES)
def test_real_file_counts_match_its_header(qlik_qvd_dir: Path, name: str) -> None:
    data = (qlik_qvd_dir / name).read_bytes()
    root = header_of(data)
    app = App.from_qvd(data)
    assert app.tables == [root.findtext("TableName")]
    table = app.table(app.tables[0])
    assert table.num_rows == int(root.findtext("NoOfRecords"))
    headers = list(root.iter("QvdFieldHeader"))
    assert table.fields == [f.findtext("FieldName") for f in headers]
    cardinal = {f["name"]: f["cardinal"] for f in app.metadata()["fields"]}
    for f in headers:
        assert cardinal[f.findtext("FieldName")] == int(f.findtext("NoOfSymbols"))


@pytest.mark.parametrize("name", PYQVD_READABLE)
def test_real_file_columns_match_pyqvd(qlik_qvd_dir: Path, name: str) -> None:
    data = (qlik_qvd_dir / name).read_bytes()
    ours = columns(App.from_qvd(data))
    theirs = pyqvd_columns(data)
    assert list(ours) == list(theirs)
    for field in ours:
        assert same_values(ours[field], theirs[field]), field


def test_real_file_spot_values(qlik_qvd_dir: Path) -> None:
    test = columns(App.from_qvd(qlik_qvd_dir / "qvdlib-Test.qvd"))
    assert test == {
        "StringColumn": ["A", "B", None],
        "DualIntColumn": [Dual(1, "A"), Dual(2, "B"), None],
        "DualDoubleColumn": [Dual(1.1, "A"), Dual(2.2, "B"), None],
    }

    # The QlikView 7314 files (their load scripts are in qvdfile-readme.md).
    tab1 = columns(App.from_qvd(qlik_qvd_dir / "qvdfile-tab1.qvd"))
    assert tab1["ID"] == [
        Dual(123.12, "123.12"),
        Dual(124, "124"),
        Dual(-2, "-2"),
        Dual(1, "1"),
        None,
    ]
    assert tab1["NAME"] == ["Pete", "12/31/2018", "Vaysa", "John", "None"]
    assert tab1["ONEVAL"] == [Dual(0, "0")] * 5
    tab2 = columns(App.from_qvd(qlik_qvd_dir / "qvdfile-tab2.qvd"))
    assert tab2["VAL"][16:] == [Dual(7000017, "7000017"), None, Dual(7000019, "7000019")]
    assert tab2["PHONE"][17:] == [None, Dual(-13.4, "-13.4")]
    assert tab2["NAME"][-1] == Dual(-12, "-12")
    assert tab2["SINGLE"] == ["single value"] * 19

    small = App.from_qvd(qlik_qvd_dir / "qvd4js-small.qvd")
    products = columns(small)
    assert products["ProductName"][:2] == ["Adjustable Race", "Bearing Ball"]
    # "NULL" is an ordinary text here, beside numbers and duals in the same field.
    assert products["ListPrice"][0] == "NULL"
    assert "NULL" in small.symbols("Weight")
    assert len(small.symbols("ProductKey")) == 606

    medium = columns(App.from_qvd(qlik_qvd_dir / "qvd4js-medium.qvd"))
    assert medium["CustomerKey"][:3] == [11000, 11001, 11002]
    assert medium["FirstName"][:2] == ["Jon", "Eugene"]
    assert medium["Title"][:2] == [None, None]
    assert sum(v is None for v in medium["Suffix"]) > 18000

    nulls = columns(App.from_qvd(qlik_qvd_dir / "qvdutils-test_qvd_null.qvd"))
    assert nulls["all Null"] == [None] * 12
    assert nulls["some_null"][:4] == [Dual(1.2, "1.2"), Dual(10, "10.0"), Dual(64, "64"), None]

    aapl = columns(App.from_qvd(qlik_qvd_dir / "qvdutils-AAPL.qvd"))
    assert aapl["Date"][0] == Dual(40182, "2010-01-04")

    empty = App.from_qvd(qlik_qvd_dir / "qvd4js-empty.qvd")
    assert empty.table("TestTable").num_rows == 0
    assert empty.table("TestTable").fields == ["Country", "Year", "Sales"]


def fewest_bits(indices: np.ndarray) -> int:
    """The bit width a column needs: every symbol index it uses, plus a code for NULL if any."""
    has_null = bool((indices < 0).any())
    top = int(indices.max(initial=-1))
    max_code = 0 if top < 0 else top + has_null
    return max_code.bit_length()


@pytest.mark.parametrize("name", REAL_FILES)
def test_loaded_columns_use_the_fewest_bits(qlik_qvd_dir: Path, name: str) -> None:
    # Qlik pads some widths (Month: 8 bits for 12 symbols); the engine packs what rows use.
    app = App.from_qvd(qlik_qvd_dir / name)
    table = app.tables[0]
    for field in app.table(table).fields:
        indices = app.table(table).column_indices(field)
        assert app._impl.bit_width(table, field) == fewest_bits(indices), field


def test_bias_without_nulls_and_unused_symbols_pack_tight(small_qvd: bytes) -> None:
    # Field I keeps Bias -2 and 4 symbols, but every row now stores code 2 (symbol 0).
    header = split(small_qvd)[0]
    root = ET.fromstring(header)
    layout = record_layout(small_qvd)["I"]
    records_at = len(header) + 1 + int(root.findtext("Offset"))
    rbs = int(root.findtext("RecordByteSize"))
    data = bytearray(small_qvd)
    mask = (1 << layout["BitWidth"]) - 1
    for row in range(int(root.findtext("NoOfRecords"))):
        at = records_at + row * rbs
        record = int.from_bytes(data[at : at + rbs], "little")
        record = (record & ~(mask << layout["BitOffset"])) | (2 << layout["BitOffset"])
        data[at : at + rbs] = record.to_bytes(rbs, "little")
    app = App.from_qvd(bytes(data))
    assert app.table("Small").column("I") == [1] * 6
    assert app.symbols("I") == [1, 2, 3, -7]  # the file's symbols, used or not
    assert app._impl.bit_width("Small", "I") == 0
    assert app.metadata()["fields"][0]["total_count"] == 6


def test_bit_width_zero_and_unordered_bit_offsets(qlik_qvd_dir: Path) -> None:
    data = (qlik_qvd_dir / "qvd4js-large.qvd").read_bytes()
    layout = record_layout(data)
    assert layout["OrderQuantity"]["BitWidth"] == 0
    assert layout["ProductKey"]["BitOffset"] > layout["CustomerKey"]["BitOffset"]
    sales = columns(App.from_qvd(data))
    assert sales["OrderQuantity"] == [1] * 60398
    assert sales["ProductKey"][:2] == [Dual(310, "310"), Dual(346, "346")]
    assert sales["SalesOrderNumber"][:2] == ["SO43697", "SO43698"]


def test_date_and_timestamp_tags_come_from_the_header(qlik_qvd_dir: Path) -> None:
    def tags(name: str) -> dict[str, list[str]]:
        app = App.from_qvd(qlik_qvd_dir / name)
        return {f["name"]: f["tags"] for f in app.metadata()["fields"] if not f["is_system"]}

    medium = tags("qvd4js-medium.qvd")  # NumberFormat Type DATE
    assert "$date" in medium["BirthDate"]
    assert "$timestamp" in medium["BirthDate"]
    assert "$date" not in medium["CustomerKey"]  # Type INTEGER
    large = tags("qvd4js-large.qvd")  # NumberFormat Type TIMESTAMP
    assert "$timestamp" in large["OrderDate"]
    assert "$date" not in large["OrderDate"]
    aapl = tags("qvdutils-AAPL.qvd")  # Type UNKNOWN, but the field's Tags say $date
    assert "$date" in aapl["Date"]
    assert "$date" not in aapl["Open"]


def test_number_format_tags_survive_our_writer(qlik_qvd_dir: Path) -> None:
    app = App.from_qvd(qlik_qvd_dir / "qvd4js-medium.qvd")
    data = app._impl.write_qvd("Customers")
    birth = next(
        f for f in header_of(data).iter("QvdFieldHeader") if f.findtext("FieldName") == "BirthDate"
    )
    assert birth.findtext("NumberFormat/Type") == "DATE"
    assert [s.text for s in birth.iter("String")] == ["$numeric", "$integer", "$timestamp", "$date"]
    again = App.from_qvd(data)
    tags = {f["name"]: f["tags"] for f in again.metadata()["fields"]}
    assert "$date" in tags["BirthDate"]


@pytest.mark.parametrize("name", REAL_FILES)
def test_real_files_round_trip_through_our_writer(qlik_qvd_dir: Path, name: str) -> None:
    app = App.from_qvd(qlik_qvd_dir / name)
    table = app.tables[0]
    written = app._impl.write_qvd(table)
    again = App.from_qvd(written)
    assert columns(again) == columns(app)
    assert again.tables == [table]
    for field in app.table(table).fields:
        assert again.symbols(field) == app.symbols(field)
    # Qlik's own (padded) bit widths shrink to the fewest bits; never grow.
    ours = record_layout(written)
    if name in PYQVD_READABLE:
        original = record_layout((qlik_qvd_dir / name).read_bytes())
        assert all(ours[f]["BitWidth"] <= max(1, original[f]["BitWidth"]) for f in ours)
    head = 5000
    theirs = pyqvd_columns(written, rows=head)
    for field, values in columns(app).items():
        assert same_values(values[:head], theirs[field]), field


# ---------------------------------------------------------------------------------------
# Broken files


def test_damaged_file_gives_a_clear_error(qlik_qvd_dir: Path) -> None:
    with pytest.raises(assoc.Error, match=r"root element is <Thou>, not <QvdTableHeader>"):
        App.from_qvd(qlik_qvd_dir / "qvd4js-damaged.qvd")


def test_every_truncation_raises_assoc_error(small_qvd: bytes) -> None:
    header_end = small_qvd.index(b"\0")
    for cut in range(len(small_qvd)):
        with pytest.raises(assoc.Error) as info:
            App.from_qvd(small_qvd[:cut])
        message = str(info.value)
        if cut == 0:
            assert "empty" in message
        elif cut <= header_end:
            assert "no NUL byte" in message
        else:
            assert "past the" in message, (cut, message)


def test_truncated_real_file_names_the_problem(qlik_qvd_dir: Path) -> None:
    data = (qlik_qvd_dir / "qvd4js-medium.qvd").read_bytes()
    with pytest.raises(assoc.Error, match=r"records .* end past the .* bytes after the header"):
        App.from_qvd(data[:-1])


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("<BitWidth>3</BitWidth>", "<BitWidth>33</BitWidth>", "BitWidth 33 is more than 32"),
        ("<BitOffset>0</BitOffset>", "<BitOffset>40</BitOffset>", "lie past the RecordByteSize"),
        (
            "<RecordByteSize>2</RecordByteSize>",
            "<RecordByteSize>1</RecordByteSize>",
            "lie past the RecordByteSize",
        ),
        (
            "<NoOfSymbols>4</NoOfSymbols>",
            "<NoOfSymbols>1000000000000</NoOfSymbols>",
            "cannot fit in its Length",
        ),
        (
            "<NoOfSymbols>4</NoOfSymbols>",
            "<NoOfSymbols>5</NoOfSymbols>",
            "symbol 4 runs past the field's Length",
        ),
        (
            "<NoOfSymbols>4</NoOfSymbols>",
            "<NoOfSymbols>3</NoOfSymbols>",
            "bytes of its Length are left",
        ),
        ("<Offset>0</Offset>", "<Offset>99999999</Offset>", "its symbols .* end past the"),
        ("<Length>20</Length>", "<Length>99999999</Length>", "its symbols .* end past the"),
        (
            "<NoOfRecords>6</NoOfRecords>",
            "<NoOfRecords>7</NoOfRecords>",
            "do not fit in the records' Length",
        ),
        (
            "<NoOfRecords>6</NoOfRecords>",
            "<NoOfRecords>9223372036854775807</NoOfRecords>",
            "do not fit in the records' Length",
        ),
        (
            "<RecordByteSize>2</RecordByteSize>",
            "<RecordByteSize>1099511627776</RecordByteSize>",
            "do not fit in the records' Length",
        ),
        (
            "<NoOfRecords>6</NoOfRecords>",
            "<NoOfRecords>99999999999999999999</NoOfRecords>",
            "out of range",
        ),
        (
            "<RecordByteSize>2</RecordByteSize>",
            "<RecordByteSize>0</RecordByteSize>",
            "RecordByteSize is 0",
        ),
        ("<Bias>-2</Bias>", "<Bias>5</Bias>", "Bias> 5 is out of range"),
        ("<BitWidth>3</BitWidth>", "<BitWidth>three</BitWidth>", "'three' is not an integer"),
        ("<BitWidth>3</BitWidth>", "", "has no <BitWidth>"),
        ("<Fields>", "<Fields><Oops/>", "holds a <Oops>"),
        ("<BitOffset>3</BitOffset>", "<BitOffset>2</BitOffset>", "overlap in their record bits"),
        ("<Offset>20</Offset>", "<Offset>19</Offset>", "overlap in their symbol bytes"),
        ("<Compression></Compression>", "<Compression>zlib</Compression>", "not supported"),
        (
            "<TableName>Small</TableName>",
            "<TableName>Small</TableNam>",
            "</TableNam> closes <TableName>",
        ),
        ("<TableName>Small</TableName>", "<TableName>S&nbsp;</TableName>", "unknown entity &nbsp;"),
        ("<TableName>Small</TableName>", "<TableName>S&#0;</TableName>", "bad character reference"),
        ("<TableName>Small</TableName>", "<TableName>S & </TableName>", "starts no reference"),
        ("<TableName>Small</TableName>", "<TableName>S\x01</TableName>", "control character 1"),
        ("<?xml", '<!DOCTYPE x [<!ENTITY a "b">]><?xml', "document type declarations"),
        ("</QvdTableHeader>", "</QvdTableHeader><More/>", "content after the root element"),
        ("</QvdTableHeader>", "", "<QvdTableHeader> is never closed"),
        ("<TableName>", "<TableName" + "<a>" * 40, "expected whitespace|nested deeper"),
        (
            "<TableName>Small",
            "<TableName>" + "<a>" * 40 + "Small" + "</a>" * 40,
            "nested deeper than 32",
        ),
    ],
)
def test_corrupt_header_raises_named_error(
    small_qvd: bytes, old: str, new: str, message: str
) -> None:
    with pytest.raises(assoc.Error, match=message):
        App.from_qvd(with_header(small_qvd, old, new))


def test_missing_nul_and_empty_input() -> None:
    with pytest.raises(assoc.Error, match="empty"):
        App.from_qvd(b"")
    with pytest.raises(assoc.Error, match="no NUL byte"):
        App.from_qvd(b"<?xml version='1.0'?><QvdTableHeader></QvdTableHeader>\r\n")
    with pytest.raises(assoc.Error, match="root element is <html>"):
        App.from_qvd(b"<html></html>\0")
    with pytest.raises(assoc.Error, match="no root element"):
        App.from_qvd(b"just text\0")
    with pytest.raises(assoc.Error, match="lists no fields"):
        App.from_qvd(
            b"<QvdTableHeader><Fields></Fields><RecordByteSize>1</RecordByteSize>"
            b"<NoOfRecords>0</NoOfRecords><Offset>0</Offset><Length>0</Length></QvdTableHeader>\0"
        )


def test_invalid_utf8_in_the_header_is_rejected(small_qvd: bytes) -> None:
    header, body = split(small_qvd)
    broken = header.replace("Small", "Sm\udcffall", 1).encode("utf-8", "surrogateescape")
    with pytest.raises(assoc.Error, match="not valid UTF-8"):
        App.from_qvd(broken + b"\0" + body)


def _field_span(data: bytes, field: str) -> tuple[int, int]:
    """Where a field's symbols start in the file, and how long they are."""
    f = next(f for f in header_of(data).iter("QvdFieldHeader") if f.findtext("FieldName") == field)
    start = data.index(b"\0") + 1 + int(f.findtext("Offset"))
    return start, int(f.findtext("Length"))


def test_corrupt_symbols_raise_named_errors(small_qvd: bytes) -> None:
    start, _ = _field_span(small_qvd, "S")
    assert small_qvd[start : start + 3] == b"\x04a\x00"

    bad_type = bytearray(small_qvd)
    bad_type[start] = 3
    with pytest.raises(assoc.Error, match="field 'S': symbol 0 has the unknown type byte 3"):
        App.from_qvd(bytes(bad_type))

    bad_utf8 = bytearray(small_qvd)
    bad_utf8[start + 1] = 0xFF
    with pytest.raises(assoc.Error, match="field 'S': the text of symbol 0 is not valid UTF-8"):
        App.from_qvd(bytes(bad_utf8))

    overlong = bytearray(small_qvd)  # "a\0" becomes an overlong two-byte '/': not UTF-8
    overlong[start + 1 : start + 3] = b"\xc0\xaf"
    with pytest.raises(assoc.Error, match=r"no terminating NUL|not valid UTF-8"):
        App.from_qvd(bytes(overlong))

    f_start, _ = _field_span(small_qvd, "F")
    assert small_qvd[f_start] == 2
    nan = bytearray(small_qvd)
    nan[f_start + 1 : f_start + 9] = struct.pack("<d", math.nan)
    with pytest.raises(assoc.Error, match="field 'F': symbol 0 is not a finite number"):
        App.from_qvd(bytes(nan))

    # A text whose NUL is missing runs into the next field's bytes: caught at the field's end.
    s_start, s_length = _field_span(small_qvd, "S")
    no_nul = bytearray(small_qvd)
    last_nul = s_start + s_length - 1
    assert no_nul[last_nul] == 0
    no_nul[last_nul] = ord("x")
    with pytest.raises(assoc.Error, match="field 'S': the text of symbol 3 has no terminating NUL"):
        App.from_qvd(bytes(no_nul))


def test_symbol_index_out_of_range_names_field_and_row(small_qvd: bytes) -> None:
    header = split(small_qvd)[0]
    root = ET.fromstring(header)
    layout = record_layout(small_qvd)["I"]
    records_at = len(header) + 1 + int(root.findtext("Offset"))
    rbs = int(root.findtext("RecordByteSize"))
    data = bytearray(small_qvd)
    row = 4
    # Field I: 4 symbols under Bias -2 use codes 0..5; 7 points past them.
    record = int.from_bytes(data[records_at + row * rbs : records_at + (row + 1) * rbs], "little")
    mask = (1 << layout["BitWidth"]) - 1
    record = (record & ~(mask << layout["BitOffset"])) | (7 << layout["BitOffset"])
    data[records_at + row * rbs : records_at + (row + 1) * rbs] = record.to_bytes(rbs, "little")
    with pytest.raises(
        assoc.Error, match="field 'I': row 4 holds symbol index 5, but the field has 4 symbols"
    ):
        App.from_qvd(bytes(data))


def test_random_corruption_never_crashes(small_qvd: bytes) -> None:
    rng = random.Random(20261122)
    loaded = failed = 0
    for _ in range(3000):
        data = bytearray(small_qvd)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            App.from_qvd(bytes(data))
            loaded += 1
        except assoc.Error:
            failed += 1
    # Flips in the records or in symbol values load; flips in the header and symbol layout fail.
    assert loaded > 0
    assert failed > 0


# ---------------------------------------------------------------------------------------
# What we write


def test_header_has_qlik_elements_in_qlik_order(qlik_qvd_dir: Path, small_qvd: bytes) -> None:
    def shape(e: ET.Element, depth: int = 0) -> list[tuple[int, str]]:
        out = [(depth, e.tag)]
        seen: set[str] = set()
        for c in e:
            if c.tag in seen and c.tag in ("QvdFieldHeader", "String", "LineageInfo"):
                continue  # one of each repeated element is enough to compare layouts
            seen.add(c.tag)
            out += shape(c, depth + 1)
        return out

    qlik = header_of((qlik_qvd_dir / "qvdlib-Test.qvd").read_bytes())
    ours = header_of(small_qvd)
    assert shape(ours) == shape(qlik)
    header = split(small_qvd)[0]
    assert header.startswith(
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n <QvdTableHeader>\r\n'
    )
    assert header.endswith(" </QvdTableHeader>\r\n")
    assert "\n" not in header.replace("\r\n", "")
    assert re.search(r"<CreateUtcTime>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d</CreateUtcTime>", header)
    # Indentation as Qlik writes it: every line we share with Qlik's header is indented alike.
    qlik_lines: dict[str, set[str]] = {}
    for line in split((qlik_qvd_dir / "qvdlib-Test.qvd").read_bytes())[0].splitlines():
        qlik_lines.setdefault(line.strip(), set()).add(line)
    shared = [line for line in header.splitlines() if line.strip() in qlik_lines]
    assert len(shared) > 30
    assert all(line in qlik_lines[line.strip()] for line in shared)


def test_symbol_types_and_record_layout() -> None:
    app = App.from_tables(
        {
            "T": {
                "Int": [1, -(2**31), 2**31 - 1, 1],
                "Big": [2**31, 1.5, -0.25, 2**31],
                "Text": ["a", "b", "a", "c"],
                "DualInt": [Dual(1, "one"), Dual(2, "two"), Dual(1, "one"), Dual(3, "three")],
                "DualReal": [Dual(1.5, "x"), Dual(2.5, "y"), Dual(1e10, "z"), Dual(1.5, "x")],
                "Mixed": [1, "a", Dual(2, "b"), 2.5],
                "Nulls": [None, "a", None, "b"],
                "Const": [7, 7, 7, 7],
            }
        }
    )
    data = app._impl.write_qvd("T")
    assert symbol_types(data, "Int") == [1, 1, 1]
    assert symbol_types(data, "Big") == [2, 2, 2]
    assert symbol_types(data, "Text") == [4, 4, 4]
    assert symbol_types(data, "DualInt") == [5, 5, 5]
    assert symbol_types(data, "DualReal") == [6, 6, 6]
    assert symbol_types(data, "Mixed") == [1, 4, 5, 2]
    layout = record_layout(data)
    assert layout["Nulls"] == {
        "BitOffset": layout["Nulls"]["BitOffset"],
        "BitWidth": 2,
        "Bias": -2,
        "NoOfSymbols": 2,
    }
    assert layout["Int"]["Bias"] == 0
    assert layout["Int"]["BitWidth"] == 2  # 3 symbols
    assert layout["Const"]["BitWidth"] == 0
    root = header_of(data)
    total_bits = sum(f["BitWidth"] for f in layout.values())
    assert int(root.findtext("RecordByteSize")) == (total_bits + 7) // 8
    assert int(root.findtext("Length")) == 4 * ((total_bits + 7) // 8)
    # Bit fields follow one another in field order.
    offsets = [(f["BitOffset"], f["BitWidth"]) for f in layout.values() if f["BitWidth"]]
    assert all(a + w == b for (a, w), (b, _) in itertools.pairwise(offsets))
    # NULL is stored as 0, symbols as index + 2.
    body = split(data)[1]
    rbs = int(root.findtext("RecordByteSize"))
    records = body[int(root.findtext("Offset")) :]
    stored = [
        (int.from_bytes(records[r * rbs : (r + 1) * rbs], "little") >> layout["Nulls"]["BitOffset"])
        & 3
        for r in range(4)
    ]
    assert stored == [0, 2, 0, 3]


def test_shared_field_writes_only_the_tables_symbols_in_its_order() -> None:
    app = App.from_tables(
        {
            "A": {"K": [1, 2, 3, 4], "Name": ["w", "x", "y", "z"]},
            "B": {"K": [4, 9, 4, 2], "V": ["p", "q", "r", "s"]},
        }
    )
    assert app.symbols("K") == [1, 2, 3, 4, 9]
    data = app._impl.write_qvd("B")
    assert record_layout(data)["K"]["NoOfSymbols"] == 3
    back = App.from_qvd(data)
    assert back.symbols("K") == [4, 9, 2]
    assert back.table("B").column("K") == [4, 9, 4, 2]
    assert pyqvd_columns(data)["K"] == [4, 9, 4, 2]


def test_names_with_markup_round_trip(tmp_path: Path) -> None:
    name = "A&B <\"x\"> 'y' ☺\r\nz"
    app = App.from_tables({name: {"F<&>": [1, 2], "G\tH": ["a", "b"]}})
    path = tmp_path / "names.qvd"
    app.write_qvd(name, path)
    header = split(path.read_bytes())[0]
    assert "&amp;B &lt;" in header
    assert "&#13;" in header
    back = App.from_qvd(path)
    assert back.tables == [name]
    assert back.table(name).fields == ["F<&>", "G\tH"]
    # Python's XML parser reads the same names.
    assert header_of(path.read_bytes()).findtext("TableName") == name
    assert list(pyqvd_columns(path.read_bytes())) == ["F<&>", "G\tH"]


def test_header_entities_and_character_references(small_qvd: bytes) -> None:
    data = with_header(
        small_qvd,
        "<TableName>Small</TableName>",
        "<TableName a='1' b=\"2\">"
        "&lt;&amp;&gt;&quot;&apos;&#65;&#x263a;<![CDATA[<raw>]]><!-- c -->"
        "</TableName>",
    )
    assert App.from_qvd(data).tables == ["<&>\"'A☺<raw>"]


def test_header_without_a_table_name_is_table1(small_qvd: bytes) -> None:
    data = with_header(small_qvd, "<TableName>Small</TableName>", "<TableName/>")
    assert App.from_qvd(data).tables == ["Table1"]


def test_name_overrides_the_header(small_qvd: bytes) -> None:
    assert App.from_qvd(small_qvd, table="Renamed").tables == ["Renamed"]
    builder = assoc._core.ModelBuilder()
    builder.add_qvd(small_qvd)
    builder.add_qvd(small_qvd, "Other")
    builder.add_qvd(small_qvd)
    # The three share every field, so a synthetic key table follows them.
    assert App(builder.build()).tables[:3] == ["Small", "Other", "Small-1"]


def test_sources_paths_bytes_and_buffers(tmp_path: Path, small_qvd: bytes) -> None:
    path = tmp_path / "small.qvd"
    path.write_bytes(small_qvd)
    expected = columns(App.from_qvd(small_qvd))
    for source in (path, str(path), bytearray(small_qvd), memoryview(small_qvd)):
        assert columns(App.from_qvd(source)) == expected
    empty = tmp_path / "empty.qvd"
    empty.write_bytes(b"")
    with pytest.raises(assoc.Error, match="the file is empty"):
        App.from_qvd(empty)
    with pytest.raises(assoc.Error, match="cannot read"):
        App.from_qvd(tmp_path / "missing.qvd")
    with pytest.raises(assoc.Error, match="Is a directory"):
        App.from_qvd(tmp_path)
    with pytest.raises(TypeError):
        assoc._core.ModelBuilder().add_qvd("not bytes")


@pytest.mark.parametrize("rows", [9_000, 60_000])
def test_files_read_and_files_mapped_load_alike(tmp_path: Path, rows: int) -> None:
    """Small files are read into memory, larger ones mapped (sources._READ_BELOW): a table on
    either side of that size loads as its bytes do."""
    from assoc import sources

    values = {"Id": list(range(rows)), "Amount": [i * 0.25 for i in range(rows)]}
    path = tmp_path / "t.qvd"
    App.from_tables({"T": values}).write_qvd("T", path)
    data = path.read_bytes()
    assert (len(data) < sources._READ_BELOW) == (rows == 9_000)
    with sources.source_bytes(path) as got:
        assert isinstance(got, bytes) == (rows == 9_000)
        assert bytes(got) == data
    assert columns(App.from_qvd(path)) == columns(App.from_qvd(data))
    assert App.from_qvd(path).table("T").column("Amount")[-1] == (rows - 1) * 0.25


def test_texts_with_nul_cannot_be_written() -> None:
    app = App.from_tables({"T": {"S": ["a\0b"]}})
    with pytest.raises(assoc.Error, match="NUL character"):
        app._impl.write_qvd("T")
    with pytest.raises(assoc.Error, match="no table named 'X'"):
        app._impl.write_qvd("X")


def test_control_characters_in_names_cannot_be_written() -> None:
    app = App.from_tables({"T": {"a\x01": [1]}})
    with pytest.raises(assoc.Error, match="control character 1"):
        app._impl.write_qvd("T")


def test_pyqvd_written_files_load(tmp_path: Path) -> None:
    table = QvdTable.from_dict(
        {
            "columns": ["Int", "Real", "Text", "DualInt", "DualReal", "Nulls"],
            "data": [
                [1, 1.5, "a", DualIntegerValue(1, "one"), DualDoubleValue(0.5, "half"), None],
                [2, None, "ü", DualIntegerValue(2, "two"), None, "x"],
                [
                    -(2**31),
                    2.5,
                    None,
                    DualIntegerValue(1, "one"),
                    DualDoubleValue(0.5, "half"),
                    None,
                ],
                [2**31 - 1, -1e-300, "a", None, DualDoubleValue(1e300, "big"), "y"],
            ],
        }
    )
    path = tmp_path / "pyqvd.qvd"
    table.to_qvd(str(path))
    app = App.from_qvd(path)
    assert app.tables == ["UNKNOWN"]  # pyqvd's default table name
    assert columns(app) == {
        "Int": [1, 2, -(2**31), 2**31 - 1],
        "Real": [1.5, None, 2.5, -1e-300],
        "Text": ["a", "ü", None, "a"],
        "DualInt": [Dual(1, "one"), Dual(2, "two"), Dual(1, "one"), None],
        "DualReal": [Dual(0.5, "half"), None, Dual(0.5, "half"), Dual(1e300, "big")],
        "Nulls": [None, "x", None, "y"],
    }
    assert columns(app) == pyqvd_columns(path.read_bytes())


def loaded_on_one_thread_and_all(data: bytes) -> list[App]:
    """The file loaded with one thread, then with every core."""
    apps = []
    try:
        for threads in (1, 0):
            assoc.set_threads(threads)
            apps.append(App.from_qvd(data))
    finally:
        assoc.set_threads(0)
    return apps


def test_large_tables_decode_exactly_across_blocks_and_threads() -> None:
    rng = np.random.default_rng(3)
    n = 70_003  # not a multiple of the block size: the padded tail is used
    # Records longer than 8 bytes (loads kept inside the record) and shorter (loads past it).
    wide = App.from_tables({"Wide": {f"C{i}": rng.integers(0, 2 << (2 * i), n) for i in range(9)}})
    narrow = App.from_tables({"Narrow": {"A": rng.integers(0, 3, n), "B": rng.integers(0, 100, n)}})
    for app, table in ((wide, "Wide"), (narrow, "Narrow")):
        data = app._impl.write_qvd(table)
        record_bytes = int(header_of(data).findtext("RecordByteSize"))
        assert record_bytes > 8 if table == "Wide" else record_bytes < 8
        for back in loaded_on_one_thread_and_all(data):
            for field in app.table(table).fields:
                assert np.array_equal(
                    back.table(table).column_indices(field),
                    app.table(table).column_indices(field),
                ), field
                assert back.symbols(field) == app.symbols(field)


@pytest.mark.parametrize("seed", range(12))
def test_records_of_any_size_decode_exactly(seed: int) -> None:
    # Records of 1 to about 30 bytes (loaded as one word, two words, or field by field), fields
    # in the low word, the high word and across both, with and without NULLs.
    rng = np.random.default_rng(seed)
    n = 5_003
    columns: dict[str, Any] = {}
    for i in range(int(rng.integers(1, 14))):
        values = rng.integers(0, 2 << int(rng.integers(0, 20)), n).astype(object)
        if rng.random() < 0.4:
            values[rng.random(n) < 0.1] = None
        columns[f"C{i}"] = list(values)
    app = App.from_tables({"T": columns})
    data = app._impl.write_qvd("T")
    for back in loaded_on_one_thread_and_all(data):
        for field in columns:
            assert back.table("T").column(field) == app.table("T").column(field), field


def test_many_constant_fields_over_many_rows() -> None:
    # 3,000 fields of BitWidth 0 over 100,000 one-byte records: work and memory stay in
    # proportion to the file, not to fields x rows.
    n_fields, rows = 3000, 100_000
    fields = "".join(
        f"<QvdFieldHeader><FieldName>F{i}</FieldName><BitOffset>0</BitOffset>"
        f"<BitWidth>0</BitWidth><Bias>0</Bias><NoOfSymbols>1</NoOfSymbols>"
        f"<Offset>{5 * i}</Offset><Length>5</Length></QvdFieldHeader>"
        for i in range(n_fields)
    )
    header = (
        f"<QvdTableHeader><TableName>Wide</TableName><Fields>{fields}</Fields>"
        f"<RecordByteSize>1</RecordByteSize><NoOfRecords>{rows}</NoOfRecords>"
        f"<Offset>{5 * n_fields}</Offset><Length>{rows}</Length></QvdTableHeader>"
    )
    symbols = b"".join(b"\x01" + i.to_bytes(4, "little") for i in range(n_fields))
    app = App.from_qvd(header.encode() + b"\0" + symbols + bytes(rows))
    table = app.table("Wide")
    assert table.num_rows == rows
    assert len(table.fields) == n_fields
    assert app.symbols("F2999") == [2999]
    assert set(table.column_indices("F1234").tolist()) == {0}
    assert app.metadata()["tables"][0]["byte_size"] < 50 * n_fields


def test_load_counts_cpu_time() -> None:
    n = 400_000
    rng = np.random.default_rng(5)
    app = App.from_tables({"T": {"F": rng.random(n), "I": np.arange(n)}})
    back = App.from_qvd(app._impl.write_qvd("T"))
    assert back.metadata()["reload_meta"]["cpu_time_spent_ms"] >= 1


# ---------------------------------------------------------------------------------------
# Property: any table survives QVD and back, here and in pyqvd.

texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=8
)
finite = st.floats(allow_nan=False, allow_infinity=False)
values = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63),
    finite,
    texts,
    st.builds(Dual, finite, texts),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(min_value=0, max_value=40).flatmap(
        lambda rows: st.lists(
            st.lists(values, min_size=rows, max_size=rows), min_size=1, max_size=4
        )
    )
)
def test_any_table_round_trips(cols: list[list[Any]]) -> None:
    app = App.from_tables({"T": {f"F{i}": c for i, c in enumerate(cols)}})
    data = app._impl.write_qvd("T")
    back = App.from_qvd(data)
    expected = columns(app)
    assert columns(back) == expected
    for field in expected:
        assert back.symbols(field) == app.symbols(field)
    theirs = pyqvd_columns(data)
    for field, col in expected.items():
        assert same_values(col, theirs[field]), field


@pytest.mark.parametrize(
    ("kind", "values"),
    [
        # all int32 symbols (fixed 5-byte stride), read in parallel chunks
        ("int32", lambda rng, n: rng.permutation(n).astype(np.int64) - n // 2),
        # all float64 symbols (fixed 9-byte stride)
        ("float64", lambda rng, n: rng.permutation(n) + 0.5),
        # float64 with an int32 wherever a value is integral, as Qlik writes them
        ("mixed", lambda rng, n: np.where(rng.random(n) < 0.01, 0.0, 0.25) + rng.permutation(n)),
        # integral values beyond int32: float64 symbols that are integers
        ("big integers", lambda rng, n: (rng.permutation(n) + 1).astype(np.float64) * 2.0**33),
    ],
)
def test_large_number_symbol_sections_read_exactly(kind: str, values: Any) -> None:
    rng = np.random.default_rng(11)
    n = 200_003  # several parallel chunks and a ragged end
    column = values(rng, n)
    app = App.from_tables({"T": {"V": column}})
    data = app._impl.write_qvd("T")
    types = set(symbol_types(data, "V"))
    assert types == {"int32": {1}, "float64": {2}, "mixed": {1, 2}, "big integers": {2}}[kind]
    for back in loaded_on_one_thread_and_all(data):
        assert back.symbols("V") == app.symbols("V")
        assert np.array_equal(
            back.table("T").column_indices("V"), app.table("T").column_indices("V")
        )
    tags = App.from_qvd(data).metadata()["fields"][0]["tags"]
    assert ("$integer" in tags) == (kind in ("int32", "big integers"))


def test_bad_symbol_deep_in_a_large_section_is_named() -> None:
    n = 150_000
    floats = App.from_tables({"T": {"F": np.arange(n) + 0.5}})._impl.write_qvd("T")
    start, _ = _field_span(floats, "F")
    at = 123_457
    nan = bytearray(floats)
    nan[start + 9 * at + 1 : start + 9 * at + 9] = struct.pack("<d", math.inf)
    with pytest.raises(assoc.Error, match=f"field 'F': symbol {at} is not a finite number"):
        App.from_qvd(bytes(nan))

    ints = App.from_tables({"T": {"I": np.arange(n)}})._impl.write_qvd("T")
    start, _ = _field_span(ints, "I")
    bad = bytearray(ints)
    bad[start + 5 * at] = 7
    with pytest.raises(assoc.Error, match=f"field 'I': symbol {at} has the unknown type byte 7"):
        App.from_qvd(bytes(bad))


def test_bad_symbol_deep_in_a_mixed_number_section_is_named() -> None:
    # float64 symbols with an int32 every 100th: read in runs of eight float64 at a time.
    n = 150_000
    values = np.arange(n) + np.where(np.arange(n) % 100 == 0, 0.0, 0.5)
    data = App.from_tables({"T": {"M": values}})._impl.write_qvd("T")
    start, _ = _field_span(data, "M")
    assert set(symbol_types(data, "M")) == {1, 2}
    at = 123_457  # float64 symbols 123,401 to 123,499: deep inside a run
    offset = start + 9 * at - 4 * (at // 100 + 1)  # each int32 before it is 4 bytes shorter
    assert data[offset] == 2
    inf = bytearray(data)
    inf[offset + 1 : offset + 9] = struct.pack("<d", -math.inf)
    with pytest.raises(assoc.Error, match=f"field 'M': symbol {at} is not a finite number"):
        App.from_qvd(bytes(inf))
    bad = bytearray(data)
    bad[offset] = 9
    with pytest.raises(assoc.Error, match=f"field 'M': symbol {at} has the unknown type byte 9"):
        App.from_qvd(bytes(bad))


def test_freed_arrays_are_reused_for_the_next_load() -> None:
    rng = np.random.default_rng(5)
    n = 600_037  # 20-bit indexes, 4-byte symbols (arrays of a MiB and more), a partial last block
    first = App.from_tables({"T": {"A": rng.permutation(n), "B": rng.permutation(n) + 0.5}})
    data = first._impl.write_qvd("T")
    # The same shapes with other values and NULLs: a reused block must not leak old bits.
    other_b: list[Any] = list(rng.permutation(n) + 0.25)
    other_b[::7] = [None] * len(other_b[::7])
    second = App.from_tables({"T": {"A": rng.permutation(n), "B": other_b}})
    other = second._impl.write_qvd("T")
    del first, second
    assoc.set_memory_blocks_kept(256 << 20)
    try:
        loaded = App.from_qvd(data)
        before = assoc.memory_blocks()
        del loaded
        freed = assoc.memory_blocks()
        assert freed["kept_bytes"] >= 3 * n * 4 // 2  # the symbols and indexes wait for reuse
        again = App.from_qvd(other)
        after = assoc.memory_blocks()
        assert after["reused"] > before["reused"]
        assert again.table("T").column("B")[:14] == other_b[:14]
        assert again.table("T").column("B") == other_b
        expected = App.from_tables({"T": {"B": other_b}})
        assert np.array_equal(
            again.table("T").column_indices("B"), expected.table("T").column_indices("B")
        )
        assoc.set_memory_blocks_kept(0)
        released = assoc.memory_blocks()
        assert released["kept_bytes"] == 0
        assert released["kept_limit"] == 0
        assert released["unmapped"] > after["unmapped"] or after["kept_bytes"] == 0
        del again
        assert assoc.memory_blocks()["kept_bytes"] == 0  # nothing is kept with a limit of 0
    finally:
        assoc.set_memory_blocks_kept(256 << 20)


def test_comments_of_fields_and_table_are_kept(small_qvd: bytes, tmp_path: Path) -> None:
    header, body = split(small_qvd)
    # Our writer leaves them empty; a file from elsewhere may carry them.
    start = header.index("<FieldName>S</FieldName>")
    end = header.index("</QvdFieldHeader>", start)
    field_s = header[start:end].replace(
        "<Comment></Comment>", "<Comment>Sales &amp; returns\nper day</Comment>"
    )
    header = header[:start] + field_s + header[end:]
    header = header.replace(
        "<Lineage></Lineage>\r\n   <Comment></Comment>",
        "<Lineage></Lineage>\r\n   <Comment>Daily &lt;sales&gt;</Comment>",
    )
    app = App.from_qvd(header.encode() + b"\0" + body)
    md = app.metadata()
    comments = {f["name"]: f["comment"] for f in md["fields"]}
    assert comments["S"] == "Sales & returns\nper day"
    assert comments["I"] == ""
    assert md["tables"][0]["comment"] == "Daily <sales>"

    out = tmp_path / "again.qvd"
    app.write_qvd("Small", out)
    again = header_of(out.read_bytes())
    field = next(f for f in again.iter("QvdFieldHeader") if f.findtext("FieldName") == "S")
    assert field.findtext("Comment") == "Sales & returns\nper day"
    assert again.findtext("Comment") == "Daily <sales>"
    assert App.from_qvd(out).metadata()["tables"][0]["comment"] == "Daily <sales>"
    # A field in two tables takes the comment of the first table that gives one.
    builder = assoc._core.ModelBuilder()
    builder.add_qvd(small_qvd, "Plain")
    builder.add_qvd(out.read_bytes(), "Commented")
    shared = App(builder.build()).metadata()
    assert {f["name"]: f["comment"] for f in shared["fields"]}["S"] == "Sales & returns\nper day"
    tables = {t["name"]: t["comment"] for t in shared["tables"]}
    assert (tables["Plain"], tables["Commented"]) == ("", "Daily <sales>")


def test_int_duals_of_a_qvd_equal_their_number_and_keep_their_text(tmp_path: Path) -> None:
    app = App.from_tables({"T": {"D": [Dual(40072, "40072"), Dual(2.5, "2,50"), None]}})
    app.write_qvd("T", tmp_path / "t.qvd")
    data = (tmp_path / "t.qvd").read_bytes()
    assert symbol_types(data, "D") == [5, 6]  # int32 + text, float64 + text
    day, price, null = columns(App.from_qvd(data))["D"]
    assert null is None
    assert day == 40072
    assert 40072 == day  # noqa: SIM300 - int.__eq__ defers to the Dual
    assert day != "40072"
    assert type(day.number) is int
    assert day.text == "40072"
    assert repr(day) == "Dual(40072, '40072')"
    assert price == 2.5
    assert type(price.number) is float
    assert price.text == "2,50"
    assert {day, 40072} == {40072}
    assert {40072: "found"}[day] == "found"
