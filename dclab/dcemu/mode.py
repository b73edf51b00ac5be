"""How dcemu runs, as opposed to what it emulates: its real-time options (`dcemu run
--busy-poll`, `--realtime`, `--spin-us`, `--idle-halt`, `--tun-offload`; emu/src/main.rs, TIMER.md),
asked for by an experiment's options or by `dclab shell`. Checked here so that a bad
value is refused, naming the option, before a testbed starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

TunOffload = Literal["all", "read", "write", "none"]
TUN_OFFLOADS: tuple[str, ...] = get_args(TunOffload)
DEFAULT_SPIN_US = 50  # dcemu's own default (emu/src/io/timer.rs DEFAULT_SPIN_US)
MAX_SPIN_US = 10_000  # dcemu's bound (emu/src/main.rs MAX_SPIN_US)

# One text per option, shared by the experiments' options and `dclab shell`.
HELP = {
    "busy_poll": "Run dcemu with --busy-poll: it polls instead of sleeping, which cuts the RTT it adds and its timing "
                 "error (docs/explanation/benchmarks.md) but takes a whole core; for latency studies.",
    "realtime": "Run dcemu with real-time (SCHED_FIFO) priority: shorter timer tails when the CPU is contended, but "
                "dcemu then wins every contest for CPU against the endpoints.",
    "spin_us": f"dcemu busy-waits the last N microseconds before each deadline (0 to {MAX_SPIN_US}; more CPU, less "
               f"lateness).",
    "idle_halt": "Let idle CPUs halt while dcemu runs. By default dcemu holds the CPUs' wake-up latency at 0 "
                 "(/dev/cpu_dma_latency), so idle CPUs poll and its timers wake it tens of microseconds late instead of "
                 "up to a millisecond after a long sleep on a VM (emu/src/io/TIMER.md); the price is power.",
    "tun_offload": "dcemu's TUN offloads: all (super-packets read and split, runs of one flow written in one call), "
                   "read, write or none (one packet per system call); the emulated network sees wire packets in every "
                   "mode.",
}


@dataclass(frozen=True)
class EmulatorMode:
    busy_poll: bool = False
    realtime: bool = False
    spin_us: int = DEFAULT_SPIN_US
    idle_halt: bool = False
    tun_offload: str = "all"

    def __post_init__(self) -> None:
        if not 0 <= self.spin_us <= MAX_SPIN_US:
            raise ValueError(f"spin_us: must be 0 to {MAX_SPIN_US} (got {self.spin_us})")
        if self.tun_offload not in TUN_OFFLOADS:
            raise ValueError(f"tun_offload: must be one of {', '.join(TUN_OFFLOADS)} (got {self.tun_offload!r})")

    def args(self) -> tuple[str, ...]:
        """The `dcemu run` options for this mode (none for dcemu's defaults)."""
        out: list[str] = []
        if self.busy_poll:
            out.append("--busy-poll")
        if self.realtime:
            out.append("--realtime")
        if self.spin_us != DEFAULT_SPIN_US:
            out += ["--spin-us", str(self.spin_us)]
        if self.idle_halt:
            out.append("--idle-halt")
        if self.tun_offload != "all":
            out += ["--tun-offload", self.tun_offload]
        return tuple(out)

    def asked(self) -> list[str]:
        """The options that differ from dcemu's defaults, as the user typed them (for
        refusals: a simulated run has no real-time emulator)."""
        return [a for a in self.args() if a.startswith("--")]
