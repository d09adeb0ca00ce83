"""The durable app store: commits, restarts, leftovers, budgets, media paths, concurrency."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import assoc
from appfiles import (
    CUSTOMERS,
    ORDERS,
    needs_csv_reader,
    needs_qvd_reader,
    package_bytes,
    qvd_bytes,
    zip_with,
)
from assoc.server.store import (
    AppNotFound,
    AppStore,
    BadMediaPath,
    ImportMode,
    ListForm,
    MediaNotFound,
    StoredAppUnreadable,
)

pytestmark = needs_qvd_reader
OpenStore = Callable[..., AppStore]


@pytest.fixture
def open_store() -> Iterator[OpenStore]:
    """Opens stores like AppStore(...) and closes them after the test."""
    opened: list[AppStore] = []

    def open_(*args: object, **kwargs: object) -> AppStore:
        store = AppStore(*args, **kwargs)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


def _import(store: AppStore, data: bytes, **kwargs: object) -> dict[str, object]:
    path = store.new_upload_path()
    path.write_bytes(data)
    return store.import_file(path, **kwargs)  # type: ignore[arg-type]


def test_import_commits_and_a_new_store_finds_it_without_loading(
    tmp_path: Path, open_store: OpenStore
) -> None:
    store = open_store(tmp_path)
    attrs = _import(store, package_bytes(attributes={"name": "Sales"}))
    app_id = str(attrs["id"])
    expected = _without_load_time(store.metadata_json(app_id))
    assert store.usage().loaded == [app_id]
    assert list(store.tmp_dir.iterdir()) == []  # the upload was consumed

    store.close()
    reopened = open_store(tmp_path)
    assert reopened.app_ids() == [app_id]
    assert reopened.attributes(app_id)["name"] == "Sales"
    assert reopened.usage().loaded == []  # lazy: nothing loaded at start-up
    assert _without_load_time(reopened.metadata_json(app_id)) == expected
    assert reopened.usage().loaded == [app_id]


def _without_load_time(metadata: bytes) -> dict[str, Any]:
    """The metadata but the CPU time of the load, which a load on first use measures anew."""
    parsed = json.loads(metadata)
    assert parsed["reload_meta"]["cpu_time_spent_ms"] >= 0
    del parsed["reload_meta"]["cpu_time_spent_ms"]
    return parsed


def test_one_store_per_data_dir(tmp_path: Path, open_store: OpenStore) -> None:
    store = open_store(tmp_path)
    with pytest.raises(assoc.Error, match="in use by another assoc process"):
        AppStore(tmp_path)
    store.close()
    open_store(tmp_path).close()


def test_new_mode_generates_id_and_dates(tmp_path: Path, open_store: OpenStore) -> None:
    store = open_store(tmp_path)
    source = {"id": "fixed-id", "name": "N", "createdDate": "2020-01-01T00:00:00.000Z"}
    a = _import(store, package_bytes(attributes=source))
    b = _import(store, package_bytes(attributes=source))
    assert a["id"] != b["id"]
    assert "fixed-id" not in (a["id"], b["id"])
    assert a["createdDate"] != "2020-01-01T00:00:00.000Z"
    assert str(a["createdDate"]).endswith("Z")
    assert a["modifiedDate"] == a["createdDate"] == a["lastReloadTime"]


def test_bare_qvd_becomes_a_one_table_app(tmp_path: Path, open_store: OpenStore) -> None:
    store = open_store(tmp_path)
    attrs = _import(store, qvd_bytes("Orders", ORDERS))
    assert attrs["name"] == "Orders"
    with store.using(str(attrs["id"])) as app:
        assert app.tables == ["Orders"]
    store.close()
    with open_store(tmp_path) as reopened, reopened.using(str(attrs["id"])) as app:
        assert app.table("Orders").column("Customer") == ORDERS["Customer"]


@needs_csv_reader
def test_csv_becomes_a_one_table_app(tmp_path: Path, open_store: OpenStore) -> None:
    store = open_store(tmp_path)
    attrs = _import(store, b"a,b\n1,x\n2,y\n", name="Mine")
    with store.using(str(attrs["id"])) as app:
        assert app.tables == ["Mine"]
        assert app.table("Mine").num_rows == 2
    # Both survive a restart (the CSV is stored as it came and read by content).
    store.close()
    reopened = open_store(tmp_path)
    with reopened.using(str(attrs["id"])) as app:
        assert app.table("Mine").column("b") == ["x", "y"]


def test_failed_import_stores_nothing(tmp_path: Path, open_store: OpenStore) -> None:
    store = open_store(tmp_path)
    manifest = {
        "format": "assoc-app",
        "formatVersion": 1,
        "tables": [{"name": "Orders", "file": "tables/Orders.qvd"}],
    }
    bad = zip_with(
        {
            "app.json": json.dumps(manifest).encode(),
            "media/a.png": b"A",  # extracted before the table turns out to be corrupt
            "tables/Orders.qvd": qvd_bytes("Orders", ORDERS)[:300],
        }
    )
    with pytest.raises(assoc.Error):
        _import(store, bad)
    assert store.app_ids() == []
    assert list((tmp_path / "apps").iterdir()) == []
    assert list(store.tmp_dir.iterdir()) == []


def test_autoreplace_keeps_id_replaces_data_and_merges_objects(
    tmp_path: Path, open_store: OpenStore
) -> None:
    store = open_store(tmp_path)
    objects = [
        {"id": "approved-gone", "type": "sheet", "approved": True, "properties": {}},
        {"id": "private-kept", "type": "sheet", "approved": False, "properties": {}},
        {"id": "both", "type": "sheet", "approved": True, "properties": {"v": 1}},
    ]
    first = _import(
        store,
        package_bytes(
            {"Orders": ORDERS}, attributes={"id": "app-1", "name": "One"}, objects=objects
        ),
        mode=ImportMode.AUTOREPLACE,
    )
    assert first["id"] == "app-1"
    second = _import(
        store,
        package_bytes(
            {"Customers": CUSTOMERS},
            attributes={"id": "app-1", "name": "Two"},
            objects=[{"id": "both", "type": "sheet", "approved": True, "properties": {"v": 2}}],
        ),
        mode=ImportMode.AUTOREPLACE,
    )
    assert second["id"] == "app-1"
    assert second["name"] == "Two"
    assert second["createdDate"] == first["createdDate"]
    assert {o["id"]: o["properties"] for o in store.objects("app-1")} == {
        "both": {"v": 2},
        "private-kept": {},
    }
    with store.using("app-1") as app:
        assert app.tables == ["Customers"]
    # One version on disk: the replaced one went.
    versions = [p for p in (tmp_path / "apps" / "app-1").iterdir() if p.is_dir()]
    assert len(versions) == 1


def test_autoreplace_needs_an_id(tmp_path: Path, open_store: OpenStore) -> None:
    store = open_store(tmp_path)
    with pytest.raises(assoc.Error, match=r"attributes\.id"):
        _import(store, qvd_bytes("Orders", ORDERS), mode=ImportMode.AUTOREPLACE)
    assert store.app_ids() == []


def test_delete(tmp_path: Path, open_store: OpenStore) -> None:
    store = open_store(tmp_path)
    app_id = str(_import(store, package_bytes())["id"])
    store.delete(app_id)
    assert store.app_ids() == []
    assert not (tmp_path / "apps" / app_id).exists()
    with pytest.raises(AppNotFound):
        store.delete(app_id)
    with pytest.raises(AppNotFound), store.using(app_id):
        pass
    store.close()
    assert open_store(tmp_path).app_ids() == []


def test_requests_for_apps_that_do_not_exist_leave_nothing_behind(
    tmp_path: Path, open_store: OpenStore
) -> None:
    """Each app has a lock; a request naming an unknown app (a client may send any id) must
    not keep one, or a stream of random ids grows the service's memory without bound."""
    store = open_store(tmp_path)
    app_id = str(_import(store, package_bytes())["id"])
    kept = len(store._app_locks)
    for i in range(200):
        with pytest.raises(AppNotFound):
            store.delete(f"no-such-app-{i}")
        with pytest.raises(AppNotFound):
            store.media_list(f"no-such-app-{i}", "", ListForm.FLAT)
    assert len(store._app_locks) == kept
    assert app_id in store._app_locks  # an app that exists keeps its lock
    store.delete(app_id)
    assert store.app_ids() == []


