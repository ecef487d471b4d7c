"""Recorded live streams played back from the client's date.

A URL whose capture is a stream segment (an Icecast or progressive recording), or whose archived
answer is an HLS playlist with stream logs, is played from the date rather than replayed: HLS as
a playlist of the archived segments from the date (archive/streams/playback.py); audio as the
bytes from the frame on air at the date on through the following chunks. Those come from a relay,
a loopback HTTP server in the proxy's own process, to which the request is sent on: mitmproxy
then streams its answer to the browser as it would a live radio's, and the chunks are read from
the cluster one at a time, so memory stays flat however long the listening.
"""

import logging
import secrets
from dataclasses import dataclass
from urllib.parse import urlencode

from aiohttp import web
from mitmproxy import http

from archive.cluster import ClusterClient
from archive.connections import app_runner
from archive.errors import DlwebError
from archive.streams import ChunkLog, frame_after, hls_playlist, start_at, stream_logs
from archive.timestamps import format_http_date, format_iso

from .responses import made

__all__ = ["StreamPlayback"]

log = logging.getLogger(__name__)

PLAYED = "dlweb-stream-played"
START_HEADER = "X-Dlweb-Stream-Start"
# Fields of the recorded answer that describe the connection it came on, not the stream.
NOT_PLAYED = frozenset((b"icy-metaint", b"content-length", b"accept-ranges", b"content-range"))


@dataclass
class _Played:
    fields: list[tuple[bytes, bytes]]  # the recorded answer's fields, as the replay sends them


class StreamPlayback:
    """Decides, for a capture the replay found, whether it is played as a stream, and relays
    the audio."""

    def __init__(self, client: ClusterClient) -> None:
        self.client = client
        self._token = secrets.token_urlsafe(16)  # other local users cannot use the relay
        self._runner: web.AppRunner | None = None
        self._port = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get(f"/{self._token}/play", self._play)
        self._runner = app_runner(app, self.client.config.http)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def play(
        self, flow: http.HTTPFlow, url: str, at: int, fields: list[tuple[bytes, bytes]]
    ) -> bool:
        """Answer the flow with the stream recorded at `url` from `at`; False when nothing was
        recorded as a stream there (the capture is then replayed as it is)."""
        logs = await stream_logs(self.client, url)
        if not logs:
            return False
        kept = [(k, v) for k, v in fields if k.lower() not in NOT_PLAYED]
        if any(chunk_log.protocol == "hls" for chunk_log in logs):
            playlist = hls_playlist(logs, at)
            if playlist is None:
                return False
            kept = [(k, v) for k, v in kept if k.lower() != b"content-type"]
            kept.append((b"Content-Type", b"application/vnd.apple.mpegurl"))
            kept.append((b"Cache-Control", b"no-store"))
            flow.response = made(
                200, kept, playlist if flow.request.method != "HEAD" else b"", len(playlist)
            )
            return True
        if start_at(logs, at) is None:
            return False
        request = flow.request
        request.method = "GET"
        request.scheme = "http"
        request.host, request.port = "127.0.0.1", self._port
        request.path = f"/{self._token}/play?" + urlencode({"url": url, "at": str(at)})
        request.headers = http.Headers(host=f"127.0.0.1:{self._port}")
        request.content = b""
        flow.metadata[PLAYED] = _Played(kept)
        return True

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        """The relay's answer goes on as it comes, under the recorded answer's fields."""
        played = flow.metadata.get(PLAYED)
        response = flow.response
        if not isinstance(played, _Played) or response is None or response.status_code != 200:
            return
        headers = http.Headers(played.fields)
        for name in ("Content-Type", START_HEADER, "Memento-Datetime"):
            if name in response.headers:
                headers[name] = response.headers[name]
        headers["Cache-Control"] = "no-store"
        response.headers = headers
        response.stream = True

    async def _play(self, request: web.Request) -> web.StreamResponse:
        try:
            url, at = request.query["url"], int(request.query["at"])
        except (KeyError, ValueError):
            raise web.HTTPBadRequest(text="url and at (microseconds) are required") from None
        try:
            logs = await stream_logs(self.client, url)
        except DlwebError as exc:
            log.warning("cannot play %s: %s", url, exc)
            raise web.HTTPInternalServerError(text=str(exc)) from None
        start = start_at(logs, at)
        if start is None or start.log.chunk is None:
            raise web.HTTPNotFound(text=f"{url} was not recorded as a stream")
        first = await self.client.get_content(start.log.chunk)
        skip, seconds = frame_after(
            first[start.point.offset :], start.log.content_type, start.seconds
        )
        began = start.point.time + round(seconds * 1e6)
        response = web.StreamResponse(
            headers={
                "Content-Type": start.log.content_type or "application/octet-stream",
                START_HEADER: format_iso(began),
                "Memento-Datetime": format_http_date(began),
            }
        )
        await response.prepare(request)
        offset = start.point.offset + skip
        if start.log.prelude is not None and offset > 0:
            await response.write(await self.client.get_content(start.log.prelude))
        await response.write(first[offset:])
        await self._follow(response, start.following)
        await response.write_eof()
        return response

    async def _follow(self, response: web.StreamResponse, chunks: tuple[ChunkLog, ...]) -> None:
        for chunk_log in chunks:
            assert chunk_log.chunk is not None
            try:
                data = await self.client.get_content(chunk_log.chunk)
            except DlwebError as exc:
                log.warning("stream playback of %s stops: %s", chunk_log.url, exc)
                return
            await response.write(data)
