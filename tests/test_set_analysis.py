"""Set analysis in hypercube measures (spec chart-expressions §2) and alternate states.

Every worked Shop example of §2 is a named test. The random tests compare the engine with a
brute-force reference written here from the spec (rows of a snowflake model with NULLs and a
synthetic key, possible rows found by searching for linking rows, modifiers applied to a copy
of the selection); it shares no code with the engine.
"""

from __future__ import annotations

import math
import random
import re
from typing import Any

import pytest

import assoc
from assoc import App
from shop import SHOP

A = {"Country": ["Sweden"]}
B = {"Country": ["Sweden", "Norway"]}
WASHER = {"Product": ["Washer"]}


@pytest.fixture(scope="module")
def shop() -> App:
    return App.from_tables(SHOP)


def one(app: App, measure: str, select: dict[str, list[Any]] | None = None) -> Any:
    with app.session() as s:
        for field, values in (select or {}).items():
            s.select(field, values)
        [row] = s.hypercube([], [measure]).rows
        return row[0]


def check(app: App, cases: list[tuple[str, dict[str, list[Any]] | None, Any]]) -> None:
    for measure, select, want in cases:
        assert one(app, measure, select) == want, (measure, select)


def test_set_operators_of_section_2_3(shop: App) -> None:
    check(
        shop,
        [
            ("Sum({1-$} Amount)", A, 95),
            ("Sum({$ + 1<Year={2020}>} Amount)", A, 115),
            ("Sum({$ * 1<Year={2020}>} Amount)", A, 10),
            ("Sum({$ / 1<Year={2020}>} Amount)", A, 105),
            ("Sum({-$} Amount)", A, 95),
            ("Sum({0} Amount)", A, 0),
            ("Sum({1} Amount)", A, 180),
            ("Sum({$} Amount)", A, 85),
        ],
    )


def test_operator_precedence_and_parentheses(shop: App) -> None:
    # * binds tighter than +; parentheses change the result.
    assert one(shop, "Sum({1<Year={2020}> + 1<Product={'Nut'}> * 1<Year={2020}>} Amount)") == 40
    assert one(shop, "Sum({(1<Year={2020}> + 1<Product={'Nut'}>) * 1<Year={2020}>} Amount)") == 40
    assert one(shop, "Sum({(1<Year={2021}> + 1<Product={'Bolt'}>) - 1<Year={2020}>} Amount)") == 140
    assert one(shop, "Sum({1<Year={2021}> + (1<Product={'Bolt'}> - 1<Year={2020}>)} Amount)") == 140


def test_modifiers_of_section_2_4(shop: App) -> None:
    check(
        shop,
        [
            ("Sum({<Year={2021}>} Amount)", A, 75),
            ("Sum({<Country={Norway}>} Amount)", A, 70),
            ("Sum({<Country=>} Amount)", A, 180),
            ("Sum({1<Year={2020}>} Amount)", A, 40),
            ('Sum({<Year={2021},Product={"N*"}>} Amount)', A, 25),
            ("Sum({<Year={2020}>} Amount)", WASHER, 0),
            ("Sum({<Year={2020},Product=>} Amount)", WASHER, 40),
            ("Only({<Customer={'Dave'}>} Country)", None, "Denmark"),
            ("Count({<Customer={'Dave'}>} DISTINCT OrderID)", None, 0),
            ('Sum({<Country={"*"}>} Amount)', None, 155),
            ("Sum({<Country=>} Amount)", None, 180),
        ],
    )


def test_empty_element_sets_give_empty_record_sets(shop: App) -> None:
    check(
        shop,
        [
            ("Sum({<Year={1800}>} Amount)", None, 0),
            ("Sum({<Product={'bolt'}>} Amount)", None, 0),
            ("Sum({<Year={}>} Amount)", None, 0),
            ("Count({<Year={}>} Amount)", None, 0),
            ("Avg({<Year={1800}>} Amount)", None, None),
            ("Max({<Year={}>} Amount)", None, None),
            ("Only({<Year={}>} Product)", None, None),
        ],
    )


