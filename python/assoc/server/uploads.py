"""Request bodies streamed to a file under the store's tmp/, with the size limit enforced."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from python_multipart.exceptions import FormParserError, MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request

from assoc import Error, QvdStream
from assoc.server.errors import ApiError
from assoc.server.settings import Settings
from assoc.server.store.files import start_writeback
from assoc.sources import HEAD_BYTES, SourceKind, detect_kind

FILE_PART = "filedata"
_FLUSH_BYTES = 1 << 20
_IOV_MAX = 1024  # chunks one writev takes (Linux's limit)


# Holds room in the store's load gate for a load of that many bytes, for the block.
Admit = Callable[[int], contextlib.AbstractContextManager[None]]


@dataclass(frozen=True)
class Upload:
    """A request body (or its filedata part) on disk; a QVD file also parsed as it came,
    under load-gate room held until `admission` closes."""

    path: Path
    size: int
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
        self.size = 0
        self._file: BinaryIO = open(path, "xb", buffering=0)  # noqa: SIM115 - closed in close()
        self._written = 0
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._writing: asyncio.Future[None] | None = None

    def add(self, data: bytes) -> None:
        self._pending.append(data)
        self._pending_bytes += len(data)
        self.size += len(data)

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
    request: Request, path: Path, settings: Settings, admit: Admit | None = None
) -> Upload:
    """Streams the body (raw, or the multipart `filedata` part) to `path`; 413 past
    MaxUploadBytes, 408 when the client sends nothing for BodyReadTimeout seconds.

    With `admit` and a Content-Length, a QVD file is parsed as it arrives too, once `admit`
    has room for it."""
    limit = settings.max_upload_bytes
    stream = _limited_stream(request, limit, settings.body_read_timeout)
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError(400, "BadRequest", "Content-Length is not a number")
        if int(declared) > limit:
            raise _too_large(limit)
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    spool = _SpoolFile(path)
    admission = contextlib.ExitStack()
    qvd = _QvdFeed(admit, admission)
    body_size = int(declared) if declared else 0
    try:
        if content_type == b"multipart/form-data":
            filename = await _receive_multipart(
                stream, spool, options.get(b"boundary"), qvd, body_size
            )
        else:
            filename = None
            qvd.size = body_size
            async for chunk in stream:
                spool.add(chunk)
                qvd.add(chunk)
                await qvd.start_when_ready()
                await spool.flush()
        await spool.flush(force=True)
        await spool.close()
        return Upload(path, spool.size, filename, qvd.stream, admission)
    except BaseException:
        admission.close()
        await asyncio.shield(spool.close())
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        raise


class _QvdFeed:
    """The uploaded file's bytes for a QvdStream: the first ones are held until they show a
    QVD file and `admit` has room for it, then every byte is fed as it comes."""

    def __init__(self, admit: Admit | None, admission: contextlib.ExitStack) -> None:
        self.stream: QvdStream | None = None
        self.size = 0  # the file's expected size; 0 while unknown (nothing is held)
        self._admit = admit
        self._admission = admission
        self._head: list[bytes] | None = [] if admit is not None else None
        self._head_bytes = 0

    def add(self, data: bytes) -> None:
        if self.stream is not None:
            self.stream.feed(data)
        elif self._head is not None and self.size > 0:
            self._head.append(data)
            self._head_bytes += len(data)

    async def start_when_ready(self) -> None:
        """Starts the stream once enough bytes are held to tell a QVD file."""
        if self._head is None or self._admit is None or self._head_bytes < HEAD_BYTES:
            return
        head, self._head = b"".join(self._head), None
        try:
            if detect_kind(head) is not SourceKind.QVD:
                return
        except Error:
            return  # the import names the problem as it does for any body
        await _enter_in_thread(self._admit(self.size), self._admission)
        try:
            stream = QvdStream(self.size)
        except Error:
            return  # larger than the memory: the import reports it
        stream.feed(head)
        self.stream = stream


async def _enter_in_thread(
    room: contextlib.AbstractContextManager[None], stack: contextlib.ExitStack
) -> None:
    """Enters `room` in a worker thread (it may wait) and adds its exit to `stack`; if the
    caller is cancelled meanwhile, the thread leaves it again as soon as it has entered."""
    lock = threading.Lock()
    abandoned = False

    def enter() -> None:
        room.__enter__()
        with lock:
            if not abandoned:
                stack.push(room)
                return
        room.__exit__(None, None, None)

    try:
        await run_in_threadpool(enter)
    except BaseException:
        with lock:
            abandoned = True
        raise


async def _limited_stream(request: Request, limit: int, idle: float) -> AsyncIterator[bytes]:
    received = 0
    chunks = request.stream()
    try:
        while True:
            try:
                chunk = await asyncio.wait_for(anext(chunks), idle)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise ApiError(
                    408, "RequestTimeout", f"the request body stalled for {idle:g} s"
                ) from None
            received += len(chunk)
            if received > limit:
                raise _too_large(limit)
            if chunk:
                yield chunk
    except ClientDisconnect:
        raise ApiError(400, "BadRequest", "the client closed the connection mid-body") from None


class _FilePartCollector:
    """Multipart parser callbacks that send the first `filedata` part's bytes to a spool and a
    QVD feed. The part's size is taken to be what follows its first byte but the closing
    delimiter (the file as the last part, as clients send it); when it is not, the stream
    reads the file whole at its end."""

    def __init__(self, spool: _SpoolFile, qvd: _QvdFeed, body_size: int, boundary: bytes) -> None:
        self.spool = spool
        self.qvd = qvd
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
            if self.spool.size == 0 and self.body_size:
                self.qvd.size = max(0, self.body_size - (self.offset + start) - self.closing)
            piece = data[start:end]
            self.spool.add(piece)
            self.qvd.add(piece)

    def on_part_end(self) -> None:
        self._in_file = False


async def _receive_multipart(
    stream: AsyncIterator[bytes],
    spool: _SpoolFile,
    boundary: bytes | None,
    qvd: _QvdFeed,
    body_size: int,
) -> str | None:
    """Writes the `filedata` part's bytes to the spool (and the QVD feed); returns the part's
    filename."""
    if not boundary:
        raise ApiError(400, "BadRequest", "multipart/form-data without a boundary")
    collector = _FilePartCollector(spool, qvd, body_size, boundary)
    try:
        parser = MultipartParser(boundary, collector.callbacks())  # type: ignore[arg-type]
    except FormParserError as exc:  # a boundary over 256 bytes
        raise ApiError(400, "BadRequest", f"bad multipart boundary: {exc}") from None
    try:
        async for chunk in stream:
            parser.write(chunk)
            collector.offset += len(chunk)
            await qvd.start_when_ready()
            await spool.flush()
        parser.finalize()
    except MultipartParseError as exc:
        raise ApiError(400, "BadRequest", f"malformed multipart body: {exc}") from None
    if not collector.seen:
        raise ApiError(400, "BadRequest", f"the multipart body has no {FILE_PART!r} part")
    return collector.filename
