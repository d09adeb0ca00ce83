"""Selections through the Python API, checked against an independent model of the inference."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

import assoc
from assoc import App
from assoc.field_order import ALTERNATIVE, EXCLUDED, OPTION, SELECTED, SELECTED_EXCLUDED
from reference_inference import ReferenceModel
from without_simd import assert_pass_with_avx2_kernels, assert_pass_without_simd


def read_back(app: App) -> tuple[dict[str, dict[str, list[Any]]], set[str]]:
    """The app's data tables (synthetic key tables included) as read back, and its loose tables."""
    tables = {t: {f: app.table(t).column(f) for f in app.table(t).model_fields} for t in app.tables}
    loose = {t["name"] for t in app.metadata()["tables"] if t["is_loose"]}
    return tables, loose


def data_fields(app: App) -> list[str]:
    return [f["name"] for f in app.metadata()["fields"] if not f["is_system"]]


def check_against_reference(
    app: App, session: assoc.Session, selections: dict[str, list[Any]]
) -> None:
    """Every data field's states and every table's possible rows agree with the reference."""
    tables, loose = read_back(app)
    ref = ReferenceModel(tables, loose)
    # The engine ignores values a field lacks; a selection left empty is no selection.
    effective = {}
    for field, values in selections.items():
        present = set(values) & set(app.symbols(field))
        if present:
            effective[field] = present
    assert {f: set(v) for f, v in session.selections().items()} == effective
    possible = ref.possible_rows(effective)
    for t in app.tables:
        assert session.possible_rows(t) == len(possible[t]), t
    for field in data_fields(app):
        got = session.state(field)
        want = ref.states(field, app.symbols(field), effective)
        assert {k: set(v) for k, v in got.items()} == want, field
        assert session.counts(field) == {k: len(v) for k, v in want.items()}, field
        # Each state lists values in symbol order.
        order = {v: i for i, v in enumerate(app.symbols(field))}
        for values in got.values():
            assert [order[v] for v in values] == sorted(order[v] for v in values)


def random_star(rng: random.Random, snowflake: bool) -> dict[str, dict[str, list[Any]]]:
    """A fact table linked to 1-3 dimensions (and, for a snowflake, sub-dimensions), with
    NULL keys, keys no dimension row has, and dimension rows no fact row uses."""
    n_fact = rng.randint(4, 30)
    fact: dict[str, list[Any]] = {}
    dims: dict[str, dict[str, list[Any]]] = {}
    for d in range(rng.randint(1, 3)):
        key = f"K{d}"
        keys: list[Any] = [f"k{d}.{i}" if d % 2 else i for i in range(rng.randint(2, 8))]
        orphan = "orphan" if d % 2 else 99
        fact[key] = [
            None if rng.random() < 0.1 else rng.choice([*keys, orphan]) for _ in range(n_fact)
        ]
        dim_keys = rng.sample(keys, rng.randint(1, len(keys)))
        if rng.random() < 0.3:  # a key twice: many-to-many
            dim_keys.append(rng.choice(dim_keys))
        n = len(dim_keys)
        dim: dict[str, list[Any]] = {
            key: dim_keys,
            f"Attr{d}": [rng.choice("abc") for _ in range(n)],
            f"Num{d}": [None if rng.random() < 0.2 else rng.randint(0, 3) for _ in range(n)],
        }
        if snowflake and rng.random() < 0.8:
            sub = f"S{d}"
            n_sub = rng.randint(1, 4)
            dim[sub] = [None if rng.random() < 0.15 else rng.randrange(n_sub + 1) for _ in range(n)]
            sub_keys = rng.sample(range(n_sub + 1), rng.randint(1, n_sub + 1))
            dims[f"Sub{d}"] = {sub: sub_keys, f"Cat{d}": [rng.choice(["x", "y"]) for _ in sub_keys]}
        dims[f"Dim{d}"] = dim
    fact["Amount"] = [rng.randint(1, 6) for _ in range(n_fact)]
    return {"Fact": fact, **dims}


def random_selections(rng: random.Random, app: App, n_fields: int) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    candidates = [f for f in data_fields(app) if app.symbols(f)]
    for field in rng.sample(candidates, min(n_fields, len(candidates))):
        symbols = app.symbols(field)
        values = rng.sample(symbols, rng.randint(1, min(3, len(symbols))))
        if rng.random() < 0.2:
            values.append("no such value")
        out[field] = values
    return out


def apply(session: assoc.Session, selections: dict[str, list[Any]]) -> None:
    session.clear()
    for field, values in selections.items():
        session.select(field, values)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("snowflake", [False, True])
def test_random_star_and_snowflake_schemas_match_the_reference(seed, snowflake) -> None:
    rng = random.Random(seed * 2 + snowflake)
    app = App.from_tables(random_star(rng, snowflake))
    with app.session() as s:
        for _ in range(4):
            n = rng.randint(1, min(3, len(data_fields(app))))
            selections = random_selections(rng, app, n)
            apply(s, selections)
            check_against_reference(app, s, selections)
            check_state_codes(app, s)


