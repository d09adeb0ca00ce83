"""The associative model's structure: key fields, synthetic keys, loose tables, system fields."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from assoc import App


def fields_md(app: App) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in app.metadata()["fields"]}


def tables_md(app: App) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in app.metadata()["tables"]}


def expanded_rows(app: App, table: str) -> list[dict[str, Any]]:
    """A table's rows with every synthetic key replaced by the fields it stands for."""
    t = app.table(table)
    rows = [
        dict(zip(t.model_fields, values, strict=True))
        for values in zip(*(t.column(f) for f in t.model_fields), strict=True)
    ]
    out = []
    for row in rows:
        while any(f.startswith("$Syn ") for f in row):
            syn = next(f for f in row if f.startswith("$Syn "))
            key = row.pop(syn)
            syn_table = app.table(f"{syn} Table")
            parts = [f for f in syn_table.model_fields if f != syn]
            if key is None:
                row.update(dict.fromkeys(parts))
            else:
                i = syn_table.column(syn).index(key)
                row.update({f: syn_table.column(f)[i] for f in parts})
        out.append(row)
    return out


def original_rows(columns: dict[str, list[Any]]) -> list[dict[str, Any]]:
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def as_multiset(rows: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(sorted(r.items(), key=lambda kv: kv[0])) for r in rows)


def test_key_fields_are_tagged_and_counted() -> None:
    app = App.from_tables(
        {
            "Orders": {"OrderId": [1, 2], "CustId": [1, 2], "ProdId": [5, 5]},
            "Customers": {"CustId": [1, 2, 3], "Name": ["a", "b", "c"]},
            "Products": {"ProdId": [5], "Label": ["p"]},
        }
    )
    f = fields_md(app)
    assert "$key" in f["CustId"]["tags"]
    assert "$key" in f["ProdId"]["tags"]
    assert "$key" not in f["OrderId"]["tags"]
    t = tables_md(app)
    assert t["Orders"]["no_of_key_fields"] == 2
    assert t["Customers"]["no_of_key_fields"] == 1
    assert not any(x["is_loose"] for x in t.values())


def test_a_synthetic_key_replaces_two_shared_fields() -> None:
    data = {
        "T1": {"A": [1, 2, None, 1, None], "B": ["x", "y", None, "x", "y"], "X": [1, 2, 3, 4, 5]},
        "T2": {"A": [1, 3, None], "B": ["x", "z", "q"], "Y": [5, 6, 7]},
        "T3": {"B": ["x", "y"], "Z": [0, 1]},
    }
    app = App.from_tables(data)
    assert app.tables == ["T1", "T2", "T3", "$Syn 1 Table"]
    assert app.table("T1").model_fields == ["$Syn 1", "X"]
    assert app.table("T2").model_fields == ["$Syn 1", "Y"]
    assert app.table("$Syn 1 Table").model_fields == ["$Syn 1", "A", "B"]
    f = fields_md(app)
    assert f["$Syn 1"]["tags"][:2] == ["$key", "$syn"]
    assert f["$Syn 1"]["src_tables"] == ["T1", "T2", "$Syn 1 Table"]
    assert f["A"]["src_tables"] == ["$Syn 1 Table"]
    assert f["A"]["tags"][0] == "$keypart"
    assert "$key" not in f["A"]["tags"]
    # B also links T3, so it is a key and a key part.
    assert f["B"]["src_tables"] == ["T3", "$Syn 1 Table"]
    assert f["B"]["tags"][:2] == ["$key", "$keypart"]
    t = tables_md(app)
    assert t["$Syn 1 Table"]["no_of_key_fields"] == 2
    assert t["T1"]["no_of_key_fields"] == 1
    # Each combination once; NULL parts are part of it, all-NULL is no combination.
    syn = app.table("$Syn 1 Table")
    combos = list(zip(syn.column("A"), syn.column("B"), strict=True))
    assert sorted(combos, key=repr) == sorted(
        [(1, "x"), (2, "y"), (None, "y"), (3, "z"), (None, "q")], key=repr
    )
    assert app.table("T1").column("$Syn 1")[2] is None
    assert f["$Syn 1"]["cardinal"] == 5
    # Nothing is lost: every row still has its values.
    for name in ("T1", "T2"):
        assert as_multiset(expanded_rows(app, name)) == as_multiset(original_rows(data[name]))


