"""`dclab shell`: any unmodified program over the emulated path (testbed/shell.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import InputError
from ..files import FileRefused
from ..testbed.hostconfig import HOST_CONFIGS, host_config_for
from ..testbed.inspection import Inspection
from ..testbed.rundir import new_run_dir
from .options import emulator_mode_from, emulator_mode_options, err, root_or_exit, scenario_from, scenario_options

# The choices of --host-config: each configuration alone, and QUIC's with TCP's namespace buffers.
HOST_CHOICES = {**{name: HOST_CONFIGS[name] for name in HOST_CONFIGS},
                "quic-default+tcp": host_config_for({"udp", "tcp"}, "default"),
                "quic-large+tcp": host_config_for({"udp", "tcp"}, "large")}  # fmt: skip


@click.command(context_settings={"ignore_unknown_options": False})
@scenario_options
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), help="Seed of the random stages [default: the scenario's, 1].")
@click.option("--host-config", type=click.Choice(list(HOST_CHOICES)), default="quic-default+tcp", show_default=True,
              help="Host settings while the shell runs (restored after): the receive buffers of the study's QUIC "
                   "(default 212992 or large 32 MiB) and TCP configurations.")
@click.option("--server-cmd", metavar="CMD",
              help="A shell command line run in the server namespace (sh -c) before the program, stopped after it; "
                   "its output goes to server-cmd.log in the run directory.")
@click.option("--server-port", type=click.IntRange(1, 65535),
              help="Wait until --server-cmd listens on this port (TCP or UDP) before starting the program.")
@click.option("--pcap", is_flag=True, help="Keep dcemu's captures at both ends (client-end.pcap, server-end.pcap) and per leg.")
@click.option("--keylog", is_flag=True,
              help="Set SSLKEYLOGFILE for both commands (client-tls-keys.log, server-tls-keys.log in the run directory): "
                   "programs that honour it (curl, OpenSSL, GnuTLS, browsers) write their TLS secrets there.")
@emulator_mode_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Run directory [default: runs/shell-TIME].")
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED)
def shell(seed: int | None, host_config: str, server_cmd: str | None, server_port: int | None, pcap: bool,
          keylog: bool, out: Path | None, cmd: tuple[str, ...], **kw: object) -> None:
    """Run CMD (after --) in the client namespace of the emulated path; without CMD, an
    interactive shell.

    The environment has DCLAB_SERVER and DCLAB_CLIENT (the two addresses), DCLAB_RUN_DIR,
    and DCLAB_CERT/DCLAB_KEY (a certificate for the server's address, for a TLS or QUIC
    server). Every packet between the namespaces crosses dcemu on one DC bearer. At the
    end: dcemu's records and a per-leg plot in the run directory; everything torn down.
    The exit status is CMD's.

    \b
    Examples:
      dclab shell -- curl -s -o /dev/null http://198.18.0.1:8000/   (the server's address, DCLAB_SERVER)
      dclab shell --bw 10,30 --server-cmd 'python3 -m http.server --bind $DCLAB_SERVER 8000' \\
          --server-port 8000 -- sh -c 'curl -so /dev/null -w "%{speed_download}\\n" http://$DCLAB_SERVER:8000/file'
    """
    if server_port is not None and not server_cmd:
        raise click.UsageError("--server-port: needs --server-cmd (it waits for that command to listen)")
    if server_cmd is not None and not server_cmd.strip():
        raise click.UsageError("--server-cmd: must not be empty")
    kw = dict(kw)
    mode = emulator_mode_from(kw)
    s = scenario_from(kw)
    if seed is not None:
        s = s.model_copy(update={"seed": seed})
    from ..testbed.shell import run_shell

    root_or_exit()
    try:
        run_dir = new_run_dir(out, "shell")
    except FileRefused as e:
        raise click.UsageError(str(e)) from None
    what = " ".join(cmd) if cmd else "an interactive shell"
    err.print(f"[bold]shell[/]: bw {s.bw} Mbit/s, delay {s.delay} ms, loss {s.loss} %, {s.split_text()}, "
              f"host {host_config} -> {run_dir}")
    try:
        o = run_shell(s, HOST_CHOICES[host_config], run_dir, list(cmd) or None, server_cmd, server_port,
                      Inspection(pcap=pcap, keylog=keylog), mode,
                      on_wait=lambda: err.print("a dclab run holds the host; waiting for it to finish ..."),
                      on_ready=lambda bed: err.print(f"running {what} in the client namespace "
                                                     f"(server {bed.ns.server} at DCLAB_SERVER)"))  # fmt: skip
    except InputError as e:
        raise click.UsageError(str(e)) from None
    except KeyboardInterrupt:
        err.print("interrupted: the testbed is torn down")
        sys.exit(130)
    except RuntimeError as e:  # TestbedError: the testbed or the server command could not start
        raise click.ClickException(str(e)) from None
    legs = o.summary.legs if o.summary else []
    moved = ", ".join(f"{leg.name} {leg.downlink.bytes_out / 1e6:.2f} MB down "
                      f"({leg.downlink.dropped_queue_packets + leg.downlink.dropped_loss_packets} dropped)"
                      for leg in legs)  # fmt: skip
    err.print(f"{what} exited {o.exit_code} after {o.duration_s:.1f} s" + (f"; {moved}" if moved else ""))
    if o.server_exit is not None:
        err.print(f"[yellow]the server command had already ended ({o.server_exit}): see {run_dir}/server-cmd.log[/]")
    err.print(f"records: {run_dir}/dcemu-stats.jsonl" + (f", plot: {o.figure}" if o.figure else ""))
    sys.exit(o.exit_code)