def test_element_sets_of_section_2_5(shop: App) -> None:
    check(
        shop,
        [
            ('Sum({<Product={"*o*"}>} Amount)', None, 90),
            ('Sum({<Product={"b*"}>} Amount)', None, 90),
            ("Sum({<Product={[b*]}>} Amount)", None, 90),
            ("Sum({<Product={`?UT`}>} Amount)", None, 50),
            ("Sum({<Product={'bolt'}>} Amount)", None, 0),
            ("Sum({<Product={'Bolt'}>} Amount)", None, 90),
            ("Sum({<Product={'Nut', \"*olt\", Washer}>} Amount)", None, 180),
            ("Sum({<Year={2020, 2021}>} Amount)", None, 180),
            ("Sum({<Year={'2020'}>} Amount)", None, 40),
            ('Sum({<Year={">=2021"}>} Amount)', None, 140),
            ('Sum({<Amount={">=20<45"}>} Amount)', None, 115),
            ('Sum({<Product={"*"}, Amount={"<0"}>} Amount)', None, 0),
        ],
    )


def test_expression_searches_of_section_2_5(shop: App) -> None:
    check(
        shop,
        [
            ('Sum({<Customer={"=Sum(Amount)>50"}>} Amount)', None, 125),
            ('Sum({<Customer={"=Sum(Amount)>50"}>} Amount)', A, 55),
            ('Sum({<Customer={"=Sum({1} Amount)>50"}>} Amount)', A, 55),
            ('Sum({<Customer={"=Only(Country)"}>} Amount)', None, 0),  # texts are false
        ],
    )


def test_p_and_e_of_section_2_5(shop: App) -> None:
    check(
        shop,
        [
            ("Sum({<Customer=P({1<Product={'Washer'}>})>} Amount)", None, 70),
            ("Sum({<Customer=P({1<Product={'Washer'}>})>} Amount)", A, 0),
            ("Sum({<Customer=P({1<Product={'Washer'}>}), Country=>} Amount)", A, 70),
            ("Sum({<Customer=E({1<Product={'Bolt'}>})>} Amount)", None, 25),
            ("Sum({<Customer=P({1<Product={'Washer'}>} Customer)>} Amount)", None, 70),
        ],
    )


def test_implicit_operators_of_section_2_5(shop: App) -> None:
    check(
        shop,
        [
            ("Sum({<Country*={Sweden}>} Amount)", B, 85),
            ("Sum({<Country-={Sweden}>} Amount)", B, 70),
            ("Sum({<Country+={Denmark}>} Amount)", B, 155),
            ("Sum({<Country/={Sweden,Denmark}>} Amount)", B, 70),
            ("Sum({<Country={Denmark}>} Amount)", B, 0),
            # No selection in the field: its current selection is every value.
            ("Sum({<Country-={Sweden}>} Amount)", None, 70),
        ],
    )


def test_field_references_and_operators_inside_a_field(shop: App) -> None:
    with shop.session() as s:
        s.select("Year", [2020])
        # Product takes the values selected in Year: none match, so nothing.
        assert s.hypercube([], ["Sum({<Product=Year>} Amount)"]).rows == [(0,)]
        assert s.hypercube([], ["Sum({<Year=Year+{2021}>} Amount)"]).rows == [(180,)]
        assert s.hypercube([], ["Sum({<Year=(Year+{2021})-{2020}>} Amount)"]).rows == [(140,)]
        assert s.hypercube([], ["Sum({<Year=-Year>} Amount)"]).rows == [(140,)]
    # A field with no selection passes none: the target ends unrestricted.
    assert one(shop, "Sum({<Year=Product>} Amount)", {"Year": [2020]}) == 180


def test_total_and_distinct_with_sets_of_section_2_7(shop: App) -> None:
    assert one(shop, "Sum({1} TOTAL Amount)", A) == 180
    assert one(shop, "Count({<Year={2021}>} DISTINCT Product)") == 3
    with shop.session() as s:
        s.select("Country", ["Sweden"])
        rows = s.hypercube(["Customer"], ["Sum(Amount)", "Sum({1} TOTAL Amount)"]).rows
        assert rows == [("Alice", 30, 180), ("Carol", 55, 180)]


