"""Arrow in and out: App.from_arrow / from_tables read any __arrow_c_stream__ producer; Table,
Hypercube and Session.table are read by pyarrow, polars and DuckDB."""

from __future__ import annotations

import ctypes
import datetime as dt
import decimal
import itertools
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import assoc

pa = pytest.importorskip("pyarrow")
pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")


def values(app: assoc.App, table: str, field: str) -> list[Any]:
    return app.table(table).column(field)


def plain(v: Any) -> Any:
    """A column value without its text (a Dual's number)."""
    return v.number if isinstance(v, assoc.Dual) else v


# --- in


@pytest.mark.parametrize(
    ("arrow_type", "data", "expected"),
    [
        (pa.int8(), [-128, None, 127], [-128, None, 127]),
        (pa.uint8(), [0, None, 255], [0, None, 255]),
        (pa.int16(), [-32768, 5, None], [-32768, 5, None]),
        (pa.uint16(), [65535, None, 1], [65535, None, 1]),
        (pa.int32(), [-(2**31), None, 2**31 - 1], [-(2**31), None, 2**31 - 1]),
        (pa.uint32(), [2**32 - 1, None, 0], [2**32 - 1, None, 0]),
        (pa.int64(), [-(2**53), None, 2**53], [-(2**53), None, 2**53]),
        (pa.uint64(), [2**53, None, 7], [2**53, None, 7]),
        (pa.float32(), [1.5, None, -0.25], [1.5, None, -0.25]),
        (pa.float64(), [1.25, float("nan"), None], [1.25, None, None]),
        (pa.bool_(), [True, None, False], [1, None, 0]),
        (
            pa.decimal128(12, 3),
            [decimal.Decimal("1.250"), None, decimal.Decimal("-7.001")],
            [1.25, None, -7.001],
        ),
        (pa.string(), ["a", None, "zé ✓"], ["a", None, "zé ✓"]),
        (pa.large_string(), ["x" * 30, None, ""], ["x" * 30, None, ""]),
        (pa.string_view(), ["short", None, "a view longer than twelve"], None),
        (pa.null(), [None, None, None], [None, None, None]),
    ],
)
def test_every_type_reads_with_its_nulls(arrow_type, data, expected):
    table = pa.table({"x": pa.array(data, arrow_type)})
    got = values(assoc.App.from_arrow({"T": table}), "T", "x")
    assert got == (data if expected is None else expected)


def test_dictionary_becomes_the_symbol_table():
    arr = pa.array(["b", "a", None, "b", "c"]).dictionary_encode()
    # "z" is in the dictionary but on no row: it is no symbol.
    unused = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, None, 0], pa.int8()), pa.array(["p", "q", "z"])
    )
    app = assoc.App.from_arrow({"T": pa.table({"d": arr}), "U": pa.table({"u": unused})})
    assert values(app, "T", "d") == ["b", "a", None, "b", "c"]
    assert app.symbols("d") == ["b", "a", "c"]
    assert app.symbols("u") == ["p", "q"]


def test_chunks_and_slices_read_as_one_table():
    chunks = pa.chunked_array(
        [pa.array(["a", "b"]).dictionary_encode(), pa.array(["c", "a"]).dictionary_encode()]
    )
    sliced = pa.array(["w", "x", "y", "z"]).slice(1, 2)
    app = assoc.App.from_arrow(
        {
            "T": pa.table({"c": chunks}),
            "S": pa.table({"s": sliced, "n": pa.array([1, 2, 3]).slice(1)}),
        }
    )
    assert values(app, "T", "c") == ["a", "b", "c", "a"]
    assert app.symbols("c") == ["a", "b", "c"]
    assert values(app, "S", "s") == ["x", "y"]
    assert values(app, "S", "n") == [2, 3]


