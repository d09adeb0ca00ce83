"""The core through the Python API: symbol tables, packed indexes, metadata, errors."""

from __future__ import annotations

import math
import pickle
import threading

import numpy as np
import pytest

import assoc
from assoc import App, Dual


def test_columns_round_trip_values_and_nulls() -> None:
    app = App.from_tables(
        {
            "Orders": {
                "OrderId": [1, 2, 3, None],
                "Customer": ["a", "b", "a", "ü"],
                "Amount": np.array([1.5, 2.0, np.nan, -4.25]),
                "When": [
                    Dual(45292, "2024-01-01"),
                    None,
                    Dual(45293, "2024-01-02"),
                    Dual(45292, "x"),
                ],
            }
        }
    )
    t = app.table("Orders")
    assert t.num_rows == 4
    assert t.fields == ["OrderId", "Customer", "Amount", "When"]
    assert t.column("OrderId") == [1, 2, 3, None]
    assert t.column("Customer") == ["a", "b", "a", "ü"]
    assert t.column("Amount") == [1.5, 2.0, None, -4.25]
    # Duals with the same number are one symbol: the first text wins.
    assert t.column("When") == [
        Dual(45292, "2024-01-01"),
        None,
        Dual(45293, "2024-01-02"),
        Dual(45292, "2024-01-01"),
    ]
    assert app.symbols("Customer") == ["a", "b", "ü"]
    assert list(t.column_indices("OrderId")) == [0, 1, 2, -1]


def test_same_symbol_rules() -> None:
    app = App.from_tables({"T": {"F": [1, 1.0, -0.0, 0, "1", "1", "a", None]}})
    # Numbers are equal by value (-0 is 0); the text "1" is a symbol of its own.
    assert app.symbols("F") == [1, 0, "1", "a"]
    assert app.metadata()["fields"][0]["cardinal"] == 4


def test_shared_field_name_shares_one_symbol_table() -> None:
    app = App.from_tables(
        {
            "Orders": {"Customer": ["c1", "c2", "c1"], "Amount": [10, 20, 30]},
            "Customers": {"Customer": ["c3", "c2", "c1", "c4"], "Name": ["C", "B", "A", "D"]},
        }
    )
    assert app.symbols("Customer") == ["c1", "c2", "c3", "c4"]
    assert app.table("Customers").column("Customer") == ["c3", "c2", "c1", "c4"]
    assert list(app.table("Customers").column_indices("Customer")) == [2, 1, 0, 3]
    md = app.metadata()
    field = next(f for f in md["fields"] if f["name"] == "Customer")
    assert field["src_tables"] == ["Orders", "Customers"]
    assert "$key" in field["tags"]
    assert field["cardinal"] == 4
    # total_count: the most non-null values any one source table holds.
    assert field["total_count"] == 4
    tables = {t["name"]: t for t in md["tables"]}
    assert tables["Orders"]["no_of_key_fields"] == 1
    assert tables["Customers"]["no_of_fields"] == 2