def test_inner_and_outer_sets_of_section_2_8(shop: App) -> None:
    check(
        shop,
        [
            ("{<Year={2021}>} Sum({<Product={'Bolt'}>} Amount)", None, 50),
            ("{<Year={2021}>} Sum({1<Product={'Bolt'}>} Amount)", None, 90),
            ("{<Year={2021}>} Sum(Amount)/Count(DISTINCT Customer)", None, 35),
            ("{<Year={2021}>} Sum({<Year={2020}>} Amount)", None, 40),
        ],
    )
    got = one(shop, "({<Year={2021}>} Sum(Amount)/Count(DISTINCT Customer)) - Avg(Amount)")
    assert math.isclose(got, 35 - 180 / 7)


def test_rows_come_from_each_measures_record_set(shop: App) -> None:
    with shop.session() as s:
        s.select("Country", ["Sweden"])
        rows = s.hypercube(["Customer"], ["Sum(Amount)", "Sum({1} Amount)"]).rows
    assert rows == [("Alice", 30, 30), ("Bob", 0, 70), ("Carol", 55, 55), ("Eve", 0, 25)]


def test_alternate_states(shop: App) -> None:
    with shop.session() as s:
        s.add_state("S1")
        assert s.states == ["$", "S1"]
        s.select("Country", ["Sweden"])
        s.select("Country", ["Norway"], state="S1")
        assert s.selections() == {"Country": ["Sweden"]}
        assert s.selections(state="S1") == {"Country": ["Norway"]}
        assert s.state("Customer", state="S1")["possible"] == ["Bob"]
        assert s.counts("Customer", state="S1")["possible"] == 1
        assert s.possible_rows("Orders", state="S1") == 2
        measures = [
            "Sum(Amount)",
            "Sum({S1} Amount)",
            "Sum({$} Amount)",
            "Sum({S1<Year={2021}>} Amount)",
            "Sum({S1<Country=$::Country>} Amount)",
            "Sum({$ + S1} Amount)",
        ]
        assert s.hypercube([], measures).rows == [(85, 70, 85, 40, 85, 155)]
        # An object in S1: no identifier reads S1, {$} the default state.
        assert s.hypercube([], ["Sum(Amount)", "Sum({$} Amount)"], state="S1").rows == [(70, 85)]
        # Changing one state changes what names it.
        s.select("Country", ["Denmark"], state="S1")
        assert s.hypercube([], ["Sum({S1} Amount)"]).rows == [(0,)]
        s.clear(state="S1")
        assert s.hypercube([], ["Sum({S1} Amount)"]).rows == [(180,)]
        s.remove_state("S1")
        assert s.states == ["$"]
        with pytest.raises(assoc.Error, match="unknown state 'S1'"):
            s.select("Country", ["Sweden"], state="S1")
        with pytest.raises(assoc.Error, match="unknown set identifier 'S1'"):
            s.hypercube([], ["Sum({S1} Amount)"])
        with pytest.raises(assoc.Error, match="cannot be removed"):
            s.remove_state("$")
        with pytest.raises(assoc.Error, match="not '1' or '0'"):
            s.add_state("1")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Sum({<Year={2020}} Amount)", "expected '>' to close the set modifier at position 17"),
        ("Sum({<Year 2020>} Amount)", "expected '=' .* at position 11"),
        ("Sum({<Yr={2020}>} Amount)", "unknown field 'Yr' in the set expression at position 6"),
        (
            "Sum({BM01} Amount)",
            "unknown set identifier 'BM01': no alternate state or bookmark .* at position 5",
        ),
        ("Sum({$1} Amount)", "selection history .* at position 5"),
        ("Sum({<Year={New Zealand}>} Amount)", "a value with blanks needs quotes.* at position 16"),
        ("Sum({<Year={'2020}>} Amount)", "unclosed ' at position 12"),
        ('Sum({<Year={">=x"}>} Amount)', "numeric search bound must be a number at position 15"),
        ('Sum({<Year={"=Sum(Nope)"}>} Amount)', "unknown field 'Nope'"),
        ("Sum({<Year={$(=Max(Yr))}>} Amount)", r"in \$\(=Max\(Yr\)\): .*unknown field 'Yr'"),
        ("Sum({<Year+={}, Product->} Amount)", "expected '=' .* at position 23"),
        ("Sum({$ +} Amount)", "a set identifier or modifier is missing at position 8"),
        ("Sum({1 <Year={2020}>) Amount)", "unclosed '\\{'"),
    ],
)
def test_bad_sets_name_the_position_and_the_problem(shop: App, text: str, message: str) -> None:
    with pytest.raises(assoc.Error, match=message):
        one(shop, text)


