"""Apps in an S3-compatible object store: immutable version folders and one pointer per app.

    {prefix}/apps/{id}/v/{version}/...   app.json, table files, media/** (never changed)
    {prefix}/pointers/{id}               JSON naming the app's current version (and its
                                         attributes, so a listing needs no version read)
    {prefix}/probes/{uuid}               the start-up check of conditional writes

A commit uploads a version's files, then swaps the pointer: `If-None-Match: *` for a new app,
`If-Match: <etag>` for a replacement, so of two writers from the same version one wins and the
other gets `VersionConflict`. Every pointer body is unique (its version is new, with a nonce),
so equal ETags mean the same commit. The client is obstore (the `assoc[s3]` extra).
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import datetime
import functools
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from assoc import Error
from assoc.server.store.errors import StoreUnavailable, VersionConflict
from assoc.server.store.files import start_writeback
from assoc.server.threads import name_os_thread

T = TypeVar("T")
log = logging.getLogger("assoc.server.store")

POINTERS = "pointers/"
APPS = "apps/"
PROBES = "probes/"
_TRANSFER_THREADS = 8
_CHUNK = 8 << 20
# Streamed uploads: the part size (S3's least is 5 MiB), parts sent at once, and the bytes
# held for the store before the sender waits for it.
_PART = 5 << 20
_PART_CONCURRENCY = 4
_STREAM_HELD = 32 << 20
# Downloads: a file of more than _RANGE bytes is fetched as up to _RANGES ranges at once.
_RANGE = 4 << 20
_RANGES = 4
# Upper bounds (seconds) of the store-latency histogram buckets /metrics exports.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


@dataclass(frozen=True)
class Pointer:
    """One app's pointer as read or written: its ETag, the version it names, its attributes."""

    etag: str
    version: str
    attributes: dict[str, Any]


@dataclass(frozen=True)
class StoreUrl:
    """`s3://bucket/prefix` parsed."""

    bucket: str
    prefix: str

    @classmethod
    def parse(cls, text: str) -> StoreUrl:
        """The bucket and prefix of an AppStore setting; ValueError when it is not s3://…"""
        parsed = urlparse(text)
        if parsed.scheme != "s3" or not parsed.netloc or parsed.query or parsed.fragment:
            raise ValueError("must be s3://bucket or s3://bucket/prefix")
        return cls(parsed.netloc, parsed.path.strip("/"))


@dataclass
class OpStats:
    """Requests of one kind: how many, their seconds, how many failed, and how many took at
    most each of LATENCY_BUCKETS (cumulative counts, as a Prometheus histogram keeps them)."""

    count: int = 0
    seconds: float = 0.0
    errors: int = 0
    buckets: list[int] = field(default_factory=lambda: [0] * len(LATENCY_BUCKETS))

    def add(self, seconds: float, failed: bool) -> None:
        """Counts one request that took `seconds`."""
        self.count += 1
        self.seconds += seconds
        self.errors += failed
        for i, bound in enumerate(LATENCY_BUCKETS):
            if seconds <= bound:
                self.buckets[i] += 1


@dataclass
class StoreStats:
    """Store requests by operation (get, put, list, delete, copy), for /metrics."""

    ops: dict[str, OpStats] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def snapshot(self) -> dict[str, OpStats]:
        """A copy of the counters."""
        with self.lock:
            return {
                k: OpStats(v.count, v.seconds, v.errors, list(v.buckets))
                for k, v in self.ops.items()
            }


def _obstore() -> Any:
    try:
        import obstore
    except ImportError:
        raise Error(
            "AppStore needs the S3 client: install the extra `assoc[s3]` (pip install 'assoc[s3]')"
        ) from None
    return obstore


