"""AppStore.commit_reload: a reloaded app committed as the next version of a stored app."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import assoc
from appfiles import needs_qvd_reader, package_bytes
from assoc.server.store import AppExists, AppStore

pytestmark = needs_qvd_reader


def _stored_app(store: AppStore) -> str:
    path = store.new_upload_path()
    body = package_bytes(
        {"Old": {"A": [1, 2]}},
        attributes={"name": "Kept"},
        objects=[{"id": "s1", "type": "sheet", "approved": False, "properties": {"x": 1}}],
        media={"img/logo.png": b"\x89PNG"},
    )
    path.write_bytes(body)
    return str(store.import_file(path)["id"])


def test_a_committed_reload_replaces_tables_and_keeps_the_rest(tmp_path: Path) -> None:
    with AppStore(tmp_path) as store:
        app_id = _stored_app(store)
        before = store.attributes(app_id)
        lease = store.lease(app_id)
        reloaded = assoc.App.from_script("New: LOAD RecNo() AS B AUTOGENERATE 3;")
        connections = [{"name": "data", "path": "/srv/files"}]
        attributes = store.commit_reload(app_id, reloaded, "the script", connections)
        assert not store.is_current(lease)  # the old version was replaced
        lease.release()
        assert attributes["name"] == "Kept"
        assert attributes["createdDate"] == before["createdDate"]
        assert attributes["lastReloadTime"] >= before["lastReloadTime"]
        with store.using(app_id) as app:
            assert app.tables == ["New"]
    with AppStore(tmp_path) as reopened:
        assert reopened.script(app_id) == ("the script", connections)
        with reopened.using(app_id) as app:
            assert app.tables == ["New"]
            assert app.table("New").num_rows == 3
        assert [o["id"] for o in reopened.objects(app_id)] == ["s1"]
        with reopened.open_media_file(app_id, "img/logo.png") as f:
            assert f.read() == b"\x89PNG"
        lease = reopened.lease(app_id)
        assert reopened.is_current(lease)
        lease.release()


def test_a_reload_without_tables_leaves_an_app_without_data(tmp_path: Path) -> None:
    # As Qlik: a script that loads nothing reloads to an app with no data.
    with AppStore(tmp_path) as store:
        app_id = _stored_app(store)
        script = "SET ThousandSep=',';"
        store.commit_reload(app_id, assoc.App.from_script(script), script, [])
        assert store.script(app_id) == (script, [])
        with store.using(app_id) as app:
            assert app.tables == []
        assert list(store.tmp_dir.iterdir()) == []
    with AppStore(tmp_path) as reopened, reopened.using(app_id) as app:
        assert app.tables == []


def test_created_apps_have_no_data_and_names_of_their_own(tmp_path: Path) -> None:
    with AppStore(tmp_path) as store:
        created = store.create("Budget", "SET A=1;", owner="ann")
        app_id = created["id"]
        assert (created["name"], created["owner"], created["lastReloadTime"]) == (
            "Budget",
            "ann",
            "",
        )
        assert store.script(app_id) == ("SET A=1;", [])
        with pytest.raises(AppExists, match="Budget"):
            store.create("Budget", "", owner="bob")
        assert [a["id"] for a in store.list_attributes()] == [app_id]
        assert list(store.tmp_dir.iterdir()) == []
    with AppStore(tmp_path) as reopened:
        assert reopened.attributes(app_id) == created
        with reopened.using(app_id) as app:
            assert app.tables == []


ANNOTATED = """T: LOAD * INLINE [
Amount, Note
1, a
2, b
];
Tag Field Amount With 'kpi';
Comment Field Note With 'free text';
Comment Table T With 'the facts';"""


def _annotations(metadata: dict[str, Any]) -> tuple[list[str], str, str]:
    fields = {f["name"]: f for f in metadata["fields"]}
    (table,) = metadata["tables"]
    return fields["Amount"]["tags"], fields["Note"]["comment"], table["comment"]


def _assert_annotated(metadata: dict[str, Any]) -> None:
    tags, note, table = _annotations(metadata)
    assert tags[-1] == "kpi"
    assert (note, table) == ("free text", "the facts")


def test_a_reloads_tags_and_comments_survive_restart_save_export_and_import(
    tmp_path: Path,
) -> None:
    with AppStore(tmp_path / "a") as store:
        app_id = _stored_app(store)
        store.commit_reload(app_id, assoc.App.from_script(ANNOTATED), ANNOTATED, [])
        _assert_annotated(json.loads(store.metadata_json(app_id)))
    with AppStore(tmp_path / "a") as reopened:  # loaded from its files again
        _assert_annotated(json.loads(reopened.metadata_json(app_id)))
        with reopened.using(app_id) as app:
            reopened.commit_save(app_id, app, [], {}, [])
    with AppStore(tmp_path / "a") as saved:
        _assert_annotated(json.loads(saved.metadata_json(app_id)))
        out = io.BytesIO()
        saved.export(app_id, out)
    assert assoc.App.from_package(out.getvalue()).annotations
    _assert_annotated(assoc.App.from_package(out.getvalue()).metadata())
    with AppStore(tmp_path / "b") as other:
        path = other.new_upload_path()
        path.write_bytes(out.getvalue())
        imported = str(other.import_file(path)["id"])
        _assert_annotated(json.loads(other.metadata_json(imported)))
    with AppStore(tmp_path / "b") as other:
        _assert_annotated(json.loads(other.metadata_json(imported)))
        # A reload whose script gives no tags or comments leaves none behind.
        plain = assoc.App.from_script("T: LOAD * INLINE [\nAmount, Note\n1, a\n];")
        other.commit_reload(imported, plain, "", [])
    with AppStore(tmp_path / "b") as other:
        tags, note, table = _annotations(json.loads(other.metadata_json(imported)))
        assert "kpi" not in tags
        assert (note, table) == ("", "")


EUROPEAN = """SET DateFormat='DD.MM.YYYY'; SET DecimalSep=','; SET ThousandSep='.';
SET FirstWeekDay=0; SET BrokenWeeks=0; SET ReferenceDay=4;
T: LOAD * INLINE [
D, Amount
44199, 1234
];"""


def _chart(app: assoc.App) -> tuple[Any, ...]:
    """A chart of the app's dates and amounts: formats and weeks by its variables."""
    with app.session() as s:
        [row] = s.hypercube(
            [], ["Date(Only(D))", "Week(Only(D))", "Num(Sum(Amount), '#,##0.00')"]
        ).rows
    return row