def test_search_matching_is_linear_and_any_case() -> None:
    values = ["a" * 5000 + "b", "xAy", "x?y", "ÄBC", "äbc"]
    app = App.from_tables({"T": {"F": values, "N": [1, 2, 3, 4, 5]}})
    pattern = "*" + "a*" * 40 + "c*"  # exponential for a backtracking matcher on the long value
    assert one(app, f'Sum({{<F={{"{pattern}"}}>}} N)') == 0
    assert one(app, 'Sum({<F={"x?y"}>} N)') == 5
    assert one(app, 'Sum({<F={"x**y"}>} N)') == 5
    assert one(app, 'Sum({<F={"äbc"}>} N)') == 9
    assert one(app, "Sum({<F={'äbc'}>} N)") == 5


# ---------------------------------------------------------------------------------------------
# The reference: a snowflake with a synthetic key, NULLs in keys and values.
#   Facts(K, S1, S2, A, X) - Dims(K, D, G) - Groups(G, H);  Facts - Other(S1, S2, O) on (S1, S2)

Tables = dict[str, dict[str, list[Any]]]
LINKS = [("Facts", "Dims", ("K",)), ("Dims", "Groups", ("G",)), ("Facts", "Other", ("S1", "S2"))]
SELECTABLE = {
    "A": "Facts",
    "X": "Facts",
    "K": "Facts",
    "D": "Dims",
    "G": "Dims",
    "H": "Groups",
    "O": "Other",
}


def random_tables(rng: random.Random) -> Tables:
    def pick(pool: list[Any], n: int) -> list[Any]:
        return [rng.choice(pool) for _ in range(n)]

    nf, nd, ng, no = rng.randint(3, 12), rng.randint(1, 5), rng.randint(1, 4), rng.randint(1, 5)
    return {
        "Facts": {
            "K": pick([None, 1, 2, 3, 4, 5], nf),
            "S1": pick([None, 1, 2], nf),
            "S2": pick([None, "u", "v"], nf),
            "A": pick([None, "a", "b", "c", "ab"], nf),
            "X": pick([None, 1, 2, 5, 10, -3], nf),
        },
        "Dims": {
            "K": rng.sample([1, 2, 3, 4, 6], nd),
            "D": pick([None, "p", "q", "r"], nd),
            "G": pick([None, 7, 8, 9], nd),
        },
        "Groups": {"G": rng.sample([7, 8, 9, 10], ng), "H": pick(["h1", "h2", None], ng)},
        "Other": {
            "S1": pick([None, 1, 2, 3], no),
            "S2": pick([None, "u", "v"], no),
            "O": pick(["o1", "o2"], no),
        },
    }


def rows_of(tables: Tables, t: str) -> list[dict[str, Any]]:
    cols = tables[t]
    n = len(next(iter(cols.values())))
    return [{f: cols[f][i] for f in cols} for i in range(n)]


def side_tables(t: str, away_from: str) -> set[str]:
    """The tables reached from t without passing through away_from (t included)."""
    seen, todo = {t}, [t]
    while todo:
        x = todo.pop()
        for a, b, _ in LINKS:
            for u, v in ((a, b), (b, a)):
                if u == x and v != away_from and v not in seen:
                    seen.add(v)
                    todo.append(v)
    return seen


