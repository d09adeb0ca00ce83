"""QVD files whose symbol table stores one value twice (written by other tools, or hostile):
the engine keeps one symbol for the value, so selections, counts, list values, hypercube
groups, Arrow dictionaries, STORE and the HTTP import all see one value."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from starlette.testclient import TestClient

from appfiles import split
from assoc import App, Dual
from assoc.server import create_app
from assoc.server.settings import Settings


def int32(v: int) -> bytes:
    """An int32 symbol."""
    return b"\x01" + struct.pack("<i", v)


def float64(v: float) -> bytes:
    """A float64 symbol."""
    return b"\x02" + struct.pack("<d", v)


def text(s: str) -> bytes:
    """A text symbol."""
    return b"\x04" + s.encode() + b"\0"


def dual_int(v: int, s: str) -> bytes:
    """An int32 symbol with a text."""
    return b"\x05" + struct.pack("<i", v) + s.encode() + b"\0"


def dual_float(v: float, s: str) -> bytes:
    """A float64 symbol with a text."""
    return b"\x06" + struct.pack("<d", v) + s.encode() + b"\0"


def raw_qvd(table: str, fields: dict[str, tuple[Sequence[bytes], Sequence[int | None]]]) -> bytes:
    """A QVD file laid out by hand: per field its symbols' bytes and each row's symbol index
    (None for NULL, stored with Bias -2), so that a symbol table can repeat a value."""
    rows = len(next(iter(fields.values()))[1])
    headers, symbol_bytes, layout = [], b"", []
    bit = 0
    for name, (symbols, indexes) in fields.items():
        bias = -2 if any(i is None for i in indexes) else 0
        stored = [0 if i is None else i - bias for i in indexes]
        width = max(max(stored).bit_length(), 1)
        layout.append((bit, stored))
        headers.append(
            f"<QvdFieldHeader><FieldName>{name}</FieldName><BitOffset>{bit}</BitOffset>"
            f"<BitWidth>{width}</BitWidth><Bias>{bias}</Bias>"
            f"<NoOfSymbols>{len(symbols)}</NoOfSymbols><Offset>{len(symbol_bytes)}</Offset>"
            f"<Length>{sum(len(s) for s in symbols)}</Length></QvdFieldHeader>"
        )
        symbol_bytes += b"".join(symbols)
        bit += width
    record_bytes = max((bit + 7) // 8, 1)
    records = b""
    for r in range(rows):
        word = sum(stored[r] << offset for offset, stored in layout)
        records += word.to_bytes(record_bytes, "little")
    header = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n<QvdTableHeader>'
        f"<TableName>{table}</TableName><Fields>{''.join(headers)}</Fields>"
        f"<RecordByteSize>{record_bytes}</RecordByteSize><NoOfRecords>{rows}</NoOfRecords>"
        f"<Offset>{len(symbol_bytes)}</Offset><Length>{len(records)}</Length></QvdTableHeader>\r\n"
    )
    return header.encode() + b"\0" + symbol_bytes + records


# Each case: the field's symbols (one value stored twice), the rows' symbol indexes, the value
# that is stored twice as the engine reports it, and the field's distinct values in load order.
CASES: dict[str, tuple[list[bytes], list[int | None], Any, list[Any]]] = {
    "int-and-float": (
        [int32(1), int32(2), float64(1.0), int32(3)],
        [0, 1, 2, 3, 2, 0, None],
        1,
        [1, 2, 3],
    ),
    "float-twice": (
        [float64(2.5), float64(0.25), float64(2.5)],
        [0, 1, 2, 2, 0, 1, None],
        2.5,
        [2.5, 0.25],
    ),
    "zero-and-minus-zero": (
        [float64(0.5), float64(0.0), float64(-0.0)],
        [0, 1, 2, 2, 1, 0, 2],
        0,
        [0.5, 0],
    ),
    "text-twice": (
        [text("b"), text("a"), text("c"), text("a")],
        [0, 1, 2, 3, 3, None, 1],
        "a",
        ["b", "a", "c"],
    ),
    "dual-twice": (
        [dual_int(1, "Jan"), dual_int(2, "Feb"), dual_float(1.0, "January")],
        [0, 1, 2, 2, None, 0, 1],
        Dual(1, "Jan"),
        [Dual(1, "Jan"), Dual(2, "Feb")],
    ),
    "empty-text-twice": (
        [text(""), text("x"), text("")],
        [0, 1, 2, None, 2, 0, 1],
        "",
        ["", "x"],
    ),
}


def case_qvd(case: str) -> bytes:
    """The case's field V beside a row number R (0, 1, 2, …)."""
    symbols, indexes, _, _ = CASES[case]
    rows = len(indexes)
    return raw_qvd(
        "T",
        {
            "R": ([int32(r) for r in range(rows)], list(range(rows))),
            "V": (symbols, indexes),
        },
    )


