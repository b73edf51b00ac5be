"""`dclab cluster certs`: a lab's certificates for campaigns on a Dask cluster (mutual TLS)."""

from __future__ import annotations

from pathlib import Path

import click

from .options import err


@click.group()
def cluster() -> None:
    """The Dask cluster of `dclab worker` and `dclab campaign run --scheduler`."""


@cluster.command("certs")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--days", type=click.IntRange(1, 3650), default=365, show_default=True,
              help="How long the certificates are valid.")
def certs(directory: Path, days: int) -> None:
    """Make a lab's certificates in DIRECTORY (new, or empty): a lab CA (DIRECTORY/ca.pem)
    and, signed by it, a certificate and key for each role, each in its own directory with
    the CA's certificate:

    \b
      DIRECTORY/scheduler/    for `dask scheduler`
      DIRECTORY/worker/       for `dclab worker --tls-dir` (the same on every worker)
      DIRECTORY/coordinator/  for `dclab campaign run --tls-dir`

    Keys are written 0600 and nothing that exists is overwritten. The CA's private key is
    not kept: no one can sign another certificate for the lab; a new set replaces the whole.
    Copy each role's directory to its machines over SSH (scp -r): whoever holds
    any of these keys can join the cluster and so run code as root on every worker. Then,
    with HOST the scheduler's machine:

    \b
      dask scheduler --protocol tls --host HOST --port 8786 \\
        --no-dashboard --dashboard-address 127.0.0.1:8787 \\
        --tls-ca-file DIRECTORY/scheduler/ca.pem --tls-cert DIRECTORY/scheduler/cert.pem \\
        --tls-key DIRECTORY/scheduler/key.pem
      dclab worker --scheduler tls://HOST:8786 --tls-dir DIRECTORY/worker
      dclab campaign run NAME --scheduler tls://HOST:8786 --tls-dir DIRECTORY/coordinator

    (The scheduler needs no root; its key must be readable by the user who runs it. Its
    HTTP server, unauthenticated and plain even with --no-dashboard, stays on 127.0.0.1.)"""
    from ..campaign.tls import TLSError, make_lab_certs, scheduler_command

    try:
        make_lab_certs(directory, days)
    except TLSError as e:
        raise click.ClickException(str(e)) from None
    d = directory.resolve()
    say = click.echo
    say(f"the lab's certificates, valid {days} days, in {d} (keys 0600; the CA's key was not kept):")
    for role in ("scheduler", "worker", "coordinator"):
        say(f"  {d / role}/  ca.pem cert.pem key.pem")
    say("copy each directory to its machines over a secure channel (scp); whoever holds a key can run code as root "
        "on every worker. Then, HOST being the scheduler's machine:")
    say(f"  {scheduler_command(d / 'scheduler')}")
    say(f"  dclab worker --scheduler tls://HOST:8786 --tls-dir {d / 'worker'}")
    say(f"  dclab campaign run NAME --scheduler tls://HOST:8786 --tls-dir {d / 'coordinator'}")
    err.print("(`dask scheduler` needs no root: its key must be readable by the user who runs it)", markup=False)