def test_bit_width_is_the_fewest_bits_for_symbols_and_null() -> None:
    n = 1000
    app = App.from_tables(
        {
            "T": {
                "Const": [7] * n,
                "Two": [i % 2 for i in range(n)],
                "TwoNull": [None if i % 3 == 0 else i % 2 for i in range(n)],
                "Many": list(range(n)),
                "AllNull": [None] * n,
            }
        }
    )
    model = app._impl
    assert model.bit_width("T", "Const") == 0
    assert model.bit_width("T", "Two") == 1
    assert model.bit_width("T", "TwoNull") == 2
    assert model.bit_width("T", "Many") == 10
    assert model.bit_width("T", "AllNull") == 0
    assert app.table("T").column("AllNull") == [None] * n
    assert app.table("T").column("TwoNull")[:4] == [None, 1, 0, None]
    # Table bytes are the packed bits (plus a fixed 8-byte tail per column for wide loads).
    table = app.metadata()["tables"][0]
    expected = sum((n * w + 7) // 8 + 8 for w in (0, 1, 2, 10, 0))
    assert table["byte_size"] == expected


def test_tags_follow_the_data() -> None:
    app = App.from_tables(
        {
            "T": {
                "Int": [1, 2, None],
                "Real": [1.5, 2, 3],
                "Ascii": ["a", "b", "c"],
                "Utf": ["å", "b", "c"],
                "Mixed": ["a", 1, 2],
            }
        }
    )
    tags = {f["name"]: f["tags"] for f in app.metadata()["fields"]}
    assert tags["Int"] == ["$numeric", "$integer"]
    assert tags["Real"] == ["$numeric"]
    assert tags["Ascii"] == ["$ascii", "$text"]
    assert tags["Utf"] == ["$text"]
    assert tags["Mixed"] == ["$ascii"]
    numeric = {f["name"]: f["is_numeric"] for f in app.metadata()["fields"] if not f["is_system"]}
    assert numeric == {"Int": True, "Real": True, "Ascii": False, "Utf": False, "Mixed": False}


def test_byte_sizes_are_counted_from_the_structures() -> None:
    n = 100_000
    ints = np.arange(n, dtype=np.int64)
    floats = np.random.default_rng(1).random(n)
    app = App.from_tables({"T": {"I": ints, "F": floats}})
    fields = {f["name"]: f for f in app.metadata()["fields"]}
    # Integers that fit int32 take 4 bytes a symbol, other numbers 8.
    assert fields["I"]["byte_size"] == 4 * n
    assert fields["F"]["byte_size"] == 8 * n
    md = app.metadata()
    assert md["static_byte_size"] >= sum(f["byte_size"] for f in md["fields"]) + sum(
        t["byte_size"] for t in md["tables"]
    )
    assert md["reload_meta"]["hardware"]["logical_cores"] == assoc.logical_cores()
    assert md["reload_meta"]["hardware"]["total_memory"] > 0


def test_large_numpy_columns_decode_exactly() -> None:
    rng = np.random.default_rng(7)
    n = 300_001  # not a multiple of any chunk size
    values = rng.integers(0, 5000, n)
    app = App.from_tables({"T": {"V": values}})
    idx = app.table("T").column_indices("V")
    symbols = np.array(app.symbols("V"))
    assert np.array_equal(symbols[idx], values)


@pytest.mark.parametrize(
    ("tables", "message"),
    [
        ({}, "non-empty"),
        ({"T": {}}, "non-empty"),
        ({"T": {"A": [1, 2], "B": [1]}}, "has 1 values"),
        ({"T": {"A": [object()]}}, "unsupported value"),
        ({"T": {"A": "abc"}}, "sequence"),
        ({"T": {"A": [math.inf]}}, "infinite"),
        ({"": {"A": [1]}}, "needs a name"),
    ],
)
def test_bad_tables_raise_assoc_error(tables, message) -> None:
    with pytest.raises(assoc.Error, match=message):
        App.from_tables(tables)


def test_unknown_names_raise_assoc_error() -> None:
    app = App.from_tables({"T": {"A": [1]}})
    with pytest.raises(assoc.Error, match="no table named 'X'"):
        app.table("X")
    with pytest.raises(assoc.Error, match="has no field 'B'"):
        app.table("T").column("B")


def test_same_table_name_gets_a_suffix() -> None:
    builder = assoc._core.ModelBuilder()
    builder.add_columns("T", {"A": [1]})
    builder.add_columns("T", {"B": [2]})
    app = App(builder.build())
    assert app.tables == ["T", "T-1"]


def test_threads_setting() -> None:
    before = assoc.threads()
    try:
        assoc.set_threads(1)
        assert assoc.threads() == 1
        app = App.from_tables({"T": {"V": np.arange(200_000) % 777}})
        assert app.metadata()["fields"][0]["cardinal"] == 777
    finally:
        assoc.set_threads(0)
    assert assoc.threads() == max(before, assoc.logical_cores())


@pytest.mark.parametrize("threads", [2, 3])
def test_loads_and_selections_from_many_threads_at_once(threads: int) -> None:
    """Loads whose parallel steps start parallel steps of their own (QVD symbols in chunks,
    records in blocks) run from several Python threads at once on a pool of `threads`: all
    finish, with the data they would have alone."""
    rng = np.random.default_rng(4)
    n = 300_000
    source = App.from_tables(
        {"T": {"Id": np.arange(n), "Amount": rng.permutation(n) + 0.5, "K": rng.integers(0, 97, n)}}
    )
    qvd = source._impl.write_qvd("T")
    csv = ("a,b\n" + "\n".join(f"{i},{i % 97}" for i in range(50_000))).encode()
    expected = source.table("T").column_indices("Amount")
    failures: list[str] = []

    def work(k: int) -> None:
        try:
            for _ in range(6):
                app = App.from_qvd(qvd)
                assert np.array_equal(app.table("T").column_indices("Amount"), expected)
                session = App.from_csv(csv).session(f"u{k}")
                session.select("b", [k])
                counts = session.counts("a")  # rows with b == k: a in k, k+97, ...
                assert counts["possible"] == len(range(k, 50_000, 97))
        except Exception as exc:  # reported below, with the thread it happened in
            failures.append(f"thread {k}: {exc!r}")

    assoc.set_threads(threads)
    try:
        workers = [threading.Thread(target=work, args=(k,)) for k in range(6)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(120)
        assert not [w for w in workers if w.is_alive()], "a load never finished"
    finally:
        assoc.set_threads(0)
    assert failures == []


def test_dual_equals_and_hashes_as_its_number() -> None:
    day = assoc.Dual(40072, "40072")
    assert day == 40072
    assert 40072 == day  # noqa: SIM300 - int.__eq__ defers to the Dual
    assert day == 40072.0
    assert day != 40073
    assert day != "40072"  # a text is another value
    assert day is not None
    assert assoc.Dual(40072.0, "x") == day  # numeric parts decide, as in the engine
    assert len({assoc.Dual(1, "1"), 1}) == 1
    assert {1: "one"}[assoc.Dual(1, "01")] == "one"
    assert hash(assoc.Dual(2.5, "2,5")) == hash(2.5)


def test_dual_keeps_an_int_number_and_its_text() -> None:
    day = assoc.Dual(40072, "40072")
    assert type(day.number) is int
    assert day.text == "40072"
    assert repr(day) == "Dual(40072, '40072')"
    assert repr(assoc.Dual(40072.0, "40072")) == "Dual(40072.0, '40072')"
    assert type(pickle.loads(pickle.dumps(day)).number) is int
    with pytest.raises(assoc.Error, match="int or a float"):
        assoc.Dual("1", "1")  # type: ignore[arg-type]


def test_selecting_a_number_finds_its_dual() -> None:
    days = [assoc.Dual(40072, "2009-09-15"), assoc.Dual(40073, "2009-09-16")]
    app = App.from_tables({"T": {"D": days}})
    with app.session() as s:
        s.select("D", [40072])
        assert s.state("D")["selected"] == [40072]
        assert s.state("D")["selected"][0].text == "2009-09-15"


# ---- source view: tables as they were loaded, through synthetic keys -------------------


def test_a_table_reads_as_loaded_through_its_synthetic_key() -> None:
    data = {
        "F": {"Cat": ["a", "b", "a"], "Sub": [1, 2, 2], "V": [5, 6, 7]},
        "D": {
            "W": [7, 8, 9, 10, 11],
            "Cat": ["a", "b", None, "c", None],
            "Sub": [2, 2, 1, None, None],
        },
    }
    app = App.from_tables(data)
    d = app.table("D")
    assert d.fields == ["W", "Cat", "Sub"]
    assert d.model_fields == ["W", "$Syn 1"]
    assert not d.is_synthetic
    for table, columns in data.items():
        t = app.table(table)
        assert t.fields == list(columns)
        for field, values in columns.items():
            assert t.column(field) == values
            codes = t.column_indices(field)
            symbols = app.symbols(field)
            assert [None if c < 0 else symbols[c] for c in codes.tolist()] == values
    # The model view stays readable, and the metadata describes it.
    syn = app.table("$Syn 1 Table")
    assert syn.is_synthetic
    assert syn.fields == syn.model_fields == ["$Syn 1", "Cat", "Sub"]
    assert d.column("$Syn 1")[4] is None  # all parts NULL: no key value
    tables = {t["name"]: t for t in app.metadata()["tables"]}
    assert tables["D"]["no_of_fields"] == 2
    fields = {f["name"]: f for f in app.metadata()["fields"]}
    assert fields["Cat"]["src_tables"] == ["$Syn 1 Table"]


def test_nested_synthetic_keys_are_read_through() -> None:
    data = {
        "T1": {"X": [1, 2, 3], "A": [1, 2, 3], "B": [1, 1, 2], "C": ["p", "q", "p"]},
        "T2": {"A": [1, 3, 4], "B": [1, 2, 2], "C": ["p", "p", None], "Y": [4, 5, 6]},
        "T3": {"Z": [7, 8, 9], "B": [1, 2, 2], "A": [2, 4, 5]},
    }
    app = App.from_tables(data)
    assert app.table("T1").model_fields == ["X", "$Syn 1"]
    assert app.table("$Syn 1 Table").model_fields == ["$Syn 1", "$Syn 2", "C"]
    for table, columns in data.items():
        t = app.table(table)
        assert t.fields == list(columns)
        assert {f: t.column(f) for f in t.fields} == columns


def test_a_field_the_table_was_not_loaded_with_is_an_error() -> None:
    app = App.from_tables(
        {"F": {"Cat": ["a"], "Sub": [1], "V": [5]}, "D": {"Cat": ["a"], "Sub": [1], "W": [7]}}
    )
    with pytest.raises(assoc.Error, match="table 'D' has no field 'V'"):
        app.table("D").column("V")
    with pytest.raises(assoc.Error, match="table 'D' has no field 'Nope'"):
        app.table("D").column_indices("Nope")
    with pytest.raises(assoc.Error, match="no table named 'E'"):
        app.table("E")


def test_a_script_table_linked_by_a_synthetic_key_reads_as_loaded() -> None:
    script = """
    F: LOAD * INLINE [
    Cat, Sub, Amount
    a, 1, 10
    b, 2, 20
    ];
    D: LOAD * INLINE [
    Label, Cat, Sub
    x, a, 1
    y, b, 1
    ];
    """
    app = App.from_script(script)
    assert app.tables == ["F", "D", "$Syn 1 Table"]
    assert app.table("D").fields == ["Label", "Cat", "Sub"]
    assert app.table("D").column("Cat") == ["a", "b"]
    assert app.table("D").column("Sub") == [1, 1]
