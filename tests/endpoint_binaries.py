"""What the tests of our compiled stacks (quic-go, quinn) share: their specs and calls on
the veth pair (``Bench``), the marks and ``bench`` fixture of one stack's own test file
(``stack_tests``); and the check of a good download that every QUIC stack's test uses
(``check_ok``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import SERVER, ServerPool

from dclab.endpoints.base import ClientSpec, ServerSpec, TransferResult, Workload
from dclab.endpoints.json_client import BinaryStack

PORT = 4433
MB = 1_000_000


class Bench:
    """One stack on the veth pair: its servers (stopped by ``close``) and its client."""

    def __init__(self, stack: BinaryStack, ns, tmp_path: Path, certs) -> None:
        self.stack, self.ns, self.tmp, self.certs = stack, ns, tmp_path, certs
        self.pool = ServerPool(ns.server, "udp", tmp_path)

    def server_spec(self, cc: str | None = None, **kw) -> ServerSpec:
        return ServerSpec(port=PORT, cc=cc or self.stack.default_cc, workdir=self.tmp / "srv", certs=self.certs,
                          address=SERVER, **kw)  # fmt: skip

    def serve(self, cc: str | None = None, **kw):
        return self.serve_spec(self.server_spec(cc, **kw))

    def serve_spec(self, spec: ServerSpec):
        return self.pool.start(self.stack.server_command(spec), spec.port)

    def fetch(self, workload: Workload, cc: str | None = None, timeout_s: float = 20.0, **kw) -> TransferResult:
        spec = ClientSpec(address=SERVER, port=PORT, workload=workload, cc=cc or self.stack.default_cc,
                          workdir=self.tmp / "cli", certs=self.certs, timeout_s=timeout_s, **kw)  # fmt: skip
        return self.stack.run(spec, ["ip", "netns", "exec", self.ns.client])

    def client_cmd(self, wfile: Path, cc: str | None = None, timeout_s: float = 10.0) -> list[str]:
        """The client binary run directly (not through the adapter's checks)."""
        return [*self.stack.program("client"), "--host", SERVER, "--port", str(PORT), "--workload", str(wfile),
                "--cc", cc or self.stack.default_cc, "--ca", str(self.certs.cert), "--timeout", str(timeout_s)]  # fmt: skip

    def close(self) -> None:
        self.pool.close()


def stack_tests(stack: BinaryStack):
    """``pytestmark, bench = stack_tests(STACK)`` in a stack's own test file: its tests need
    root and are skipped, saying how to build it, while its binary is missing; ``bench`` is
    that stack's ``Bench`` on a fresh veth pair, closed after the test."""
    marks = [pytest.mark.root, pytest.mark.skipif(bool(stack.missing()), reason="; ".join(stack.missing()) or "ok")]

    @pytest.fixture(name="bench")
    def bench(veth_pair, tmp_path, certs):
        b = Bench(stack, veth_pair, tmp_path, certs)
        yield b
        b.close()

    return marks, bench


def check_ok(r: TransferResult, size: int) -> None:
    assert r.ok, r.error
    assert r.bytes == size
    assert r.request_wall is not None and abs(r.request_wall - time.time()) < 60
    assert r.handshake_s is not None and r.first_byte_s is not None and r.last_byte_s is not None
    # A ClientHello line read late (busy host, no delay) makes the request and the
    # handshake one mark; the adapter says so, and only then may they coincide.
    if r.extra.get("hello_read_late"):
        assert 0 <= r.request_s <= r.handshake_s <= r.first_byte_s <= r.last_byte_s
    else:
        assert 0 <= r.request_s < r.handshake_s <= r.first_byte_s <= r.last_byte_s
    assert r.goodput_mbps is not None and r.goodput_mbps > 1.0


def sizes(n: int, base: int = 200_000) -> tuple[int, ...]:
    """n different odd sizes, so that a body counted on the wrong object shows."""
    return tuple(base + 7919 * i for i in range(n))