class ObjectStore:
    """The apps of one `s3://bucket/prefix`, read and written through conditional requests."""

    def __init__(
        self,
        url: str,
        endpoint: str = "",
        *,
        timeout_seconds: float = 30.0,
        retries: int = 2,
    ) -> None:
        obs = _obstore()
        from obstore.store import S3Store

        self.url = url
        where = StoreUrl.parse(url)
        endpoint = endpoint or os.environ.get("AWS_ENDPOINT_URL_S3", "")
        endpoint = endpoint or os.environ.get("AWS_ENDPOINT_URL", "")
        config: dict[str, Any] = {"conditional_put": "etag"}
        if endpoint:
            config["endpoint"] = endpoint
            config["virtual_hosted_style_request"] = False
        if not os.environ.get("AWS_REGION") and not os.environ.get("AWS_DEFAULT_REGION"):
            config["region"] = "us-east-1"
        self._obs = obs
        self._exc = obs.exceptions
        self._store = S3Store(
            where.bucket,
            prefix=where.prefix or None,
            client_options={
                "allow_http": endpoint.startswith("http://"),
                "connect_timeout": datetime.timedelta(seconds=min(timeout_seconds, 5.0)),
                "timeout": datetime.timedelta(seconds=timeout_seconds),
            },
            retry_config={
                "max_retries": retries,
                "retry_timeout": datetime.timedelta(seconds=timeout_seconds),
                "backoff": {
                    "init_backoff": datetime.timedelta(milliseconds=50),
                    "max_backoff": datetime.timedelta(seconds=1),
                    "base": 2.0,
                },
            },
            **config,
        )
        self.stats = StoreStats()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            _TRANSFER_THREADS, "assoc-s3", initializer=name_os_thread
        )
        self._where = where
        self._endpoint = endpoint
        self._timeout = timeout_seconds
        self._retries = retries
        self._uploads_client: Any = None
        self._warned_uploads = False

    def close(self) -> None:
        """Stops the transfer threads (and closes the client of the janitor's uploads)."""
        self._pool.shutdown(wait=False)
        if self._uploads_client is not None:
            self._uploads_client.close()

    # ---- one request ---------------------------------------------------------------

    def _call(self, op: str, fn: Callable[[], T]) -> T:
        """Runs one store request, counting it; transport and server failures become
        StoreUnavailable (not-found and precondition answers pass through)."""
        started = time.perf_counter()
        failed = False
        try:
            return fn()
        except (
            FileNotFoundError,
            self._exc.NotFoundError,
            self._exc.PreconditionError,
            self._exc.AlreadyExistsError,
            self._exc.NotModifiedError,
            VersionGone,
            UploadAbandoned,
        ):
            raise
        except Exception as exc:
            failed = True
            detail = _first_line(exc)
            raise StoreUnavailable(f"the app store {self.url} is unavailable: {detail}") from exc
        finally:
            with self.stats.lock:
                stats = self.stats.ops.setdefault(op, OpStats())
                stats.add(time.perf_counter() - started, failed)

    # ---- start-up ------------------------------------------------------------------

    def probe(self) -> None:
        """Checks that the store answers and refuses a second `If-None-Match: *` PUT (412);
        raises Error otherwise."""
        key = f"{PROBES}{uuid.uuid4().hex}"
        obs = self._obs
        try:
            self._call("put", lambda: obs.put(self._store, key, b"probe", mode="create"))
            try:
                self._call("put", lambda: obs.put(self._store, key, b"again", mode="create"))
            except (self._exc.AlreadyExistsError, self._exc.PreconditionError):
                return
            raise Error(
                f"the app store {self.url} does not honour conditional writes (a second "
                "PUT with If-None-Match: * succeeded); it cannot keep concurrent commits apart"
            )
        except StoreUnavailable as exc:
            raise Error(str(exc)) from None
        finally:
            with contextlib.suppress(Exception):
                self._call("delete", lambda: obs.delete(self._store, key))

    # ---- pointers ------------------------------------------------------------------

    def read_pointer(self, app_id: str, if_none_match: str | None = None) -> Pointer | None:
        """The app's pointer; None when the app has none; `if_none_match` unchanged: raises
        NotModified."""
        options = {"if_none_match": if_none_match} if if_none_match else {}
        obs = self._obs

        def get() -> tuple[str, bytes]:
            result = obs.get(self._store, POINTERS + app_id, options=options)
            return str(result.meta["e_tag"]), bytes(result.bytes())

        try:
            etag, body = self._call("get", get)
        except self._exc.NotModifiedError:
            raise NotModified from None
        except (FileNotFoundError, self._exc.NotFoundError):
            return None
        data = json.loads(body)
        return Pointer(etag, str(data["version"]), dict(data["attributes"]))

    def swap_pointer(
        self, app_id: str, version: str, attributes: dict[str, Any], base: str | None
    ) -> Pointer:
        """Points the app at `version`: created when `base` is None, else only while the
        pointer's ETag is still `base`; VersionConflict when another commit came first."""
        body = json.dumps(
            {"version": version, "attributes": attributes, "nonce": uuid.uuid4().hex},
            separators=(",", ":"),
        ).encode()
        mode: Any = "create" if base is None else {"e_tag": base}
        obs = self._obs
        try:
            result = self._call(
                "put", lambda: obs.put(self._store, POINTERS + app_id, body, mode=mode)
            )
        except (self._exc.AlreadyExistsError, self._exc.PreconditionError):
            raise VersionConflict(
                f"app {app_id!r} was changed by another commit meanwhile; nothing was changed"
            ) from None
        return Pointer(str(result["e_tag"]), version, attributes)

    def delete_pointer(self, app_id: str) -> None:
        """Removes the app's pointer (the app is gone from then on)."""
        obs = self._obs
        self._call("delete", lambda: obs.delete(self._store, POINTERS + app_id))

    def list_pointers(self) -> dict[str, str]:
        """ETag of every app's pointer, by app id."""
        return {
            entry["path"][len(POINTERS) :]: str(entry["e_tag"])
            for entry in self._list(POINTERS)
            if "/" not in entry["path"][len(POINTERS) :]
        }

    def _list(self, prefix: str) -> list[dict[str, Any]]:
        obs = self._obs

        def run() -> list[dict[str, Any]]:
            return [dict(entry) for entry in obs.list(self._store, prefix=prefix).collect()]

        return self._call("list", run)

    # ---- versions ------------------------------------------------------------------

    @staticmethod
    def version_prefix(app_id: str, version: str) -> str:
        """Where the files of one version live."""
        return f"{APPS}{app_id}/v/{version}/"

    def upload_version(
        self,
        app_id: str,
        version: str,
        local: Path,
        reuse: tuple[str, Path] | None = None,
        uploaded: frozenset[str] = frozenset(),
    ) -> None:
        """Uploads every file under `local` as the version's files, but those in `uploaded`
        (keys relative to the version, in the store already). With `reuse` (an older version
        and its local folder), files that are the same file on disk (hard links) are copied
        inside the store instead."""
        prefix = self.version_prefix(app_id, version)
        same: dict[str, str] = {}
        if reuse is not None:
            old_prefix = self.version_prefix(app_id, reuse[0])
            for rel, path in _files(reuse[1]):
                if not rel.endswith("/"):
                    same[_inode(path)] = old_prefix + rel
        obs = self._obs
        jobs: list[Callable[[], Any]] = []
        for rel, path in _files(local):
            if rel in uploaded:
                continue
            key = prefix + rel
            source = None if rel.endswith("/") else same.get(_inode(path))
            if rel.endswith("/"):
                jobs.append(
                    functools.partial(
                        self._call, "put", functools.partial(obs.put, self._store, key, b"")
                    )
                )
            elif source is not None:
                jobs.append(
                    functools.partial(
                        self._call, "copy", functools.partial(obs.copy, self._store, source, key)
                    )
                )
            else:
                jobs.append(
                    functools.partial(
                        self._call, "put", functools.partial(self._put_file, path, key)
                    )
                )
        self._run_all(jobs)

    def _put_file(self, path: Path, key: str) -> object:
        # A path: the client reads the file itself, without the GIL.
        return self._obs.put(self._store, key, path, chunk_size=_CHUNK)

    def stream_upload(self, key: str) -> StreamUpload:
        """An upload of the object `key` (relative to the store's prefix) that goes on while
        its bytes are fed."""
        return StreamUpload(self, key)

    def download_version(self, app_id: str, version: str, target: Path) -> None:
        """Writes every file of the version under `target`; VersionGone when the version is
        gone (a janitor removed it after the pointer moved on). A large file comes as a few
        ranges at once, each written where it belongs in the file (and handed to the disk
        as it lands, so that the commit's flush has little left to do)."""
        prefix = self.version_prefix(app_id, version)
        entries = self._list(prefix)
        if not any(e["path"] == prefix + "app.json" for e in entries):
            raise VersionGone(f"version {version} of app {app_id!r} is not in the store")
        target.mkdir(parents=True, exist_ok=True)
        files = []
        jobs: list[Callable[[], Any]] = []
        try:
            for e in entries:
                rel = e["path"][len(prefix) :]
                path = target.joinpath(*rel.split("/"))
                if rel.endswith("/"):  # an empty media folder, kept as a marker object
                    path.mkdir(parents=True, exist_ok=True)
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                size = int(e["size"])
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                files.append(fd)
                if size > _RANGE:
                    os.ftruncate(fd, size)
                for start, end in _ranges(size):
                    jobs.append(
                        functools.partial(
                            self._call,
                            "get",
                            functools.partial(
                                self._fetch_range, e["path"], fd, start, end, size, app_id, version
                            ),
                        )
                    )
            self._run_all(jobs)
        finally:
            for fd in files:
                os.close(fd)

    def _fetch_range(
        self, key: str, fd: int, start: int, end: int, size: int, app_id: str, version: str
    ) -> None:
        """Bytes [start, end) of the object `key` (`size` bytes, all of it when it is no
        larger than _RANGE) written at `start` in the open file `fd`."""
        obs = self._obs
        try:
            if end - start == size:
                result = obs.get(self._store, key)
                offset = 0
                for chunk in result.stream(min_chunk_size=_CHUNK):
                    offset += _pwrite_all(fd, memoryview(chunk), offset)
                if offset != size:
                    raise VersionGone(f"version {version} of app {app_id!r} changed size")
                return
            data = memoryview(obs.get_range(self._store, key, start=start, end=end))
        except (FileNotFoundError, self._exc.NotFoundError):
            raise VersionGone(f"version {version} of app {app_id!r} is gone") from None
        if len(data) != end - start:
            raise VersionGone(f"version {version} of app {app_id!r} changed size")
        _pwrite_all(fd, data, start)
        start_writeback(fd, start, end - start)

    def delete_version(self, app_id: str, version: str) -> None:
        """Removes every file of one version."""
        self._delete_keys([e["path"] for e in self._list(self.version_prefix(app_id, version))])

    def _delete_keys(self, keys: list[str]) -> None:
        obs = self._obs
        for start in range(0, len(keys), 1000):
            batch = keys[start : start + 1000]
            self._call("delete", functools.partial(obs.delete, self._store, batch))

    def _run_all(self, jobs: list[Callable[[], Any]]) -> None:
        # Every job ends before the first error is raised: a download's jobs write into
        # files that are closed after this returns.
        futures = [self._pool.submit(job) for job in jobs]
        concurrent.futures.wait(futures)
        for future in futures:
            future.result()

    # ---- the janitor ---------------------------------------------------------------

    def collect_garbage(self, grace_seconds: float) -> list[tuple[str, str]]:
        """Aborts the multipart uploads begun more than `grace_seconds` ago (those of a node
        that died mid-upload), then removes versions that no pointer names and that nothing
        wrote to for `grace_seconds` (an upload still under way, or a commit about to swap
        its pointer, is younger); returns the (app id, version) pairs removed."""
        try:
            aborted = self.abort_stale_uploads(grace_seconds)
        except Error as exc:  # botocore missing: the versions are still removed
            if not self._warned_uploads:
                log.warning("%s", exc)
                self._warned_uploads = True
            aborted = []
        if aborted:
            log.info("the app store's janitor aborted %d unfinished uploads", len(aborted))
        versions: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for entry in self._list(APPS):
            parts = entry["path"][len(APPS) :].split("/", 3)
            if len(parts) >= 3 and parts[1] == "v":
                versions.setdefault((parts[0], parts[2]), []).append(entry)
        # The pointers are read after the listing: a commit that swapped its pointer before
        # is seen, one that swaps it after is younger than the grace period.
        current: dict[str, str | None] = {}
        for app_id in {app_id for app_id, _ in versions}:
            pointer = self.read_pointer(app_id)
            current[app_id] = pointer.version if pointer is not None else None
        now = datetime.datetime.now(datetime.timezone.utc)
        removed = []
        for (app_id, version), entries in sorted(versions.items()):
            if current[app_id] == version:
                continue
            newest = max(e["last_modified"] for e in entries)
            if (now - newest).total_seconds() < grace_seconds:
                continue
            self._delete_keys([e["path"] for e in entries])
            removed.append((app_id, version))
        return removed

    def abort_stale_uploads(self, grace_seconds: float) -> list[str]:
        """Aborts the multipart uploads under the store's apps/ begun more than
        `grace_seconds` ago, which no living writer completes (a node killed mid-upload
        leaves its upload, invisible to a listing of objects, in the store); returns their
        keys (relative to the store's prefix).

        The S3 client lists no multipart uploads, so this asks botocore (in the extra
        `assoc[s3]`): ListMultipartUploads, then AbortMultipartUpload for each old one."""
        client = self._uploads()
        root = f"{self._where.prefix}/" if self._where.prefix else ""
        bucket = self._where.bucket

        def stale() -> list[tuple[str, str]]:
            now = datetime.datetime.now(datetime.timezone.utc)
            found = []
            pages = client.get_paginator("list_multipart_uploads")
            for page in pages.paginate(Bucket=bucket, Prefix=root + APPS):
                for upload in page.get("Uploads") or []:
                    if (now - upload["Initiated"]).total_seconds() >= grace_seconds:
                        found.append((str(upload["Key"]), str(upload["UploadId"])))
            return found

        aborted = []
        for key, upload_id in self._call("list", stale):
            try:
                self._call(
                    "delete",
                    functools.partial(
                        client.abort_multipart_upload, Bucket=bucket, Key=key, UploadId=upload_id
                    ),
                )
            except StoreUnavailable as exc:  # completed or aborted meanwhile, or a failure
                log.warning("could not abort the upload of %s: %s", key, exc)
                continue
            aborted.append(key[len(root) :])
        return aborted

    def _uploads(self) -> Any:
        """The botocore client that lists and aborts multipart uploads (made on first use,
        with the endpoint, region and credentials the S3 client has)."""
        if self._uploads_client is None:
            try:
                import botocore.config
                import botocore.session
            except ImportError:
                raise Error(
                    "the AppStore janitor needs botocore to abort unfinished uploads: install "
                    "the extra `assoc[s3]` (pip install 'assoc[s3]')"
                ) from None
            region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
            config = botocore.config.Config(
                connect_timeout=min(self._timeout, 5.0),
                read_timeout=self._timeout,
                retries={"max_attempts": self._retries + 1, "mode": "standard"},
                s3={"addressing_style": "path"} if self._endpoint else {},
            )
            self._uploads_client = botocore.session.get_session().create_client(
                "s3",
                region_name=region or "us-east-1",
                endpoint_url=self._endpoint or None,
                config=config,
            )
        return self._uploads_client


