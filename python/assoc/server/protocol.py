"""The HTTP protocol `assoc serve` runs: uvicorn's httptools protocol with bounds on requests
whose headers have not all arrived — how long each may take (HeaderReadTimeout) and how many one
client address may hold (MaxIncompleteRequestsPerAddress)."""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from http import HTTPStatus
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


def _error_bytes(status: int, code: str, detail: str) -> bytes:
    """A whole HTTP response carrying the service's JSON error body; the connection closes."""
    phrase = HTTPStatus(status).phrase
    error = {"code": code, "title": phrase, "detail": detail, "status": str(status)}
    body = json.dumps({"errors": [error]}).encode()
    head = (
        f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class IncompleteRequests:
    """Connections whose request headers are still arriving, per client address, oldest first."""

    def __init__(self, header_timeout: float, per_address: int) -> None:
        self.header_timeout = header_timeout
        self.per_address = per_address
        self._by_address: dict[str, OrderedDict[BoundedHttpToolsProtocol, None]] = {}

    def add(self, protocol: BoundedHttpToolsProtocol, address: str) -> None:
        """Counts a request that started; past the address's bound its oldest is closed."""
        waiting = self._by_address.setdefault(address, OrderedDict())
        waiting[protocol] = None
        while len(waiting) > self.per_address:
            oldest, _ = waiting.popitem(last=False)
            oldest.give_up(
                429,
                "TooManyIncompleteRequests",
                f"more than {self.per_address} requests from this address were sending headers",
            )

    def discard(self, protocol: BoundedHttpToolsProtocol, address: str) -> None:
        """Forgets a request whose headers arrived, or whose connection closed."""
        waiting = self._by_address.get(address)
        if waiting is not None:
            waiting.pop(protocol, None)
            if not waiting:
                del self._by_address[address]

    def count(self, address: str) -> int:
        """Requests from `address` sending headers now."""
        return len(self._by_address.get(address, ()))


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """httptools' protocol, each request's headers bounded in time and per address; a request
    past its time gets 408, the oldest past its address's bound 429, and its connection closes.
    Made by `bounded_protocol`."""

    incomplete: IncompleteRequests

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._address = ""
        self._header_timer: asyncio.TimerHandle | None = None
        self._waiting_headers = False

    def _start_request(self) -> None:
        if self._waiting_headers or self.transport is None or self.transport.is_closing():
            return
        self._waiting_headers = True
        self._header_timer = self.loop.call_later(
            self.incomplete.header_timeout,
            self.give_up,
            408,
            "RequestTimeout",
            f"the request headers did not arrive within {self.incomplete.header_timeout:g} s",
        )
        self.incomplete.add(self, self._address)

    def _headers_done(self) -> None:
        if not self._waiting_headers:
            return
        self._waiting_headers = False
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        self.incomplete.discard(self, self._address)

    def give_up(self, status: int, code: str, detail: str) -> None:
        """Answers a request whose headers are still arriving with an error, and closes it."""
        self._headers_done()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(_error_bytes(status, code, detail))
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._address = self.client[0] if self.client else ""
        self._start_request()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._start_request()  # the next request on a kept-alive connection

    def on_headers_complete(self) -> None:
        self._headers_done()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_done()
        super().connection_lost(exc)


def bounded_protocol(header_timeout: float, per_address: int) -> type[BoundedHttpToolsProtocol]:
    """A protocol class for one server, with its own count of incomplete requests."""
    return type(
        "BoundedHttpToolsProtocol",
        (BoundedHttpToolsProtocol,),
        {"incomplete": IncompleteRequests(header_timeout, per_address)},
    )