def check_state_codes(app: App, s: assoc.Session) -> None:
    """Each field's state codes say what its per-state indexes say (a selected value that
    other selections exclude: selected-excluded; alternatives shown or counted excluded)."""
    for field in data_fields(app):
        for shown in (False, True):
            want = np.full(len(app.symbols(field)), EXCLUDED, dtype=np.int8)
            want[s.indices(field, "possible")] = OPTION
            want[s.indices(field, "alternative")] = ALTERNATIVE if shown else EXCLUDED
            want[s.indices(field, "selected")] = SELECTED
            want[s.indices(field, "selected_excluded")] = SELECTED_EXCLUDED
            got = s.state_codes(field, shown)
            assert got.dtype == np.int8
            np.testing.assert_array_equal(got, want, err_msg=field)


def customers_and_orders() -> App:
    return App.from_tables(
        {
            "Customers": {"CustId": ["c1", "c2", "c3", "c4"], "Region": ["N", "N", "S", "S"]},
            "Orders": {
                "OrderId": [1, 2, 3, 4],
                "CustId": ["c1", "c1", "c3", None],
                "Amount": [10, 20, 30, 40],
            },
            "Lines": {"OrderId": [1, 1, 2, 3, 3], "Product": ["p", "q", "p", "r", "q"]},
        }
    )


def test_a_customer_without_orders_stays_possible_after_selecting_a_region() -> None:
    app = customers_and_orders()
    with app.session() as s:
        s.select("Region", ["N"])
        assert s.state("CustId")["possible"] == ["c1", "c2"]  # c2 has no orders
        assert s.state("Region") == {
            "selected": ["N"],
            "possible": [],
            "alternative": ["S"],
            "excluded": [],
        }
        # Orders and their lines are reduced through their links; the NULL-customer order drops.
        assert s.state("OrderId")["possible"] == [1, 2]
        assert s.state("Product")["possible"] == ["p", "q"]
        assert s.possible_rows("Customers") == 2
        # Once an order field is selected too, only customers with such orders stay.
        s.select("Amount", [10, 20, 40])
        assert s.state("CustId")["possible"] == ["c1"]
        # Without the region, order 4 (no customer) would be possible: its amount is alternative
        # neither, since it is selected; 30 would not be possible with region N.
        assert s.state("Amount") == {
            "selected": [10, 20, 40],
            "possible": [],
            "alternative": [],
            "excluded": [30],
        }
        assert s.state("Region")["alternative"] == []
        assert s.state("Region")["excluded"] == ["S"]


def test_selecting_a_key_value_that_only_one_table_has() -> None:
    app = customers_and_orders()
    with app.session() as s:
        s.select("CustId", ["c2"])
        assert s.state("Region")["possible"] == ["N"]
        assert s.possible_rows("Orders") == 0
        assert s.state("Product")["excluded"] == ["p", "q", "r"]
        assert s.state("CustId")["alternative"] == ["c1", "c3", "c4"]


def test_null_keys_link_nothing() -> None:
    app = App.from_tables(
        {
            "A": {"K": [1, None, 2], "X": ["a1", "a2", "a3"]},
            "B": {"K": [None, 1, 3], "Y": ["b1", "b2", "b3"]},
        }
    )
    with app.session() as s:
        s.select("X", ["a2"])  # K is NULL there: no B row links to it
        assert s.state("Y")["excluded"] == ["b1", "b2", "b3"]
        assert s.state("K")["excluded"] == [1, 2, 3]
        s.select("Y", ["b1"])
        assert s.possible_rows("A") == 0


def test_selection_values_by_type_and_unknown_ones() -> None:
    app = App.from_tables(
        {
            "T": {
                "N": [1, 2.5, 3, None],
                "S": ["1", "b", "c", "d"],
                "D": [assoc.Dual(45292, "2024-01-01")] * 4,
            }
        }
    )
    with app.session() as s:
        s.select("N", [1.0, 2.5, "1", None, float("nan"), 99])  # 1.0 is 1; "1" is a text: not in N
        assert s.selections() == {"N": [1, 2.5]}
        s.select("S", [1, "b"])  # the number 1 is not the text "1"
        assert s.selections() == {"N": [1, 2.5], "S": ["b"]}
        s.select("D", ["2024-01-01"])  # a dual's text selects it, so does its number
        assert s.counts("D")["selected"] == 1
        s.select("D", [45292])
        assert s.counts("D")["selected"] == 1
        s.select("N", ["nothing"])  # nothing left: the field's selection is cleared
        assert "N" not in s.selections()
        s.clear_field("S")
        assert list(s.selections()) == ["D"]
        s.clear()
        assert s.selections() == {}
        assert s.counts("N") == {"selected": 0, "possible": 3, "alternative": 0, "excluded": 0}


def test_indices_are_symbol_indexes_per_state() -> None:
    app = customers_and_orders()
    with app.session() as s:
        s.select("Region", ["S"])
        symbols = app.symbols("CustId")
        for state, values in s.state("CustId").items():
            idx = s.indices("CustId", state)
            assert idx.dtype == np.int64
            assert [symbols[i] for i in idx] == values
        with pytest.raises(assoc.Error, match="unknown state"):
            s.indices("CustId", "maybe")