def test_start_up_removes_leftovers_of_interrupted_work(
    tmp_path: Path, open_store: OpenStore
) -> None:
    store = open_store(tmp_path)
    app_id = str(_import(store, package_bytes({"Orders": ORDERS}))["id"])
    app_dir = tmp_path / "apps" / app_id
    current = (app_dir / "CURRENT").read_text()
    # A replace that stopped after staging its version but before switching CURRENT.
    (app_dir / "v-half").mkdir()
    (app_dir / "v-half" / "app.json").write_text("{}")
    (app_dir / ".CURRENT.x.tmp").write_text("v-half")
    # A first import that stopped before its rename, an upload, a half-finished delete.
    (tmp_path / "apps" / "never-committed" / "v-1").mkdir(parents=True)
    (tmp_path / "tmp" / "upload-1").write_bytes(b"partial")
    (tmp_path / "trash" / "old-app").mkdir()

    store.close()
    reopened = open_store(tmp_path)
    assert reopened.app_ids() == [app_id]
    assert sorted(p.name for p in app_dir.iterdir()) == sorted(["CURRENT", current])
    assert not (tmp_path / "apps" / "never-committed").exists()
    assert list((tmp_path / "tmp").iterdir()) == []
    assert list((tmp_path / "trash").iterdir()) == []
    with reopened.using(app_id) as app:
        assert app.tables == ["Orders"]