def test_dates_and_timestamps_are_duals_in_the_default_formats():
    table = pa.table(
        {
            "d32": pa.array([dt.date(2024, 1, 31), None, dt.date(1899, 12, 30)], pa.date32()),
            "d64": pa.array([dt.date(2000, 2, 29), None, dt.date(1970, 1, 1)], pa.date64()),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, 13, 5, 7, 250000), None, dt.datetime(1969, 12, 31, 23)],
                pa.timestamp("ns"),
            ),
        }
    )
    app = assoc.App.from_arrow({"T": table})
    Dual = assoc.Dual
    assert values(app, "T", "d32") == [Dual(45322, "1/31/2024"), None, Dual(0, "12/30/1899")]
    assert values(app, "T", "d64") == [Dual(36585, "2/29/2000"), None, Dual(25569, "1/1/1970")]
    ts = values(app, "T", "ts")
    assert ts[0].text == "1/1/2024 1:05:07.250 PM"
    assert ts[0].number == pytest.approx(45292 + (13 * 3600 + 5 * 60 + 7.25) / 86400, abs=1e-9)
    assert ts[1] is None
    assert ts[2].text == "12/31/1969 11:00:00.000 PM"
    tags = {f["name"]: f["tags"] for f in app.metadata()["fields"]}
    assert "$date" in tags["d32"]
    assert "$timestamp" in tags["ts"]
    assert "$date" not in tags["ts"]


@pytest.mark.parametrize(
    ("arrow_type", "name"),
    [
        (pa.list_(pa.int64()), "list"),
        (pa.binary(), "binary"),
        (pa.time32("s"), "time32[s]"),
        (pa.float16(), "float16"),
        (pa.decimal256(40, 2), "d:40,2,256"),
        (pa.duration("ms"), "duration[ms]"),
        (pa.struct([("a", pa.int64())]), "struct"),
    ],
)
def test_unsupported_types_name_the_column_and_type(arrow_type, name):
    table = pa.table({"ok": [1], "bad col": pa.array([None], arrow_type)})
    pattern = rf"column 'bad col': .*{re.escape(name)}.* not supported"
    with pytest.raises(assoc.Error, match=pattern):
        assoc.App.from_arrow({"T": table})


def test_bad_values_and_arguments_are_errors():
    with pytest.raises(assoc.Error, match="infinite"):
        assoc.App.from_arrow({"T": pa.table({"x": [1.0, float("inf")]})})
    with pytest.raises(assoc.Error, match="has no __arrow_c_stream__"):
        assoc.App.from_arrow({"T": [1, 2]})
    with pytest.raises(assoc.Error, match="non-empty mapping"):
        assoc.App.from_arrow({})
    with pytest.raises(assoc.Error, match="duals must be"):
        assoc.App.from_tables({"T": {"a": [1]}}).table("T").to_arrow(duals="both")  # type: ignore[arg-type]


def test_from_tables_takes_arrow_tables_beside_columns():
    app = assoc.App.from_tables(
        {"A": pa.table({"k": [1, 2], "s": ["x", "y"]}), "B": {"k": [2, 3], "v": [20, 30]}}
    )
    assert values(app, "A", "s") == ["x", "y"]
    with app.session() as s:
        s.select("s", ["y"])
        assert s.state("v")["possible"] == [20]


def test_polars_duckdb_and_pandas_are_producers():
    frame = pl.DataFrame({"x": [1, None, 3], "s": ["a", "b", None]}).with_columns(
        pl.col("s").cast(pl.Categorical).alias("c")
    )
    rel = duckdb.sql("select range as r, 'v' || range as s2 from range(4)")
    app = assoc.App.from_arrow({"P": frame, "D": rel})
    assert values(app, "P", "x") == [1, None, 3]
    assert values(app, "P", "s") == ["a", "b", None]
    assert values(app, "P", "c") == ["a", "b", None]
    assert sorted(values(app, "D", "s2")) == ["v0", "v1", "v2", "v3"]


# --- out


@pytest.fixture
def app() -> assoc.App:
    return assoc.App.from_tables(
        {
            "Orders": {
                "Id": [1, 2, 3, 4],
                "Region": ["North", "Süd", None, "North"],
                "Amount": [10.5, None, 3.0, 4.5],
                "Qty": [1, 2, None, 4],
                "Mixed": [1, "one", None, 2.5],
                "When": [assoc.Dual(45322, "1/31/2024"), None, assoc.Dual(45323, "2/1/2024"), None],
            }
        }
    )


