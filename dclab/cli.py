"""The `dclab` command."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from . import scenario as sc
from .endpoints import STACKS, get_stack

from .cli_options import err, parse_size, root_or_exit, run_with_progress, scenario_from, scenario_options  # noqa: F401


def _sigterm(*_: object) -> None:
    raise KeyboardInterrupt  # unwinds every context manager: the testbed cleans up


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="dclab")
def app() -> None:
    """dclab: real QUIC and TCP stacks over emulated cellular Dual Connectivity.

    Runs need root: they create network namespaces, TUN devices and change host sysctls
    (restored afterwards; `dclab clean` undoes what a killed run left)."""
    signal.signal(signal.SIGTERM, _sigterm)


# ---------------------------------------------------------------------------------------

@app.group()
def scenario() -> None:
    """Inspect scenarios."""


@scenario.command("show")
@scenario_options
@click.option("--dcemu", "as_dcemu", is_flag=True, help="Print the dcemu scenario file this renders to instead.")
@click.option("--fairness", is_flag=True, help="With --dcemu: the fairness bearers (DC on 4433, SC on 8000 and 9000).")
def scenario_show(as_dcemu: bool, fairness: bool, **kw) -> None:
    """Print the effective scenario (defaults, then --scenario, then options)."""
    s = scenario_from(kw)
    if as_dcemu:
        topo = {"server_netns": "dclab-server", "client_netns": "dclab-client"}
        click.echo(sc.to_dcemu(s, topo, "fairness" if fairness else "throughput"), nl=False)
    else:
        click.echo(sc.to_toml(s), nl=False)


@app.group()
def run() -> None:
    """Run an experiment."""


def stack_options(f):
    f = click.option("--qlog", is_flag=True, help="Write qlog files (QUIC stacks) into the run directory.")(f)
    f = click.option("--udp-buffer", type=click.Choice(["default", "large"]), default="default", show_default=True,
                     help="QUIC host configuration: net.core.rmem_default 212992 (default) or 32 MiB (large).")(f)
    f = click.option("--cc", help="Congestion control (aioquic: reno, cubic; ngtcp2: cubic, reno, bbr, bbr2; "
                     "tcp: cubic, reno, bbr) [default: reno for aioquic, cubic otherwise].")(f)
    f = click.option("--stack", type=click.Choice(list(STACKS)), default="aioquic", show_default=True,
                     help="Transport stack.")(f)
    return f


@run.command("throughput")
@scenario_options
@stack_options
@click.option("--size", default="100MB", show_default=True, help="Bytes to download (100MB, 1GB, ...).")
@click.option("--reps", type=click.IntRange(1, 1000), default=1, show_default=True, help="Repetitions.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Run directory [default: runs/throughput-TIME].")
@click.option("--timeout", type=click.FloatRange(1, 86400), help="Seconds a download may take [default: from size and rate].")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the results on stdout.")
def run_throughput_cmd(stack: str, cc: str | None, udp_buffer: str, qlog: bool, size: str, reps: int, out: Path | None,
                       timeout: float | None, as_json: bool, **kw) -> None:
    """One client downloads a file through the DC bearer; goodput per repetition, mean
    and standard deviation, PDCP statistics and a per-leg link-utilization plot."""
    from .experiments.throughput import ThroughputOptions, run_throughput
    from .rundir import new_run_dir

    s = scenario_from(kw)
    nbytes = parse_size(size)
    st = get_stack(stack)
    if cc is not None and cc not in st.ccs:
        raise click.BadParameter(f"{stack} offers {', '.join(st.ccs)} (got {cc!r})", param_hint="--cc")
    missing = st.missing()
    if missing:
        raise click.ClickException(f"{stack} is not ready: " + "; ".join(missing) + " (see `dclab doctor`)")
    root_or_exit()
    try:
        out_dir = new_run_dir(out, "throughput")
    except FileExistsError as e:
        raise click.UsageError(str(e)) from None
    opts = ThroughputOptions(stack=stack, cc=cc, udp_buffer=udp_buffer, size=nbytes, reps=reps, qlog=qlog, timeout_s=timeout)
    err.print(f"[bold]throughput[/]: {stack} {cc or st.ccs[0]}, {nbytes / 1e6:g} MB x {reps}, "
              f"bw {s.bw} Mbit/s, split {s.split}, batch {s.batch} -> {out_dir}")
    summary = run_with_progress(
        reps, out_dir,
        lambda rec: f"{rec['goodput_mbps']:.2f} Mbit/s" if rec["goodput_mbps"] else f"failed: {rec.get('error')}",
        lambda on_rep, on_wait: run_throughput(s, opts, out_dir, on_rep, on_wait))
    g = summary["goodput_mbps"]
    if as_json:
        click.echo(json.dumps({k: summary[k] for k in ("goodput_mbps", "stack", "cc", "scenario")}
                              | {"host_config": summary["host_config"], "failed": summary["failed"], "out": str(out_dir)}))
    else:
        t = Table(show_header=True)
        for c in ("stack", "cc", "host config", "goodput mean (Mbit/s)", "std", "runs"):
            t.add_column(c)
        t.add_row(summary["stack"], summary["cc"], summary["host_config"],
                  f"{g['mean']:.2f}" if g["mean"] is not None else "-", f"{g['std']:.2f}" if g["std"] is not None else "-",
                  f"{reps - summary['failed']}/{reps}")
        Console().print(t)
        click.echo(f"goodput: {g['mean']:.2f} Mbit/s" if g["mean"] is not None else "goodput: no successful run")
        click.echo(f"results: {out_dir}/results.json, plot: {out_dir}/link-utilization.png")
    if summary["failed"] == reps:
        sys.exit(1)


@run.command("fairness")
@scenario_options
@click.option("--stack", type=click.Choice(list(STACKS)), default="aioquic", show_default=True,
              help="Transport stack of every flow.")
@click.option("--stacks", help="Per flow, e.g. dc=aioquic,sc1=tcp,sc2=tcp (flows not named use --stack).")
@click.option("--cc", help="Congestion control of every flow [default: each stack's default].")
@click.option("--udp-buffer", type=click.Choice(["default", "large"]), default="default", show_default=True,
              help="QUIC host configuration (see `run throughput --help`).")
@click.option("--size", default="1GB", show_default=True, help="Bytes each client asks for.")
@click.option("--duration", type=click.FloatRange(1, 86400), default=180, show_default=True,
              help="Seconds measured from the start of the three clients.")
@click.option("--reps", type=click.IntRange(1, 1000), default=1, show_default=True, help="Repetitions.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Run directory [default: runs/fairness-TIME].")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the results on stdout.")
def run_fairness_cmd(stack: str, stacks: str | None, cc: str | None, udp_buffer: str, size: str, duration: float,
                     reps: int, out: Path | None, as_json: bool, **kw) -> None:
    """Three flows at once: DC (port 4433, both legs), SC on leg 1 (8000), SC on leg 2
    (9000). Each flow's mean throughput over the window and Jain's fairness index."""
    from .experiments.fairness import FLOWS, FairnessOptions, flow_ccs, parse_stacks, run_fairness
    from .rundir import new_run_dir

    s = scenario_from(kw)
    try:
        per_flow = parse_stacks(stack, stacks)
        opts = FairnessOptions(stacks=per_flow, cc=cc, udp_buffer=udp_buffer, size=parse_size(size),
                               duration_s=duration, reps=reps)
        flow_ccs(opts)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    for name in set(per_flow.values()):
        missing = get_stack(name).missing()
        if missing:
            raise click.ClickException(f"{name} is not ready: " + "; ".join(missing))
    root_or_exit()
    try:
        out_dir = new_run_dir(out, "fairness")
    except FileExistsError as e:
        raise click.UsageError(str(e)) from None
    err.print(f"[bold]fairness[/]: {opts.stack_label()}, {duration:g} s x {reps} -> {out_dir}")
    summary = run_with_progress(
        reps, out_dir,
        lambda rec: ", ".join(f"{f} {rec['flows'][f]['mean_mbps'] or 0:.2f}" for f in FLOWS)
        + f" Mbit/s, JFI {rec['jfi'] or 0:.3f}",
        lambda on_rep, on_wait: run_fairness(s, opts, out_dir, on_rep, on_wait))
    if as_json:
        click.echo(json.dumps({"flows": summary["flows"], "jfi": summary["jfi"], "host_config": summary["host_config"],
                               "cc": summary["cc"], "scenario": summary["scenario"], "out": str(out_dir)}))
    else:
        t = Table(show_header=True)
        for c in ("flow", "stack", "mean (Mbit/s)", "std"):
            t.add_column(c)
        for f, v in summary["flows"].items():
            t.add_row(f, v["stack"], f"{v['mean_mbps']:.2f}" if v["mean_mbps"] is not None else "-",
                      f"{v['std_mbps']:.2f}" if v["std_mbps"] is not None else "-")
        Console().print(t)
        j = summary["jfi"]
        click.echo(f"JFI: {j['mean']:.3f} (std {j['std']:.3f})" if j["mean"] is not None else "JFI: no successful run")
        click.echo(f"results: {out_dir}/results.json, plot: {out_dir}/flows.png")
    if summary["failed"] == reps:
        sys.exit(1)


# ---------------------------------------------------------------------------------------

@app.command()
def clean() -> None:
    """Remove what killed runs left: namespaces, processes, TUN devices; restore sysctls.

    Runs that are still going are left alone."""
    from .hostconfig import live_namespaces, stale_journals, undo_journal
    from .netns import clean as clean_namespaces

    root_or_exit()
    actions: list[str] = []
    for j in stale_journals():
        actions += undo_journal(j)
    actions += [f"removed namespace {n}" for n in clean_namespaces(keep=live_namespaces())]
    for line in actions:
        click.echo(line)
    click.echo("nothing to clean" if not actions else f"{len(actions)} action(s)")


@app.command()
def doctor() -> None:
    """Check root, TUN, namespaces, dcemu and every external tool; say how to fix gaps."""
    from .emulator import DCEMU
    from .hostconfig import read_sysctl

    checks: list[tuple[str, bool, str]] = []
    checks.append(("root", os.geteuid() == 0, "run as root (sudo dclab ...)"))
    checks.append(("/dev/net/tun", Path("/dev/net/tun").exists(), "the kernel needs the TUN driver"))
    checks.append(("ip (iproute2)", shutil.which("ip") is not None, "apt-get install iproute2"))
    netns_ok = False
    if os.geteuid() == 0 and shutil.which("ip"):
        from .netns import Namespaces

        try:
            with Namespaces():
                netns_ok = True
        except Exception:  # noqa: BLE001
            netns_ok = False
    checks.append(("network namespaces", netns_ok, "needs root and a kernel with network namespaces"))
    checks.append(("iptables (MSS clamp)", shutil.which("iptables") is not None, "apt-get install iptables"))
    checks.append(("dcemu built", DCEMU.exists(), "make build"))
    for name in STACKS:
        try:
            missing = get_stack(name).missing()
        except Exception as e:  # noqa: BLE001
            missing = [str(e)]
        checks.append((f"stack {name}", not missing, "; ".join(missing)))
    try:
        avail = read_sysctl("net.ipv4.tcp_available_congestion_control").split()
        ok = all(c in avail for c in ("reno", "cubic", "bbr"))
        checks.append((f"TCP congestion control ({' '.join(avail)})", ok, "the kernel lacks reno, cubic or bbr"))
    except RuntimeError as e:
        checks.append(("TCP congestion control", False, str(e)))
    t = Table(show_header=True)
    t.add_column("check")
    t.add_column("status")
    t.add_column("how to fix")
    for name, ok, fix in checks:
        t.add_row(name, "[green]ok[/]" if ok else "[red]missing[/]", "" if ok else fix)
    Console().print(t)
    if not all(ok for _, ok, _ in checks):
        sys.exit(1)


from . import cli_campaign, report_cli  # noqa: E402

cli_campaign.register(app)
for command in (report_cli.plot, report_cli.report, report_cli.results):
    app.add_command(command)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