def test_the_scripts_number_interpretation_survives_restart_save_export_and_import(
    tmp_path: Path,
) -> None:
    expected = (
        assoc.Dual(44199, "03.01.2021"),  # DateFormat
        53,  # ISO week: FirstWeekDay 0, unbroken, reference day 4
        assoc.Dual(1234, "1.234,00"),  # DecimalSep, ThousandSep
    )
    with AppStore(tmp_path / "a") as store:
        app_id = _stored_app(store)
        store.commit_reload(app_id, assoc.App.from_script(EUROPEAN), EUROPEAN, [])
        with store.using(app_id) as app:
            assert _chart(app) == expected
    with AppStore(tmp_path / "a") as reopened, reopened.using(app_id) as app:
        assert _chart(app) == expected  # loaded from its files again
        reopened.commit_save(app_id, app, [], {}, [])
    with AppStore(tmp_path / "a") as saved:
        with saved.using(app_id) as app:
            assert _chart(app) == expected
        out = io.BytesIO()
        saved.export(app_id, out)
    assert _chart(assoc.App.from_package(out.getvalue())) == expected
    with AppStore(tmp_path / "b") as other:
        path = other.new_upload_path()
        path.write_bytes(out.getvalue())
        imported = str(other.import_file(path)["id"])
    with AppStore(tmp_path / "b") as other:
        with other.using(imported) as app:
            assert _chart(app) == expected
        # A reload under the defaults leaves none of it behind.
        plain = "T: LOAD * INLINE [\nD, Amount\n44199, 1234\n];"
        other.commit_reload(imported, assoc.App.from_script(plain), plain, [])
    with AppStore(tmp_path / "b") as other, other.using(imported) as app:
        assert _chart(app) == (assoc.Dual(44199, "1/3/2021"), 2, assoc.Dual(1234, "1,234.00"))


@pytest.mark.parametrize(
    ("interpretation", "problem"),
    [
        ([], '"interpretation" must be an object'),
        ({"Nonsense": "x"}, 'interpretation has no variable "Nonsense"'),
        ({"DateFormat": 5}, 'interpretation "DateFormat" must be a text'),
        ({"DateFormat": "Y" * 5000}, 'interpretation "DateFormat" must be a text'),
    ],
)
def test_a_package_with_a_bad_interpretation_is_refused(interpretation: Any, problem: str) -> None:
    manifest = {
        "format": "assoc-app",
        "formatVersion": 1,
        "tables": [{"name": "T", "file": "tables/T.qvd"}],
        "interpretation": interpretation,
    }
    body = package_bytes({"T": {"A": [1]}}, manifest=manifest)
    with pytest.raises(assoc.Error, match=problem):
        assoc.App.from_package(body)


def test_a_save_whose_app_json_would_not_load_again_keeps_the_old_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import assoc.server.store as store_module

    monkeypatch.setattr(store_module, "MAX_MANIFEST_BYTES", 4096)
    with AppStore(tmp_path) as store:
        app_id = _stored_app(store)
        before, objects = store.attributes(app_id), store.objects(app_id)
        big = [{"id": "o1", "type": "sheet", "approved": False, "properties": {"x": "y" * 5000}}]
        with store.using(app_id) as app, pytest.raises(assoc.Error, match="larger than 4096"):
            store.commit_save(app_id, app, big, {}, [], {"theme": "t"})
        assert store.attributes(app_id) == before
        assert store.objects(app_id) == objects
        assert store.app_properties(app_id) == {}
        assert list(store.tmp_dir.iterdir()) == []
    with AppStore(tmp_path) as reopened:
        assert reopened.attributes(app_id) == before