def test_table_goes_out_as_dictionaries_and_numbers(app):
    t = pa.table(app.table("Orders"))
    assert t.schema.field("Region").type == pa.dictionary(pa.int32(), pa.string())
    assert t.schema.field("Id").type == pa.int64()
    assert t.schema.field("Amount").type == pa.float64()
    assert t.schema.field("Qty").type == pa.int64()
    # A field where some values have no number goes out as text.
    assert t.schema.field("Mixed").type == pa.dictionary(pa.int32(), pa.string())
    assert t.schema.field("When").type == pa.int64()
    assert t.to_pydict() == {
        "Id": [1, 2, 3, 4],
        "Region": ["North", "Süd", None, "North"],
        "Amount": [10.5, None, 3.0, 4.5],
        "Qty": [1, 2, None, 4],
        "Mixed": ["1", "one", None, "2.5"],
        "When": [45322, None, 45323, None],
    }
    assert t.column("Region").chunk(0).dictionary.to_pylist() == app.symbols("Region")


def test_duals_option(app):
    table = app.table("Orders")
    text = pa.table(table.to_arrow(duals="text"))
    assert text.column("When").to_pylist() == ["1/31/2024", None, "2/1/2024", None]
    both = pa.table(table.to_arrow(duals="struct")).column("When").to_pylist()
    assert both == [
        {"number": 45322.0, "text": "1/31/2024"},
        None,
        {"number": 45323.0, "text": "2/1/2024"},
        None,
    ]
    assert pa.schema(table).names == table.fields  # __arrow_c_schema__


def test_polars_and_duckdb_read_a_table(app):
    frame = pl.DataFrame(app.table("Orders"))
    assert frame["Region"].dtype == pl.Categorical
    assert frame["Region"].to_list() == ["North", "Süd", None, "North"]
    amounts = pl.from_arrow(pa.table(app.table("Orders")))["Amount"]
    assert amounts.to_list() == [10.5, None, 3.0, 4.5]
    orders = app.table("Orders").to_arrow()  # noqa: F841 - DuckDB finds it by name
    rows = duckdb.sql(
        "select Region, sum(Amount) from orders group by Region order by Region"
    ).fetchall()
    assert rows == [("North", 15.0), ("Süd", None), (None, 3.0)]


def test_session_table_keeps_the_possible_rows(app):
    with app.session() as s:
        s.select("Region", ["North"])
        out = s.table("Orders")
        assert out.num_rows == 2
        assert pa.table(out).column("Id").to_pylist() == [1, 4]
        s.select("Region", ["nowhere"])  # no such value: the selection is empty
        s.select("Id", [3])
        assert pa.table(s.table("Orders")).to_pydict()["Region"] == [None]
    with pytest.raises(assoc.Error):
        app.session().table("Nope")


def test_hypercube_goes_out(app):
    with app.session() as s:
        cube = s.hypercube(["Region"], ["Sum(Amount)", "Only(Region)"])
        t = pa.table(cube)
        assert t.column_names == ["Region", "Sum(Amount)", "Only(Region)"]
        assert t.to_pylist() == [
            {"Region": r[0], "Sum(Amount)": r[1], "Only(Region)": r[2]} for r in cube.rows
        ]
        assert pl.DataFrame(cube).height == len(cube)
        s.select("Id", [99])  # nothing selected: all rows stay possible
        s.select("Region", ["North"])
        s.select("Qty", [2])  # excludes every row
        empty = s.hypercube(["Region"], ["Sum(Amount)"], suppress_missing=True)
        assert len(empty) == 0
        t = pa.table(empty)
        assert t.num_rows == 0
        assert t.schema.field("Region").type == pa.dictionary(pa.int32(), pa.string())


