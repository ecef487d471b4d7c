"""The proxy's addon: each request goes through access, the banner's API, harbors, date, then
recording or replay, in that order; what the replay served is then noted for a client whose banner
is on, and its page gets the bar. Each concern is a class of its own that answers the requests
that are its concern and leaves the others to the next; nothing reaches the live web unless the
recorder takes it or the replay leaves it to. They are called from one mitmproxy addon: every
addon mitmproxy runs costs time on every hook of every request."""

from pathlib import Path

from mitmproxy import http

import harbors
from archive.cli import DEFAULT_SEARCH_INDEX
from archive.reading import CaptureReader

from .access import Access
from .banner import Banner
from .coherence import DEFAULT_SPAN
from .dates import DatePicker
from .guard import Guard
from .harbor_desk import HarborDesk
from .recorder import Recorder
from .replay import Replay
from .stream_play import StreamPlayback


class ArchiveAddon:
    def __init__(
        self,
        reader: CaptureReader,
        settings: harbors.ClientSettings,
        access: Access,
        ca_folder: Path,
        streams: StreamPlayback,
        live_allowed: bool = False,
        log_requests: bool = False,
        search_index: Path = DEFAULT_SEARCH_INDEX,
        coherence_span: int = DEFAULT_SPAN,
    ) -> None:
        self.guard = Guard(access)
        self.banner = Banner(settings, coherence_span)
        self.harbors = HarborDesk(settings, reader, live_allowed, ca_folder, search_index)
        self.dates = DatePicker(settings)
        self.recorder = Recorder(reader.client, settings, live_allowed)
        self.replay = Replay(reader, settings, streams, live_allowed, log_requests)

    def http_connect(self, flow: http.HTTPFlow) -> None:
        self.guard.http_connect(flow)

    async def request(self, flow: http.HTTPFlow) -> None:
        self.guard.request(flow)
        self.banner.request(flow)
        await self.harbors.request(flow)
        self.dates.request(flow)
        if not self.recorder.request(flow):
            await self.replay.request(flow)
            self.banner.served(flow)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        self.replay.responseheaders(flow)

    async def response(self, flow: http.HTTPFlow) -> None:
        await self.recorder.response(flow)
        self.replay.response(flow)

    def done(self) -> None:
        self.replay.done()