def linked(r: dict[str, Any], u: dict[str, Any], fields: tuple[str, ...]) -> bool:
    key = tuple(r[f] for f in fields)
    if all(k is None for k in key):
        return False
    if len(fields) == 1:
        return key == (u[fields[0]],)
    return key == tuple(u[f] for f in fields)  # a synthetic key: NULL parts take part


def possible_rows(tables: Tables, sel: dict[str, list[Any]]) -> dict[str, set[int]]:
    """Per table, the rows that agree with their table's selections and link, towards every
    side holding a selection, to a row possible on that side (selection.hpp's rules)."""
    rows = {t: rows_of(tables, t) for t in tables}

    def agrees(t: str, r: dict[str, Any]) -> bool:
        return all(r[f] is not None and r[f] in vals for f, vals in sel.items() if f in tables[t])

    def has_sel(ts: set[str], link: tuple[str, ...]) -> bool:
        # A selection in a one-field key belongs to the key itself, between the two sides.
        return any(f in tables[t] for t in ts for f in sel if not (len(link) == 1 and f in link))

    def ok(t: str, r: dict[str, Any], came_from: str | None) -> bool:
        if not agrees(t, r):
            return False
        for a, b, fields in LINKS:
            for x, u in ((a, b), (b, a)):
                if x != t or u == came_from or not has_sel(side_tables(u, t), fields):
                    continue
                if not any(linked(r, ur, fields) and ok(u, ur, t) for ur in rows[u]):
                    return False
        return True

    return {t: {i for i, r in enumerate(rows[t]) if ok(t, r, None)} for t in tables}


def value_text(v: Any) -> str:
    return str(v)


def search(text: str, pattern: str) -> bool:
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, text, re.IGNORECASE | re.DOTALL) is not None


def field_values(tables: Tables, f: str) -> list[Any]:
    out: list[Any] = []
    for t in tables:
        for v in tables[t].get(f, []):
            if v is not None and v not in out:
                out.append(v)
    return out


# A random set: ("term", ident, [(field, op, elems)]) | ("op", op, a, b) | ("not", a)
# elems: None (clear) | ("list", [element texts]) | ("P", set, field)


def gen_elems(rng: random.Random, tables: Tables, f: str) -> Any:
    vals = field_values(tables, f)
    kind = rng.random()
    if kind < 0.1:
        return None
    if kind < 0.55 and vals:
        chosen = rng.sample(vals, k=rng.randint(0, min(2, len(vals))))
        return ("list", [f"'{v}'" if isinstance(v, str) else str(v) for v in chosen])
    if kind < 0.7:
        return ("list", [rng.choice(['"*"', '"a*"', '"*b*"', '"?"', "'zz'", "1800"])])
    if kind < 0.85:
        return ("list", [rng.choice(['">=2"', '"<5"', '">1<=8"'])])
    g = rng.choice(list(SELECTABLE))
    inner_vals = field_values(tables, g)
    inner = (
        "term",
        "1",
        [(g, "=", ("list", [repr(v) if isinstance(v, str) else str(v) for v in inner_vals[:1]]))],
    )
    return ("P", inner, rng.choice([f, g]))


def gen_term(rng: random.Random, tables: Tables) -> Any:
    ident = rng.choice(["", "", "$", "1", "S"])
    fields = rng.sample(list(SELECTABLE), k=rng.randint(0, 2))
    mods = []
    for f in fields:
        op = rng.choice(["=", "=", "=", "+=", "-=", "*="])
        elems = gen_elems(rng, tables, f)
        if elems is None:
            op = "="
        mods.append((f, op, elems))
    return ("term", ident, mods)


def gen_set(rng: random.Random, tables: Tables, depth: int) -> Any:
    if depth <= 0 or rng.random() < 0.55:
        return gen_term(rng, tables)
    if rng.random() < 0.15:
        return ("not", gen_set(rng, tables, depth - 1))
    return (
        "op",
        rng.choice("+-*/"),
        gen_set(rng, tables, depth - 1),
        gen_set(rng, tables, depth - 1),
    )