def test_memory_budget_evicts_idle_apps_which_load_again(
    tmp_path: Path, open_store: OpenStore
) -> None:
    store = open_store(tmp_path, memory_budget_bytes=1)  # every app is over budget
    a = str(_import(store, package_bytes({"Orders": ORDERS}))["id"])
    b = str(_import(store, package_bytes({"Customers": CUSTOMERS}))["id"])
    assert store.usage().loaded == [b]
    assert sorted(store.app_ids()) == sorted([a, b])
    with store.using(a) as app_a:
        assert app_a.tables == ["Orders"]
        assert store.usage().loaded == [a]
        assert store.usage().active == [a]
        # While a request holds `a`, loading `b` cannot evict it.
        with store.using(b):
            assert sorted(store.usage().loaded) == sorted([a, b])
    assert json.loads(store.metadata_json(b))["tables"][0]["name"] == "Customers"


def _store_with_media(tmp_path: Path, open_store: OpenStore) -> tuple[AppStore, str]:
    store = open_store(tmp_path / "data")
    media = {"logo.png": b"PNG", "img/a.png": b"A", "img/deep/b.png": b"B", "empty/": b""}
    attrs = _import(store, package_bytes(media=media, attributes={"thumbnail": "media/logo.png"}))
    return store, str(attrs["id"])


def test_media_listing_forms(tmp_path: Path, open_store: OpenStore) -> None:
    store, app_id = _store_with_media(tmp_path, open_store)
    assert store.media_list(app_id, "", ListForm.FLAT) == ["empty/", "logo.png"]
    assert store.media_list(app_id, "", ListForm.RECURSIVE) == [
        "img/a.png",
        "img/deep/b.png",
        "logo.png",
    ]
    assert store.media_list(app_id, "", ListForm.ALL) == [
        "empty/",
        "img/a.png",
        "img/deep/b.png",
        "logo.png",
    ]
    assert store.media_list(app_id, "img", ListForm.FLAT) == ["img/a.png"]
    assert store.media_list(app_id, "img/", ListForm.RECURSIVE) == ["img/a.png", "img/deep/b.png"]
    with pytest.raises(MediaNotFound):
        store.media_list(app_id, "nope", ListForm.FLAT)
    with pytest.raises(MediaNotFound):
        store.media_list(app_id, "logo.png", ListForm.FLAT)
    with store.open_thumbnail(app_id) as f:
        assert f.read() == b"PNG"


def test_media_paths_never_leave_the_media_root(tmp_path: Path, open_store: OpenStore) -> None:
    store, app_id = _store_with_media(tmp_path, open_store)
    (tmp_path / "secret.txt").write_text("secret")
    media_root = store.media_file(app_id, "logo.png").parent
    os.symlink(tmp_path / "secret.txt", media_root / "link.txt")
    os.symlink(tmp_path, media_root / "linkdir")
    for path in ("../app.json", "img/../../app.json", "/etc/passwd", "a\\..\\b"):
        with pytest.raises(BadMediaPath):
            store.media_file(app_id, path)
    for path in ("link.txt", "linkdir/secret.txt", "img", "missing.png"):
        with pytest.raises(MediaNotFound):
            store.media_file(app_id, path)
    assert "link.txt" not in store.media_list(app_id, "", ListForm.ALL)
    with pytest.raises(MediaNotFound):
        store.media_list(app_id, "linkdir", ListForm.FLAT)


def test_media_put_and_delete(tmp_path: Path, open_store: OpenStore) -> None:
    store, app_id = _store_with_media(tmp_path, open_store)
    upload = store.new_upload_path()
    upload.write_bytes(b"new")
    store.put_media(app_id, "new/dir/file.txt", upload)
    assert store.media_file(app_id, "new/dir/file.txt").read_bytes() == b"new"
    upload = store.new_upload_path()
    upload.write_bytes(b"x")
    with pytest.raises(BadMediaPath):
        store.put_media(app_id, "logo.png/inner", upload)
    assert not upload.exists()
    store.delete_media(app_id, "img")
    assert store.media_list(app_id, "", ListForm.RECURSIVE) == ["logo.png", "new/dir/file.txt"]
    store.delete_media(app_id, "logo.png")
    with pytest.raises(MediaNotFound):
        store.open_thumbnail(app_id)
    with pytest.raises(BadMediaPath):
        store.delete_media(app_id, "")
    with pytest.raises(MediaNotFound):
        store.delete_media(app_id, "logo.png")


