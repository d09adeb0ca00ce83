"""JOIN, KEEP, MAPPING, CROSSTABLE, GROUP BY, ORDER BY and WHERE Exists against expectations
computed in plain Python over the same rows."""

from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import pytest

import assoc
from assoc.script import ScriptError, check_syntax


def rows_of(app: assoc.App, table: str) -> list[tuple]:
    t = app.table(table)
    return list(zip(*[t.column(f) for f in t.fields], strict=True))


def inline(fields: list[str], rows: list[tuple]) -> str:
    body = "\n".join(", ".join("" if v is None else str(v) for v in r) for r in rows)
    return "INLINE [\n" + ", ".join(fields) + "\n" + body + "\n]"


RNG = random.Random(11)
FACT = [(RNG.randint(1, 30), RNG.choice("pqrs"), RNG.randint(1, 99)) for _ in range(300)]
DIM = [(k, f"name{k}") for k in range(5, 40)] + [(7, "seven-again")]


def _join(how: str) -> list[tuple]:
    """Qlik's join over the shared field k: fact (k, c, v) with dim (k, n)."""
    by_k = defaultdict(list)
    for k, n in DIM:
        by_k[k].append(n)
    out = []
    for k, c, v in FACT:
        names = by_k.get(k, [])
        if names:
            out += [(k, c, v, n) for n in names]
        elif how in ("left", "outer"):
            out.append((k, c, v, None))
    if how in ("right", "outer"):
        fact_keys = {k for k, _, _ in FACT}
        out += [(k, None, None, n) for k, n in DIM if k not in fact_keys]
    return out


@pytest.mark.parametrize("how", ["LEFT", "RIGHT", "INNER", "OUTER", ""])
def test_joins_match_on_the_shared_field(how: str) -> None:
    script = f"""
    Fact: LOAD * {inline(["k", "c", "v"], FACT)};
    Other: LOAD * {inline(["x"], [(1,), (2,)])};
    {how} JOIN (Fact) LOAD * {inline(["k", "n"], DIM)};
    """
    app = assoc.App.from_script(script)
    assert app.tables == ["Fact", "Other"]
    assert app.table("Fact").fields == ["k", "c", "v", "n"]
    expected = _join(how.lower() or "outer")
    assert sorted(rows_of(app, "Fact"), key=repr) == sorted(expected, key=repr)


def test_join_without_a_table_name_joins_the_last_table_and_no_shared_field_crosses() -> None:
    script = """
    A: LOAD * INLINE [
    a
    1
    2
    ];
    JOIN LOAD * INLINE [
    b
    x
    y
    z
    ];
    """
    app = assoc.App.from_script(script)
    assert app.tables == ["A"]
    assert sorted(rows_of(app, "A")) == [(a, b) for a in (1, 2) for b in "xyz"]


