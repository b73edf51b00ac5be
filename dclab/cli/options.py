"""Options and helpers shared by the `dclab` commands."""

from __future__ import annotations

import os
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from .. import lte, nr, radio
from .. import scenario as sc
from ..dcemu.mode import DEFAULT_SPIN_US, MAX_SPIN_US, TUN_OFFLOADS, EmulatorMode
from ..dcemu.mode import HELP as MODE_HELP
from ..dcemu.sim_models import check as check_stand_ins
from ..dcemu.sim_models import parse as parse_stand_ins
from ..files import clip
from ..units import parse_size as _parse_size

err = Console(stderr=True)
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def run_with_progress(reps: int, out_dir: Path, describe: Callable[[T], str],
                      runner: Callable[[Callable[[int, T], None], Callable[[], None]], Any]) -> Any:
    """Runs ``runner(on_rep, on_wait)`` under a progress bar, a line per repetition
    (``describe(record)``); Ctrl-C/SIGTERM exit 130 after the testbed cleaned up."""
    done: list[Any] = []
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=err, transient=True) as progress:
        task = progress.add_task("repetitions", total=reps)

        def on_rep(rep: int, rec: T) -> None:
            done.append(rec)
            progress.console.print(f"  rep {rep}: {describe(rec)}")
            progress.advance(task)

        try:
            return runner(on_rep, lambda: err.print("waiting for another dclab run to finish ..."))
        except KeyboardInterrupt:
            err.print(f"[yellow]interrupted[/]: cleaned up; {len(done)} finished repetition(s) kept in {out_dir}")
            sys.exit(130)
        except Exception as e:  # noqa: BLE001 - shown to the user; the testbed already cleaned up
            raise click.ClickException(f"{e} (results so far in {out_dir})") from None


def root_or_exit() -> None:
    if os.geteuid() != 0:
        raise click.ClickException("runs need root (sudo): they create namespaces and TUN devices and set sysctls")


def emulator_mode_options(f: F) -> F:
    """How dcemu runs (dcemu/mode.py), for commands that are not experiments
    (an experiment's options model has these fields)."""
    for deco in reversed([
        click.option("--busy-poll", is_flag=True, help=MODE_HELP["busy_poll"]),
        click.option("--realtime", is_flag=True, help=MODE_HELP["realtime"]),
        click.option("--spin-us", type=click.IntRange(0, MAX_SPIN_US), default=DEFAULT_SPIN_US, show_default=True,
                     help=MODE_HELP["spin_us"]),
        click.option("--idle-halt", is_flag=True, help=MODE_HELP["idle_halt"]),
        click.option("--tun-offload", type=click.Choice(TUN_OFFLOADS), default="all", show_default=True,
                     help=MODE_HELP["tun_offload"]),
    ]):
        f = deco(f)
    return f


def emulator_mode_from(kw: dict[str, Any]) -> EmulatorMode:
    """The mode ``emulator_mode_options`` asked for; pops its options from ``kw``."""
    return EmulatorMode(busy_poll=bool(kw.pop("busy_poll")), realtime=bool(kw.pop("realtime")),
                        spin_us=int(kw.pop("spin_us")), idle_halt=bool(kw.pop("idle_halt")),
                        tun_offload=str(kw.pop("tun_offload")))


def stand_in_option(f: F) -> F:
    """--stand-in for the commands that make simulated twins of emulated runs (`dclab
    campaign run --backend sim`, `dclab validate`); `dclab run` has it from the options model."""
    return click.option("--stand-in", "stand_in", metavar="STACK[:CC]=MODEL[,...]",
                        help="Simulate the runs of a stack that has no model of its own on the model named, e.g. "
                             "ngtcp2=aioquic; they are stored under their own keys and labelled \"ngtcp2 (aioquic model)\". "
                             "Without it such runs are left out.")(f)


def stand_in_from(text: str | None) -> dict[str, str]:
    """The stand-ins ``--stand-in`` names; a bad one is a usage error naming the option."""
    if not text:
        return {}
    try:
        stand_in = parse_stand_ins(text)
        check_stand_ins(stand_in)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--stand-in") from None
    return stand_in


