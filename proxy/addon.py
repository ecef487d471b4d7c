"""The proxy's addon: each request goes through access, the banner's API, harbors, date, then
recording or replay, in that order; what the replay served is then noted for a client whose banner
is on, and its page gets the bar. Each concern is a class of its own that answers the requests
that are its concern and leaves the others to the next. They are called from one mitmproxy addon:
every addon mitmproxy runs costs time on every hook of every request.

The addon fails closed. mitmproxy sends a request on to its upstream when no addon answered it,
and goes on as if nothing happened when an addon raises; here, a request leaves the chain either
answered or taken for the live web by record mode or the replay (for a client the operator and
its own setting put in live or record mode), and an exception anywhere in the chain becomes a
fault page of ours and a log line. The upstream gate (upstream.py) checks every connection again.
"""

import logging
import traceback
from dataclasses import KW_ONLY, InitVar, dataclass, field
from pathlib import Path

from mitmproxy import ctx, http
from mitmproxy.addonmanager import Loader

import harbors
from archive.archival_urls import ArchivalUrls
from archive.config import DEFAULT_SEARCH_INDEX
from archive.errors import clipped
from archive.reading import CaptureReader

from .access import Access
from .banner_addon import Banner
from .coherence import DEFAULT_SPAN
from .dates import DatePicker
from .guard import Guard, client_of, refused
from .harbor_addon import HarborAddon
from .large_bodies import STREAMED
from .record_mode import RECORDING, RecordMode
from .replay import LIVE, Replay
from .stream_play import PLAYED, StreamPlayback
from .upstream import UpstreamGate

log = logging.getLogger(__name__)

FRAMES_LOGGED = 8  # the innermost frames of a failure's traceback that its log line shows


@dataclass(eq=False, repr=False)
class ArchiveAddon:
    """The chain of concerns, as one mitmproxy addon. What the operator sets (live web allowed,
    request log, search index, banner span) are mitmproxy options the addon declares (`load`), so
    that they are set and shown as mitmproxy's own are; the concerns are made anew whenever one
    changes (`configure`). The CA's folder is mitmproxy's `confdir`."""

    reader: CaptureReader
    settings: harbors.ClientSettings
    access: InitVar[Access]
    streams: StreamPlayback
    _: KW_ONLY
    gate: UpstreamGate
    guard: Guard = field(init=False)
    dates: DatePicker = field(init=False)

    def __post_init__(self, access: Access) -> None:
        self.guard = Guard(access)
        self.dates = DatePicker(self.settings)

    def load(self, loader: Loader) -> None:
        loader.add_option(
            "dlweb_live_allowed", bool, False, "let clients turn live or record mode on"
        )
        loader.add_option("dlweb_log_requests", bool, False, "log each request the replay answers")
        loader.add_option(
            "dlweb_search_index",
            str,
            str(DEFAULT_SEARCH_INDEX),
            "the search index folder, with the URL-key index of the CDX API",
        )
        loader.add_option(
            "dlweb_scheduler",
            str,
            "",
            "the crawl scheduler's URL, whose sites the directory and map harbors show; empty"
            " for none",
        )
        loader.add_option(
            "dlweb_direct_root",
            str,
            "",
            "the direct front's root, such as http://host:8090/web, whose URI-Ms the Memento"
            " headers name; empty when it does not run",
        )
        loader.add_option(
            "dlweb_coherence_span",
            int,
            DEFAULT_SPAN,
            "seconds around a page's date within which its resources count as coherent",
        )

    def configure(self, updated: set[str]) -> None:
        options = ctx.options
        self.live_allowed: bool = options.dlweb_live_allowed
        self.banner = Banner(self.settings, options.dlweb_coherence_span)
        self.harbors = HarborAddon(
            self.settings,
            self.reader,
            self.live_allowed,
            Path(options.confdir).expanduser(),
            Path(options.dlweb_search_index),
            options.dlweb_scheduler,
        )
        self.record_mode = RecordMode(self.reader.client, self.settings, self.live_allowed)
        root = options.dlweb_direct_root
        self.replay = Replay(
            self.reader,
            self.settings,
            self.streams,
            self.live_allowed,
            options.dlweb_log_requests,
            ArchivalUrls.at(root) if root else None,
        )

    def http_connect(self, flow: http.HTTPFlow) -> None:
        try:
            self.guard.http_connect(flow)
        except Exception as exc:
            _failed(flow, "CONNECT", exc)

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        """The guard looks at a request once its head is read: what it refuses is answered
        without its body, which is read and dropped within the body limit (mitm_limits.py)."""
        try:
            self.guard.request(flow)
        except Exception as exc:
            _failed(flow, "request headers", exc)

    async def request(self, flow: http.HTTPFlow) -> None:
        try:  # the guard saw the request's head (requestheaders)
            self.banner.request(flow)
            await self.harbors.request(flow)
            self.dates.request(flow)
            if not self.record_mode.request(flow):
                await self.replay.request(flow)
                self.banner.served(flow)
        except Exception as exc:
            _failed(flow, "request", exc)
        if flow.response is None:
            self._unanswered(flow)

    def _unanswered(self, flow: http.HTTPFlow) -> None:
        """A flow the chain left for mitmproxy to send on: to the storage node or the stream
        relay the replay chose (the gate lets that one connection through), to the live web
        where record mode or the replay took it there, or else nowhere: refused."""
        request = flow.request
        if STREAMED in flow.metadata or PLAYED in flow.metadata:
            self.gate.expect(flow.client_conn.id, request.host, request.port)
        elif not self._goes_live(flow):
            log.error("no answer made for %s: refused", _target(flow))
            flow.response = refused(500, "the proxy made no answer to this request")

    def _goes_live(self, flow: http.HTTPFlow) -> bool:
        """Whether record mode or the replay took the flow for the live web, as they may only
        where the operator allows it."""
        return self.live_allowed and bool(flow.metadata.get(LIVE) or flow.metadata.get(RECORDING))

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        try:
            self.replay.responseheaders(flow)
        except Exception as exc:
            _failed(flow, "response headers", exc)
            flow.kill()  # type: ignore[no-untyped-call]  # whatever the body is, it is not sent

    async def response(self, flow: http.HTTPFlow) -> None:
        try:
            await self.record_mode.response(flow)
            self.replay.response(flow)
        except Exception as exc:
            _failed(flow, "response", exc)

    def done(self) -> None:
        self.replay.done()


def _failed(flow: http.HTTPFlow, where: str, exc: Exception) -> None:
    """An error of ours while handling a flow: its answer is a fault page, never the upstream's,
    and a log line of bounded size says where (the innermost frames, the message cut)."""
    frames = traceback.extract_tb(exc.__traceback__)[-FRAMES_LOGGED:]
    at = " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
    log.error(
        "error of the proxy in the %s of %s %s from %s: %s: %s [%s]",
        where,
        clipped(flow.request.method, 20),
        _target(flow),
        client_of(flow),
        type(exc).__name__,
        clipped(str(exc)),
        at,
    )
    flow.response = refused(500, "the proxy failed on this request (an error of ours, logged)")


def _target(flow: http.HTTPFlow) -> str:
    """What a log line names a request by: its URL, or its path when its host cannot be read."""
    request = flow.request
    try:
        return clipped(request.pretty_url)
    except Exception:
        return clipped(f"{request.scheme}://{request.host}:{request.port}{request.path}")
