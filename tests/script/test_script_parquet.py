"""LOAD … (parquet) and STORE … (parquet), checked against pyarrow reading and writing the
same files."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pytest

import assoc

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def test_load_parquet_written_by_pyarrow(tmp_path: Path) -> None:
    pq.write_table(
        pa.table(
            {
                "Id": pa.array([1, 2, 3], pa.int32()),
                "Name": ["Ann", None, "Zoë"],
                "Price": [1.5, 2.25, None],
                "Day": pa.array([dt.date(2024, 3, 1), dt.date(2024, 3, 2), None]),
                "Cat": pa.array(["a", "b", "a"]).dictionary_encode(),
            }
        ),
        tmp_path / "x.parquet",
    )
    app = assoc.App.from_script(
        """
        SET DateFormat='YYYY-MM-DD';
        T: LOAD Id, Name, Price, Day, Cat FROM [lib://data/x.parquet] (parquet);
        U: LOAD Id AS Id2 FROM [lib://data/x.parquet];
        """,
        folders={"data": tmp_path},
    )
    t = app.table("T")
    assert t.column("Id") == [1, 2, 3]
    assert t.column("Name") == ["Ann", None, "Zoë"]
    assert t.column("Price") == [1.5, 2.25, None]
    Dual = assoc.Dual
    assert t.column("Day") == [Dual(45352, "2024-03-01"), Dual(45353, "2024-03-02"), None]
    assert t.column("Cat") == ["a", "b", "a"]
    assert app.table("U").column("Id2") == [1, 2, 3]


def test_store_parquet_read_by_pyarrow_and_loaded_back(tmp_path: Path) -> None:
    app = assoc.App.from_script(
        """
        T: LOAD * INLINE [
        Id, Name, Amount, Day
        1, Ann, 10.5, 3/1/2024
        2, Zoë, , 3/2/2024
        3, , 7, 3/1/2024
        ];
        STORE T INTO [lib://data/out.parquet] (parquet);
        STORE Id, Name FROM T INTO [lib://data/part.parquet];
        Back: LOAD Id AS Id2, Name AS Name2, Amount AS Amount2, Day AS Day2
            FROM [lib://data/out.parquet] (parquet);
        """,
        folders={"data": tmp_path},
    )
    table = pq.read_table(tmp_path / "out.parquet")
    assert table.column("Id").to_pylist() == [1, 2, 3]
    assert table.column("Name").to_pylist() == ["Ann", "Zoë", None]
    assert table.column("Amount").to_pylist() == [10.5, None, 7.0]
    # A date read from text is a dual without a date format: its number goes out.
    assert table.column("Day").to_pylist() == [45352, 45353, 45352]
    assert pq.read_table(tmp_path / "part.parquet").column_names == ["Id", "Name"]
    back = app.table("Back")
    assert back.column("Id2") == [1, 2, 3]
    assert back.column("Name2") == ["Ann", "Zoë", None]
    assert back.column("Day2") == [45352, 45353, 45352]


def test_dates_and_timestamps_round_trip_through_parquet(tmp_path: Path) -> None:
    days = [dt.date(2024, 3, 1), None, dt.date(1999, 12, 31)]
    stamps = [dt.datetime(2024, 3, 1, 12, 30, 15, 500000), dt.datetime(1970, 1, 1), None]
    pq.write_table(
        pa.table({"D": pa.array(days), "TS": pa.array(stamps, pa.timestamp("ms"))}),
        tmp_path / "in.parquet",
    )
    app = assoc.App.from_script(
        """
        T: LOAD * FROM [lib://data/in.parquet] (parquet);
        STORE T INTO [lib://data/out.parquet] (parquet);
        """,
        folders={"data": tmp_path},
    )
    assert app.table("T").column("D")[0] == assoc.Dual(45352, "3/1/2024")
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.schema.field("D").type == pa.date32()
    assert out.schema.field("TS").type == pa.timestamp("us")
    assert out.column("D").to_pylist() == days
    assert out.column("TS").to_pylist() == stamps


def test_parquet_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(assoc.script.ScriptError, match=r"cannot read parquet file 'bad.parquet'"):
        assoc.App.from_script(
            "T: LOAD * FROM [lib://data/bad.parquet] (parquet);", folders={"data": tmp_path}
        )
    pq.write_table(pa.table({"L": pa.array([[1]], pa.list_(pa.int64()))}), tmp_path / "l.parquet")
    with pytest.raises(assoc.script.ScriptError, match=r"column 'L'.*list is not supported"):
        assoc.App.from_script(
            "T: LOAD * FROM [lib://data/l.parquet] (parquet);", folders={"data": tmp_path}
        )
    # Without pyarrow the statement says what to install.
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(assoc.script.ScriptError, match=r'pip install "assoc\[parquet\]"') as err:
        assoc.App.from_script(
            "T: LOAD * INLINE [a\n1];\nSTORE T INTO [lib://data/y.parquet] (parquet);",
            folders={"data": tmp_path},
        )
    assert err.value.line == 3