def test_errors_and_closed_sessions() -> None:
    app = customers_and_orders()
    s = app.session("ann")
    with pytest.raises(assoc.Error, match="no field named 'Nope'"):
        s.select("Nope", [1])
    with pytest.raises(assoc.Error, match="no field named 'Nope'"):
        s.state("Nope")
    with pytest.raises(assoc.Error, match="no table named 'Nope'"):
        s.possible_rows("Nope")
    with pytest.raises(assoc.Error, match="list of values"):
        s.select("Region", "N")
    with pytest.raises(assoc.Error, match="unsupported value"):
        s.select("Region", [object()])
    s.close()
    assert s.closed
    s.close()  # closing twice is harmless
    with pytest.raises(assoc.Error, match="closed"):
        s.select("Region", ["N"])
    with pytest.raises(assoc.Error, match="closed"):
        s.state("Region")


def test_sessions_are_independent() -> None:
    app = customers_and_orders()
    with app.session("a") as a, app.session("b") as b:
        a.select("Region", ["N"])
        b.select("Region", ["S"])
        assert a.state("CustId")["possible"] == ["c1", "c2"]
        assert b.state("CustId")["possible"] == ["c3", "c4"]
        b.clear()
        assert a.state("CustId")["possible"] == ["c1", "c2"]


def test_system_fields_are_associated_with_each_other() -> None:
    app = customers_and_orders()
    with app.session() as s:
        s.select("$Field", ["OrderId"])
        assert s.state("$Table")["possible"] == ["Orders", "Lines"]
        assert sorted(s.state("$Rows")["possible"]) == [4, 5]
        assert s.state("$FieldNo")["possible"] == [1]
        s.select("$Table", ["Customers"])
        assert s.state("$Field")["alternative"] == ["CustId", "Region"]
        # System fields are an island: data fields are untouched.
        assert s.counts("Region")["possible"] == 2


def test_synthetic_keys_with_null_parts_match_the_reference() -> None:
    rng = random.Random(5)
    for _ in range(25):
        n1, n2 = rng.randint(3, 15), rng.randint(3, 15)

        def part(n: int, values: list[Any]) -> list[Any]:
            return [None if rng.random() < 0.15 else rng.choice(values) for _ in range(n)]

        tables = {
            "T1": {"A": part(n1, [1, 2, 3]), "B": part(n1, ["x", "y"]), "X": list(range(n1))},
            "T2": {
                "A": part(n2, [1, 2, 4]),
                "B": part(n2, ["x", "z"]),
                "Y": [f"y{i}" for i in range(n2)],
            },
            "T3": {"B": ["x", "y", "z", "w"], "Z": [1, 2, 3, 4]},
        }
        app = App.from_tables(tables)
        assert "$Syn 1 Table" in app.tables
        with app.session() as s:
            for _ in range(4):
                selections = random_selections(rng, app, rng.randint(1, 2))
                apply(s, selections)
                check_against_reference(app, s, selections)


def test_loose_tables_pass_no_selection_on() -> None:
    # A, B and C link in a triangle; C, the largest, becomes loose.
    app = App.from_tables(
        {
            "A": {"K1": [1, 2, 3], "K2": ["p", "q", "r"], "VA": ["a1", "a2", "a3"]},
            "B": {"K2": ["p", "q", "r"], "K3": [10, 20, 30], "VB": ["b1", "b2", "b3"]},
            "C": {"K3": [10, 20, 30, 30], "K1": [1, 2, 3, 1], "VC": ["c1", "c2", "c3", "c4"]},
        }
    )
    assert {t["name"] for t in app.metadata()["tables"] if t["is_loose"]} == {"C"}
    with app.session() as s:
        # A selection in the loose table reaches none of the others.
        s.select("VC", ["c1"])
        assert s.counts("VA")["possible"] == 3
        assert s.counts("K1")["possible"] == 3
        # A selection elsewhere reduces the loose table through its links.
        s.clear()
        s.select("VA", ["a1"])
        assert s.state("VB")["possible"] == ["b1"]
        # C keeps the rows whose K1 and K3 both link: K1=1 (from A) and K3=10 (from B).
        assert s.state("VC")["possible"] == ["c1"]
        s.select("VA", ["a1", "a3"])
        assert s.state("VC")["possible"] == ["c1", "c3", "c4"]
        check_against_reference(app, s, {"VA": ["a1", "a3"]})


@pytest.mark.parametrize("seed", range(15))
def test_random_cycles_with_loose_tables_match_the_reference(seed) -> None:
    rng = random.Random(1000 + seed)

    def col(n: int, values: list[Any]) -> list[Any]:
        return [None if rng.random() < 0.1 else rng.choice(values) for _ in range(n)]

    sizes = [rng.randint(3, 12) for _ in range(4)]
    app = App.from_tables(
        {
            "A": {
                "K1": col(sizes[0], [1, 2, 3]),
                "K2": col(sizes[0], ["p", "q"]),
                "VA": list(range(sizes[0])),
            },
            "B": {
                "K2": col(sizes[1], ["p", "q", "r"]),
                "K3": col(sizes[1], [7, 8]),
                "VB": col(sizes[1], ["u", "v"]),
            },
            "C": {
                "K3": col(sizes[2], [7, 8, 9]),
                "K1": col(sizes[2], [1, 2]),
                "VC": col(sizes[2], ["s", "t"]),
            },
            "D": {"K1": col(sizes[3], [1, 2, 3, 4]), "VD": col(sizes[3], [0, 1])},
        }
    )
    loose = [t["name"] for t in app.metadata()["tables"] if t["is_loose"]]
    cycle = {"A": sizes[0], "B": sizes[1], "C": sizes[2]}
    assert loose == [max(cycle, key=lambda t: (cycle[t], -ord(t)))]
    with app.session() as s:
        for _ in range(4):
            selections = random_selections(rng, app, rng.randint(1, 3))
            apply(s, selections)
            check_against_reference(app, s, selections)


