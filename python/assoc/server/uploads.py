"""Request bodies streamed to a file under the store's tmp/, with the size limit enforced."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol, TypeVar

from python_multipart.exceptions import FormParserError, MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request

from assoc import Error, QvdStream
from assoc.server.errors import ApiError
from assoc.server.settings import Settings
from assoc.server.store.files import start_writeback
from assoc.sources import HEAD_BYTES, SourceKind, detect_kind

T = TypeVar("T")

FILE_PART = "filedata"
_FLUSH_BYTES = 1 << 20
_IOV_MAX = 1024  # chunks one writev takes (Linux's limit)


class QvdTarget(Protocol):
    """Where a QVD file that streams in goes: the store of the import it is for."""

    def admit_upload(self, size: int) -> contextlib.AbstractContextManager[None]:
        """Room in the load gate for loading a file of `size` bytes, held for the block (entering
        may wait)."""
        ...

    def stage_upload(self) -> Path:
        """A new path for the file, in folders made for its import (which takes the file as on
        disk once its stream has finished: the stream flushes it)."""
        ...

    def discard_upload(self, path: Path) -> None:
        """Removes the file and what was made for it."""
        ...

    def upload_copy(self, path: Path) -> Copy | None:
        """Where else the file's bytes go as they arrive (an upload to an object store), if
        anywhere."""
        ...


class Copy(Protocol):
    """A second destination of a streamed file's bytes, that may fall behind."""

    def feed(self, data: bytes) -> None:
        """Takes the next bytes (never waits)."""
        ...

    @property
    def full(self) -> bool:
        """Whether it holds so much not yet sent on that the sender should wait."""
        ...

    def wait_for_room(self) -> None:
        """Waits until it has sent enough on (blocking: call from a worker thread)."""
        ...


@dataclass(frozen=True)
class Upload:
    """A request body (or its filedata part) as a file; a QVD file also parsed as it came,
    under load-gate room held until `admission` closes. The stream writes that file itself
    (at a path the target staged): it is complete once `qvd.finish()` has returned."""

    path: Path
    filename: str | None
    qvd: QvdStream | None = None
    admission: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "PayloadTooLarge", f"the request body is larger than {limit} bytes")