def test_tables_sharing_the_same_fields_share_one_synthetic_key() -> None:
    app = App.from_tables(
        {
            "T1": {"A": [1, 2], "B": [3, 4], "X": [0, 0]},
            "T2": {"A": [1], "B": [3], "Y": [0]},
            "T3": {"B": [4], "A": [2], "Z": [0]},
        }
    )
    assert app.tables == ["T1", "T2", "T3", "$Syn 1 Table"]
    assert fields_md(app)["$Syn 1"]["src_tables"] == ["T1", "T2", "T3", "$Syn 1 Table"]
    assert app.table("$Syn 1 Table").num_rows == 2


def test_overlapping_shared_sets_nest_synthetic_keys() -> None:
    data = {
        "T1": {"A": [1, 2, 3], "B": [1, 1, 2], "C": ["p", "q", "p"], "X": [1, 2, 3]},
        "T2": {"A": [1, 3, 4], "B": [1, 2, 2], "C": ["p", "p", None], "Y": [4, 5, 6]},
        "T3": {"A": [2, 4, 5], "B": [1, 2, 2], "Z": [7, 8, 9]},
    }
    app = App.from_tables(data)
    # The largest shared set (A, B, C) first; its table then shares (A, B) with T3.
    assert app.tables == ["T1", "T2", "T3", "$Syn 1 Table", "$Syn 2 Table"]
    assert app.table("T1").model_fields == ["$Syn 1", "X"]
    assert app.table("T3").model_fields == ["$Syn 2", "Z"]
    assert app.table("$Syn 1 Table").model_fields == ["$Syn 1", "$Syn 2", "C"]
    assert app.table("$Syn 2 Table").model_fields == ["$Syn 2", "A", "B"]
    f = fields_md(app)
    assert f["$Syn 2"]["src_tables"] == ["T3", "$Syn 1 Table", "$Syn 2 Table"]
    assert f["C"]["src_tables"] == ["$Syn 1 Table"]
    assert f["A"]["src_tables"] == ["$Syn 2 Table"]
    for name in ("T1", "T2", "T3"):
        assert as_multiset(expanded_rows(app, name)) == as_multiset(original_rows(data[name]))
    # No two tables share two fields any more.
    fields = {t: set(app.table(t).model_fields) for t in app.tables}
    for a in fields:
        for b in fields:
            if a < b:
                assert len(fields[a] & fields[b]) <= 1


@pytest.mark.parametrize("seed", range(20))
def test_random_shared_field_sets_lose_nothing(seed) -> None:
    rng = random.Random(seed)
    names = ["A", "B", "C", "D"]
    data = {}
    for t in range(rng.randint(2, 4)):
        cols = rng.sample(names, rng.randint(2, 4))
        n = rng.randint(1, 12)
        data[f"T{t}"] = {
            c: [None if rng.random() < 0.15 else rng.randint(0, 3) for _ in range(n)] for c in cols
        }
        data[f"T{t}"][f"V{t}"] = list(range(n))
    app = App.from_tables(data)
    for name, columns in data.items():
        assert as_multiset(expanded_rows(app, name)) == as_multiset(original_rows(columns))
        # Read as loaded, each table is its data, row for row.
        t = app.table(name)
        assert {f: t.column(f) for f in t.fields} == columns
    fields = {t: set(app.table(t).model_fields) for t in app.tables}
    for a in fields:
        for b in fields:
            if a < b:
                assert len(fields[a] & fields[b]) <= 1
    md = fields_md(app)
    for t in app.tables:
        if t.startswith("$Syn"):
            syn = t.removesuffix(" Table")
            assert md[syn]["tags"][:2] == ["$key", "$syn"]
            # Each combination once, and never all NULL.
            table = app.table(t)
            parts = [f for f in table.fields if f != syn]
            combos = list(zip(*(table.column(f) for f in parts), strict=True))
            assert len(set(combos)) == len(combos) == table.num_rows
            assert all(any(v is not None for v in c) for c in combos)


