"""aioquic-2020: the aioquic the Dual Connectivity study ran (early 2020, QUIC draft 27,
NewReno only), beside the current aioquic, so that the same points can be run with both.

Version: aioquic 0.8.7 (released 2020-04-15). 0.8.6 (2020-02-22, the day after draft 27
appeared), 0.8.7 and 0.8.8 (2020-05-25) all speak drafts 27, 26 and 25 (27 first), and
their QUIC code (connection, recovery, packet builder, streams) is the same but for a
larger crypto-frame buffer in 0.8.8; all three install and transfer here (with the lock's
cryptography). 0.8.7 is the middle of aioquic's draft-27 span, which 0.9.0 (2020-05-27,
draft 28 only) ended, and adds the cipher initialisation fix of its ``_crypto.c``. It
runs from ``.venv-aioquic2020`` (``make setup``, from ``requirements-aioquic2020.lock``),
since dclab itself needs aioquic 1.x; the server and client (``h3_server.py``,
``h3_client.py``) import only the stdlib and aioquic 0.8. The client's JSON line is the
one ``AioquicStack._result`` reads, plus each connection's ``quic_version`` and ``alpn``,
kept in ``extra`` (``0xff00001b``, ``h3-27``).

What it can do: one or more connections, objects in parallel or sequential streams, cc
``reno`` (aioquic 0.8's only controller; ``--cc`` accepts nothing else), qlog (kept in
memory by 0.8, written to ``server.qlog`` / ``client.qlog`` at the end). What it cannot:
resumption, 0-RTT, byte ranges, pre-established connections, cc options, and another
datagram size: 0.8 sends at most 1280-byte UDP payloads (``PACKET_MAX_SIZE``, with the
congestion window counted in 1280-byte units), so ``--quic-datagram`` is refused unless
1280 (``Capabilities.fixed_datagram``). Its sockets, like the newer server's and client's,
keep the kernel's default buffers, which the testbed's ``udp_buffer`` (a sysctl) sets.

Quirks on this host (Python 3.11), handled in the scripts or the lock:

- aioquic 0.8's certificate check calls OpenSSL through cryptography's old bindings
  (``X509_STORE_set_default_paths``, ``Certificate._x509``), gone since cryptography 35:
  with a current cryptography every handshake fails in the client. The lock pins
  cryptography 2.9.2 (April 2020, the study's era; abi3 wheels, nothing to build), which
  also wants the ``backend`` argument the newer API dropped.
- It matches the server name against the certificate's DNS names only, never an IP
  address: the client verifies the first DNS name of ``--ca`` (``dclab.test``, made by
  ``dclab/testbed/certs.py``) while connecting to the address.
- ``ssl.match_hostname`` (deprecated, gone in Python 3.12) and naive certificate dates
  warn on every handshake; the scripts silence those warnings. asyncio needs no patch:
  0.8 calls ``asyncio.get_event_loop()`` only inside the running loop.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

from ...paths import ROOT
from ..aioquic.adapter import AioquicStack
from ..base import Capabilities, ClientSpec, TransferResult

VENV = ROOT / ".venv-aioquic2020"
PYTHON = VENV / "bin" / "python"
HERE = Path(__file__).resolve().parent
SERVER_SCRIPT = HERE / "h3_server.py"
CLIENT_SCRIPT = HERE / "h3_client.py"
DATAGRAM = 1280  # aioquic 0.8's PACKET_MAX_SIZE: every datagram's UDP payload is at most this
DRAFT_27 = "0xff00001b"


@functools.cache
def _installed() -> tuple[str | None, str]:
    """(aioquic's version in the old environment, None when it is missing; why not)."""
    if not PYTHON.exists():
        return None, f"{VENV} is missing: run make setup (it builds it from requirements-aioquic2020.lock)"
    try:
        p = subprocess.run([str(PYTHON), "-c", "import aioquic.h3.connection, aioquic; print(aioquic.__version__)"],
                           capture_output=True, text=True, timeout=30)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{PYTHON} does not run ({e}): run make setup"
    version = p.stdout.strip()
    if p.returncode != 0 or not version.startswith("0.8."):
        why = (p.stderr.strip().splitlines() or [f"aioquic {version}"])[-1]
        return None, f"{VENV} has no aioquic 0.8 ({why}): rm -rf {VENV} and run make setup"
    return version, ""


class Aioquic2020Stack(AioquicStack):
    name = "aioquic-2020"
    transport = "udp"
    ccs: tuple[str, ...] = ("reno",)
    capabilities = Capabilities(
        max_connections=64, max_objects=10_000, streams=("parallel", "sequential"), fixed_datagram=DATAGRAM
    )

    def missing(self) -> list[str]:
        version, why = _installed()
        return [] if version else [why]

    def program(self, role: str) -> list[str]:
        return [str(PYTHON), str(SERVER_SCRIPT if role == "server" else CLIENT_SCRIPT)]

    def _result(self, spec: ClientSpec, p: Any, spawned: float | None = None) -> TransferResult:
        """The newer client's result, plus each connection's ``quic_version`` and ``alpn``
        (lists, one per connection) in ``extra``."""
        r = super()._result(spec, p, spawned)
        for line in reversed((p.stdout or "").splitlines()):
            if line.strip().startswith("{"):
                try:
                    d = json.loads(line)
                except ValueError:
                    continue
                if isinstance(d, dict):
                    r.extra["quic_version"] = d.get("quic_version")
                    r.extra["alpn"] = d.get("alpn")
                break
        return r

    def version(self) -> str:
        version, _ = _installed()
        return f"{version} (QUIC draft 27)" if version else "unknown"