def render_elems(e: Any) -> str:
    if e is None:
        return ""
    if e[0] == "list":
        return "{" + ", ".join(e[1]) + "}"
    return f"P({{{render_set(e[1])}}} {e[2]})"


def render_set(s: Any) -> str:
    if s[0] == "term":
        mods = ", ".join(f"{f}{op}{render_elems(e)}" for f, op, e in s[2])
        return s[1] + (f"<{mods}>" if mods else "") if s[1] or mods else "$"
    if s[0] == "not":
        return f"-({render_set(s[1])})"
    return f"({render_set(s[2])}) {s[1]} ({render_set(s[3])})"


def ref_elems(e: Any, f: str, tables: Tables, states: dict[str, dict[str, list[Any]]]) -> list[Any]:
    vals = field_values(tables, f)
    if e[0] == "P":
        rows = ref_set(e[1], tables, states)
        g = e[2]
        found = {
            r[g]
            for t in tables
            if g in tables[t]
            for i, r in enumerate(rows_of(tables, t))
            if i in rows[t]
        }
        return [v for v in vals if v in found]
    out = []
    for v in vals:
        for el in e[1]:
            if el.startswith("'"):
                hit = value_text(v) == el[1:-1]
            elif el.startswith('"') and el[1] in "<>":
                bounds = re.findall(r"([<>]=?)(-?[\d.]+)", el[1:-1])
                ops = {"<": float.__lt__, "<=": float.__le__, ">": float.__gt__, ">=": float.__ge__}
                hit = not isinstance(v, str) and all(ops[o](float(v), float(b)) for o, b in bounds)
            elif el.startswith('"'):
                hit = search(value_text(v), el[1:-1])
            else:
                hit = not isinstance(v, str) and float(v) == float(el)
            if hit:
                out.append(v)
                break
    return out


def ref_set(s: Any, tables: Tables, states: dict[str, dict[str, list[Any]]]) -> dict[str, set[int]]:
    everything = {t: set(range(len(rows_of(tables, t)))) for t in tables}
    if s[0] == "not":
        a = ref_set(s[1], tables, states)
        return {t: everything[t] - a[t] for t in tables}
    if s[0] == "op":
        a, b = ref_set(s[2], tables, states), ref_set(s[3], tables, states)
        op = s[1]
        return {
            t: a[t] | b[t]
            if op == "+"
            else a[t] - b[t]
            if op == "-"
            else a[t] & b[t]
            if op == "*"
            else a[t] ^ b[t]
            for t in tables
        }
    ident = s[1]
    base = {} if ident == "1" else states["S" if ident == "S" else "$"]
    state = {f: list(v) for f, v in base.items()}
    for f, op, e in s[2]:
        if e is None:
            state.pop(f, None)
            continue
        new = ref_elems(e, f, tables, states)
        if op != "=":
            cur = base.get(f, field_values(tables, f))
            new = {"+": [v for v in field_values(tables, f) if v in cur or v in new],
                   "-": [v for v in cur if v not in new],
                   "*": [v for v in cur if v in new]}[op[0]]  # fmt: skip
            if op == "+=" and f not in base:
                state.pop(f, None)
                continue
        state[f] = new
    return possible_rows(tables, state)


def ref_measures(tables: Tables, rows: dict[str, set[int]]) -> tuple[float, int]:
    facts, dims = rows_of(tables, "Facts"), rows_of(tables, "Dims")
    total = sum(r["X"] for i, r in enumerate(facts) if i in rows["Facts"] and r["X"] is not None)
    distinct = {r["D"] for i, r in enumerate(dims) if i in rows["Dims"] and r["D"] is not None}
    return total, len(distinct)


def random_selection(rng: random.Random, tables: Tables) -> dict[str, list[Any]]:
    out = {}
    for f in rng.sample(list(SELECTABLE), k=rng.randint(0, 2)):
        vals = field_values(tables, f)
        if vals:
            out[f] = rng.sample(vals, k=rng.randint(1, min(2, len(vals))))
    return out