def test_join_on_two_shared_fields_and_a_null_key_matches_nothing() -> None:
    script = """
    A: LOAD * INLINE [
    k1, k2, a
    1, x, A1
    1, y, A2
    2, x, A3
    , x, A4
    ];
    LEFT JOIN LOAD * INLINE [
    k1, k2, b
    1, y, B1
    2, x, B2
    , x, B3
    ];
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "A") == [
        (1, "x", "A1", None),
        (1, "y", "A2", "B1"),
        (2, "x", "A3", "B2"),
        (None, "x", "A4", None),
    ]


@pytest.mark.parametrize("how", ["LEFT", "RIGHT", "INNER"])
def test_keep_cuts_tables_to_matching_rows_and_keeps_them_apart(how: str) -> None:
    script = f"""
    Fact: LOAD * {inline(["k", "c", "v"], FACT)};
    Dim: {how} KEEP (Fact) LOAD * {inline(["k", "n"], DIM)};
    """
    app = assoc.App.from_script(script)
    assert app.tables == ["Fact", "Dim"]
    fact_keys = {k for k, _, _ in FACT}
    dim_keys = {k for k, _ in DIM}
    fact = [r for r in FACT if how == "LEFT" or r[0] in dim_keys]
    dim = [r for r in DIM if how == "RIGHT" or r[0] in fact_keys]
    assert rows_of(app, "Fact") == fact
    assert rows_of(app, "Dim") == dim


def test_mapping_load_applymap_and_map_using() -> None:
    script = f"""
    Names: MAPPING LOAD * {inline(["k", "n"], DIM)};
    MAP c USING Letters;
    """
    with pytest.raises(ScriptError) as err:
        assoc.App.from_script(script)
    assert "Letters" in err.value.message
    assert (err.value.line, err.value.column) == (5 + len(DIM), 5)
    script = f"""
    Names: MAPPING LOAD * {inline(["k", "n"], DIM)};
    Letters: MAPPING LOAD * INLINE [
    from, to
    p, P
    q, Q
    ];
    MAP c USING Letters;
    Fact: LOAD k, c, ApplyMap('Names', k) AS a, ApplyMap('Names', k, 'none') AS b,
        ApplyMap('Names', k + 100, k * 2) AS d
        {inline(["k", "c", "v"], FACT)};
    """
    app = assoc.App.from_script(script)
    assert app.tables == ["Fact"]  # mapping tables are not in the model
    first = {}
    for k, n in DIM:
        first.setdefault(k, n)
    expected = [
        ({"p": "P", "q": "Q"}.get(c, c), first.get(k, k), first.get(k, "none"), k * 2)
        for k, c, _ in FACT
    ]
    assert [r[1:] for r in rows_of(app, "Fact")] == expected


def test_crosstable_turns_columns_into_rows() -> None:
    months = ["Jan", "Feb", "Mar"]
    data = [(r, f"s{r}", *(RNG.randint(1, 9) for _ in months)) for r in range(1, 6)]
    script = f"""
    Sales: CROSSTABLE (Month, Amount, 2) LOAD * {inline(["id", "store", *months], data)};
    """
    app = assoc.App.from_script(script)
    assert app.table("Sales").fields == ["id", "store", "Month", "Amount"]
    expected = [(r[0], r[1], m, r[2 + i]) for r in data for i, m in enumerate(months)]
    assert rows_of(app, "Sales") == expected


def test_group_by_aggregations() -> None:
    script = f"""
    Fact: LOAD * {inline(["k", "c", "v"], FACT)};
    G: LOAD c, Sum(v) AS s, Count(v) AS n, Min(v) AS lo, Max(v) AS hi, Avg(v) AS av,
        Count(DISTINCT k) AS nk, Sum(DISTINCT k) AS sk, FirstValue(k) AS fk, LastValue(k) AS lk,
        Concat(k, ',', v) AS ck, MinString(c & k) AS ms, MaxString(c & k) AS xs,
        Only(c) AS oc, Sum(v) / Count(v) * 2 AS twice
    RESIDENT Fact GROUP BY c;
    All: LOAD Sum(v) AS total, Count(v) AS rows, Only(c) AS only_c RESIDENT Fact;
    """
    app = assoc.App.from_script(script)
    groups: dict[str, list[tuple]] = defaultdict(list)
    for r in FACT:
        groups[r[1]].append(r)
    expected = []
    for c in sorted(groups):
        g = groups[c]
        vs = [v for _, _, v in g]
        ks = [k for k, _, _ in g]
        texts = [f"{c}{k}" for k in ks]
        by_weight = [k for k, _, v in sorted(g, key=lambda r: r[2])]
        expected.append(
            (
                c, sum(vs), len(vs), min(vs), max(vs), sum(vs) / len(vs), len(set(ks)),
                sum(set(ks)), ks[0], ks[-1], ",".join(map(str, by_weight)), min(texts),
                max(texts), c, sum(vs) / len(vs) * 2,
            )
        )  # fmt: skip
    got = sorted(rows_of(app, "G"))
    assert [r[:10] + r[11:] for r in got] == [r[:10] + r[11:] for r in expected]
    # Concat with a sort weight: equal weights keep load order.
    assert [r[10] for r in got] == [r[10] for r in expected]
    assert rows_of(app, "All") == [(sum(v for *_, v in FACT), len(FACT), None)]


def test_group_by_two_fields_and_a_field_neither_grouped_nor_aggregated() -> None:
    script = f"""
    Fact: LOAD * {inline(["k", "c", "v"], FACT)};
    G: LOAD c, k, Sum(v) AS s RESIDENT Fact GROUP BY c, k;
    """
    app = assoc.App.from_script(script)
    sums: dict[tuple, int] = defaultdict(int)
    for k, c, v in FACT:
        sums[(c, k)] += v
    assert sorted(rows_of(app, "G")) == sorted((c, k, s) for (c, k), s in sums.items())
    with pytest.raises(ScriptError) as err:
        assoc.App.from_script(
            f"Fact: LOAD * {inline(['k', 'c', 'v'], FACT)};\n"
            "G: LOAD c, v, Sum(v) AS s RESIDENT Fact GROUP BY c;"
        )
    assert "neither aggregated nor in GROUP BY" in err.value.message
    assert (err.value.line, err.value.column) == (4 + len(FACT), 12)


def test_order_by_on_a_resident_load() -> None:
    script = f"""
    Fact: LOAD * {inline(["k", "c", "v"], FACT)};
    S: NOCONCATENATE LOAD k, c, v, RecNo() AS r RESIDENT Fact ORDER BY c DESC, v, k;
    """
    app = assoc.App.from_script(script)
    order = sorted(range(len(FACT)), key=lambda i: (-ord(FACT[i][1]), FACT[i][2], FACT[i][0]))
    assert [r[:3] for r in rows_of(app, "S")] == [FACT[i] for i in order]


def test_first_loads_at_most_n_records_of_any_load() -> None:
    n = 7
    script = f"""
    Fact: FIRST {n} LOAD * {inline(["k", "c", "v"], FACT)};
    Big: NOCONCATENATE FIRST (2 + 3) LOAD k, c, v RESIDENT Fact WHERE v > 0 AND c <> 'q';
    CONCATENATE (Big) FIRST 0 LOAD k, c, v RESIDENT Fact;
    Gen: FIRST 4 LOAD RecNo() AS g AUTOGENERATE 1000;
    Pre: FIRST 3 LOAD k * 10 AS k10; LOAD k RESIDENT Fact WHERE k > 10;
    Map: MAPPING FIRST 1 LOAD * {inline(["a", "b"], [(1, "one"), (2, "two")])};
    Mapped: LOAD ApplyMap('Map', x, '-') AS y {inline(["x"], [(1,), (2,)])};
    All: FIRST 1000 LOAD k AS kk RESIDENT Fact;
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "Fact") == FACT[:n]
    big = [r for r in FACT[:n] if r[2] > 0 and r[1] != "q"][:5]
    assert big
    assert rows_of(app, "Big") == big  # and FIRST 0 added nothing to it
    assert rows_of(app, "Gen") == [(1,), (2,), (3,), (4,)]
    assert rows_of(app, "Pre") == [(r[0] * 10,) for r in FACT[:n] if r[0] > 10][:3]
    assert rows_of(app, "Mapped") == [("one",), ("-",)]
    assert len(rows_of(app, "All")) == n