# ---------------------------------------------------------------------------------------
# Scenario options, shared by every command that runs or shows a scenario.

def _shown(name: str) -> str:
    """A scenario field's default as its option is written (per-leg lists joined as the
    option takes them): the help's "[default ...]" comes from the model, written once."""
    value = sc.Scenario.model_fields[name].default

    def one(x: object) -> str:
        return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)

    if isinstance(value, list):
        return (":" if name == "split" else ",").join(one(x) for x in value)
    return one(value)

def scenario_options(f: F) -> F:
    opts = [
        click.option("--scenario", "scenario_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="Start from this scenario file (TOML with the fields of `dclab scenario show`)."),
        click.option("--batch", type=int, help=f"PDCP split batch size in packets [default {_shown('batch')}]."),
        click.option("--split", help=f"Share per leg, e.g. 50:50 or 83:17; 100:0 is single connectivity [default {_shown('split')}]."),
        click.option("--bw", help=f"Downlink rate per leg in Mbit/s, e.g. 20,20 [default {_shown('bw')}]."),
        click.option("--delay", help=f"Downlink delay per leg in ms, e.g. 10,10 [default {_shown('delay')}]."),
        click.option("--delay-cov", type=float, help=f"Delay jitter as std/mean (normal) [default {_shown('delay_cov')}]."),
        click.option("--jitter-reorders/--order-preserving-jitter", "jitter_reorders", default=None,
                     help="Jitter may reorder packets (netem), or each packet's delay is drawn but it never "
                          "overtakes an earlier one; every direction [default: --jitter-reorders on the legs, "
                          "--order-preserving-jitter with --link, as a cell delivers in order]."),
        click.option("--loss", help=f"Random loss per downlink leg in percent, e.g. 0.1,0.1 [default {_shown('loss')}]."),
        click.option("--loss-at", type=click.Choice(["after-rate", "before-rate"]),
                     help="Where loss judges packets: after the rate stage (a lost packet used its transmission "
                          "time, as the second of two stacked netem qdiscs) or before it (it never queues, as "
                          f"netem's loss on the rate qdisc); every leg and the uplink [default {_shown('loss_at')}]."),
        click.option("--queue", "queue_packets", type=int,
                     help=f"Downlink rate-stage queue per leg in packets (1-1000000) [default {_shown('queue_packets')}]."),
        click.option("--aqm", metavar="KIND[,KIND...]",
                     help="Queue discipline of each downlink leg's rate stage, or with --link of each of its "
                          "cell's device queues: tail-drop, codel (RFC 8289), pie (RFC 8033) or fq-codel (RFC "
                          "8290, a CoDel per flow; the queue's limits are its own); one for every leg, or one per "
                          "leg, e.g. codel,tail-drop [default tail-drop]."),
        click.option("--aqm-target", "aqm_target_ms", type=float, metavar="MS",
                     help="The queue delay the AQM aims at (0.1-10000) [default: CoDel and FQ-CoDel 5, PIE 15]."),
        click.option("--aqm-interval", "aqm_interval_ms", type=float, metavar="MS",
                     help="CoDel's interval (the delay must stay above target this long before a drop); PIE's "
                          "update period (0.1-10000) [default: CoDel and FQ-CoDel 100, PIE 15]."),
        click.option("--aqm-ecn/--no-aqm-ecn", "aqm_ecn", default=None,
                     help="The AQM marks an ECN-capable packet CE instead of dropping it, or drops every packet "
                          "it selects [default --aqm-ecn]."),
        click.option("--uplink-bw", type=float,
                     help=f"Uplink rate (leg 1; every leg for a multipath flow's paths) in Mbit/s [default {_shown('uplink_bw')}]."),
        click.option("--uplink-delay", type=float, help=f"Uplink delay (leg 1) in ms; jitter per --delay-cov [default {_shown('uplink_delay')}]."),
        click.option("--uplink-loss", type=float, help=f"Random loss on the uplink (leg 1) in percent (0-100) [default {_shown('uplink_loss')}]."),
        click.option("--uplink-queue", "uplink_queue_packets", type=int,
                     help=f"Uplink rate-stage queue in packets (1-1000000) [default {_shown('uplink_queue_packets')}]."),
        click.option("--duplicate/--no-duplicate", default=None, help="PDCP duplication: every packet on both legs."),
        click.option("--no-reordering", is_flag=True, default=None, help="Turn PDCP reordering off (arrival order)."),
        click.option("--t-reordering", help=f"t-Reordering in ms, or 'inf' [default {_shown('t_reordering')}]."),
        click.option("--sn-bits", type=click.Choice(["12", "16", "18"]),
                     help="PDCP SN length: a PDU held back by more than half the SN space (32,768 PDUs at 16 bits) "
                          "is taken for a later COUNT and what follows is discarded (HFN desynchronisation) "
                          "[default 18 over nr: and endc: (NR PDCP), else 16 (the DC study's)]."),
        click.option("--pdcp-processing", type=float, metavar="MS",
                     help="Each PDCP entity holds every packet this long, each way: where it enters the emulated "
                          f"network and where it leaves (0-1000 ms; the study's proxies took about 1) [default {_shown('pdcp_processing')}]."),
        click.option("--trace", metavar="FILE[,FILE...]",
                     help="Bandwidth trace (mahimahi or CSV) on every downlink instead of --bw, or one per leg "
                          "(comma-separated, leg 1 first)."),
        click.option("--outage", metavar="LEG:AT_S:DURATION_S",
                     help="That leg loses every packet, both ways, from AT_S seconds after the emulator starts "
                          "forwarding, for DURATION_S seconds (0.001-3600), e.g. 2:6:2."),
        click.option("--link", metavar="lte:LEVEL|nr:LEVEL|endc:LTE_LEVEL,NR_LEVEL",
                     help="Cells instead of the legs, each flow's bearer a device at LEVEL: lte: one LTE cell (20 MHz, "
                          "PF, 512 kB per device; good, medium, poor, edge or the study's 250m, 750m, 1500m, 2500m; "
                          "dclab/lte.py); nr: one NR carrier (n78: 100 MHz, 4 layers, DDDSU, HARQ; good, medium, poor, "
                          "edge or 150m, 200m, 400m, 700m; dclab/nr.py); endc: EN-DC, the LTE master on leg 1 and the "
                          "NR secondary on leg 2 (docs/endc.md). --delay and --loss are the core network's."),
        click.option("--x2-delay", type=float, metavar="MS",
                     help="One-way delay of the X2/Xn hop from the master's PDCP (leg 1) to every other leg, for split "
                          "and duplicated packets (0-1000 ms) [default: no hop]."),
        click.option("--split-policy", type=click.Choice(["static", "ddds", "delay-aware", "delay-target"]),
                     help="How PDCP places packets on the legs: static (--batch and --split), ddds (each secondary "
                          "leg gets what its flow-control reports ask for, TS 38.425; the rest goes on leg 1, the "
                          "master's), delay-aware (each packet on the leg where it is expected first) or "
                          "delay-target (the earliest leg whose queue stays within --target-delay, leg 1's too; "
                          "what fits none waits unnumbered in PDCP, --hold-bytes, --discard-ms); docs/endc.md "
                          f"[default {_shown('split_policy')}]."),
        click.option("--sn-events", metavar="EVENT@AT_S[,...]",
                     help="Secondary node events on leg 2 (EN-DC's NR leg), seconds after the emulator starts "
                          "forwarding: release@AT_S (everything on leg 1), add@AT_S (leg 2 again), "
                          "change@AT_S[:INTERRUPTION_MS] (leg 2 carries nothing for the interruption, 0-60000 ms, "
                          "default 50, then serves as a new secondary); what the secondary held is forwarded, or "
                          "lost with :lose (e.g. change@6:80:lose); docs/endc.md."),
        click.option("--report-period", type=float, metavar="MS",
                     help=f"ddds, delay-aware, delay-target: a secondary leg reports every MS (1-1000) [default {_shown('report_period')}]."),
        click.option("--target-delay", type=float, metavar="MS",
                     help="ddds: the queue a secondary leg asks for beyond its feedback loop, in ms of its rate; "
                          f"delay-target: the queue delay no leg may exceed (0-10000) [default {_shown('target_delay')}]."),
        click.option("--hold-bytes", type=int, metavar="BYTES",
                     help="delay-target: what PDCP may hold unnumbered while every leg is at its target; an SDU "
                          "that finds it full is dropped before it gets a COUNT (9000-1000000000) "
                          f"[default {_shown('hold_bytes')}]."),
        click.option("--discard-ms", type=float, metavar="MS",
                     help="delay-target: how long an SDU may wait unnumbered before it is discarded, TS 38.323's "
                          f"discard timer (1-1500) [default {_shown('discard_ms')}]."),
        click.option("--fallback-ms", type=float, metavar="MS",
                     help="ddds, delay-aware, delay-target: a secondary leg that holds packets and serves none for MS "
                          "(a cell in a deep fade) reports an outage, and PDCP sends its copies of what it sent there "
                          "again on leg 1, sending the leg nothing new until it serves again; leg 1 likewise, its "
                          f"copies sent to leg 2 (0-1000; 0: off) [default {_shown('fallback_ms')}]; docs/endc.md."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def scenario_from(kw: dict[str, Any]) -> sc.Scenario:
    """The effective scenario: defaults, then --scenario, then the options given."""
    try:
        base = sc.load(kw.pop("scenario_file")) if kw.get("scenario_file") else sc.Scenario()
        kw.pop("scenario_file", None)
        changes: dict[str, Any] = {}
        if kw.get("batch") is not None:
            changes["batch"] = kw["batch"]
        if kw.get("split") is not None:
            changes["split"] = sc.parse_list("--split", kw["split"], ":")
        for name in ("bw", "delay", "loss"):
            if kw.get(name) is not None:
                changes[name] = sc.parse_list(f"--{name}", kw[name])
        for name in ("delay_cov", "jitter_reorders", "loss_at", "queue_packets", "uplink_bw", "uplink_delay",
                     "uplink_loss", "uplink_queue_packets", "pdcp_processing", "split_policy", "report_period",
                     "target_delay", "sn_events", "hold_bytes", "discard_ms", "fallback_ms", "aqm", "aqm_target_ms",
                     "aqm_interval_ms", "aqm_ecn"):
            if kw.get(name) is not None:
                changes[name] = kw[name]
        if kw.get("duplicate") is not None:
            changes["duplicate"] = kw["duplicate"]
        if kw.get("sn_bits") is not None:
            changes["sn_bits"] = int(kw["sn_bits"])
        if kw.get("no_reordering"):
            changes["reordering"] = False
        if kw.get("t_reordering") is not None:
            t = kw["t_reordering"].strip()
            if t.lower() in ("inf", "infinity"):
                data = base.model_dump()
                data["t_reordering"] = None
                base = sc.Scenario.model_validate(data)
            else:
                try:
                    value = float(t)
                    if value != value or value in (float("inf"), float("-inf")):
                        raise ValueError
                except ValueError:
                    raise sc.ScenarioError(f"--t-reordering: expected one value in ms (0 to 60000), or 'inf' "
                                           f"(got {clip(t)})") from None
                changes["t_reordering"] = value
        if kw.get("trace"):
            names = [t.strip() for t in kw["trace"].split(",")]
            if "" in names:  # Path("") is the current directory
                raise sc.ScenarioError(f"--trace: an empty file name in {clip(kw['trace'])} (FILE or FILE,FILE,...)")
            files = [Path(t).resolve() for t in names]
            for t in files:
                if not t.is_file():
                    raise sc.ScenarioError(f"--trace: no such file {clip(str(t))}")
            changes["trace" if len(files) == 1 else "traces"] = files[0] if len(files) == 1 else files
        if kw.get("outage") is not None:
            changes["outage"] = kw["outage"]
        if kw.get("link") is not None:
            try:
                changes["link"] = radio.parse_link(kw["link"])  # the one parse of --link
            except ValueError as e:
                raise sc.ScenarioError(str(e)) from None
        if kw.get("x2_delay") is not None:
            changes["x2_delay"] = kw["x2_delay"]
        if changes.get("link", base.link) and kw.get("bw") is not None:
            raise sc.ScenarioError("--bw: not used with --link (the cell's capacity follows the channel)")
        # A per-leg list given must fit the legs; one left at its default takes their count
        # (scenario.py, Scenario._per_leg_defaults_take_the_leg_count).
        link = changes.get("link", base.link)
        n = link.legs if link else len(changes.get("bw", base.bw))
        if link and "queue_packets" in changes:  # given, even at its default: a cell would take it silently
            raise sc.ScenarioError(f"--queue: not used with --link (each device has its own queue at the cell: "
                                   f"{lte.QUEUE_BYTES // 1000} kB in LTE, {nr.QUEUE_BYTES // 1000} kB in NR)")
        for name in sc.PER_LEG:
            if name in changes and len(changes[name]) != n:
                raise sc.ScenarioError("--" + sc.per_leg_mismatch(name, n, link, len(changes[name])))
        return sc.build(base, **changes)
    except sc.ScenarioError as e:
        raise click.UsageError(str(e)) from None


def parse_size(text: str) -> int:
    try:
        return _parse_size(text)
    except ValueError as e:
        raise click.BadParameter(str(e).removeprefix("--size: "), param_hint="--size") from None


# ---------------------------------------------------------------------------------------
# Options generated from a pydantic model (an experiment's options).

def _choices(annotation: Any, extra: dict[str, Any]) -> list[str] | None:
    if extra.get("choices"):
        return [str(c) for c in extra["choices"]]
    if typing.get_origin(annotation) is typing.Literal:
        return [str(a) for a in typing.get_args(annotation)]
    return None


def _is_bool(annotation: Any) -> bool:
    return annotation is bool


def _numeric(annotation: Any) -> type | None:
    args = typing.get_args(annotation) if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union else (annotation,)
    for a in args:
        if a in (int, float):
            return a
    return None


def model_options(model: type[BaseModel]) -> Callable[[F], F]:
    """click options for every field of ``model``: ``--field-name``, help from the field's
    description, choices from a Literal or ``json_schema_extra["choices"]`` (its
    ``metavar`` names the value), booleans as flags. Values reach the command as strings (or flags) and are validated by the model,
    so the model's own errors name the option (see ``options_from``)."""
    def deco(f: F) -> F:
        for name, field in reversed(list(model.model_fields.items())):
            extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
            opt = "--" + name.replace("_", "-")
            help_ = field.description or ""
            default = field.default
            if _is_bool(field.annotation):
                f = click.option(opt, name, is_flag=True, default=None, help=help_)(f)
                continue
            choices = _choices(field.annotation, extra)
            shown = extra.get("show", default)
            kw: dict[str, Any] = {"default": None, "help": help_ + (f" [default: {shown}]" if shown is not None and "[default" not in help_ else "")}
            if extra.get("metavar"):
                kw["metavar"] = extra["metavar"]
            if choices:
                kw["type"] = click.Choice(choices)
            elif _numeric(field.annotation) is not None and "show" not in extra:
                kw["type"] = _numeric(field.annotation)
            f = click.option(opt, name, **kw)(f)
        return f
    return deco


def options_from(model: type[BaseModel], kw: dict[str, Any]) -> Any:
    """The model's instance from the options given (None: the model's default); pops the
    model's fields from ``kw``. A bad value is a usage error naming the option."""
    values = {}
    for name in model.model_fields:
        v = kw.pop(name, None)
        if v is not None:
            values[name] = v
    try:
        return model.model_validate(values)
    except ValidationError as e:
        first = e.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        msg = first["msg"].removeprefix("Value error, ")
        if ":" in msg and msg.split(":", 1)[0].strip().lstrip("-").replace("-", "_") in model.model_fields:
            field, msg = (x.strip() for x in msg.split(":", 1))
        if first["type"] in {"greater_than_equal", "less_than_equal"} and first.get("ctx"):
            msg = f"{msg} (got {first.get('input')})"
        raise click.BadParameter(msg, param_hint="--" + field.lstrip("-").replace("_", "-")) from None
