"""UDP at a constant offered rate, from server to client: iperf3 (Debian 12's 3.12) as
server and client, the server sending (``--reverse``) at the rate the workload's one
connection asks for (``cc_options`` ``rate_mbps``) in datagrams of ``DATAGRAM`` bytes.

Not a transport to compare (no congestion control, no reliability: ``cbr``, constant bit
rate, is its one "controller") but a load: the capacity experiment offers it
(``--udp-mbps``) to measure what share of the legs' or cells' capacity UDP gets, as the
flow-control testbeds report it for UDP beside TCP (docs/endc.md). It is an experiment's
variant, not a ``--stack``.

The client sends for ``spec.timeout_s`` less ``END_MARGIN_S`` (``--time``; iperf3 takes one
end condition, so the object's size does not end it), so it ends by itself before the
testbed stops it and prints its report (``--json``): the bytes it received, the datagrams
lost by sequence number and the jitter, kept in ``extra["iperf3"]``. A UDP "object" is never complete in
the sense of a download (nothing is sent again): the result is ok when the client ran and
reported; ``bytes`` is what arrived. iperf3's control connection (TCP) uses the same port,
so it takes the same bearer as the data."""

from __future__ import annotations

import json
import shutil
import subprocess
import time

from ...files import JsonObject
from ..base import Capabilities, ClientSpec, ConnectionResult, ObjectResult, ServerSpec, Stack, TransferResult, Workload, run_bounded

DATAGRAM = 1400  # UDP payload bytes (--length): a QUIC-sized datagram, within the emulated MTU
SOCKET_BUFFER = "4M"  # --window: the receiving socket keeps up with the leg's bursts
END_MARGIN_S = 1.0  # the client's own end comes this long before the testbed's deadline
MAX_RATE_MBPS = 20_000.0


def rate_of(workload: Workload) -> float:
    """The offered rate in Mbit/s that the workload's one connection asks for; ValueError
    naming the knob when it is missing or outside 1 to MAX_RATE_MBPS."""
    options = workload.cc_options[0] if workload.cc_options else {}
    text = options.get("rate_mbps")
    try:
        rate = float(text) if text is not None else float("nan")
    except ValueError:
        rate = float("nan")
    if not 1.0 <= rate <= MAX_RATE_MBPS:
        raise ValueError(f"rate_mbps: the offered UDP rate must be 1 to {MAX_RATE_MBPS:g} Mbit/s (got {text!r})")
    return rate


def client_command(spec: ClientSpec, netns_exec: list[str]) -> list[str]:
    seconds = max(1, int(spec.timeout_s - END_MARGIN_S))
    return [*netns_exec, "iperf3", "--client", spec.address, "--port", str(spec.port), "--udp", "--reverse",
            "--bitrate", f"{rate_of(spec.workload):g}M", "--length", str(DATAGRAM), "--window", SOCKET_BUFFER,
            "--time", str(seconds), "--json", "--connect-timeout", "5000"]


def report(text: str) -> JsonObject:
    """What the client's JSON says: the bytes and datagrams it received, those the server
    sent, the datagrams lost by sequence number and the jitter; ValueError when it is no
    iperf3 report (its ``error`` when it gives one)."""
    try:
        d = json.loads(text)
    except ValueError:
        raise ValueError(f"iperf3 printed no JSON report: {text.strip()[-300:]!r}") from None
    if not isinstance(d, dict):
        raise ValueError("iperf3's report is not a JSON object")
    if d.get("error"):
        raise ValueError(f"iperf3: {d['error']}")
    end = d.get("end") or {}
    # With --reverse the client receives: sum_received is its count (3.12's "sum" gives the
    # bytes sent, with the receiver's loss and jitter).
    got, sent = end.get("sum_received") or end.get("sum") or {}, end.get("sum_sent") or {}
    if "bytes" not in got:
        raise ValueError("iperf3's report has no received bytes (end.sum_received)")
    return {"bytes": int(got["bytes"]), "seconds": float(got.get("seconds") or 0.0), "packets": got.get("packets"),
            "lost_packets": got.get("lost_packets"), "lost_percent": got.get("lost_percent"),
            "jitter_ms": got.get("jitter_ms"), "sent_bytes": sent.get("bytes"), "sent_packets": sent.get("packets")}


class Iperf3UdpStack(Stack):
    name = "iperf3-udp"
    transport = "udp"
    listens_on = "tcp"  # the control connection; the data's UDP socket opens per test
    ccs = ("cbr",)
    capabilities = Capabilities(cc_options=("rate_mbps",))

    def missing(self) -> list[str]:
        return [] if shutil.which("iperf3") else ["iperf3 (apt-get install iperf3; `make setup` installs it)"]

    def server_command(self, spec: ServerSpec) -> list[str]:
        return ["iperf3", "--server", "--bind", spec.address, "--port", str(spec.port)]

    def run(self, spec: ClientSpec, netns_exec: list[str]) -> TransferResult:
        refused = self.refusal(spec)
        if refused is not None:
            return refused
        try:
            cmd = client_command(spec, netns_exec)
        except ValueError as e:
            return TransferResult.failed(str(e))
        wall = time.time()
        p = run_bounded(cmd, spec.timeout_s)
        (spec.workdir / "iperf3-client.json").write_text(p.stdout)
        try:
            r = report(p.stdout)
        except ValueError as e:
            return TransferResult.failed(str(e) if p.returncode != -9 else
                                         f"iperf3 did not end by itself within {spec.timeout_s:g} s", request_wall=wall)
        size = spec.workload.total_bytes
        obj = ObjectResult(index=0, size=size, connection=0, bytes=r["bytes"], ok=True, request_s=0.0,
                           first_byte_s=None, last_byte_s=r["seconds"] or None)
        return TransferResult(ok=True, bytes=r["bytes"], request_wall=wall, last_byte_s=r["seconds"] or None,
                              objects=[obj], connections=[ConnectionResult(index=0, bytes=r["bytes"])],
                              extra={"iperf3": {k: v for k, v in r.items() if k != "bytes"}})

    def version(self) -> str:
        try:
            out = subprocess.run(["iperf3", "--version"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
        return out.splitlines()[0].strip() if out else "unknown"