def _quoted_csv(rows: int, spans: bool = True) -> tuple[str, list[tuple]]:
    """A CSV of quoted texts, every third spanning two lines (`spans`, as msq quoting reads
    them) or holding the delimiter, and the records it holds."""
    mark = "\n" if spans else ","
    records = [(i, f"line {i}{mark}more" if i % 3 == 0 else f"t{i}", i * 2) for i in range(rows)]
    body = "".join(f'{k},"{t}",{v}\n' for k, t, v in records)
    return "k,t,v\n" + body, records


@pytest.mark.parametrize("quoting", ["", ", msq"])
def test_first_reads_a_files_first_records_whatever_lines_they_span(tmp_path, quoting) -> None:
    # FIRST n of a load that keeps each record it reads reads the file only as far as its
    # first records reach: the records at every n around quoted fields that span lines (msq)
    # or hold the delimiter are those of the whole file, and a WHERE (which may need any
    # record) still reads on.
    text, records = _quoted_csv(400, spans=bool(quoting))
    (tmp_path / "q.csv").write_text(text)
    header = "junk line\nmore junk\n" + text
    (tmp_path / "h.csv").write_text(header)
    source = f"FROM [lib://d/q.csv] (txt, embedded labels{quoting})"
    for n in (0, 1, 2, 3, 4, 5, 6, 29, 30, 31, 399, 400, 401):
        script = f"""
        T: FIRST {n} LOAD k, t, v {source};
        W: FIRST 3 LOAD k AS wk, v AS wv {source} WHERE k > 100;
        H: FIRST {n} LOAD k AS hk, t AS ht FROM [lib://d/h.csv] (txt, header is 2 lines{quoting});
        """
        app = assoc.App.from_script(script, folders={"d": str(tmp_path)})
        assert rows_of(app, "T") == records[:n], n
        assert rows_of(app, "W") == [(k, v) for k, _, v in records if k > 100][:3]
        assert rows_of(app, "H") == [(k, t) for k, t, _ in records][:n], n