def test_many_rows_go_out_whole_with_nulls_duals_and_a_filter():
    # More rows than one step of the export's pass and not a multiple of 8: every step, thread
    # range and the last partial byte of each validity bitmap are checked against the source.
    n = 100_003
    ids = list(range(n))
    qty = [None if i % 7 == 3 else i % 1000 for i in ids]
    price = [None if i % 11 == 5 else (i % 977) / 4 for i in ids]
    region = [None if i % 13 == 1 else f"r{i % 50}" for i in ids]
    when = [None if i % 5 == 2 else assoc.Dual(45000 + i % 300, f"d{i % 300}") for i in ids]
    app = assoc.App.from_tables(
        {"T": {"Id": ids, "Qty": qty, "Price": price, "Region": region, "When": when}}
    )
    out = pa.table(app.table("T").to_arrow(duals="struct"))
    assert out.column("Id").to_pylist() == ids
    assert out.column("Qty").to_pylist() == qty
    assert out.column("Price").to_pylist() == price
    assert out.column("Region").to_pylist() == region
    assert out.column("Region").null_count == sum(v is None for v in region)
    assert out.column("When").to_pylist() == [
        None if w is None else {"number": float(w.number), "text": w.text} for w in when
    ]
    with app.session() as s:
        s.select("Region", ["r3", "r40"])
        kept = [i for i in ids if region[i] in ("r3", "r40")]
        t = pa.table(s.table("T"))
        assert t.column("Id").to_pylist() == kept
        assert t.column("Qty").to_pylist() == [qty[i] for i in kept]
        numbers = [None if when[i] is None else when[i].number for i in kept]
        assert t.column("When").to_pylist() == numbers
        # A narrow selection (above) reads only the kept rows; a wide one decodes them all.
        wide = [f"r{k}" for k in range(0, 50, 2)]
        s.select("Region", wide)
        kept = [i for i in ids if region[i] in wide]
        t = pa.table(s.table("T"))
        assert t.column("Id").to_pylist() == kept
        assert t.column("Price").to_pylist() == [price[i] for i in kept]
        assert t.column("Region").to_pylist() == [region[i] for i in kept]


def test_empty_tables_and_long_texts():
    long = "ü" * 500_000 + "end"
    app = assoc.App.from_arrow(
        {
            "E": pa.table({"x": pa.array([], pa.int64()), "s": pa.array([], pa.string())}),
            "L": pa.table({"t": [long, "x", long]}),
        }
    )
    assert app.table("E").num_rows == 0
    assert pa.table(app.table("E")).num_rows == 0
    assert pl.DataFrame(app.table("E")).shape == (0, 2)
    assert pa.table(app.table("L")).column("t").to_pylist() == [long, "x", long]


# --- round trips on random data

texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
ints = st.integers(-(2**53), 2**53)
floats = st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: str(f) != "-0.0")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.integers(0, 60).flatmap(
        lambda n: st.tuples(
            st.lists(st.none() | ints, min_size=n, max_size=n),
            st.lists(st.none() | floats, min_size=n, max_size=n),
            st.lists(st.none() | texts, min_size=n, max_size=n),
        )
    ),
    dictionary=st.booleans(),
)
def test_round_trip_through_pyarrow_polars_and_duckdb(rows, dictionary):
    i, f, s = rows
    strings = pa.array(s, pa.string())
    source = pa.table(
        {
            "i": pa.array(i, pa.int64()),
            "f": pa.array(f, pa.float64()),
            "s": strings.dictionary_encode() if dictionary else strings,
        }
    )
    app = assoc.App.from_arrow({"T": source})
    table = app.table("T")
    assert [plain(v) for v in table.column("i")] == i
    assert table.column("s") == s
    out = pa.table(table)
    assert out.column("i").to_pylist() == i or all(v is None for v in i)
    assert [None if v is None else float(v) for v in out.column("f").to_pylist()] == f
    assert out.column("s").to_pylist() == s
    frame = pl.DataFrame(table)
    assert frame["s"].to_list() == s
    back = assoc.App.from_arrow({"T": frame})
    assert back.table("T").column("s") == s
    assert back.table("T").column("i") == table.column("i")
    data = table.to_arrow()  # noqa: F841 - DuckDB finds it by name
    assert [r[0] for r in duckdb.sql("select s from data").fetchall()] == s


# --- hostile producers: streams whose arrays lie about their shape


class _Schema(ctypes.Structure):
    pass


class _Array(ctypes.Structure):
    pass


