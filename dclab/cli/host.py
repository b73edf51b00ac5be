"""`dclab clean` and `dclab doctor`: the host's side of things."""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.table import Table

from ..testbed.doctor import Check, checks, failed
from .options import root_or_exit


@click.command()
@click.option("--no-wait", is_flag=True, help="If a run holds the host, say so and exit 1 instead of waiting for it.")
def clean(no_wait: bool) -> None:
    """Remove what killed runs left: processes, namespaces (and the TUN devices in them),
    private keys, journals they had begun writing; restore the host's original sysctls.

    Takes the host lock first, so it never touches a live run: while one holds the host it
    waits (or, with --no-wait, exits 1). A new run does the same by itself before it starts."""
    from ..testbed.hostconfig import HostBusy, HostLock, recover

    root_or_exit()
    try:
        with HostLock(on_wait=lambda: click.echo("a dclab run holds the host; waiting for it to finish ...", err=True),
                      wait=not no_wait):
            actions = recover()
    except HostBusy as e:
        click.echo(f"{e}: nothing cleaned (run `dclab clean` again when it ends)", err=True)
        sys.exit(1)
    for line in actions:
        click.echo(line)
    click.echo("nothing to clean" if not actions else f"{len(actions)} action(s)")


@click.command()
def doctor() -> None:
    """Check root, TUN, namespaces, dcemu and every external tool; say how to fix gaps."""
    found = checks()
    print_checks(found)
    if failed(found):  # an optional tool missing is shown, not an error
        sys.exit(1)


def print_checks(found: list[Check]) -> None:
    t = Table(show_header=True)
    t.add_column("check")
    t.add_column("status")
    t.add_column("how to fix")
    for c in found:
        status = "[green]ok[/]" if c.ok else "[yellow]missing (optional)[/]" if c.optional else "[red]missing[/]"
        t.add_row(c.name, status, "" if c.ok else c.fix)
    Console().print(t)
