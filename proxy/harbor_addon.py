"""The harbor addon: requests to `*.dlweb` are answered by the harbors, never from the archive."""

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

from mitmproxy import http

import harbors
from archive.cluster import ClusterClient
from archive.reading import CaptureReader

from .guard import client_of
from .responses import encoded, made


@dataclass
class HarborAddon:
    """What the harbors may use of the proxy (harbors.HarborContext), and the addon that hands
    them their requests."""

    settings: harbors.ClientSettings
    reader: CaptureReader
    live_allowed: bool
    ca_folder: Path  # mitmproxy's configuration folder, holding the CA certificate
    search_index: Path  # the search index folder, with the URL-key index of the CDX API
    scheduler: str = ""  # the crawl scheduler's URL, for the directory and map harbors

    @property
    def client(self) -> ClusterClient:
        return self.reader.client

    async def request(self, flow: http.HTTPFlow) -> None:
        request = flow.request
        if flow.response is not None or not harbors.is_harbor(request.pretty_host):
            return
        path, _, query = request.path.partition("?")
        asked = harbors.HarborRequest(
            client=client_of(flow),
            method=request.method,
            host=request.pretty_host,
            path=path or "/",
            query_pairs=tuple(parse_qsl(query, keep_blank_values=True)),
            headers={
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers.fields
            },
            body=request.raw_content or b"",
        )
        answer = await harbors.answer(self, asked)
        flow.response = made(
            answer.status, encoded(answer.all_headers()), answer.body, len(answer.body)
        )