class _SpoolFile:
    """Collects chunks and writes them a megabyte at a time in a worker thread, one write in
    flight while the next chunks arrive (writes stay in order).

    Each written range is handed to the disk at once (sync_file_range), so by the time the
    store flushes the file for durability, only the last range is still to go.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: BinaryIO = open(path, "xb", buffering=0)  # noqa: SIM115 - closed in close()
        self._written = 0
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._writing: asyncio.Future[None] | None = None

    def add(self, data: bytes) -> None:
        self._pending.append(data)
        self._pending_bytes += len(data)

    async def flush(self, force: bool = False) -> None:
        """Starts writing what has collected once there is enough (anything, with `force`);
        with `force`, returns when everything is written."""
        if self._pending and (force or self._pending_bytes >= _FLUSH_BYTES):
            chunks, self._pending = self._pending, []
            self._pending_bytes = 0
            await self._wait()
            self._writing = asyncio.ensure_future(run_in_threadpool(self._write, chunks))
        if force:
            await self._wait()

    def _write(self, chunks: list[bytes]) -> None:
        # One gathered write per IOV_MAX chunks, so the chunks are never joined (copied) first.
        fd = self._file.fileno()
        start = self._written
        views = [memoryview(c) for c in chunks]
        i = 0
        while i < len(views):
            n = os.writev(fd, views[i : i + _IOV_MAX])
            self._written += n
            while i < len(views) and n >= len(views[i]):
                n -= len(views[i])
                i += 1
            if n:
                views[i] = views[i][n:]
        # Only a head start (errors are ignored): the store's fsync decides.
        start_writeback(fd, start, self._written - start)

    async def _wait(self) -> None:
        if self._writing is not None:
            writing, self._writing = self._writing, None
            await writing

    async def close(self) -> None:
        """Closes the file once no write is in flight (a failed write's error is dropped: the
        caller is discarding the file)."""
        with contextlib.suppress(Exception):
            await self._wait()
        self._file.close()


async def receive_upload(
    request: Request, path: Path, settings: Settings, target: QvdTarget | None = None
) -> Upload:
    """Streams the body (raw, or the multipart `filedata` part) to `path`; 413 past
    MaxUploadBytes, 408 when the client sends nothing for BodyReadTimeout seconds.

    With a `target` and a Content-Length, a QVD file is parsed as it arrives, once the target
    has room for it, and written where the target stages it instead."""
    limit = settings.max_upload_bytes
    stream = _limited_stream(request, limit, settings.body_read_timeout)
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError(400, "BadRequest", "Content-Length is not a number")
        if int(declared) > limit:
            raise _too_large(limit)
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    admission = contextlib.ExitStack()
    sink = _FileSink(path, target, admission)
    body_size = int(declared) if declared else 0
    try:
        if content_type == b"multipart/form-data":
            filename = await _receive_multipart(stream, sink, options.get(b"boundary"), body_size)
        else:
            filename = None
            sink.size = body_size
            async for chunk in stream:
                sink.add(chunk)
                await sink.pump()
        await sink.close()
        return Upload(sink.path, filename, sink.qvd, admission)
    except BaseException:
        admission.close()
        await asyncio.shield(sink.discard())
        raise


class _FileSink:
    """Where the uploaded file's bytes go. The first ones are held until they tell what the
    file is: a QVD file of a known size, once the target has room for it, goes to a QvdStream
    that parses it and writes it where the target stages it; anything else to a spool file at
    `path`."""

    def __init__(
        self, path: Path, target: QvdTarget | None, admission: contextlib.ExitStack
    ) -> None:
        self.path = path
        self.size = 0  # the file's expected size; 0 while unknown (no stream is started)
        self.received = 0
        self.qvd: QvdStream | None = None
        self._copy: Copy | None = None
        self._spool: _SpoolFile | None = None
        self._target = target
        self._admission = admission
        self._head: list[bytes] | None = []
        self._head_bytes = 0

    def add(self, data: bytes) -> None:
        self.received += len(data)
        if self.qvd is not None:
            self.qvd.feed(data)
            if self._copy is not None:
                self._copy.feed(data)
        elif self._spool is not None:
            self._spool.add(data)
        else:
            assert self._head is not None
            self._head.append(data)
            self._head_bytes += len(data)

    async def pump(self) -> None:
        """After each chunk: picks the file's way once enough is held, writes what the spool
        has collected."""
        if self._head is not None and self._head_bytes >= HEAD_BYTES:
            await self._choose()
        if self._spool is not None:
            await self._spool.flush()
        # A copy that failed takes no more bytes: the import reports its error once the body
        # has ended (a client still sending would not read an earlier answer).
        if self._copy is not None and self._copy.full:
            await run_in_threadpool(self._copy.wait_for_room)

    async def close(self) -> None:
        """The body has ended: the spool's file is complete (a stream's, once it finishes)."""
        if self._head is not None:
            await self._choose()
        if self._spool is not None:
            await self._spool.flush(force=True)
            await self._spool.close()

    async def discard(self) -> None:
        """Stops writing and removes the file (after a failure)."""
        if self.qvd is not None:
            assert self._target is not None
            self.qvd = None  # its threads stop, its file closes
            self._copy = None
            self._target.discard_upload(self.path)
            return
        if self._spool is not None:
            await self._spool.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    async def _choose(self) -> None:
        assert self._head is not None
        head, self._head = b"".join(self._head), None
        self.qvd = await self._start_stream(head)
        if self.qvd is None:
            self._spool = _SpoolFile(self.path)
            self._spool.add(head)

    async def _start_stream(self, head: bytes) -> QvdStream | None:
        target = self._target
        if target is None or self.size <= 0 or len(head) < HEAD_BYTES:
            return None
        try:
            if detect_kind(head) is not SourceKind.QVD:
                return None
        except Error:
            return None  # the import names the problem as it does for any body
        size = self.size
        room = target.admit_upload(size)

        def start() -> tuple[QvdStream, Path, Copy | None] | None:
            # Waiting for room, making folders and the file: one trip to a worker thread.
            with contextlib.ExitStack() as undo:
                room.__enter__()
                undo.push(room)
                path = target.stage_upload()
                undo.callback(target.discard_upload, path)
                try:
                    stream = QvdStream(size, path, sync=True)
                except Error:
                    return None  # larger than the memory: the import reports it
                undo.pop_all()
                return stream, path, target.upload_copy(path)

        def abandon(started: tuple[QvdStream, Path, Copy | None] | None) -> None:
            if started is not None:
                target.discard_upload(started[1])
                room.__exit__(None, None, None)

        started = await _in_thread(start, abandon)
        if started is None:
            return None
        stream, self.path, self._copy = started
        self._admission.push(room)
        stream.feed(head)
        if self._copy is not None:
            self._copy.feed(head)
        return stream


async def _in_thread(work: Callable[[], T], undo: Callable[[T], None]) -> T:
    """work() in a worker thread; if the caller is cancelled meanwhile, the thread undoes what
    work() did (undo(its result)) as soon as it has done it."""
    lock = threading.Lock()
    abandoned = False

    def run() -> T:
        result = work()
        with lock:
            if not abandoned:
                return result
        undo(result)
        return result

    try:
        return await run_in_threadpool(run)
    except BaseException:
        with lock:
            abandoned = True
        raise


class _IdleWatch:
    """Cancels the task that made it once it has waited `idle` seconds for one chunk: a timer
    that only looks when it fires (and is set again from the last chunk), so a chunk costs two
    assignments instead of a timeout of its own (with wait_for, a task: a millisecond of a
    15 MB upload)."""

    def __init__(self, idle: float) -> None:
        self.idle = idle
        self.expired = False
        self.waiting_since: float | None = None  # loop time the wait for a chunk began
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        # Cancels the task already had (Python 3.11+), told apart from this one's.
        self._cancelling = self._task.cancelling() if sys.version_info >= (3, 11) else 0
        self._timer = self._loop.call_later(idle, self._look)

    def _look(self) -> None:
        since = self.waiting_since
        now = self._loop.time()
        if since is not None and now - since >= self.idle:
            self.expired = True
            self._task.cancel()
        else:
            self._timer = self._loop.call_at(
                (now if since is None else since) + self.idle, self._look
            )

    def is_mine(self) -> bool:
        """Whether the CancelledError being handled is this watch's alone (it is then spent)."""
        if not self.expired:
            return False
        if sys.version_info >= (3, 11):
            return self._task.uncancel() <= self._cancelling
        return True  # pragma: no cover - Python 3.10

    def close(self) -> None:
        self._timer.cancel()


