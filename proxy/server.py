"""The consultation proxy process: mitmproxy's proxy server run in our own event loop, with the
archive addon answering every request."""

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass, field
from pathlib import Path

from mitmproxy import options
from mitmproxy.addons import (
    core,
    disable_h2c,
    errorcheck,
    next_layer,
    proxyauth,
    proxyserver,
    tlsconfig,
)
from mitmproxy.master import Master
from passlib.apache import HtpasswdFile

import harbors
from archive.cache import ReadCache
from archive.cluster import ClusterClient
from archive.config import DEFAULT_SEARCH_INDEX, ClusterConfig
from archive.reading import CaptureReader

from . import mitm_limits, mitm_tuning
from .access import Access, Network
from .addon import ArchiveAddon
from .coherence import DEFAULT_SPAN
from .direct import DirectFront, DirectOptions
from .harbor_addon import HarborAddon
from .limits import Limits
from .listener import Listener
from .stream_play import StreamPlayback
from .upstream import UpstreamGate

log = logging.getLogger(__name__)

SETTINGS_FILE = "client-settings.json"
CA_FOLDER = "ca"


@dataclass
class ProxyOptions:
    config: ClusterConfig
    data: Path
    host: str = "127.0.0.1"
    port: int = 8080
    allowed: list[Network] = field(default_factory=list)
    live_allowed: bool = False
    log_requests: bool = False
    auth: Path | None = None  # an htpasswd file
    search_index: Path = DEFAULT_SEARCH_INDEX  # the CDX API's URL-key index is in it
    scheduler: str = ""  # the crawl scheduler's URL, for the directory and map harbors
    coherence_span: int = DEFAULT_SPAN  # seconds: the banner marks resources farther from the page
    live_networks: list[Network] = field(default_factory=list)  # private ones live may reach
    limits: Limits = field(default_factory=Limits)
    direct: DirectOptions | None = None  # the direct front, if it runs


class _Ready:
    """Takes the proxy's connections from its own listener (listener.py) once mitmproxy runs,
    and says so, so that whoever started it knows it can connect."""

    def __init__(self, listener: Listener, master: Master) -> None:
        self.listener = listener
        self.master = master

    def running(self) -> None:
        proxyserver = self.master.addons.get("proxyserver")  # type: ignore[no-untyped-call]
        (instance,) = proxyserver.servers
        for own in getattr(instance, "_servers", []):  # its ephemeral loopback port: closed
            own.close()
        self.listener.start(instance.handle_stream)
        log.info("dlweb proxy listening on %s:%d", self.listener.host, self.listener.port)


def lean_master(mitm: options.Options) -> Master:
    """mitmproxy with only the parts a proxy needs, answering without any upstream connection.

    Every hook of every addon loaded costs time on every request, and mitmdump's many features
    (scripts, saving flows...) are not used here. Nothing is fetched from the web before the
    addon answers, and no upstream certificate is copied. No raw TCP: bytes that are neither TLS
    nor HTTP (after CONNECT, or inside TLS) are read as HTTP, and refused as bad HTTP, instead of
    being relayed to the address the client named.
    """
    master = Master(mitm, with_termlog=False)
    master.addons.add(  # type: ignore[no-untyped-call]
        core.Core(),
        proxyauth.ProxyAuth(),
        proxyserver.Proxyserver(),  # type: ignore[no-untyped-call]
        next_layer.NextLayer(),
        tlsconfig.TlsConfig(),
        disable_h2c.DisableH2C(),
        errorcheck.ErrorCheck(),
    )
    master.options.update(  # type: ignore[no-untyped-call]
        connection_strategy="lazy", upstream_cert=False, rawtcp=False
    )
    return master


async def serve(opts: ProxyOptions) -> None:
    logging.getLogger("mitmproxy").setLevel(logging.WARNING)  # no line per connection
    mitm_limits.install(opts.limits)
    mitm_tuning.install()
    opts.data.mkdir(parents=True, exist_ok=True)
    settings = harbors.ClientSettings(opts.data / SETTINGS_FILE, opts.config.secret)
    # mitmproxy's own server listens on an ephemeral loopback port, closed once it runs: the
    # listener hands it the connections.
    mitm = options.Options(
        listen_host="127.0.0.1", listen_port=0, confdir=str(opts.data / CA_FOLDER)
    )
    master = lean_master(mitm)
    master.options.update(  # type: ignore[no-untyped-call]
        proxyauth=None if opts.auth is None else f"@{opts.auth}"
    )
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, master.shutdown)
    # What is started is closed, in the reverse order, whatever stops the proxy: a port that is
    # taken (the proxy's or the front's) as well as a signal.
    async with contextlib.AsyncExitStack() as started:
        client = await started.enter_async_context(
            ClusterClient(opts.config, name="proxy", cache=ReadCache())
        )
        reader = CaptureReader(client)
        streams = StreamPlayback(client)
        await streams.start()
        started.push_async_callback(streams.close)
        own: list[tuple[str, int]] = []  # the addresses the live web must not lead back to
        if opts.direct is not None:
            front = _direct_front(opts, opts.direct, reader, settings)
            own.append((opts.direct.host, await front.start()))
            started.push_async_callback(front.close)
        listener = Listener(opts.host, opts.port)
        started.callback(listener.close)
        own.append((opts.host, listener.port))
        gate = UpstreamGate(
            lambda address: _may_go_live(opts.live_allowed, settings.get(address)),
            client.members,
            opts.live_networks,
            own,
        )
        master.addons.add(  # type: ignore[no-untyped-call]
            ArchiveAddon(reader, settings, Access(opts.allowed), streams, gate=gate),
            gate,
            _Ready(listener, master),
        )
        master.options.update(  # type: ignore[no-untyped-call]
            dlweb_live_allowed=opts.live_allowed,
            dlweb_log_requests=opts.log_requests,
            dlweb_search_index=str(opts.search_index),
            dlweb_scheduler=opts.scheduler,
            dlweb_coherence_span=opts.coherence_span,
            dlweb_direct_root="" if opts.direct is None else opts.direct.urls.root,
        )
        await master.run()


def _direct_front(
    opts: ProxyOptions,
    direct: DirectOptions,
    reader: CaptureReader,
    settings: harbors.ClientSettings,
) -> DirectFront:
    """The direct front, over the proxy's reader, harbors, client networks and users."""
    context = HarborAddon(
        settings, reader, False, opts.data / CA_FOLDER, opts.search_index, opts.scheduler
    )
    users = None if opts.auth is None else HtpasswdFile(str(opts.auth))
    return DirectFront(reader, direct, Access(opts.allowed), context, users)


def _may_go_live(allowed: bool, setting: harbors.ClientSetting) -> bool:
    """Whether a client may reach the live web now: the operator allows it and the client turned
    live or record mode on for itself."""
    return allowed and (setting.live or setting.record)