def rows_of(case: str, value: Any) -> list[int]:
    """The row numbers whose V is the value: rows of every file symbol that is the value."""
    symbols, indexes, _, _ = CASES[case]
    wanted = [i for i in range(len(symbols)) if decoded(case, i) == value]
    return [r for r, i in enumerate(indexes) if i in wanted]


def decoded(case: str, symbol: int) -> Any:
    """File symbol `symbol` of the case as a value, with the engine's equality (numbers first)."""
    raw = CASES[case][0][symbol]
    kind = raw[0]
    if kind == 1:
        return struct.unpack("<i", raw[1:5])[0]
    if kind in (2, 6):
        return struct.unpack("<d", raw[1:9])[0]
    if kind == 5:
        return struct.unpack("<i", raw[1:5])[0]
    return raw[1:-1].decode()


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> str:
    """One kind of repeated symbol."""
    return request.param  # type: ignore[no-any-return]


def test_the_field_has_each_value_once(case: str) -> None:
    _, indexes, _, values = CASES[case]
    app = App.from_qvd(case_qvd(case))
    assert app.symbols("V") == values
    field = next(f for f in app.metadata()["fields"] if f["name"] == "V")
    assert field["cardinal"] == len(values)
    assert field["total_count"] == sum(i is not None for i in indexes)
    with app.session() as s:
        assert s.counts("V")["possible"] == len(values)
        assert s.state("V")["possible"] == values
        # $Field's system table counts the field's distinct values as the metadata does.
        assert s.evaluate("Count(DISTINCT V)") == len(values)


def test_selecting_the_value_reaches_the_rows_of_both_symbols(case: str) -> None:
    _, _, twice, _ = CASES[case]
    app = App.from_qvd(case_qvd(case))
    expected = rows_of(case, twice)
    with app.session() as s:
        assert s.select("V", [twice])
        assert sorted(s.state("R")["possible"]) == expected
        assert s.possible_rows("T") == len(expected)


def test_a_hypercube_groups_the_value_once(case: str) -> None:
    _, _, twice, values = CASES[case]
    app = App.from_qvd(case_qvd(case))
    with app.session() as s:
        cube = s.hypercube(["V"], ["Count(R)"], suppress_missing=True)
        groups = {row[0]: row[1] for row in cube.rows}
    assert len(cube.rows) == len(values)
    assert groups[twice] == len(rows_of(case, twice))


def test_arrow_dictionary_and_store_hold_the_value_once(case: str) -> None:
    _, indexes, _, values = CASES[case]
    app = App.from_qvd(case_qvd(case))
    with app.session() as s:
        table = pa.table(s.table("T"))
    column = table.column("V").combine_chunks()
    if isinstance(column.type, pa.DictionaryType):
        dictionary = column.dictionary.to_pylist()
        assert len(dictionary) == len(set(map(repr, dictionary)))
    stored = app._impl.write_qvd("T")
    again = App.from_qvd(bytes(stored))
    assert again.symbols("V") == values
    assert again.table("T").column("V") == app.table("T").column("V")
    header = split(bytes(stored))[0]
    assert f"<NoOfSymbols>{len(values)}</NoOfSymbols>" in header
    assert sum(i is not None for i in indexes) == sum(
        v is not None for v in app.table("T").column("V")
    )