def counters() -> dict[str, Any]:
    return assoc.engine_counters()


def test_counters_follow_sessions_selections_and_the_cache() -> None:
    app = App.from_tables({"T": {"A": list(range(1000)), "B": [i % 7 for i in range(1000)]}})
    before = counters()
    s1 = app.session("counter-user-1")
    s2 = app.session("counter-user-1")
    s3 = app.session("counter-user-2")
    mid = counters()
    assert mid["session"]["active"] == before["session"]["active"] + 3
    assert mid["session"]["total"] == before["session"]["total"] + 3
    assert mid["users"]["active"] == before["users"]["active"] + 2
    assert mid["users"]["total"] == before["users"]["total"] + 2

    # A new selection state: one lookup that misses, one entry added holding the row bitset
    # with its summary of the words that hold rows (16 words: one summary word) and the set
    # of B's values that made it (B's 7 values and NULL: one word).
    s1.select("B", [3])
    after_first = counters()
    assert after_first["selections"] == mid["selections"] + 1
    assert after_first["cache"]["lookups"] == mid["cache"]["lookups"] + 1
    assert after_first["cache"]["hits"] == mid["cache"]["hits"]
    assert after_first["cache"]["added"] == mid["cache"]["added"] + 1
    assert (
        after_first["cache"]["bytes_added"] - mid["cache"]["bytes_added"]
        == (1000 + 63) // 64 * 8 + 8 + 8
    )

    # Another session reaching the same state finds it.
    s2.select("B", [3])
    after_second = counters()
    assert after_second["selections"] == after_first["selections"] + 1
    assert after_second["cache"]["hits"] == after_first["cache"]["hits"] + 1
    assert after_second["cache"]["added"] == after_first["cache"]["added"]
    assert (
        s1.counts("A")
        == s2.counts("A")
        == {"selected": 0, "possible": 143, "alternative": 0, "excluded": 857}
    )

    s3.close()
    s2.close()
    after_close = counters()
    assert after_close["session"]["active"] == mid["session"]["active"] - 2
    assert after_close["users"]["active"] == mid["users"]["active"] - 1
    s1.close()
    assert counters()["users"]["active"] == before["users"]["active"]
    assert "calls" not in counters()  # the service counts client requests, not the engine


def test_cache_evicts_past_its_limit_and_counts_replacements() -> None:
    app = App.from_tables({"T": {"A": list(range(64_000)), "B": [i % 50 for i in range(64_000)]}})
    limit = assoc.cache_info()["limit"]
    assoc._core.clear_cache()  # entries of other tests would be evicted first
    try:
        # Room for three states: a row bitset of 8,000 bytes, its summary of the words that
        # hold rows (128) and B's value set of 8 each.
        assoc.set_cache_limit(3 * 8136)
        before = counters()["cache"]
        with app.session() as s:
            for v in range(5):
                s.select("B", [v])
            assert assoc.cache_info()["bytes"] <= 3 * 8136
            after = counters()["cache"]
            assert after["added"] - before["added"] == 5
            assert after["replaced"] - before["replaced"] == 2
            # The first state was evicted: selecting it again computes it anew.
            s.select("B", [0])
            assert counters()["cache"]["hits"] == after["hits"]
            assert s.counts("A")["possible"] == 64_000 // 50
    finally:
        assoc.set_cache_limit(limit)


def test_a_dropped_app_leaves_no_cached_results_behind() -> None:
    app = App.from_tables({"T": {"A": list(range(5000)), "B": [i % 9 for i in range(5000)]}})
    with app.session() as s:
        s.select("B", [1, 2])
        s.counts("A")
    entries = assoc.cache_info()["entries"]
    del app, s
    # The cache's count and bytes leave out the results of models that are gone.
    assert assoc.cache_info()["entries"] <= entries - 1


def test_large_table_selection_decodes_every_block() -> None:
    # Many rows with several bit widths: the block decoder and the per-row path agree.
    rng = np.random.default_rng(3)
    n = 200_003
    cat = rng.integers(0, 1000, n)
    val = rng.integers(0, 70_000, n)
    app = App.from_tables({"T": {"Cat": cat, "Val": val}})
    chosen = [int(x) for x in rng.choice(1000, 10, replace=False)]
    with app.session() as s:
        s.select("Cat", chosen)
        mask = np.isin(cat, chosen)
        assert s.possible_rows("T") == int(mask.sum())
        symbols = np.asarray(app.symbols("Val"))
        assert set(symbols[s.indices("Val", "possible")].tolist()) == set(
            np.unique(val[mask]).tolist()
        )
        s.select("Val", [int(v) for v in val[:5000]])
        mask2 = mask & np.isin(val, val[:5000])
        assert s.possible_rows("T") == int(mask2.sum())