_Array._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(_Array))),
    ("dictionary", ctypes.POINTER(_Array)),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]

_GET_SCHEMA = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_GET_NEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_LAST_ERROR = ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.c_void_p)
_RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Stream(ctypes.Structure):
    _fields_ = [
        ("get_schema", _GET_SCHEMA),
        ("get_next", _GET_NEXT),
        ("get_last_error", _LAST_ERROR),
        ("release", _RELEASE),
        ("private_data", ctypes.c_void_p),
    ]


class HostileStream:
    """A C stream of one pyarrow batch that `tamper` edits after pyarrow exported it."""

    def __init__(self, batch: Any, tamper: Any) -> None:
        self.batch, self.tamper = batch, tamper
        self.given = False
        self._callbacks = (
            _GET_SCHEMA(self._schema),
            _GET_NEXT(self._next),
            _LAST_ERROR(lambda _s: None),
            _RELEASE(self._release),
        )
        self.stream = _Stream(*self._callbacks, None)
        self.released = False

    def _schema(self, _s: int, out: int) -> int:
        self.batch.schema._export_to_c(out)
        return 0

    def _next(self, _s: int, out: int) -> int:
        if self.given:
            ctypes.memset(out, 0, ctypes.sizeof(_Array))
            return 0
        self.given = True
        self.batch._export_to_c(out)
        self.tamper(_Array.from_address(out))
        return 0

    def _release(self, s: int) -> None:
        self.released = True
        _Stream.from_address(s).release = _RELEASE()

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.stream), b"arrow_array_stream", None)


def _batch() -> Any:
    return pa.RecordBatch.from_pydict({"n": [1, 2, 3], "s": ["a", "bb", "ccc"]})


def _set(field: str, value: int, child: int | None = None) -> Any:
    def tamper(a: _Array) -> None:
        target = a if child is None else a.children[child].contents
        setattr(target, field, value)

    return tamper


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (_set("length", 9), "an array of 3 values in a batch of 9 rows"),
        (_set("length", 2, child=1), "column 's': an array of 2 values in a batch of 3 rows"),
        (_set("offset", -1, child=0), "column 'n': array length .* or offset -1 out of range"),
        (_set("n_buffers", 2, child=1), "column 's': 2 buffers where the type has 3"),
        (_set("n_children", 1), "does not match its schema"),
        (_set("null_count", 7, child=0), "null count 7 for 3 values"),
        (_set("offset", 1 << 60, child=1), "out of range"),
    ],
)
def test_hostile_stream_shapes_are_errors(tamper, message):
    stream = HostileStream(_batch(), tamper)
    with pytest.raises(assoc.Error, match=message):
        assoc.App.from_arrow({"T": stream})
    assert stream.released


def test_hostile_offsets_and_indexes_are_errors():
    import numpy as np

    def one(arr: Any) -> Any:
        return pa.table({"c": arr})

    decreasing = pa.Array.from_buffers(
        pa.string(), 2, [None, pa.py_buffer(np.array([0, 3, 1], np.int32)), pa.py_buffer(b"abc")]
    )
    with pytest.raises(assoc.Error, match="column 'c': string offsets decrease"):
        assoc.App.from_arrow({"T": one(decreasing)})
    outside = pa.DictionaryArray.from_arrays(
        pa.array([0, 7], pa.int32()), pa.array(["a", "b"]), safe=False
    )
    with pytest.raises(assoc.Error, match="dictionary index 7 at row 1 outside a dictionary of 2"):
        assoc.App.from_arrow({"T": one(outside)})
    not_utf8 = pa.Array.from_buffers(
        pa.string(), 1, [None, pa.py_buffer(np.array([0, 2], np.int32)), pa.py_buffer(b"\xff\xfe")]
    )
    with pytest.raises(assoc.Error, match="the text at row 0 is not UTF-8"):
        assoc.App.from_arrow({"T": one(not_utf8)})
    # A long view (over 12 bytes) that points past its data buffer.
    view = bytearray(16)
    view[0:4] = (20).to_bytes(4, "little")
    view[8:12] = (0).to_bytes(4, "little")
    view[12:16] = (10).to_bytes(4, "little")
    bad_view = pa.Array.from_buffers(
        pa.string_view(), 1, [None, pa.py_buffer(bytes(view)), pa.py_buffer(b"x" * 24)]
    )
    with pytest.raises(assoc.Error, match="string view at row 0 points outside its data buffers"):
        assoc.App.from_arrow({"T": one(bad_view)})