def test_a_field_shared_with_another_table_links_through_one_value(tmp_path: Path) -> None:
    qvd = raw_qvd("Orders", {"K": ([int32(7), float64(7.0), int32(8)], [0, 1, 2, 1])})
    assert App.from_qvd(qvd).symbols("K") == [7, 8]
    (tmp_path / "orders.qvd").write_bytes(qvd)
    app = App.from_script(
        "Orders: LOAD * FROM [lib://data/orders.qvd] (qvd);\n"
        "Names: LOAD * INLINE [\nK, Name\n7, seven\n8, eight\n];\n",
        folders={"data": tmp_path},
    )
    assert app.symbols("K") == [7, 8]
    with app.session() as s:
        assert s.select("Name", ["seven"])
        assert s.possible_rows("Orders") == 3
        assert s.state("K")["possible"] == [7]


def test_distinct_symbols_keep_the_file_order_and_width() -> None:
    """Numbers that only look alike (a dual and a text, 1 and "1") are different values."""
    qvd = raw_qvd(
        "T", {"V": ([int32(1), text("1"), float64(1.5), dual_float(2.0, "2")], [0, 1, 2, 3, 1])}
    )
    app = App.from_qvd(qvd)
    assert app.symbols("V") == [1, "1", 1.5, Dual(2, "2")]
    assert app.table("T").column("V") == [1, "1", 1.5, Dual(2, "2"), "1"]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """The service with default settings."""
    with TestClient(create_app(Settings(), tmp_path / "data")) as client:
        yield client


@pytest.mark.server
def test_the_http_import_merges_the_repeated_value(client: TestClient) -> None:
    qvd = case_qvd("int-and-float")
    response = client.post("/v1/apps/import", content=qvd)
    assert response.status_code == 200, response.text
    app_id = response.json()["attributes"]["id"]
    metadata = client.get(f"/v1/apps/{app_id}/data/metadata").json()
    field = next(f for f in metadata["fields"] if f["name"] == "V")
    assert field["cardinal"] == 3
    assert metadata["fields"] == App.from_qvd(qvd).metadata()["fields"]


def large_symbols(kind: str, n: int, rng: random.Random) -> list[Any]:
    """`n` distinct values of one kind, shuffled (not increasing)."""
    if kind == "ints":
        values: list[Any] = rng.sample(range(-5 * n, 5 * n), n)
    elif kind == "amounts":
        values = [c / 100 for c in rng.sample(range(10 * n), n)]
    elif kind == "fractions":
        values = list({rng.random() * 1e6 for _ in range(n)})
    elif kind == "wide-ints":
        values = rng.sample(range(-(2**31), 2**31 - 1), n)
    else:
        values = [f"v{i:07d}" for i in rng.sample(range(10 * n), n)]
    rng.shuffle(values)
    return values


def symbol_of(value: Any) -> bytes:
    """A value's QVD symbol."""
    if isinstance(value, str):
        return text(value)
    return int32(value) if isinstance(value, int) else float64(value)


@pytest.mark.parametrize("kind", ["ints", "wide-ints", "amounts", "fractions", "texts"])
@pytest.mark.parametrize("repeat", [False, True])
def test_large_fields_are_checked_exactly(kind: str, repeat: bool) -> None:
    """Fields past the small-table sizes take the bitmap and partitioned checks."""
    rng = random.Random(f"{kind}-{repeat}")
    values = large_symbols(kind, 40_000, rng)
    symbols = [symbol_of(v) for v in values]
    if repeat:
        twice = values[12_345]
        symbols.append(float64(float(twice)) if not isinstance(twice, str) else text(twice))
    indexes = list(range(len(symbols)))
    app = App.from_qvd(raw_qvd("T", {"V": (symbols, indexes)}))
    assert len(app.symbols("V")) == len(values)
    assert app.symbols("V")[:100] == values[:100]
    if repeat:
        assert app.table("T").column("V")[-1] == values[12_345]
        with app.session() as s:
            assert s.select("V", [values[12_345]])
            assert s.possible_rows("T") == 2


