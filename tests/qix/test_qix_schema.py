"""The QIX methods are declared by name and take their parameters from the engine's published
schema (the one enigma.js ships): the vendored copy is that schema, and a declaration cannot
drift from it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from qixclient import QixClient

from assoc.server.qix.methods import MethodTable
from assoc.server.qix.schema import SCHEMA_FILE, SCHEMA_VERSION, dump_schema, reduce_schema, schema
from assoc.server.qix.session import METHODS
from conftest import QixServer


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_vendored_schema_is_the_one_enigma_js_ships(node_packages: Path) -> None:
    shipped = node_packages / "node_modules" / "enigma.js" / "schemas" / f"{SCHEMA_VERSION}.json"
    full = json.loads(shipped.read_text(encoding="utf-8"))
    assert SCHEMA_FILE.read_text(encoding="utf-8") == dump_schema(reduce_schema(full))


def test_every_method_takes_the_schemas_parameters_in_the_schemas_order() -> None:
    declared = schema()
    for qix_type, table in METHODS.items():
        assert table.qix_type == qix_type
        for name, method in table.items():
            assert [p.name for p in method.params] == [
                p.name for p in declared[qix_type][name].params
            ], f"{qix_type}.{name}"


def test_a_declaration_the_schema_does_not_know_fails_at_import() -> None:
    table = MethodTable("Doc")
    with pytest.raises(KeyError):
        table.method("NoSuchMethod")
    with pytest.raises(ValueError, match="qNoSuchParam"):
        table.method("ClearAll", optional=("qNoSuchParam",))
    other = MethodTable("Field")
    other.method("Clear")(lambda *_: None)  # type: ignore[arg-type,return-value]
    twice = MethodTable("Field")
    twice.method("Clear")(lambda *_: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="declared twice"):
        MethodTable.union("Field", other, twice)


def test_parameters_bind_by_the_schemas_names_order_and_defaults(
    qix_server: QixServer, app_id: str
) -> None:
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        doc = qix.open_doc(app_id)
        # GetTablesAndKeys: positional in the schema's order, or named, or left to defaults.
        positional = qix.result(
            "GetTablesAndKeys", [{"qcx": 0, "qcy": 0}, {"qcx": 0, "qcy": 0}, 0, False, False], doc
        )
        named = qix.result("GetTablesAndKeys", {"qIncludeSysVars": False}, doc)
        assert positional == named
        assert [t["qName"] for t in named["qtr"]] == ["Orders", "Customers"]
        # A required parameter left out, and one of the wrong type, name the parameter.
        missing = qix.call("GetField", {"qStateName": ""}, doc)
        assert missing["error"]["code"] == -32602
        assert missing["error"]["parameter"] == "qFieldName"
        wrong = qix.call("GetField", [7], doc)
        assert wrong["error"]["code"] == -32602
        assert wrong["error"]["parameter"] == "qFieldName"
        # A schema method assoc does not serve is "not implemented", an unknown one not found.
        assert qix.call("GetMediaList", [], doc)["error"]["code"] == 20
        assert qix.call("NoSuchMethod", [], doc)["error"]["code"] == -32601
