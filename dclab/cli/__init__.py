"""The `dclab` command: a thin face over the domain. Each subcommand lives in its own
module here; nothing outside this package imports click."""

from __future__ import annotations

import signal

import click

from . import campaign, cell, cluster, host, results, run, scenario, shell, validate, worker
from . import slurm as _slurm  # noqa: F401  (adds `campaign sbatch`)


def _sigterm(*_: object) -> None:
    raise KeyboardInterrupt  # unwinds every context manager: the testbed cleans up


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="dclab")
def app() -> None:
    """dclab: real QUIC and TCP stacks over emulated cellular Dual Connectivity.

    Runs need root: they create network namespaces, TUN devices and change host sysctls
    (restored afterwards; `dclab clean` undoes what a killed run left)."""
    signal.signal(signal.SIGTERM, _sigterm)
    # A process started in the background inherits SIGINT ignored; a run must still stop
    # (and clean up) when sent SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)


app.add_command(scenario.scenario)
app.add_command(cell.cell)
app.add_command(cluster.cluster)
run.register(app)
campaign.register(app)
for command in (results.plot, results.figure, results.report, results.results, host.clean, host.doctor, worker.worker,
                validate.validate, shell.shell):
    app.add_command(command)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