def test_a_cycle_makes_the_largest_table_loose() -> None:
    app = App.from_tables(
        {
            "A": {"K1": [1, 2], "K2": [1, 2]},
            "B": {"K2": [1, 2, 3], "K3": [1, 2, 3]},
            "C": {"K3": [1], "K1": [1]},
            "D": {"K1": [1, 2, 3, 4, 5, 6]},  # the largest, but on no cycle
        }
    )
    assert {t: x["is_loose"] for t, x in tables_md(app).items()} == {
        "A": False,
        "B": True,
        "C": False,
        "D": False,
    }


def test_two_cycles_make_tables_loose_until_the_links_form_a_forest() -> None:
    app = App.from_tables(
        {
            "A": {"K1": [1], "K2": [1]},
            "B": {"K2": [1], "K3": [1]},
            "C": {"K3": [1, 2], "K1": [1, 2]},  # cycle A-B-C
            "D": {"K3": [1, 2, 3], "K4": [1, 2, 3]},
            "E": {"K4": [1, 2, 3, 4], "K5": [1, 2, 3, 4]},
            "F": {"K5": [1, 2, 3, 4, 5], "K3": [1, 2, 3, 4, 5]},  # cycle D-E-F
        }
    )
    assert [t for t, x in tables_md(app).items() if x["is_loose"]] == ["C", "F"]


def test_no_cycle_no_loose_table() -> None:
    app = App.from_tables(
        {"A": {"K": [1, 2], "X": [1, 2]}, "B": {"K": [1], "Y": [3]}, "C": {"K": [2], "Z": [4]}}
    )
    assert not any(t["is_loose"] for t in app.metadata()["tables"])


def test_system_fields_in_metadata() -> None:
    app = App.from_tables(
        {
            "Orders": {"OrderId": [1, 2, 3], "CustId": [1, 1, 2]},
            "Customers": {"CustId": [1, 2], "Name": ["a", "b"]},
        }
    )
    md = app.metadata()
    # Data tables only; system fields come after the data fields.
    assert [t["name"] for t in md["tables"]] == ["Orders", "Customers"]
    names = [f["name"] for f in md["fields"]]
    assert names == [
        "OrderId",
        "CustId",
        "Name",
        "$Table",
        "$Field",
        "$Fields",
        "$FieldNo",
        "$Rows",
    ]
    f = fields_md(app)
    for name in ("$Table", "$Field", "$Fields", "$FieldNo", "$Rows"):
        assert f[name]["is_system"]
        assert f[name]["is_hidden"]
        assert f[name]["tags"][:2] == ["$system", "$hidden"]
        assert f[name]["src_tables"] == []
        assert "$key" not in f[name]["tags"]
    assert f["$Table"]["tags"] == ["$system", "$hidden", "$ascii", "$text"]
    assert f["$Rows"]["tags"] == ["$system", "$hidden", "$numeric", "$integer"]
    assert f["$Table"]["cardinal"] == 2
    assert f["$Field"]["cardinal"] == 3
    assert f["$FieldNo"]["total_count"] == 4  # one row per table and field
    assert not any(f[n]["is_system"] for n in ("OrderId", "CustId", "Name"))
    pairs = app.table("$$SysTable 1")
    assert list(
        zip(pairs.column("$Table"), pairs.column("$Field"), pairs.column("$FieldNo"), strict=True)
    ) == [
        ("Orders", "OrderId", 1),
        ("Orders", "CustId", 2),
        ("Customers", "CustId", 1),
        ("Customers", "Name", 2),
    ]
    per_table = app.table("$$SysTable 2")
    assert per_table.column("$Rows") == [3, 2]
    assert per_table.column("$Fields") == [2, 2]
    assert md["static_byte_size"] >= sum(x["byte_size"] for x in md["fields"]) + sum(
        x["byte_size"] for x in md["tables"]
    )


def test_system_fields_list_synthetic_key_tables() -> None:
    app = App.from_tables({"T1": {"A": [1], "B": [2]}, "T2": {"A": [1], "B": [2], "C": [3]}})
    assert app.symbols("$Table") == ["T1", "T2", "$Syn 1 Table"]
    assert app.symbols("$Field") == ["$Syn 1", "C", "A", "B"]
