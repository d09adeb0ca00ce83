"""How QIX messages go on the wire: the WebSocket protocol `assoc serve` runs is uvicorn's
sans-I/O one, with permessage-deflate (RFC 7692) at zlib's fastest level, and messages too small
to gain from compression sent as they are (the RFC lets either kind follow the other).

Compression is for the network: a client on this host that connects directly (loopback or a
Unix socket, no proxy's Forwarded or X-Forwarded-For header) saves nothing by it, and both sides
pay its CPU (a 1,000-value list layout: ~0.25 ms to deflate, ~0.1 ms to inflate). The setting
QixCompression chooses: `auto` (that rule), `on` (whenever the client offers it) or `off`."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import socket
from collections.abc import Sequence
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState
from websockets.datastructures import Headers
from websockets.extensions.base import Extension
from websockets.extensions.permessage_deflate import (
    PerMessageDeflate,
    ServerPerMessageDeflateFactory,
)
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.server import ServerProtocol
from websockets.typing import ExtensionParameter

from assoc.server.settings import QIX_COMPRESSION

# zlib level 1: a 1,000-value list layout (62 KB of JSON) deflates ~3x faster than at the
# default level 6, and comes out ~8% larger (8.6 KB rather than 8.0 KB).
COMPRESS_LEVEL = 1
# Messages shorter than this go uncompressed: a few hundred bytes at most to save, for a
# compressor call on every small answer (EngineVersion, GetProperties, ...).
MIN_COMPRESSED_BYTES = 512
# uvicorn's choices for the rest: a 4 KB window each way, zlib's memLevel 5.
WINDOW_BITS = 12
MEM_LEVEL = 5
_DATA_OPCODES = (Opcode.TEXT, Opcode.BINARY)
# Headers a proxy adds: the client behind it may be anywhere.
_PROXY_HEADERS = ("Forwarded", "X-Forwarded-For")
_OFFER = "Sec-WebSocket-Extensions"


class SmallPlainDeflate(PerMessageDeflate):
    """permessage-deflate that sends a message of one frame shorter than `min_bytes`
    uncompressed (RSV1 clear); the compressor's window then holds the compressed ones only,
    as the peer's decompressor does."""

    def __init__(self, negotiated: PerMessageDeflate, min_bytes: int) -> None:
        super().__init__(
            negotiated.remote_no_context_takeover,
            negotiated.local_no_context_takeover,
            negotiated.remote_max_window_bits,
            negotiated.local_max_window_bits,
            negotiated.compress_settings,
        )
        self.min_bytes = min_bytes

    def encode(self, frame: Frame) -> Frame:
        """The frame to send: as it is when small, else compressed."""
        if frame.fin and frame.opcode in _DATA_OPCODES and len(frame.data) < self.min_bytes:
            return frame
        return super().encode(frame)


class QixDeflateFactory(ServerPerMessageDeflateFactory):
    """Negotiates permessage-deflate as uvicorn does, then compresses with SmallPlainDeflate."""

    def __init__(self, min_bytes: int = MIN_COMPRESSED_BYTES, level: int = COMPRESS_LEVEL) -> None:
        super().__init__(
            server_max_window_bits=WINDOW_BITS,
            client_max_window_bits=WINDOW_BITS,
            compress_settings={"memLevel": MEM_LEVEL, "level": level},
        )
        self.min_bytes = min_bytes

    def process_request_params(
        self,
        params: Sequence[ExtensionParameter],
        accepted_extensions: Sequence[Extension],
    ) -> tuple[list[ExtensionParameter], PerMessageDeflate]:
        """The response's parameters and the extension, as the client's offer allows."""
        answer, negotiated = super().process_request_params(params, accepted_extensions)
        return answer, SmallPlainDeflate(negotiated, self.min_bytes)


class QixWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol with QixDeflateFactory's compression, declined
    as `compression` says (qix_protocol)."""

    compression = "auto"  # one of QIX_COMPRESSION

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        if config.ws_per_message_deflate:
            self.conn = ServerProtocol(
                extensions=[QixDeflateFactory()],
                max_size=config.ws_max_size,
                logger=logging.getLogger("uvicorn.error"),
            )

    def handle_connect(self, event: Request) -> None:
        """Answers the upgrade; a deflate offer this socket should not take is dropped first
        (the answer then names no extension: both sides send plain frames)."""
        if _OFFER in event.headers and not self._deflates(event.headers):
            del event.headers[_OFFER]
        super().handle_connect(event)

    def _deflates(self, headers: Headers) -> bool:
        if self.compression != "auto":
            return self.compression == "on"
        if any(name in headers for name in _PROXY_HEADERS):
            return True
        return not _local_peer(self.transport, self.client)


def _local_peer(transport: asyncio.Transport, client: tuple[str, int] | None) -> bool:
    """True for a peer on this host: a Unix socket's, or a loopback address."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family == socket.AF_UNIX:
        return True
    if client is None:
        return False
    try:
        address = ipaddress.ip_address(client[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


@functools.cache
def qix_protocol(compression: str = "auto") -> type[QixWebSocketProtocol]:
    """The protocol class `assoc serve` gives uvicorn for a QixCompression setting."""
    if compression not in QIX_COMPRESSION:
        raise ValueError(f"QixCompression must be one of {', '.join(QIX_COMPRESSION)}")
    if compression == QixWebSocketProtocol.compression:
        return QixWebSocketProtocol
    return type("QixWebSocketProtocol", (QixWebSocketProtocol,), {"compression": compression})