def test_concurrent_imports_deletes_and_reads(tmp_path: Path, open_store: OpenStore) -> None:
    store = open_store(tmp_path, memory_budget_bytes=4000)
    package = package_bytes({"Orders": ORDERS}, attributes={"id": "shared"})
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(6):
                if (n + i) % 3 == 0:
                    _import(store, package, mode=ImportMode.AUTOREPLACE)
                elif (n + i) % 3 == 1:
                    own = str(_import(store, package)["id"])
                    assert json.loads(store.metadata_json(own))["tables"][0]["name"] == "Orders"
                    store.delete(own)
                else:
                    try:
                        store.metadata_json("shared")
                        store.delete("shared")
                    except AppNotFound:
                        pass
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert set(store.app_ids()) <= {"shared"}
    store.close()
    reopened = open_store(tmp_path)
    assert reopened.app_ids() == store.app_ids()
    for app_dir in (tmp_path / "apps").iterdir():
        assert len([p for p in app_dir.iterdir() if p.is_dir()]) == 1


# ---- leases and change notices (what QIX sessions rely on) -----------------------------


def test_a_leased_app_is_never_evicted_until_released(
    tmp_path: Path, open_store: OpenStore
) -> None:
    store = open_store(tmp_path, memory_budget_bytes=1)  # every app is over budget
    a = str(_import(store, package_bytes({"Orders": ORDERS}))["id"])
    lease = store.lease(a)
    assert lease.app.tables == ["Orders"]
    b = str(_import(store, package_bytes({"Customers": CUSTOMERS}))["id"])
    with store.using(b):
        pass
    assert a in store.usage().loaded  # imports and loads of b did not evict a
    assert store.usage().active == [a]
    second = store.lease(a)
    assert second.app is lease.app  # the same model while held
    second.release()
    assert store.usage().active == [a]  # still held by the first lease
    lease.release()
    lease.release()  # a second release changes nothing
    assert store.usage().active == []
    c = str(_import(store, package_bytes({"Orders": ORDERS}))["id"])
    assert store.usage().loaded == [c]  # released, a was evicted at the next load
    with pytest.raises(AppNotFound):
        store.lease("no-such-app")


def test_subscribers_hear_of_deletes_and_replacements(
    tmp_path: Path, open_store: OpenStore
) -> None:
    store = open_store(tmp_path)
    events: list[tuple[str, str, str]] = []

    def listener(app_id: str, event: str) -> None:
        # Called once the change is committed: the store already shows it.
        now = "listed" if app_id in store.app_ids() else "gone"
        events.append((app_id, event, now))

    unsubscribe = store.subscribe(listener)
    package = package_bytes({"Orders": ORDERS}, attributes={"id": "app-1"})
    _import(store, package, mode=ImportMode.AUTOREPLACE)  # a first import replaces nothing
    new_id = str(_import(store, package_bytes())["id"])
    _import(store, package, mode=ImportMode.AUTOREPLACE)
    store.delete("app-1")
    with pytest.raises(AppNotFound):
        store.delete("app-1")  # a failed delete is no event
    assert events == [("app-1", "replaced", "listed"), ("app-1", "deleted", "gone")]
    unsubscribe()
    store.delete(new_id)
    assert len(events) == 2


def test_events_come_from_the_committing_thread(tmp_path: Path, open_store: OpenStore) -> None:
    store = open_store(tmp_path)
    app_id = str(_import(store, package_bytes())["id"])
    threads: list[int] = []
    store.subscribe(lambda _id, _event: threads.append(threading.get_ident()))
    worker = threading.Thread(target=store.delete, args=(app_id,))
    worker.start()
    worker.join()
    assert threads == [worker.ident]


def test_an_app_damaged_on_disk_is_reported_as_unreadable(
    tmp_path: Path, open_store: OpenStore
) -> None:
    store = open_store(tmp_path)
    app_id = str(_import(store, package_bytes({"Orders": ORDERS}))["id"])
    store.close()
    (table,) = (tmp_path / "apps" / app_id).glob("v-*/tables/Orders.qvd")
    table.write_bytes(table.read_bytes()[:200])
    reopened = open_store(tmp_path)
    with pytest.raises(StoredAppUnreadable, match=app_id):
        reopened.lease(app_id)
    assert reopened.usage().active == []  # the failed load holds no lease


def test_a_failing_listener_neither_undoes_the_change_nor_silences_others(
    tmp_path: Path, open_store: OpenStore, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(tmp_path)
    app_id = str(_import(store, package_bytes())["id"])
    heard: list[str] = []

    def failing(_app_id: str, _event: str) -> None:
        raise RuntimeError("listener bug")

    store.subscribe(failing)
    store.subscribe(lambda _app_id, event: heard.append(event))
    store.delete(app_id)
    assert store.app_ids() == []
    assert heard == ["deleted"]
    assert "listener bug" in caplog.text
