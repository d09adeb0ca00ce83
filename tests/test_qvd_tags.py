"""Field tags and comments in QVD headers: STORE writes a script's TAG and COMMENT (and $key,
and the data tags) into each QvdFieldHeader's <Tags> and <Comment>, as Qlik does, and a QVD's
user tags come back on LOAD, in metadata as in Qlik."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from pyqvd import QvdTable

from appfiles import qvd_bytes, split, with_header
from assoc import App

SCRIPT = """Orders: LOAD * INLINE [
OrderId, Customer, Amount
1, Ann, 1.5
2, Bob, 2.5
];
Customers: LOAD * INLINE [
Customer, City
Ann, Oslo
];
TAG FIELD Customer WITH 'PII';
TAG FIELD Amount WITH 'money';
TAG FIELD Amount WITH 'kpi';
COMMENT FIELD Amount WITH 'in euros';
COMMENT TABLE Orders WITH 'one row an order';
STORE Orders INTO [lib://out/orders.qvd] (qvd);
"""


def field_headers(data: bytes) -> dict[str, tuple[list[str], str]]:
    """Each field's header tags and comment, read with the standard XML parser."""
    root = ET.fromstring(split(data)[0])
    return {
        f.findtext("FieldName", ""): (
            [s.text or "" for s in f.iterfind("Tags/String")],
            f.findtext("Comment", ""),
        )
        for f in root.iter("QvdFieldHeader")
    }


def fields_of(app: App) -> dict[str, dict[str, Any]]:
    """The metadata of an app's data fields, by name."""
    return {f["name"]: f for f in app.metadata()["fields"] if not f["is_system"]}


def stored(tmp_path: Path) -> bytes:
    """The QVD the script's STORE wrote."""
    App.from_script(SCRIPT, folders={"out": tmp_path})
    return (tmp_path / "orders.qvd").read_bytes()


def test_store_writes_tags_and_comments_into_the_header(tmp_path: Path) -> None:
    data = stored(tmp_path)
    assert field_headers(data) == {
        "OrderId": (["$numeric", "$integer"], ""),
        "Customer": (["$key", "$ascii", "$text", "PII"], ""),
        "Amount": (["$numeric", "money", "kpi"], "in euros"),
    }
    assert ET.fromstring(split(data)[0]).findtext("Comment") == "one row an order"
    # Another reader takes the file as it is.
    table = QvdTable.from_stream(io.BytesIO(data))
    assert table.columns == ["OrderId", "Customer", "Amount"]
    assert [v.display_value for v in table.data[0]] == ["1", "Ann", "1.5"]


def test_a_tagged_qvd_shows_its_user_tags_when_loaded(tmp_path: Path) -> None:
    data = stored(tmp_path)
    fields = fields_of(App.from_qvd(data))
    # $key is the loading model's to give: Customer links nothing here.
    assert fields["Customer"]["tags"] == ["$ascii", "$text", "PII"]
    assert fields["Amount"]["tags"] == ["$numeric", "money", "kpi"]
    assert fields["Amount"]["comment"] == "in euros"
    script = "O: LOAD * FROM [lib://out/orders.qvd] (qvd);\n"
    script += "C: LOAD * INLINE [\nCustomer, Zip\nAnn, 1\n];\n"
    app = App.from_script(script, folders={"out": tmp_path})
    fields = fields_of(app)
    assert fields["Customer"]["tags"] == ["$key", "$ascii", "$text", "PII"]
    assert fields["Amount"]["tags"] == ["$numeric", "money", "kpi"]
    assert fields["Amount"]["comment"] == "in euros"


def test_another_writers_user_tags_load_and_store_again() -> None:
    data = qvd_bytes("T", {"Code": ["a", "b"], "N": [1, 2]})
    tags = field_headers(data)["Code"][0]
    assert tags  # pyqvd writes the data tags; a user tag and a stray $key are added
    last = f"<String>{tags[-1]}</String>"
    data = with_header(data, last, f"{last}<String>$key</String><String>Sensitive</String>")
    app = App.from_qvd(data)
    assert fields_of(app)["Code"]["tags"] == ["$ascii", "$text", "Sensitive"]
    again = app._impl.write_qvd("T")
    assert field_headers(bytes(again))["Code"][0] == ["$ascii", "$text", "Sensitive"]


def test_untag_takes_a_qvd_headers_tags_off_and_store_leaves_them_out(tmp_path: Path) -> None:
    stored(tmp_path)
    script = """O: LOAD * FROM [lib://out/orders.qvd] (qvd);
UNTAG FIELD Amount WITH 'kpi';
UNTAG FIELD Customer WITH 'PII';
UNTAG FIELD Customer WITH '$key';
UNTAG FIELD OrderId WITH '$integer';
TAG FIELD Customer WITH 'PII2';
STORE O INTO [lib://out/again.qvd] (qvd);
"""
    app = App.from_script(script, folders={"out": tmp_path})
    fields = fields_of(app)
    assert fields["Amount"]["tags"] == ["$numeric", "money"]
    assert fields["Customer"]["tags"] == ["$ascii", "$text", "PII2"]
    assert fields["OrderId"]["tags"] == ["$numeric"]
    assert field_headers((tmp_path / "again.qvd").read_bytes()) == {
        "OrderId": (["$numeric"], ""),
        "Customer": (["$ascii", "$text", "PII2"], ""),
        "Amount": (["$numeric", "money"], "in euros"),
    }
    # A TAG after the UNTAG puts it back; $key, a link, is no tag UNTAG takes off.
    again = App.from_script(
        script + "TAG FIELD Amount WITH 'kpi';\nC: LOAD * INLINE [\nCustomer\nAnn\n];\n"
        "UNTAG FIELD Customer WITH '$key';\n",
        folders={"out": tmp_path},
    )
    assert fields_of(again)["Amount"]["tags"] == ["$numeric", "money", "kpi"]
    assert fields_of(again)["Customer"]["tags"][0] == "$key"
    # The app keeps what UNTAG took off through its package (app.json).
    assert app.annotations is not None
    restored = type(app.annotations).from_json(app.annotations.to_json())
    untags = {"Amount": ["kpi"], "Customer": ["PII"], "OrderId": ["$integer"]}
    assert restored.field_untags == untags
