"""A minimal ASGI app for generated bodies, and a one-process Hypercorn launcher for it.

``GET /<n>`` (or ``HEAD``) answers 200 with exactly n bytes (zeros), sent in chunks of
``CHUNK`` bytes taken from one preallocated buffer, so a multi-GB body never sits in
memory. Anything else is a 404.

Run it with ``python -m dclab.endpoints.tcp.h2_app --bind ADDR:PORT --certfile C --keyfile K``:
one process (no Hypercorn worker processes to leave behind), TLS 1.3 only, ALPN ``h2``
only (so a client that ends up on HTTP/1.1 fails instead of silently measuring another
protocol), no access log, warnings only, and a short graceful shutdown on SIGTERM.

The listening socket allows TCP Fast Open (``TCP_FASTOPEN``, at most ``TFO_QUEUE`` pending
TFO connections; Hypercorn does not set it): the kernel then hands out cookies and accepts
data in a SYN, but only when the namespace's ``net.ipv4.tcp_fastopen`` has the server bit
(2), which ``TcpStack.server_sysctls`` sets. A client that does not ask for TFO sees no
difference.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import socket
import ssl
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from hypercorn.config import Config

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

CHUNK = 64 * 1024
TFO_QUEUE = 256  # pending TFO connections (not yet accepted) the listener keeps
_ZEROS = bytes(CHUNK)
_PATH = re.compile(r"/(\d{1,15})")


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _plain(send: Send, status: int, text: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(text)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": text, "more_body": False})


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """ASGI 3 application: ``GET /<n>`` streams n bytes, anything else is a 404."""
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
        return
    if scope["type"] != "http":
        return
    m = _PATH.fullmatch(scope.get("path", ""))
    if m is None:
        await _plain(send, 404, b"not found: use GET /<bytes>\n")
        return
    if scope.get("method") not in ("GET", "HEAD"):
        await _plain(send, 405, b"method not allowed\n")
        return
    n = int(m.group(1))
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/octet-stream"),
                (b"content-length", str(n).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    if scope["method"] == "HEAD":
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    left = n
    while left > CHUNK:
        await send({"type": "http.response.body", "body": _ZEROS, "more_body": True})
        left -= CHUNK
    await send({"type": "http.response.body", "body": _ZEROS[:left], "more_body": False})


KEEP_ALIVE_S = 3600.0


def allow_fastopen(sock: socket.socket) -> None:
    """Lets a listening TCP socket accept TCP Fast Open (data in the SYN)."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_FASTOPEN, TFO_QUEUE)


def _config(bind: str, certfile: str, keyfile: str, log_level: str) -> Config:
    from hypercorn.config import Config, Sockets

    class _Tls13Config(Config):
        def create_sockets(self) -> Sockets:
            sockets = super().create_sockets()
            for sock in [*sockets.secure_sockets, *sockets.insecure_sockets]:
                allow_fastopen(sock)
            return sockets

        def create_ssl_context(self) -> ssl.SSLContext | None:
            context = super().create_ssl_context()
            if context is not None:
                context.minimum_version = ssl.TLSVersion.TLSv1_3
            return context

    config = _Tls13Config()
    config.bind = [bind]
    config.certfile = certfile
    config.keyfile = keyfile
    config.alpn_protocols = ["h2"]
    config.accesslog = None
    config.errorlog = "-"
    config.loglevel = log_level.upper()
    config.graceful_timeout = 1.0
    # Hypercorn closes a connection keep_alive_timeout (5 s) after its streams' responses
    # were handed over, not delivered: on a slow link with a deep queue the tails of the
    # bodies still sat in the socket and the client got a reset. The client closes.
    config.keep_alive_timeout = KEEP_ALIVE_S
    return config


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="dclab HTTP/2 (TLS 1.3) server for generated bodies")
    ap.add_argument("--bind", required=True, help="ADDR:PORT")
    ap.add_argument("--certfile", required=True)
    ap.add_argument("--keyfile", required=True)
    ap.add_argument("--log-level", default="warning")
    a = ap.parse_args(argv)

    from hypercorn.asyncio import serve

    config = _config(a.bind, a.certfile, a.keyfile, a.log_level)
    try:
        asyncio.run(serve(cast(Any, app), config))  # hypercorn types ASGI messages as TypedDicts
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