async def _limited_stream(request: Request, limit: int, idle: float) -> AsyncIterator[bytes]:
    received = 0
    chunks = request.stream()
    loop = asyncio.get_running_loop()
    watch = _IdleWatch(idle)
    try:
        while True:
            watch.waiting_since = loop.time()
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if watch.is_mine():
                    # The rest of the body may still come: the connection cannot carry another
                    # request, so the answer closes it (RFC 9110 15.5.9) instead of leaving the
                    # client waiting out the keep-alive.
                    raise ApiError(
                        408,
                        "RequestTimeout",
                        f"the request body stalled for {idle:g} s",
                        headers={"Connection": "close"},
                    ) from None
                raise
            watch.waiting_since = None
            received += len(chunk)
            if received > limit:
                raise _too_large(limit)
            if chunk:
                yield chunk
    except ClientDisconnect:
        raise ApiError(400, "BadRequest", "the client closed the connection mid-body") from None
    finally:
        watch.close()


class _FilePartCollector:
    """Multipart parser callbacks that send the first `filedata` part's bytes to a sink. The
    part's size is taken to be what follows its first byte but the closing delimiter (the file
    as the last part, as clients send it); when it is not, a QVD stream reads the file whole at
    its end."""

    def __init__(self, sink: _FileSink, body_size: int, boundary: bytes) -> None:
        self.sink = sink
        self.body_size = body_size
        self.closing = len(b"\r\n--" + boundary + b"--\r\n")
        self.offset = 0  # where in the body the chunk being parsed starts
        self.seen = False
        self.filename: str | None = None
        self._in_file = False
        self._field = b""
        self._value = b""
        self._headers: dict[bytes, bytes] = {}

    def callbacks(self) -> dict[str, object]:
        return {
            "on_part_begin": self.on_part_begin,
            "on_header_field": self.on_header_field,
            "on_header_value": self.on_header_value,
            "on_header_end": self.on_header_end,
            "on_headers_finished": self.on_headers_finished,
            "on_part_data": self.on_part_data,
            "on_part_end": self.on_part_end,
        }

    def on_part_begin(self) -> None:
        self._headers = {}
        self._in_file = False

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def on_header_end(self) -> None:
        self._headers[self._field.lower()] = self._value
        self._field = self._value = b""

    def on_headers_finished(self) -> None:
        _, disposition = parse_options_header(self._headers.get(b"content-disposition", b""))
        if disposition.get(b"name") == FILE_PART.encode() and not self.seen:
            self.seen = self._in_file = True
            raw_name = disposition.get(b"filename")
            self.filename = raw_name.decode("utf-8", "replace") if raw_name else None

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file:
            if self.sink.received == 0 and self.body_size:
                self.sink.size = max(0, self.body_size - (self.offset + start) - self.closing)
            self.sink.add(data[start:end])

    def on_part_end(self) -> None:
        self._in_file = False


_MAX_BOUNDARY_BYTES = 256


async def _receive_multipart(
    stream: AsyncIterator[bytes],
    sink: _FileSink,
    boundary: bytes | None,
    body_size: int,
) -> str | None:
    """Sends the `filedata` part's bytes to the sink; returns the part's filename."""
    if not boundary:
        raise ApiError(400, "BadRequest", "multipart/form-data without a boundary")
    if len(boundary) > _MAX_BOUNDARY_BYTES:  # RFC 2046 allows 70; older parsers take any length
        raise ApiError(
            400, "BadRequest", f"bad multipart boundary: longer than {_MAX_BOUNDARY_BYTES} bytes"
        )
    collector = _FilePartCollector(sink, body_size, boundary)
    try:
        parser = MultipartParser(boundary, collector.callbacks())  # type: ignore[arg-type]
    except FormParserError as exc:  # a boundary over 256 bytes
        raise ApiError(400, "BadRequest", f"bad multipart boundary: {exc}") from None
    try:
        async for chunk in stream:
            parser.write(chunk)
            collector.offset += len(chunk)
            await sink.pump()
        parser.finalize()
    except MultipartParseError as exc:
        raise ApiError(400, "BadRequest", f"malformed multipart body: {exc}") from None
    if not collector.seen:
        raise ApiError(400, "BadRequest", f"the multipart body has no {FILE_PART!r} part")
    return collector.filename