def _first_seen(numbers: list[float]) -> tuple[list[float], list[float | None]]:
    """The symbols of a column of numbers as Qlik's load makes them (distinct, -0 as 0, in the
    order first seen) and its rows (NaN: NULL)."""
    symbols: dict[float, float] = {}
    rows: list[float | None] = []
    for x in numbers:
        if x != x:
            rows.append(None)
            continue
        symbols.setdefault(x + 0.0, x)  # -0.0 + 0.0 is 0.0: one key for both
        rows.append(symbols[x + 0.0])
    return list(symbols.values()), rows


_NUMBER_COLUMNS = st.one_of(
    # integers over a narrow span (read by value), over a wide one (hashed), and decimals
    st.lists(st.integers(-300, 300).map(float), max_size=400),
    st.lists(st.integers(-(2**62), 2**62).map(float), max_size=200),
    st.lists(st.sampled_from([0.5, -0.0, 0.0, 1.25, 3.0, float("nan"), 1e300, -7.0]), max_size=200),
    # decimals (read by their value times 100), and two numbers with one such key: 0.1 + 0.2
    # is not 0.3, but both are 30 hundredths
    st.lists(st.integers(-10_000, 10_000).map(lambda k: k / 100), max_size=300),
    st.lists(st.sampled_from([0.3, 0.1 + 0.2, 0.29, 2.5, 1.0, float("nan")]), max_size=100),
    st.lists(
        st.one_of(st.integers(-50, 50).map(float), st.just(float("nan")), st.just(-0.0)),
        max_size=300,
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(numbers=_NUMBER_COLUMNS, cuts=st.lists(st.integers(0, 400), max_size=3))
@example(numbers=[0.3, 0.1 + 0.2, 0.29, 0.3], cuts=[])  # one key, two numbers, in one batch
@example(numbers=[7.0, -0.0, float("nan"), 0.0, 7.0], cuts=[2])
def test_columns_of_numbers_load_alike_from_numpy_arrow_chunks_and_lists(numbers, cuts):
    # Numbers are interned in a batch (whole multiples of a power of ten over a narrow span by
    # their value, others by a hash of their bits); Arrow chunks are batches one after
    # another, the later ones finding the earlier ones' symbols. Every way gives the symbols
    # and rows a value at a time would.
    symbols, rows = _first_seen(numbers)
    bounds = sorted({0, len(numbers), *(c for c in cuts if c <= len(numbers))})
    chunks = [numbers[a:b] for a, b in itertools.pairwise(bounds)] or [[]]
    chunked = pa.chunked_array([pa.array(c, type=pa.float64()) for c in chunks])
    lists = [None if x != x else x for x in numbers]
    for app in (
        assoc.App.from_tables({"T": {"x": np.asarray(numbers, dtype=np.float64)}}),
        assoc.App.from_arrow({"T": pa.table({"x": chunked})}),
        assoc.App.from_tables({"T": {"x": lists}}),
    ):
        got = app.symbols("x") if numbers else []
        assert [float(v) for v in got] == symbols
        assert [None if v is None else float(v) for v in values(app, "T", "x")] == rows


def test_integer_ids_in_arrow_chunks_keep_one_symbol_each():
    # The first chunk is read by value, the next ones through the hash made from it then.
    ids = np.arange(300_000, dtype=np.int64)
    chunked = pa.chunked_array([pa.array(ids[:100_000]), pa.array(ids[50_000:]), pa.array(ids)])
    app = assoc.App.from_arrow({"T": pa.table({"Id": chunked})})
    assert app.symbols("Id") == list(range(300_000))
    with app.session() as s:
        s.select("Id", [7, 150_000])
        assert s.possible_rows("T") == 4  # 7 in the first and last chunks, 150,000 in the last two