# Fields whose values are proven distinct while their symbols are parsed (numbers that
# increase, or whose keys never meet) must still find a value stored twice, wherever it is.
KINDS = [
    "increasing-ints",  # all int32: the parallel int32 loop's running compare
    "shuffled-ints",  # all int32, out of order: the bitmap of their values
    "increasing-floats",  # all float64: each part's running compare, then across parts
    "increasing-decimals",  # int32 and float64 mixed, in order
    "decimals",  # int32 and float64 mixed, shuffled: keys in cents
    # Numbers spread wider than the bitmap's 4 bits a symbol: a bitmap sized by the first
    # symbols' range, or one over all the keys' range, proves them distinct.
    "spread-ints",  # int32 over 16 values a symbol: the bitmap over the values' range
    "spread-decimals",  # mixed, cents over 16 keys a symbol: the first symbols size the bitmap
    "skewed-decimals",  # the first symbols close together, the rest spread: the range's bitmap
    "spread-floats",  # all float64, shuffled: keyed as parsed, each part into a bitmap of its own
    "texts",
    "duals",
]
# The int32 and float64 loops parse 65,538 symbols in two chunks of 32,769 (chunks of at
# least 65,536 symbols, no more than four a thread).
CHUNKED = 65_538
BOUNDARY = 32_769
CHUNKED_KINDS = ("increasing-ints", "shuffled-ints", "increasing-floats")
# A section of float64 symbols alone is parsed in parts of at least 65,536 symbols, a part a
# thread: 131,074 symbols make two parts of 65,537 on two threads.
PARTED = 131_074
PARTED_KINDS = ("increasing-floats", "spread-floats")
PLACES = {
    "start": (3_000, 1, 0),  # (symbols, the symbol replaced, the symbol it repeats)
    "early": (3_000, 37, 36),  # among the first 64 numbers, which choose the keys' scale
    "adjacent": (3_000, 1_501, 1_500),
    "end": (3_000, 2_999, 2_998),
    "end-odd": (3_003, 3_002, 3_001),  # past the last whole vector of four int32s
    "far": (3_000, 2_999, 0),
    "far-middle": (3_000, 2_000, 500),
    "chunk-boundary": (CHUNKED, BOUNDARY, BOUNDARY - 1),
    "far-chunks": (CHUNKED, CHUNKED - 1, 5),
    "part-boundary": (PARTED, PARTED // 2, PARTED // 2 - 1),
    "far-parts": (PARTED, PARTED - 1, 5),
}
SIZED_KINDS = {CHUNKED: CHUNKED_KINDS, PARTED: PARTED_KINDS}


def kind_values(kind: str, n: int) -> list[Any]:
    """`n` distinct values of one kind, in the kind's order."""
    rng = random.Random(kind)
    if kind == "increasing-ints":
        return list(range(-n, 2 * n, 3))[:n]
    # Shuffled numbers are dense (as ids and amounts in cents are), so that their keys
    # prove them distinct without the hash.
    if kind == "shuffled-ints":
        return rng.sample(range(-2 * n, 2 * n), n)
    if kind == "increasing-floats":
        return [i / 4 - 100 for i in range(n)]
    if kind == "increasing-decimals":
        return [c / 100 for c in sorted(rng.sample(range(100 * n), n))]
    if kind == "decimals":
        return [c / 100 for c in rng.sample(range(4 * n), n)]
    if kind == "spread-ints":
        return rng.sample(range(-8 * n, 8 * n), n)
    if kind == "spread-decimals":
        return [c / 100 for c in rng.sample(range(16 * n), n)]
    if kind == "skewed-decimals":
        rest = rng.sample(range(100, 24 * n), n - 64)
        return [c / 100 for c in rng.sample(range(100), 64) + rest]
    if kind == "spread-floats":
        return [c / 4 + 0.125 for c in rng.sample(range(16 * n), n)]
    if kind == "texts":
        return [f"t{i:07d}" for i in rng.sample(range(10 * n), n)]
    return [Dual(i, f"d{i}") for i in rng.sample(range(10 * n), n)]


def kind_symbol(kind: str, value: Any, repeat: bool = False) -> bytes:
    """A value's symbol as the kind stores it; a repeated number of the mixed kinds is stored
    as float64 even when it is an integer (1 as int32 first, then 1.0)."""
    if kind in ("increasing-ints", "shuffled-ints", "spread-ints"):
        return int32(value)
    if kind in ("increasing-floats", "spread-floats"):
        return float64(value)
    if kind in ("increasing-decimals", "decimals", "spread-decimals", "skewed-decimals"):
        return int32(int(value)) if value == int(value) and not repeat else float64(value)
    if kind == "texts":
        return text(value)
    return (
        dual_float(float(value.number), "again") if repeat else dual_int(value.number, value.text)
    )


def comparable(values: Sequence[Any]) -> list[Any]:
    """Values with duals compared on their text too (Dual equality is on the number)."""
    return [(v.number, v.text) if isinstance(v, Dual) else v for v in values]


@pytest.mark.parametrize(
    ("kind", "place"),
    [
        (kind, place)
        for kind in KINDS
        for place in PLACES
        if kind in SIZED_KINDS.get(PLACES[place][0], KINDS)
    ],
)
def test_a_value_stored_twice_is_found_by_the_parsing_loops(kind: str, place: str) -> None:
    n, at, of = PLACES[place]
    values = kind_values(kind, n)
    if kind.endswith("decimals") and kind != "increasing-decimals" and place in ("start", "far"):
        values[of] = float(int(values[of]))  # an integer: int32 first, float64 when repeated
    symbols = [kind_symbol(kind, v) for v in values]
    symbols[at] = kind_symbol(kind, values[of], repeat=True)
    app = App.from_qvd(raw_qvd("T", {"V": (symbols, list(range(n)))}))
    kept = [v for i, v in enumerate(values) if i != at]
    assert comparable(app.symbols("V")) == comparable(kept)
    column = list(values)
    column[at] = values[of]  # the repeat's row holds the first symbol's value
    assert comparable(app.table("T").column("V")) == comparable(column)
    field = next(f for f in app.metadata()["fields"] if f["name"] == "V")
    assert field["cardinal"] == n - 1


@pytest.mark.parametrize(
    ("kind", "n"),
    [(kind, 3_000) for kind in KINDS]
    + [(kind, n) for n, kinds in SIZED_KINDS.items() for kind in kinds],
)
def test_distinct_values_keep_every_symbol(kind: str, n: int) -> None:
    values = kind_values(kind, n)
    app = App.from_qvd(
        raw_qvd("T", {"V": ([kind_symbol(kind, v) for v in values], list(range(n)))})
    )
    assert comparable(app.symbols("V")) == comparable(values)


def test_other_symbols_in_a_section_as_long_as_float64_alone_are_read_one_by_one() -> None:
    """An int32 and a text of 13 bytes take as many bytes as two float64 symbols: the section
    is as long as float64 symbols alone would be, and starts with one. The part that holds
    them gives up, and the general reader reads every symbol."""
    values: list[Any] = [i / 8 + 0.0625 for i in range(PARTED)]
    at = PARTED - 1_000  # in the second part
    values[at : at + 2] = [7, "abcdefghijk"]
    symbols = [
        int32(v) if isinstance(v, int) else text(v) if isinstance(v, str) else float64(v)
        for v in values
    ]
    assert sum(map(len, symbols)) == 9 * PARTED
    app = App.from_qvd(raw_qvd("T", {"V": (symbols, list(range(PARTED)))}))
    assert app.symbols("V") == values


@pytest.mark.parametrize(
    "first",
    [
        [-(2**31), -(2**31) + 1],  # the least int32 first: nothing is below it
        [-(2**31), 5, 7],
    ],
)
def test_the_least_int32_first_is_one_value(first: list[int]) -> None:
    values = first + list(range(100, 400))
    app = App.from_qvd(raw_qvd("T", {"V": ([int32(v) for v in values], list(range(len(values))))}))
    assert app.symbols("V") == values
    twice = [*values, -(2**31)]
    app = App.from_qvd(raw_qvd("T", {"V": ([int32(v) for v in twice], list(range(len(twice))))}))
    assert app.symbols("V") == values
    assert app.table("T").column("V")[-1] == -(2**31)


def test_numbers_whose_keys_meet_but_differ_stay_apart() -> None:
    """Amounts in cents choose a scale of 100; 0.125 then has the key of 0.12 (and 0.135 that
    of 0.14), which only the exact check tells apart."""
    rng = random.Random(5)
    values = [c / 100 for c in rng.sample(range(1, 100_000), 5_000) if c not in (12, 14)]
    values[2_000:2_000] = [0.125, 0.12, 0.14, 0.135]
    symbols = [kind_symbol("decimals", v) for v in values]
    app = App.from_qvd(raw_qvd("T", {"V": (symbols, list(range(len(values))))}))
    assert app.symbols("V") == values


def test_minus_zero_beside_zero_in_increasing_float64s() -> None:
    values = [-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 1.5] + [2.0 + i / 8 for i in range(200)]
    app = App.from_qvd(
        raw_qvd("T", {"V": ([float64(v) for v in values], list(range(len(values))))})
    )
    symbols = app.symbols("V")
    assert len(symbols) == len(values) - 1
    assert symbols[:3] == [-2.5, -1.0, 0]
    assert app.table("T").column("V")[2:4] == [0, 0]


@pytest.mark.parametrize("at", range(1_000, 1_016))
def test_a_repeat_of_the_number_before_in_any_lane_of_a_float64_run(at: int) -> None:
    """Increasing numbers with int32 and float64 mixed are parsed eight float64s a run, four
    to a vector: a value equal to the one before it is found in each of the eight places
    (whatever the run's alignment), across a run's two vectors and two runs too."""
    values = kind_values("increasing-decimals", 3_000)
    symbols = [kind_symbol("increasing-decimals", v) for v in values]
    symbols[at] = kind_symbol("increasing-decimals", values[at - 1], repeat=True)
    app = App.from_qvd(raw_qvd("T", {"V": (symbols, list(range(len(values))))}))
    assert app.symbols("V") == values[:at] + values[at + 1 :]
    assert app.table("T").column("V")[at] == values[at - 1]


@pytest.mark.parametrize("at", range(1_000, 1_016))
def test_an_int32_repeated_as_int32_between_float64_runs(at: int) -> None:
    """The runs of float64s take an int32 between them one by one and go on: an integer
    stored twice as int32, the second right after the first, is found wherever it falls
    between the runs (the numbers otherwise increase, so only the compare with the number
    before it tells)."""
    values: list[float] = [i + 0.5 for i in range(3_000)]
    for k in range(5, 3_000, 37):
        values[k] = float(k + 1)  # an integer among the decimals, still increasing
    values[at - 1] = float(at)
    symbols = [kind_symbol("increasing-decimals", v) for v in values]
    symbols[at] = int32(at)
    app = App.from_qvd(raw_qvd("T", {"V": (symbols, list(range(len(values))))}))
    assert app.symbols("V") == values[:at] + values[at + 1 :]
    assert app.table("T").column("V")[at] == at
