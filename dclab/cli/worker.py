"""`dclab worker`: this machine's testbed offered to a campaign's Dask scheduler."""

from __future__ import annotations

import platform
import sys

import click

from ..testbed.doctor import checks, failed
from .host import print_checks
from .options import err, root_or_exit


@click.command()
@click.option("--scheduler", required=True, metavar="tcp://HOST:PORT",
              help="The Dask scheduler of the campaign (`dask scheduler` on the coordinator's machine).")
@click.option("--name", default=platform.node(), show_default=True,
              help="This worker's name in the cluster and in the run records (unique per worker).")
@click.option("--death-timeout", type=click.FloatRange(10, 86400), default=300, show_default=True,
              help="Seconds without the scheduler before the worker exits.")
def worker(scheduler: str, name: str, death_timeout: float) -> None:
    """Offer this machine's testbed (Dask resource testbed=1) to a campaign's scheduler, after
    `dclab doctor`'s checks pass; refuse to start when one fails. Runs until Ctrl-C or until
    the scheduler has been gone for --death-timeout."""
    from ..campaign.cluster import serve
    from .campaign import check_scheduler, recover_host

    check_scheduler(scheduler)
    root_or_exit()
    found = checks()
    if failed(found):
        print_checks(found)
        err.print(f"[red]refused[/]: this machine fails `dclab doctor` ({', '.join(c.name for c in failed(found))}); "
                  "it would fail every run it got")
        sys.exit(1)
    err.print(f"worker {name}: one testbed for {scheduler} (Ctrl-C to stop)")
    try:
        serve(scheduler, name, death_timeout)
    except KeyboardInterrupt:
        err.print(f"worker {name}: stopped")
    except OSError as e:
        raise click.ClickException(f"cannot reach the Dask scheduler {scheduler}: {e}") from None
    finally:
        recover_host(err.print)
