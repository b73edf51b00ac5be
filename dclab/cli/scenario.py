"""`dclab scenario show`: the effective scenario, or the dcemu file it renders to."""

from __future__ import annotations

from typing import Any

import click

from .. import scenario as sc
from ..dcemu.config import to_dcemu
from ..experiments import default_experiment, get_experiment
from ..flowplan import PlanError
from ..paths import CLIENT_ADDR, SERVER_ADDR
from .options import scenario_from, scenario_options


@click.group()
def scenario() -> None:
    """Inspect scenarios."""


@scenario.command("show")
@scenario_options
@click.option("--dcemu", "as_dcemu", is_flag=True, help="Print the dcemu scenario file this renders to instead.")
@click.option("--experiment", metavar="NAME",
              help="With --dcemu: the bearers of this experiment's flow plan, with its default options "
                   f"[default: {default_experiment().name}].")
def scenario_show(as_dcemu: bool, experiment: str | None, **kw: Any) -> None:
    """Print the effective scenario (defaults, then --scenario, then options)."""
    s = scenario_from(kw)
    if as_dcemu:
        try:
            exp = get_experiment(experiment) if experiment else default_experiment()
        except ValueError as e:
            raise click.BadParameter(str(e).removeprefix("experiment: "), param_hint="--experiment") from None
        options = exp.options()
        try:
            plan = exp.plan(exp.scenario(s, options), options)
        except PlanError as e:
            raise click.UsageError(str(e)) from None
        topo = {"server_netns": "dclab-server", "client_netns": "dclab-client", "server_addr": SERVER_ADDR,
                "client_addr": CLIENT_ADDR}
        click.echo(to_dcemu(exp.scenario(s, options), plan, topo), nl=False)
    else:
        click.echo(sc.to_toml(s), nl=False)
