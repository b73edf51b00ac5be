"""`dclab worker`: this machine's testbed offered to a campaign's Dask scheduler."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import click

from ..testbed.doctor import checks, failed
from .host import print_checks
from .options import err, root_or_exit


@click.command()
@click.option("--scheduler", required=True, metavar="tls://HOST:PORT",
              help="The Dask scheduler of the campaign (`dask scheduler` on the coordinator's machine): tls:// with "
                   "--tls-dir, or tcp:// with --insecure.")
@click.option("--tls-dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="This worker's certificates (ca.pem, cert.pem, key.pem): the worker/ directory of a lab's set "
                   "made by `dclab cluster certs DIR`.")
@click.option("--insecure", is_flag=True,
              help="Accept a plain tcp:// scheduler: no encryption, no authentication, so anyone who can reach the "
                   "scheduler (or this worker's own ports) can run any code on this machine as root. Only on a "
                   "network where everyone who can connect may be root here.")
@click.option("--name", default=platform.node(), show_default=True,
              help="This worker's name in the cluster and in the run records (unique per worker).")
@click.option("--death-timeout", type=click.FloatRange(10, 86400), default=300, show_default=True,
              help="Seconds without the scheduler before the worker exits.")
def worker(scheduler: str, tls_dir: Path | None, insecure: bool, name: str, death_timeout: float) -> None:
    """Offer this machine's testbed (Dask resource testbed=1) to a campaign's scheduler, after
    `dclab doctor`'s checks pass; refuse to start when one fails. Runs until Ctrl-C or until
    the scheduler has been gone for --death-timeout.

    A Dask worker runs whatever code its scheduler sends, here as root. So it connects
    only to a TLS scheduler (tls://HOST:PORT) with the lab's certificates (--tls-dir, made
    by `dclab cluster certs`): then only holders of the lab's certificates can reach the
    scheduler or this worker. A plain tcp:// scheduler is refused unless --insecure."""
    from ..campaign.cluster import serve
    from .campaign import check_scheduler, recover_host

    security = check_scheduler(scheduler, tls_dir, insecure, "worker")
    root_or_exit()
    found = checks()
    if failed(found):
        print_checks(found)
        err.print(f"[red]refused[/]: this machine fails `dclab doctor` ({', '.join(c.name for c in failed(found))}); "
                  "it would fail every run it got")
        sys.exit(1)
    err.print(f"worker {name}: one testbed for {scheduler} ({'TLS' if security else 'plain TCP, --insecure'}; "
              "Ctrl-C to stop)", markup=False)
    try:
        serve(scheduler, name, death_timeout, security)
    except KeyboardInterrupt:
        err.print(f"worker {name}: stopped", markup=False)
    except OSError as e:
        raise click.ClickException(f"cannot reach the Dask scheduler {scheduler}: {e}") from None
    finally:
        recover_host(err.print)