def test_first_of_a_large_file_parses_only_the_lines_it_needs(tmp_path) -> None:
    # The prefix read: 200,000 records, 10 wanted; a field spanning lines just past them.
    from assoc.script import syntax
    from assoc.script.files import read_file
    from assoc.script.numbers import DEFAULTS, Interpretation

    text, records = _quoted_csv(200_000)
    path = tmp_path / "big.csv"
    path.write_text(text)
    fmt = syntax.FileFormat(kind="txt", quoting="msq")
    for wanted in (10, 11, 12, 1000):
        frame = read_file(path, fmt, "Big", Interpretation(DEFAULTS), records=wanted)
        assert wanted < frame.rows < 10 * wanted + 10
        k = frame.column("k")
        assert k.symbols.nums[k.codes[:wanted]].tolist() == [r[0] for r in records[:wanted]]
    assert read_file(path, fmt, "Big", Interpretation(DEFAULTS)).rows == 200_000
    assert read_file(path, fmt, "Big", Interpretation(DEFAULTS), records=300_000).rows == 200_000


def test_where_exists_sees_earlier_tables_and_rows_of_the_same_load() -> None:
    keys = [RNG.randint(1, 20) for _ in range(200)]
    script = f"""
    Known: LOAD * INLINE [
    k
    3
    5
    7
    ];
    New: LOAD k AS j, k {inline(["k"], [(k,) for k in keys])} WHERE NOT Exists(k);
    Again: LOAD k AS m {inline(["k"], [(k,) for k in keys])} WHERE Exists(k, k);
    Doubled: LOAD k * 2 AS d {inline(["k"], [(k,) for k in keys])} WHERE Exists(j, k * 2);
    """
    app = assoc.App.from_script(script)
    seen = {3, 5, 7}
    expected_new = []
    for k in keys:
        if k not in seen:
            expected_new.append((k, k))
            seen.add(k)
    assert rows_of(app, "New") == expected_new
    assert rows_of(app, "Again") == [(k,) for k in keys]
    js = {k for k, _ in expected_new}
    assert rows_of(app, "Doubled") == [(k * 2,) for k in keys if k * 2 in js]


def test_new_constructs_report_syntax_errors_with_line_and_column() -> None:
    cases = {
        "T: LOAD a INLINE [a\n1] GROUP a;": (2, 10),
        "T: LOAD a INLINE [a\n1] ORDER BY a;": (2, 4),
        "OUTER KEEP LOAD a INLINE [a\n1];": (1, 1),
        "T: CROSSTABLE (a) LOAD a INLINE [a\n1];": (1, 17),
        "T: CROSSTABLE (a, b, x) LOAD a INLINE [a\n1];": (1, 22),
        "LEFT LOAD a INLINE [a\n1];": (1, 6),
        "T: LOAD a, Sum(b) AS n RESIDENT X GROUP BY ;": (1, 44),
        "MAP a USING;": (1, 12),
        "T: LOAD a INLINE [a\n1] WHERE a = 1 WHERE a = 2;": (2, 16),
    }
    for script, place in cases.items():
        errors = check_syntax(script)
        assert len(errors) == 1, script
        assert (errors[0].line, errors[0].column) == place, (script, errors[0])


KEYED = [(3, "a"), (1, "b"), ("x", "c"), (None, "d"), (2.5, "e"), (-4, "f"), (3, "g"), (7, "h")]
KEYED += [(1_000_000_000, "i"), ("y", "j"), (1, "k")]
ONE_PER_KEY = [(1, "one", 10), (3, None, 30), ("x", "ex", None), (2.5, "half", 25)]
ONE_PER_KEY += [
    (-4, "neg", -40),
    (99, "unused", 0),
    (None, "null key", 1),
    (1_000_000_000, "big", 9),
]


def _left_join_one_per_key() -> list[tuple]:
    by_k = {k: (n, m) for k, n, m in ONE_PER_KEY if k is not None}
    return [(k, c, *by_k.get(k, (None, None))) for k, c in KEYED]


@pytest.mark.parametrize("twice", [False, True])
def test_left_join_with_one_row_per_key_keeps_the_left_rows_in_place(twice: bool) -> None:
    """Each key on at most one right row: every left row once, in order, and the new fields'
    values in the order the rows first hold them. With a key twice on the right (one no left
    row holds) the general join runs: the same rows and values."""
    dim = ONE_PER_KEY + ([(99, "again", 1)] if twice else [])
    script = f"""
    Fact: LOAD * {inline(["k", "c"], KEYED)};
    LEFT JOIN (Fact) LOAD * {inline(["k", "n", "m"], dim)};
    """
    app = assoc.App.from_script(script)
    expected = _left_join_one_per_key()
    assert app.table("Fact").fields == ["k", "c", "n", "m"]
    assert rows_of(app, "Fact") == expected
    for i, field in ((2, "n"), (3, "m")):
        first_met = list(dict.fromkeys(r[i] for r in expected if r[i] is not None))
        assert app.symbols(field) == first_met