@pytest.mark.parametrize("bits", range(1, 18))  # the vector decoder and matcher: 3 to 17
@pytest.mark.parametrize("nulls", [False, True])
def test_selection_agrees_with_numpy_at_every_bit_width(bits, nulls) -> None:
    rng = np.random.default_rng(bits)
    n = 70_001  # whole 64-row blocks and a partial one
    values = rng.integers(0, 2**bits, n).astype(np.float64)
    if nulls:
        values[rng.random(n) < 0.05] = np.nan
    other = rng.integers(0, 300, n)
    app = App.from_tables({"T": {"V": values, "W": other}})
    symbols = app.symbols("V")
    # Decoding agrees with the values (the block path and the per-row path).
    idx = app.table("T").column_indices("V")
    decoded = np.where(idx < 0, np.nan, np.asarray(symbols, dtype=np.float64)[idx])
    assert np.array_equal(decoded, values, equal_nan=True)
    chosen = [float(x) for x in rng.choice(symbols, max(1, len(symbols) // 3), replace=False)]
    mask = np.isin(values, chosen)
    with app.session() as s:
        s.select("V", chosen)
        assert s.possible_rows("T") == int(mask.sum())
        assert set(s.state("W")["possible"]) == set(np.unique(other[mask]).tolist())
        s.select("W", [int(x) for x in other[:50]])
        both = mask & np.isin(other, other[:50])
        assert s.possible_rows("T") == int(both.sum())
        want = set(
            np.unique(values[np.isin(other, other[:50]) & ~np.isnan(values)]).tolist()
        ) - set(chosen)
        assert set(s.state("V")["alternative"]) == want


@pytest.mark.parametrize("bits", range(1, 18))  # the widths a code set covers
@pytest.mark.parametrize("nulls", [False, True])
def test_a_few_selected_values_find_their_rows_at_every_bit_width(bits, nulls) -> None:
    # Up to 64 selected values of a column of up to 16 bits are matched on AVX2 in 16-bit
    # lanes: one to four by comparing each row's code with theirs (the commonest selection: a
    # click on a value), more by a hash of the code to a slot's candidates; more than 64 by a
    # look-up of the code. Each count around those bounds, with the value of the largest and
    # of the smallest code among them, and the NULL rows (code 0) never selected.
    rng = np.random.default_rng(100 + bits)
    n = 70_001  # whole 64-row blocks and a partial one
    values = rng.integers(0, 2**bits, n).astype(np.float64)
    if nulls:
        values[rng.random(n) < 0.05] = np.nan
    app = App.from_tables({"T": {"V": values, "Row": np.arange(n)}})
    symbols = [float(x) for x in app.symbols("V")]
    with app.session() as s:
        for count in (1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 63, 64, 65):
            if count >= len(symbols):
                continue
            for chosen in (symbols[:count], symbols[-count:], list(rng.choice(symbols, count))):
                if len(set(chosen)) < count:
                    continue
                s.select("V", chosen)
                mask = np.isin(values, chosen)
                assert s.possible_rows("T") == int(mask.sum()), (count, chosen)
                rows = s.indices("Row")  # Row's symbols are its rows in order
                assert np.array_equal(np.sort(rows), np.flatnonzero(mask)), (count, chosen)


def test_a_few_selected_values_of_a_full_sixteen_bit_column() -> None:
    # 65,535 values and NULL fill every code of 16 bits, 0xFFFF (the last value's) included: a
    # hashed match's empty candidates must equal no row's code of their slot.
    rng = np.random.default_rng(16)
    first_seen = rng.permutation(65_535)  # symbol i is the value first_seen[i], code i + 1
    tail = rng.integers(0, 65_535, 60_000).astype(np.float64)
    tail[rng.random(len(tail)) < 0.02] = np.nan
    tail[rng.random(len(tail)) < 0.02] = first_seen[-1]  # code 0xFFFF's rows, here and there
    values = np.concatenate([first_seen.astype(np.float64), tail])
    app = App.from_tables({"T": {"V": values, "Row": np.arange(len(values))}})
    symbols = [float(x) for x in app.symbols("V")]
    assert app.table("T").column_indices("V").max() == 65_534
    with app.session() as s:
        for count in (2, 5, 9, 40, 64):
            spread = list(rng.choice(symbols[:-1], count, replace=False))
            for chosen in (symbols[:count], symbols[-count:], spread):
                s.select("V", chosen)
                mask = np.isin(values, chosen)
                rows = s.indices("Row")
                assert np.array_equal(np.sort(rows), np.flatnonzero(mask)), (count, chosen)


@pytest.mark.parametrize("spacing", [1, 2_000, 60_000])
def test_a_narrow_selection_gives_every_answer_of_its_rows(spacing) -> None:
    # A selected set keeps a summary of which of its 64-row words hold rows; the counts, the
    # next field's values and a cube read the rows through it. Rows far apart (one word in
    # hundreds), rows bunched into few words, the table's last row (in its partial word), and
    # a second selection in the same table (a set matched within the first) must all read
    # the same rows as numpy.
    rng = np.random.default_rng(spacing)
    n = 1_000_037
    key = rng.integers(1, 1_000, n)
    picked = np.arange(0, n, spacing)[:150]
    key[picked] = 0
    key[n - 1] = 0
    other = rng.integers(0, 300, n)
    amount = rng.integers(0, 1_000, n).astype(np.float64)
    app = App.from_tables(
        {"T": {"Key": key, "Other": other, "Amount": amount, "Row": np.arange(n)}}
    )

    def check(s: assoc.Session, mask: np.ndarray) -> None:
        assert s.possible_rows("T") == int(mask.sum())
        assert np.array_equal(np.sort(s.indices("Row")), np.flatnonzero(mask))
        assert sorted(s.state("Other")["possible"] + s.state("Other")["selected"]) == sorted(
            int(x) for x in np.unique(other[mask])
        )
        cube = s.hypercube(["Other"], ["Sum(Amount)", "Count(Amount)"])
        got = {row[0]: (row[1], row[2]) for row in cube.rows}
        want = {
            int(v): (float(amount[mask & (other == v)].sum()), int((mask & (other == v)).sum()))
            for v in np.unique(other[mask])
        }
        assert got == want

    with app.session() as s:
        s.select("Key", [0])
        mask = key == 0
        check(s, mask)
        chosen = [int(x) for x in np.unique(other[mask])[:5]]
        s.select("Other", chosen)
        check(s, mask & np.isin(other, chosen))


@pytest.mark.parametrize("bits", range(18, 23))  # AVX2 decodes up to 21 bits, wider portably
def test_wide_columns_decode_and_select_at_every_bit_width(bits) -> None:
    # Columns of 2^(bits-1) and more distinct values (ids), with NULLs: their indexes decode
    # to the values at every width the vector decoder takes and the first it leaves, the last
    # partial block included, and a selection of some of them finds their rows.
    rng = np.random.default_rng(bits)
    n = 2 ** (bits - 1) * 103 // 100 + 4099
    values = rng.permutation(n).astype(np.float64)
    values[rng.random(n) < 0.01] = np.nan
    app = App.from_tables({"T": {"V": values}})
    assert app._impl.bit_width("T", "V") == bits
    symbols = np.asarray(app.symbols("V"), dtype=np.float64)
    idx = app.table("T").column_indices("V")
    decoded = np.where(idx < 0, np.nan, symbols[np.maximum(idx, 0)])
    assert np.array_equal(decoded, values, equal_nan=True)
    chosen = [float(x) for x in rng.choice(symbols, 1000, replace=False)]
    with app.session() as s:
        s.select("V", chosen)
        assert s.possible_rows("T") == int(np.isin(values, chosen).sum())


def test_a_zero_cache_limit_caches_nothing() -> None:
    app = App.from_tables({"T": {"A": [1, 2, 3], "B": ["x", "y", "x"]}})
    limit = assoc.cache_info()["limit"]
    try:
        assoc.set_cache_limit(0)
        assert assoc.cache_info()["entries"] == 0
        before = counters()["cache"]
        with app.session() as s:
            s.clear()  # the empty state: zero bytes, still not cached
            s.select("B", ["x"])
            s.select("B", ["x"])
            assert s.counts("A")["possible"] == 2
        after = counters()["cache"]
        assert after["added"] == before["added"]
        assert after["hits"] == before["hits"]
        assert after["lookups"] > before["lookups"]
        assert assoc.cache_info()["entries"] == 0
    finally:
        assoc.set_cache_limit(limit)


def test_sessions_in_parallel_threads_agree_with_one_thread() -> None:
    rng = np.random.default_rng(11)
    n = 200_000
    app = App.from_tables(
        {
            "Fact": {"K": rng.integers(0, 5000, n), "P": rng.integers(0, 300, n)},
            "Dim": {"K": np.arange(5000), "R": rng.integers(0, 40, 5000)},
        }
    )
    plans = [[int(x) for x in rng.choice(40, 3, replace=False)] for _ in range(16)]

    def run(regions: list[int]) -> tuple[int, dict[str, int]]:
        with app.session("parallel") as s:
            s.select("R", regions)
            s.select("P", list(range(0, 300, 7)))
            return s.possible_rows("Fact"), s.counts("R")

    assoc._core.clear_cache()
    alone = [run(p) for p in plans]
    assoc._core.clear_cache()
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(run, plans * 3))
    assert together == alone * 3


@pytest.mark.parametrize("share", [0.005, 0.1, 0.6])
@pytest.mark.parametrize("wide", [False, True])
def test_fields_selected_in_one_table_agree_with_numpy(share, wide) -> None:
    # Each further selected field of a table is matched only within the rows the others leave:
    # blocks without such rows are skipped, blocks with few are read row by row, the rest
    # decoded whole. Few to many rows per block, a narrow and a wide (bitset) column, NULLs,
    # and a last partial block all agree with numpy.
    rng = np.random.default_rng(int(share * 1000) + wide)
    n = 150_037
    a = rng.integers(0, 1000, n)
    b = rng.integers(0, 100_000 if wide else 40_000, n).astype(np.float64)
    b[rng.random(n) < 0.02] = np.nan
    d = rng.integers(0, 3, n)
    app = App.from_tables({"T": {"A": a, "B": b, "D": d}})
    chosen_a = [int(x) for x in rng.choice(1000, max(1, int(1000 * share)), replace=False)]
    symbols_b = np.asarray(app.symbols("B"), dtype=np.float64)
    chosen_b = [float(x) for x in rng.choice(symbols_b, len(symbols_b) // 2, replace=False)]
    with app.session() as s:
        s.select("A", chosen_a)
        s.select("B", chosen_b)
        mask = np.isin(a, chosen_a) & np.isin(b, chosen_b)
        assert s.possible_rows("T") == int(mask.sum())
        assert set(s.state("D")["possible"]) == set(np.unique(d[mask]).tolist())
        s.select("D", [1])
        mask &= d == 1
        assert s.possible_rows("T") == int(mask.sum())
        # The selected values of A still on a possible row are the ones numpy finds there.
        symbols_a = np.asarray(app.symbols("A"))
        on_rows = set(symbols_a[s.indices("A", "selected")].tolist()) - set(
            symbols_a[s.indices("A", "selected_excluded")].tolist()
        )
        assert on_rows == set(np.unique(a[mask]).tolist())


def test_the_portable_match_kernel_agrees_with_numpy_too() -> None:
    # Where the CPU has AVX-512 (VBMI) or AVX2, columns of widths 3 and 5 to 17 are matched by
    # a vector kernel (decoded up to 17 or 21 bits), and a block's values on a row set packed by
    # another; ASSOC_SIMD=0 turns them off. The width, one-table and row-set checks, again
    # without them, and a selected set's summary of its words made without AVX2. (Width 22
    # is decoded portably in every run: no kernel to leave out.)
    assert_pass_without_simd(
        "test_selections.py",
        "(every_bit_width and not width[22]) or fields_selected_in_one_table"
        " or decodes_every_block or values_on_the_rows_of_another or a_few_selected_values"
        " or narrow_selection_gives_every_answer",
    )


def test_the_avx2_kernels_agree_with_numpy_where_avx512_is_there_too() -> None:
    # A CPU with AVX-512 runs its AVX-512 kernels; ASSOC_SIMD=avx2 runs the AVX2 ones (a CPU
    # without AVX-512 runs them by default): every width again, and the row sets packed.
    assert_pass_with_avx2_kernels(
        "test_selections.py",
        "(every_bit_width and not width[22]) or decodes_every_block"
        " or values_on_the_rows_of_another or a_few_selected_values",
    )


@pytest.mark.parametrize("linked", [False, True])
def test_a_fields_own_selection_states_agree_with_numpy_once_its_values_are_known(
    linked,
) -> None:
    # Once a field's values on all rows are known (a list's layout before any selection), a
    # selection of that field alone gives its states from those values, without a scan of the
    # rows; with a second selection in its table, the rows are scanned again. Both agree with
    # numpy, in a table alone and in one linked to another.
    rng = np.random.default_rng(17 + linked)
    n = 70_001
    customer = rng.integers(0, 3000, n)
    region = customer % 13
    amount = rng.integers(0, 400, n)
    tables: dict[str, dict[str, Any]] = {
        "Sales": {"Customer": customer, "Region": region, "Amount": amount}
    }
    if linked:
        tables["Regions"] = {"Region": np.arange(10), "Manager": [f"m{i % 4}" for i in range(10)]}
    app = App.from_tables(tables)
    symbols = {f: np.asarray(app.symbols(f)) for f in ("Customer", "Amount")}
    present = set(np.unique(customer).tolist())

    def codes_of(field: str, values: set[int], code: int) -> np.ndarray:
        return np.where(np.isin(symbols[field], list(values)), code, EXCLUDED)

    with app.session() as s:
        for field in ("Customer", "Region", "Amount"):
            s.state_codes(field)
        for picks in ([5], [5, 77, 2999], list(range(0, 3000, 7))):
            s.clear()
            s.select("Customer", picks)
            rows = np.isin(customer, picks)  # Regions leaves Sales' rows as they are
            assert s.possible_rows("Sales") == int(rows.sum())
            kept = set(np.unique(customer[rows]).tolist())
            want = np.where(
                np.isin(symbols["Customer"], list(kept)),
                SELECTED,
                np.where(np.isin(symbols["Customer"], picks), SELECTED_EXCLUDED, ALTERNATIVE),
            )
            np.testing.assert_array_equal(s.state_codes("Customer", True), want)
            np.testing.assert_array_equal(
                s.state_codes("Amount"), codes_of("Amount", set(amount[rows].tolist()), OPTION)
            )
            s.select("Amount", [int(amount[rows][0])])
            rows &= amount == amount[rows][0]
            kept = set(np.unique(customer[rows]).tolist())
            selected = codes_of("Customer", kept, SELECTED)
            excluded_picks = np.isin(symbols["Customer"], sorted(set(picks) - kept))
            selected[excluded_picks] = SELECTED_EXCLUDED
            np.testing.assert_array_equal(s.state_codes("Customer"), selected)
            assert present >= kept


@pytest.mark.parametrize("share", [0.02, 0.15, 0.3, 0.5, 0.99, 1.0])
def test_a_fields_values_on_the_rows_of_another_fields_selection_agree_with_numpy(share) -> None:
    # A field's values on the rows a selection leaves: blocks holding few of those rows are read
    # row by row, blocks holding more are decoded whole and only their rows' values taken, full
    # blocks all. With nearly every row a distinct value, one row taken for another shows.
    rng = np.random.default_rng(int(share * 100))
    n = 200_003  # a last, partial block
    a = rng.integers(0, 100, n)
    b = rng.permutation(n) + 1_000_000
    app = App.from_tables({"T": {"A": a, "B": b}})
    chosen = [int(x) for x in rng.choice(100, max(1, round(100 * share)), replace=False)]
    symbols_b = np.asarray(app.symbols("B"))
    with app.session() as s:
        s.select("A", chosen)
        mask = np.isin(a, chosen)
        assert set(symbols_b[s.indices("B", "possible")].tolist()) == set(b[mask].tolist())
        assert s.counts("B")["possible"] == int(mask.sum())


@pytest.mark.parametrize("dense_run", [3, 16, 17, 40])
def test_values_on_runs_of_dense_and_sparse_blocks_agree_with_numpy(dense_run) -> None:
    # Blocks holding many rows of the set are decoded in runs of up to 16 blocks, each block's
    # rows then taken from the run's codes: runs shorter and longer than that, between runs of
    # sparse blocks, and one that ends at the table's last, partial block.
    rng = np.random.default_rng(dense_run)
    n = 64 * (dense_run + 11) * 9 + 37
    block = np.arange(n) // 64
    dense = block % (dense_run + 11) < dense_run
    a = np.where(dense, rng.integers(0, 3, n), rng.integers(3, 400, n))
    a[-37:] = rng.integers(0, 3, 37)  # the partial block's rows are of the set too
    b = rng.permutation(n) + 1_000_000
    app = App.from_tables({"T": {"A": a, "B": b}})
    symbols_b = np.asarray(app.symbols("B"))
    chosen = [0, 1, 2, 3]  # the sparse blocks hold a row of the set here and there
    with app.session() as s:
        s.select("A", chosen)
        mask = np.isin(a, chosen)
        assert set(symbols_b[s.indices("B", "possible")].tolist()) == set(b[mask].tolist())
        assert s.counts("B")["possible"] == int(mask.sum())


@pytest.mark.parametrize("last_value_at", ["first_rows", "last_rows", "no_kept_row"])
@pytest.mark.parametrize("nulls", [False, True])
def test_a_scan_stops_when_its_tasks_together_found_every_value(
    engine_threads, last_value_at, nulls
) -> None:
    # A scan for a wide field's values on a row set is split in tasks (two per thread), none
    # of which sees every value, while together the first ones may. Once together they hold
    # every value the column holds the rest stop; NULL is no value there, and a value met only
    # by a later task, or on no row of the set, must come out exactly.
    n, values = 640_000, 2000
    v: list[int | None] = [i % (values - 1) for i in range(n)]  # all values but the last
    if nulls:
        v[: n // 4 : 7] = [None] * len(range(0, n // 4, 7))
    kept = np.ones(n, dtype=np.int64)
    kept[3::11] = 0
    at = {"first_rows": 5, "last_rows": n - 5, "no_kept_row": n - 6}[last_value_at]
    v[at] = values - 1
    kept[at] = last_value_at != "no_kept_row"
    app = App.from_tables({"T": {"V": v, "Kept": kept}})
    symbols = list(app.symbols("V"))
    with app.session() as s:
        s.indices("V", "possible")  # the column's own values known: the scan's target
        s.select("Kept", [1])
        got = {symbols[i] for i in s.indices("V", "possible")}
    want = {x for x, k in zip(v, kept, strict=True) if k and x is not None}
    assert got == want
    assert ((values - 1) in got) == (last_value_at != "no_kept_row")


@pytest.mark.parametrize("rare_at", ["end", "start", "nowhere"])
@pytest.mark.parametrize("nulls", [False, True])
@pytest.mark.parametrize("known", [False, True])
def test_a_scan_for_few_values_finds_each_however_late_it_comes(rare_at, nulls, known) -> None:
    # A scan for a field's values on a row set stops once it has found every value its column
    # holds (a dimension of few values over many rows): all of the field's symbols, or the
    # column's own values once those are known (`known`: asked before the selection). A value on
    # one row only, at the table's end or start, or on no row of the set, must still be found or
    # left out exactly; so must a value only the field's other table holds, and NULLs.
    rng = np.random.default_rng(3 if nulls else 4)
    n = 600_007  # several tasks per scan, and a last, partial block
    region = rng.integers(0, 12, n).astype(object)
    keep = rng.random(n) < 0.5
    rare_row = {"end": n - 1, "start": 0, "nowhere": n - 2}[rare_at]
    keep[rare_row] = rare_at != "nowhere"
    if nulls:
        region[rng.random(n) < 0.05] = None
    region[rare_row] = 99  # the one row of value 99
    app = App.from_tables(
        {
            # Code: Sales' alone; Region: also in Regions, with a value no Sales row has.
            "Sales": {"Region": list(region), "Code": list(region), "Kept": keep.astype(np.int64)},
            "Regions": {"Region": [0, 1, 99, 500], "Name": ["a", "b", "c", "d"]},
        }
    )
    with app.session() as s:
        if known:
            for field in ("Region", "Code"):
                s.indices(field, "possible")
        for kept in (1, 0):
            s.clear()
            s.select("Kept", [kept])
            rows = keep == bool(kept)
            assert s.possible_rows("Sales") == int(rows.sum())
            want = {v for v in region[rows] if v is not None}
            for field in ("Region", "Code"):
                symbols = list(app.symbols(field))
                got = {symbols[i] for i in s.indices(field, "possible")}
                assert got == want, field
                assert (99 in got) == ((rare_at != "nowhere") == bool(kept)), field