class UploadAbandoned(Exception):
    """Raised into a streamed upload that is given up: the client drops what it sent."""


class StreamUpload:
    """One object uploaded while its bytes arrive: a multipart upload (parts of 5 MiB, a few
    at once) in a thread of its own, fed from a queue.

    `finish()` waits until the object is whole in the store (StoreUnavailable when the store
    failed: the client has then aborted the multipart upload). `abandon()` gives it up at
    any moment without waiting: an unfinished multipart upload is aborted (the store keeps
    none of its parts), an object that was completed already is deleted. Nothing is named by
    the key until the upload completes, and the key lies in a version folder that no pointer
    names before the commit (the janitor's, should a delete fail)."""

    def __init__(self, objects: ObjectStore, key: str) -> None:
        self.key = key
        self._objects = objects
        self._cond = threading.Condition()
        self._chunks: collections.deque[bytes] = collections.deque()
        self._held = 0
        self._ended = False
        self._abandoned = False
        self._completed = False
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="assoc-s3-stream", daemon=True)
        self._thread.start()

    def feed(self, data: bytes) -> None:
        """Queues the object's next bytes (never waits: see `full`); dropped once the upload
        has failed or was given up."""
        if not data:
            return
        with self._cond:
            if self._done.is_set() or self._abandoned:
                return
            self._chunks.append(data)
            self._held += len(data)
            self._cond.notify_all()

    @property
    def full(self) -> bool:
        """Whether the bytes queued for the store have reached the bound (the sender should
        `wait_for_room` before it sends more)."""
        return self._held > _STREAM_HELD and not self._done.is_set()

    def wait_for_room(self) -> None:
        """Waits until the store has taken enough of the queued bytes (or the upload ended)."""
        with self._cond:
            self._cond.wait_for(lambda: self._held <= _STREAM_HELD or self._done.is_set())

    def finish(self) -> None:
        """The bytes are all fed: waits until the object is stored; StoreUnavailable when
        the store failed."""
        with self._cond:
            self._ended = True
            self._cond.notify_all()
        self._done.wait()
        if self._error is not None:
            raise self._error

    def abandon(self) -> None:
        """Gives the upload up (without waiting): nothing of it stays in the store."""
        with self._cond:
            self._abandoned = True
            completed = self._completed
            self._chunks.clear()
            self._held = 0
            self._cond.notify_all()
        if completed:
            self._delete()

    def wait(self, timeout: float | None = None) -> bool:
        """Waits for the upload's thread to end; False on timeout."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _parts(self) -> Iterator[bytes]:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._chunks or self._ended or self._abandoned)
                if self._abandoned:
                    raise UploadAbandoned(self.key)
                if not self._chunks:
                    return
                chunks = list(self._chunks)
                self._chunks.clear()
                self._held = 0
                self._cond.notify_all()
            yield from chunks

    def _run(self) -> None:
        name_os_thread()
        objects = self._objects
        try:
            objects._call(
                "put",
                lambda: objects._obs.put(
                    objects._store,
                    self.key,
                    self._parts(),
                    chunk_size=_PART,
                    max_concurrency=_PART_CONCURRENCY,
                ),
            )
        except BaseException as exc:
            self._error = exc
        with self._cond:
            self._completed = self._error is None
            delete = self._completed and self._abandoned
            self._chunks.clear()
            self._held = 0
            self._done.set()
            self._cond.notify_all()
        if delete:
            self._delete()

    def _delete(self) -> None:
        objects = self._objects
        try:
            objects._call("delete", lambda: objects._obs.delete(objects._store, self.key))
        except StoreUnavailable as exc:  # in a version no pointer names: the janitor's
            log.warning("an abandoned upload %s was left for the janitor: %s", self.key, exc)


class NotModified(Exception):
    """A conditional GET of a pointer that has not changed (304)."""


class VersionGone(Exception):
    """A version named by a pointer read earlier is no longer in the store."""


def _files(root: Path) -> Iterator[tuple[str, Path]]:
    """(relative key, path) of every file under root; an empty folder as "folder/"."""
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        rel_base = base.relative_to(root).as_posix()
        rel_base = "" if rel_base == "." else rel_base + "/"
        for name in files:
            yield rel_base + name, base / name
        if not dirs and not files and rel_base:
            yield rel_base, base


def _ranges(size: int) -> list[tuple[int, int]]:
    """[start, end) ranges a file of `size` bytes is fetched in: one up to _RANGE bytes, else
    up to _RANGES of at least _RANGE/2 bytes each."""
    if size <= _RANGE:
        return [(0, size)]
    count = min(_RANGES, -(-size // (_RANGE // 2)))
    step = -(-size // count)
    return [(start, min(start + step, size)) for start in range(0, size, step)]


def _pwrite_all(fd: int, data: memoryview, offset: int) -> int:
    """Writes all of `data` at `offset`; returns its length."""
    done = 0
    while done < len(data):
        done += os.pwrite(fd, data[done:], offset + done)
    return len(data)


def _inode(path: Path) -> str:
    st = path.stat()
    return f"{st.st_dev}:{st.st_ino}"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