def test_left_join_with_one_row_per_key_on_text_keys_and_an_empty_right_side() -> None:
    script = """
    Fact: LOAD * INLINE [
    k, v
    b, 1
    a, 2
    B, 3
    b, 4
    ];
    LEFT JOIN (Fact) LOAD * INLINE [
    k, w
    a, A
    b, Bee
    ];
    Other: LOAD * INLINE [
    z, v
    1, 1
    ];
    LEFT JOIN (Other) LOAD 'q' AS z, 1 AS u AUTOGENERATE 0;
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "Fact") == [("b", 1, "Bee"), ("a", 2, "A"), ("B", 3, None), ("b", 4, "Bee")]
    assert rows_of(app, "Other") == [(1, 1, None)]


def test_group_by_one_field_of_all_kinds_of_values() -> None:
    """Numbers (whole, fractions, negative, far apart), texts and NULL as group keys: groups
    in ascending numbers, then texts as first met, then NULL; the same as grouping by that
    field and a field of one value."""
    rows = [(k, i) for i, (k, _) in enumerate(KEYED)] + [(2.5, 100), (None, 200), ("x", 300)]
    script = f"""
    Fact: LOAD *, 1 AS one {inline(["k", "v"], rows)};
    G: LOAD k, Sum(v) AS s, Count(v) AS n, Avg(v) AS a RESIDENT Fact GROUP BY k;
    H: LOAD k AS hk, one, Sum(v) AS hs, Count(v) AS hn, Avg(v) AS ha RESIDENT Fact
       GROUP BY k, one;
    """
    app = assoc.App.from_script(script)
    sums: dict[object, list[int]] = defaultdict(list)
    for k, v in rows:
        sums[k].append(v)
    numbers = sorted(k for k in sums if isinstance(k, int | float))
    texts = [k for k in sums if isinstance(k, str)]
    order = [*numbers, *texts, None]
    expected = [(k, sum(sums[k]), len(sums[k]), sum(sums[k]) / len(sums[k])) for k in order]
    assert rows_of(app, "G") == expected
    assert [(k, s, n, a) for k, _, s, n, a in rows_of(app, "H")] == expected


@pytest.mark.parametrize(
    "numbers",
    [
        [3.0, 1.0, 3.0, -4.0, 0.0, -0.0, 7.0],
        [0.5, 1.5, 2.5, 0.5],  # fractions a whole step apart
        [1e-20, 5.0, 5.000000000000001, 6.0],
        [1e17, 1e17 + 16, 1e17 + 32, 1e17],
        [1.0, 2.0, 1e9],  # far apart
        [-1e308, 1e308, 0.0],
        [*range(1000, 0, -3), 2.0, 2.0],
    ],
)
def test_value_keys_number_the_values_as_sorted(numbers: list[float]) -> None:
    from assoc.script.tableops import value_keys
    from assoc.script.values import Values

    half = len(numbers) // 2
    parts = [Values(np.array(numbers[:half])), Values(np.array(numbers[half:]))]
    (a, b), count = value_keys(parts)
    uniq, inverse = np.unique(np.array(numbers), return_inverse=True)
    assert count == len(uniq)
    assert np.concatenate([a, b]).tolist() == inverse.tolist()


def test_group_by_aggregates_skip_nulls_and_texts() -> None:
    """Sum, Avg, Min and Max take the numbers only, Count every value that is not NULL."""
    rows = [("a", 1), ("a", None), ("a", "t"), ("b", 4), ("b", 6), ("c", None), ("c", "u")]
    script = f"""
    Fact: LOAD * {inline(["k", "v"], rows)};
    G: LOAD k, Sum(v) AS s, Avg(v) AS a, Count(v) AS n, Min(v) AS lo, Max(v) AS hi
    RESIDENT Fact GROUP BY k;
    """
    app = assoc.App.from_script(script)
    assert rows_of(app, "G") == [
        ("a", 1, 1, 2, 1, 1),
        ("b", 10, 5, 2, 4, 6),
        ("c", 0, None, 1, None, None),
    ]
