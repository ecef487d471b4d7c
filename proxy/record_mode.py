"""Record mode: a client that turned it on browses the live web, and every response it gets is
stored in the archive before it reaches the client.

A client turns recording on for itself at the date harbor, where the operator allows the live
web. Its requests then skip the replay and go to the live web; each response is stored as a
capture (under the lookup key of its request's method and body, with its header block as
received and its body as sent, content coding kept) and marked `X-Dlweb-Recorded` with the
capture's date, or with why it could not be stored. Turning recording off returns to replay.
"""

import hashlib
import logging

from mitmproxy import http

import harbors
from archive.cluster import ClusterClient, NewCapture
from archive.errors import DlwebError, clipped
from archive.header_block import encode_header_block
from archive.requestkey import lookup_url
from archive.timestamps import format_iso

from .guard import client_of

log = logging.getLogger(__name__)

RECORDING = "dlweb-recording"
MARK = "X-Dlweb-Recorded"


class RecordMode:
    def __init__(
        self, client: ClusterClient, settings: harbors.ClientSettings, live_allowed: bool
    ) -> None:
        self.client = client
        self.settings = settings
        self.live_allowed = live_allowed

    def request(self, flow: http.HTTPFlow) -> bool:
        """Take the flow for the live web when its client records; whether it was taken."""
        if flow.response is not None or not self.live_allowed:
            return False
        if not self.settings.get(client_of(flow)).record:
            return False
        flow.metadata[RECORDING] = True
        return True

    async def response(self, flow: http.HTTPFlow) -> None:
        response = flow.response
        if response is None or not flow.metadata.get(RECORDING):
            return
        request = flow.request
        body = response.raw_content or b""
        block = encode_header_block(
            response.status_code,
            response.reason,
            [
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, value in response.headers.fields
            ],
            response.http_version,
        )
        url = lookup_url(
            request.method,
            request.pretty_url,
            request.headers.get("content-type"),
            request.raw_content or b"",
        )
        time = int((response.timestamp_start or 0) * 1_000_000)
        content, header = hashlib.sha256(body).hexdigest(), hashlib.sha256(block).hexdigest()
        files = {content: body, header: block}
        capture = NewCapture(
            url=url,
            time=time,
            content=content,
            header=header,
            status=response.status_code,
            size=len(body),
            header_size=len(block),
            kind="response",
        )
        try:
            await self.client.insert([capture], files.__getitem__)
        except DlwebError as exc:
            url = clipped(request.pretty_url)
            log.warning("recording of %s %s failed: %s", clipped(request.method, 20), url, exc)
            response.headers[MARK] = f"not stored: {clipped(str(exc), 300)}"
            return
        response.headers[MARK] = format_iso(time)
