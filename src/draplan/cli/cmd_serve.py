"""`draplan serve`: keep answering `why`, `metrics` and `scale` for a cluster, over HTTP and as
Prometheus metrics, until SIGTERM."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from types import FrameType
from typing import TYPE_CHECKING

import click

from draplan.api.errors import BadInput
from draplan.cli.common import filename_option, input_settings, load_state, prices_option
from draplan.cli.profiles import chosen_profile, profile_option

if TYPE_CHECKING:
    import grpc

    from draplan.scheduler.profile import Profile
    from draplan.serve.loop import AuditLoop
    from draplan.serve.model import ClusterModel

log = logging.getLogger("draplan.serve")

DRAIN_SECONDS = 4.0  # requests in flight get this long after SIGTERM; the pod's grace is 30 s


def build_model(filenames: tuple[str, ...]) -> ClusterModel:
    """What `serve` answers from: the files given, as a snapshot that never changes, or the
    cluster the kubeconfig (else the in-cluster service account) points at, kept current by
    its watches."""
    settings = input_settings()
    if filenames and settings.live_requested:
        raise BadInput("give -f FILE or a live cluster, not both", path="serve")
    if filenames:
        from draplan.serve.static import StaticClusterModel

        return StaticClusterModel(load_state(filenames))
    from draplan.serve.live_model import LiveClusterModel

    return LiveClusterModel.from_live_options(settings.live_options(), settings.features())


def start_expander(
    addr: str,
    tls_cert: str | None,
    tls_key: str | None,
    insecure: bool,
    loop: AuditLoop,
    profile: Profile,
) -> grpc.Server:
    """CA's gRPC expander answering from the objects of the newest generation audited, in a
    state of their own (`serve.audited`: a call never waits for an audit in progress); start
    it before the loop's first audit. Until the first answers are published it answers
    UNAVAILABLE, so CA goes on with its own options."""
    from draplan.grpcplugin.judge import Judge
    from draplan.grpcplugin.server import TLSRequired, start_expander_server
    from draplan.scheduler import Scheduler
    from draplan.serve.audited import AuditedState

    judge = Judge(Scheduler(profile))
    audited = loop.auditor.audited = AuditedState(judge.prepare)
    try:
        return start_expander_server(
            addr,
            tls_cert,
            tls_key,
            lambda: audited.state() if loop.first_answers.is_set() else None,
            insecure=insecure,
            judge=judge,
            lock=audited.reader,
        )
    except (TLSRequired, OSError, RuntimeError) as err:
        raise BadInput(
            f"cannot serve the expander: {err}", path=f"--expander-listen {addr}"
        ) from None


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise click.BadParameter(f"expected HOST:PORT, got {value!r}", param_hint="--listen")
    return host.strip("[]"), int(port)


@click.command("serve")
@filename_option()
@click.option(
    "--listen", default="0.0.0.0:8080", show_default=True, help="HOST:PORT to serve HTTP on."
)
@click.option(
    "--audit-interval",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Audit again at most this often (only when the cluster changed).",
)
@click.option(
    "--events",
    is_flag=True,
    help="Post an Event on a pending pod when its why-category changes (needs RBAC create "
    "on events; nothing else is ever written).",
)
@profile_option
@click.option(
    "--allow-unredacted-snapshot",
    is_flag=True,
    help="Let /v1/snapshot?redact=false return real node and pod names.",
)
@click.option(
    "--redact-key",
    envvar="DRAPLAN_REDACT_KEY",
    default="",
    metavar="TEXT",
    help="Key of /v1/snapshot's pseudonyms. [env: DRAPLAN_REDACT_KEY]",
)
@click.option(
    "--expander-listen",
    metavar="ADDR",
    help="Also answer Cluster Autoscaler's gRPC expander (--expander=grpc) on host:port, from "
    "the same live model.",
)
@click.option("--tls-cert", metavar="FILE", help="PEM certificate of --expander-listen.")
@click.option("--tls-key", metavar="FILE", help="PEM private key of --tls-cert.")
@click.option(
    "--expander-insecure", is_flag=True, help="Serve the expander without TLS (local use only)."
)
@prices_option
def serve(
    filenames: tuple[str, ...],
    listen: str,
    audit_interval: float,
    events: bool,
    allow_unredacted_snapshot: bool,
    redact_key: str,
    expander_listen: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    expander_insecure: bool,
    prices_path: str | None,
) -> None:
    """Serve /metrics (Prometheus), /v1/why, /v1/metrics, /v1/plan, /v1/snapshot, /healthz
    and /readyz from a cluster model kept current, until SIGTERM."""
    # The HTTP and Prometheus libraries load only here: other commands do not pay for them.
    from prometheus_client import CollectorRegistry

    from draplan.serve.answers import Auditor
    from draplan.serve.api import Api
    from draplan.serve.events import EventRecorder, api_poster
    from draplan.serve.exposition import Exposition
    from draplan.serve.http import Server
    from draplan.serve.loop import AuditLoop, Listener
    from draplan.sources.kubeclient import resolve_config
    from draplan.sources.prices import load_prices

    address = parse_listen(listen)
    if expander_listen and not expander_insecure and not (tls_cert and tls_key):
        raise click.UsageError(
            "--tls-cert and --tls-key are required with --expander-listen unless "
            "--expander-insecure"
        )
    profile = chosen_profile()
    settings = input_settings()
    poster = api_poster(resolve_config(settings.kubeconfig, settings.context)) if events else None
    model = build_model(filenames)
    registry = CollectorRegistry()
    recorder = EventRecorder(poster) if poster else None
    listeners: tuple[Listener, ...] = (recorder,) if recorder else ()
    prices = load_prices(prices_path) if prices_path else None
    loop = AuditLoop(
        model,
        Auditor(profile, prices=prices, plan_process=True),
        audit_interval,
        registry,
        listeners,
    )
    api = Api(loop, model, Exposition(loop, model, registry), allow_unredacted_snapshot, redact_key)
    try:
        server = Server(address, api)
    except OSError as err:
        raise BadInput(f"cannot listen: {err.strerror}", path=f"--listen {listen}") from None
    expander = (
        start_expander(expander_listen, tls_cert, tls_key, expander_insecure, loop, profile)
        if expander_listen
        else None
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    model.start()
    if recorder:
        recorder.start()
    loop.start()
    threading.Thread(target=server.serve_forever, name="draplan-http", daemon=True).start()
    host, port = server.server_address[:2]
    log.info("serving on http://%s:%d", host, port)
    sys.stderr.flush()
    stop.wait()
    log.info("stopping: draining requests in flight")
    drained = server.drain(DRAIN_SECONDS)
    if expander is not None:
        expander.stop(grace=1.0)
    model.stop()
    loop.stop(timeout=0)  # an audit in progress is abandoned: its answers would go nowhere
    if recorder:
        recorder.stop(timeout=0.5)
    log.info("stopped%s", "" if drained else " (some requests were cut off)")


COMMANDS = [serve]
