"""`draplan expander`: Cluster Autoscaler's gRPC expander over a cluster snapshot."""

from __future__ import annotations

import logging
import signal
import sys
from types import FrameType

import click

from draplan.cli.common import filename_option, load_state, prices_option, with_derived_pools
from draplan.cli.profiles import chosen_profile, profile_option
from draplan.grpcplugin import Judge
from draplan.scheduler import Scheduler


@click.command("expander")
@filename_option()
@click.option(
    "--listen", required=True, metavar="ADDR", help="host:port to serve on, e.g. 0.0.0.0:7000."
)
@click.option(
    "--tls-cert", metavar="FILE", help="PEM certificate CA's --grpc-expander-cert trusts."
)
@click.option("--tls-key", metavar="FILE", help="PEM private key of --tls-cert.")
@click.option("--insecure", is_flag=True, help="Serve without TLS (tests and local use only).")
@profile_option
@prices_option
def expander(
    filenames: tuple[str, ...],
    listen: str,
    tls_cert: str | None,
    tls_key: str | None,
    insecure: bool,
    prices_path: str | None,
) -> None:
    """Answer Cluster Autoscaler's BestOptions calls (--expander=grpc): the one scale-up
    option whose new nodes host their pods' claims best, judged on draplan's own view of each
    node group (its NodePools, else the pools derived from the cluster's node groups). The
    cluster is read once (-f or --kubeconfig); `draplan serve` keeps it current instead."""
    if not insecure and not (tls_cert and tls_key):
        raise click.UsageError("--tls-cert and --tls-key are required unless --insecure")
    from draplan.grpcplugin.server import TLSRequired, start_expander_server

    state = load_state(filenames)
    profile = chosen_profile()
    state = with_derived_pools(state, prices_path, profile.kube)
    judge = Judge(Scheduler(profile))
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        server = start_expander_server(
            listen, tls_cert, tls_key, lambda: state, insecure=insecure, judge=judge
        )
    except (TLSRequired, OSError, RuntimeError) as err:
        raise click.UsageError(str(err)) from None

    def stop(signum: int, frame: FrameType | None) -> None:
        server.stop(grace=1.0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    click.echo(
        f"draplan expander listening on {listen} ({'insecure' if insecure else 'TLS'})",
        err=True,
    )
    sys.stdout.flush()
    server.wait_for_termination()


COMMANDS = [expander]
