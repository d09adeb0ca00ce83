"""The engine's script tables through the Python API: columns from values and codes, columns
that map another column's symbols, and their bounds checks."""

from __future__ import annotations

import numpy as np
import pytest

import assoc
from assoc import Dual, _core

NAN = float("nan")


def built(table: _core.ScriptTable) -> assoc.App:
    builder = _core.ModelBuilder()
    table.add_to(builder)
    return assoc.App(builder.build())


def test_column_from_values_merges_equal_values_and_drops_unused() -> None:
    t = _core.ScriptTable("T", 5)
    # Values 0 and 2 are the same number (one symbol); value 3 is NULL; value 4 is unused.
    nums = np.array([1.0, NAN, 1.0, NAN, 9.0])
    texts = [None, "b", None, None, None]
    t.add_column("v", nums, texts, np.array([2, 1, 0, 3, -1], dtype=np.int32))
    app = built(t)
    assert app.table("T").column("v") == [1, "b", 1, None, None]
    assert app.symbols("v") == [1, "b"]


def test_codes_out_of_range_and_row_counts_are_errors() -> None:
    t = _core.ScriptTable("T", 2)
    with pytest.raises(assoc.Error, match="refers to value 5 of 1"):
        t.add_column("v", np.array([1.0]), None, np.array([0, 5], dtype=np.int32))
    with pytest.raises(assoc.Error, match="a column of 3 rows, not 2"):
        t.add_column("v", np.array([1.0]), None, np.array([0, 0, 0], dtype=np.int32))
    with pytest.raises(assoc.Error, match="texts and numbers differ"):
        t.add_column("v", np.array([1.0]), ["a", "b"], np.array([0, 0], dtype=np.int32))
    with pytest.raises(assoc.Error, match="infinite"):
        t.add_column("v", np.array([np.inf]), None, np.array([0, 0], dtype=np.int32))
    with pytest.raises(assoc.Error, match="no column 3"):
        t.codes(3)


def test_mapped_column_copies_or_repacks_rows() -> None:
    src = _core.ScriptTable("S", 6)
    src.add_column(
        "x", np.array([10.0, 20.0, 30.0]), None, np.array([0, 1, 2, -1, 1, 0], dtype=np.int32)
    )
    out = _core.ScriptTable("T", 6)
    # Distinct values: the rows are taken as they are.
    out.add_mapped_column("same", np.array([NAN, NAN, NAN]), ["a", "b", "c"], src, 0)
    # 10 and 30 both map to 1; 20 maps to NULL: rows are re-packed.
    out.add_mapped_column("merged", np.array([1.0, NAN, 1.0]), None, src, 0)
    with pytest.raises(assoc.Error, match="2 values for 3 symbols"):
        out.add_mapped_column("bad", np.array([1.0, 2.0]), None, src, 0)
    app = built(out)
    assert app.table("T").column("same") == ["a", "b", "c", None, "b", "a"]
    assert app.table("T").column("merged") == [1, None, 1, None, None, 1]
    assert app.symbols("merged") == [1]
    with pytest.raises(assoc.Error, match="table 'T' was handed to a model already"):
        out.add_column("late", np.array([1.0]), None, np.zeros(6, dtype=np.int32))


def test_set_numbers_turns_texts_into_duals_and_merges() -> None:
    t = _core.ScriptTable.read_csv(b"d\n1/2/2020\n01/02/2020\nx\n1/2/2020\n", "T")
    at, texts = t.number_candidates(0, "0123456789/")
    assert texts == ["1/2/2020", "01/02/2020"]
    assert t.number_candidates(0, "x")[1] == []  # a candidate needs a digit
    t.set_numbers(0, at[:2], np.array([43832.0, 43832.0]))
    app = built(t)
    # Equal numbers are one symbol: the first text wins, as everywhere in the engine.
    assert app.table("T").column("d") == [Dual(43832.0, "1/2/2020")] * 2 + [
        "x",
        Dual(43832.0, "1/2/2020"),
    ]
    with pytest.raises(assoc.Error, match="handed to a model already"):
        t.codes(0)


def test_set_numbers_checks_its_indexes() -> None:
    t = _core.ScriptTable.read_csv(b"d\nx\n", "T")
    with pytest.raises(assoc.Error, match="out of range"):
        t.set_numbers(0, np.array([7], dtype=np.uint32), np.array([1.0]))
    with pytest.raises(assoc.Error, match="one number per symbol index"):
        t.set_numbers(0, np.array([0], dtype=np.uint32), np.array([1.0, 2.0]))


def test_reads_refuse_bad_bytes() -> None:
    with pytest.raises(assoc.Error):
        _core.ScriptTable.read_qvd(b"<QvdTableHeader>", "T")
    with pytest.raises(assoc.Error, match="CSV line 2"):
        _core.ScriptTable.read_csv(b"a,b\n1\n", "T")