@pytest.mark.parametrize("seed", range(150))
def test_random_sets_match_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    tables = random_tables(rng)
    app = App.from_tables(tables)
    states = {"$": random_selection(rng, tables), "S": random_selection(rng, tables)}
    sets = [gen_set(rng, tables, 2) for _ in range(4)]
    with app.session() as s:
        s.add_state("S")
        for name, sel in states.items():
            for f, vals in sel.items():
                s.select(f, vals, state=name)
        measures = []
        for st in sets:
            text = render_set(st)
            measures += [f"Sum({{{text}}} X)", f"Count({{{text}}} DISTINCT D)"]
        [row] = s.hypercube([], measures).rows
    for i, st in enumerate(sets):
        want = ref_measures(tables, ref_set(st, tables, states))
        assert (row[2 * i], row[2 * i + 1]) == want, (render_set(st), states, tables)


@pytest.mark.parametrize("cache", [True, False])
def test_sets_narrowing_the_selection_of_a_table_alone_agree_with_numpy(cache: bool) -> None:
    # A table linked to no other: a set that narrows the object's selection starts from its
    # rows and matches only the fields it changes; sets that widen or replace a selection,
    # or start from another state, are inferred whole. All agree with numpy.
    import numpy as np

    rng = np.random.default_rng(29)
    n = 60_013
    cat = rng.integers(0, 20, n)
    year = rng.integers(2015, 2025, n)
    sel = rng.integers(0, 300, n)
    amount = rng.integers(1, 1000, n)
    tables = {
        "Facts": {"Category": cat, "Year": year, "Sel": sel, "Amount": amount},
        "Dim": {"Category": np.arange(20), "Group": np.arange(20) % 3},
        "Alone": {"Q": rng.integers(0, 50, 1000), "R": rng.integers(0, 7, 1000)},
    }
    chosen = [int(x) for x in rng.choice(300, 40, replace=False)]
    others = [x for x in range(300) if x not in chosen][:30]
    app = App.from_tables({"Facts": tables["Facts"], "Alone": tables["Alone"]})
    linked = App.from_tables({"Facts": tables["Facts"], "Dim": tables["Dim"]})
    in_sel = np.isin(sel, chosen)
    cases = {
        "Sum({<Year={2020}>} Amount)": in_sel & (year == 2020),
        "Sum({$<Year={2019,2020}>} Amount)": in_sel & np.isin(year, [2019, 2020]),
        f"Sum({{<Sel={{{','.join(map(str, chosen[:5]))}}}>}} Amount)": np.isin(sel, chosen[:5]),
        f"Sum({{<Sel={{{','.join(map(str, others))}}}>}} Amount)": np.isin(sel, others),
        "Sum({<Sel=>} Amount)": np.ones(n, dtype=bool),
        "Sum({<Sel=, Year={2016}>} Amount)": year == 2016,
        "Sum({1<Year={2020}>} Amount)": year == 2020,
        "Sum({<Year={2030}>} Amount)": np.zeros(n, dtype=bool),
        "Sum(Amount)": in_sel,
    }
    limit = assoc.cache_info()["limit"]
    try:
        assoc.set_cache_limit(limit if cache else 0)
        for model in (app, linked):
            with model.session() as s:
                s.select("Sel", chosen)
                if model is app:
                    s.select("Q", [1, 2, 3])
                cube = s.hypercube(["Category"], list(cases))
                got = {row[0]: row[1:] for row in cube.rows}
                for i, rows in enumerate(cases.values()):
                    want = {
                        c: int(amount[rows & (cat == c)].sum())
                        for c in range(20)
                        if (in_sel & (cat == c)).any()
                    }
                    assert {c: int(v[i]) for c, v in got.items()} == want, list(cases)[i]
                if model is app:
                    [[r_total]] = s.hypercube([], ["Count({<R={1,2}>} R)"]).rows
                    q = np.asarray(tables["Alone"]["Q"])
                    r = np.asarray(tables["Alone"]["R"])
                    assert r_total == int((np.isin(q, [1, 2, 3]) & np.isin(r, [1, 2])).sum())
    finally:
        assoc.set_cache_limit(limit)
