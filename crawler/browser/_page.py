"""Loading one page in the browser, every request it makes served by the caller.

The page's requests are paused by the protocol's Fetch domain before they leave the browser and
handed to `serve`, which downloads them however it must (the crawler's polite fetcher) and
returns the response the browser then gets. Nothing the page loads reaches the network any other
way, so what the browser saw is exactly what was served: every exchange is reported.

Once the document has loaded and the network is idle, the page is scrolled to its end until it
stops growing (infinite scroll, lazy images), its media elements are played muted, and the
alternatives named in `srcset` and `<source>` are loaded; then its links are read from the
rendered DOM. A navigation of the page itself after its document came (`window.location = ...`)
is not followed: its URL is reported as a link, for the crawler's next level.
"""

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ._cdp import COMMAND_TIMEOUT, BrowserError, Connection

# The network is idle once no request has been waiting for this long.
IDLE = 0.5
# A command to a page may take this long past the page's budget before the browser is thought
# hung.
ANSWER_GRACE = 5.0
# Scrolls of a page that keeps growing, at most (infinite scroll's pages).
MAX_SCROLLS = 20

# Run before any script of the page: no popups, no dialogs that wait for a click.
GUARDS = """
window.open = () => null;
window.alert = () => undefined;
window.confirm = () => false;
window.prompt = () => null;
window.print = () => undefined;
"""
HEIGHT = "(document.scrollingElement || document.documentElement).scrollHeight"
SCROLL = f"window.scrollTo(0, {HEIGHT})"
# A moment for the page's scripts to draw what the network just brought.
SETTLE = "new Promise((done) => setTimeout(done, 100))"
MEDIA = """
(() => {
  const wanted = new Set();
  for (const media of document.querySelectorAll("video, audio")) {
    media.muted = true;
    const playing = media.play();
    if (playing) playing.catch(() => undefined);
  }
  for (const element of document.querySelectorAll("img[srcset], source[srcset]")) {
    for (const part of element.getAttribute("srcset").split(",")) {
      const url = part.trim().split(/\\s+/)[0];
      if (url) wanted.add(new URL(url, document.baseURI).href);
    }
  }
  for (const source of document.querySelectorAll("video source[src], audio source[src]")) {
    wanted.add(source.src);
  }
  for (const url of wanted) new Image().src = url;
  return wanted.size;
})()
"""
LINKS = """
Array.from(document.querySelectorAll("a[href], area[href]"), (a) => a.href)
  .filter((href) => href.startsWith("http:") || href.startsWith("https:"))
"""


@dataclass(frozen=True)
class BrowserRequest:
    """A request the page made, as the browser would have sent it."""

    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes | None
    resource_type: str  # the protocol's: Document, Script, XHR, Fetch, Image, Media...


@dataclass(frozen=True)
class BrowserResponse:
    """What the browser gets for a request: the body decoded of any content coding, with header
    fields that describe it so (no Content-Encoding, Content-Length or Transfer-Encoding)."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes


class ServeError(Exception):
    """`serve` could not answer a request; `kind` names why (the page's report counts it)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


Serve = Callable[[BrowserRequest], Awaitable[BrowserResponse]]


@dataclass
class PageLoad:
    """What loading a page did."""

    url: str
    requests: list[BrowserRequest] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # URL: why `serve` failed it
    links: list[str] = field(default_factory=list)
    title: str = ""
    scrolls: int = 0


class PageSession:
    """One tab, from its creation to `close`, its requests served by `serve`."""

    def __init__(self, connection: Connection, serve: Serve) -> None:
        self.connection = connection
        self.serve = serve
        self.target = ""
        self.session = ""
        self.load = PageLoad("")
        self.waiting = 0
        self.last_activity = time.monotonic()
        self.activity = asyncio.Event()
        self.loaded = asyncio.Event()
        self.crashed = asyncio.Event()
        self.main_frame = ""
        self.committed = False
        self.deadline = time.monotonic() + COMMAND_TIMEOUT

    async def open(self) -> None:
        created = await self.connection.send("Target.createTarget", {"url": "about:blank"})
        self.target = created["targetId"]
        attached = await self.connection.send(
            "Target.attachToTarget", {"targetId": self.target, "flatten": True}
        )
        self.session = attached["sessionId"]
        on = self.connection.on
        on("Fetch.requestPaused", self._paused, self.session)
        on("Page.loadEventFired", lambda _: self.loaded.set(), self.session)
        on("Page.frameNavigated", self._navigated, self.session)
        on("Inspector.targetCrashed", lambda _: self._crash(), self.session)
        await self._send("Inspector.enable")
        await self._send("Page.enable")
        frames = await self._send("Page.getFrameTree")
        self.main_frame = frames["frameTree"]["frame"]["id"]
        await self._send("Page.addScriptToEvaluateOnNewDocument", {"source": GUARDS})
        await self._send(
            "Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}
        )

    async def visit(self, url: str, budget: float) -> PageLoad:
        """Load `url`, play the behaviours and read the links, within `budget` seconds."""
        self.load = PageLoad(url)
        deadline = self.deadline = time.monotonic() + budget
        navigated = await self._send("Page.navigate", {"url": url})
        if navigated.get("errorText"):
            raise BrowserError("navigation", f"{url}: {navigated['errorText']}")
        await self._until(self.loaded.wait(), deadline)
        await self._idle(deadline)
        height = await self._evaluate(HEIGHT)
        while self.load.scrolls < MAX_SCROLLS and time.monotonic() < deadline:
            asked = len(self.load.requests)
            await self._evaluate(SCROLL)
            self.load.scrolls += 1
            await self._idle(deadline)
            await self._evaluate(SETTLE, wait=True)
            grown = await self._evaluate(HEIGHT)
            if grown == height and len(self.load.requests) == asked:
                break
            height = grown
        if await self._evaluate(MEDIA):
            await self._idle(deadline)
        found = await self._evaluate(LINKS)
        self.load.links.extend(link for link in found or () if isinstance(link, str))
        self.load.title = str(await self._evaluate("document.title") or "")
        return self.load

    async def close(self) -> None:
        self.connection.forget(self.session)
        if self.target:
            await self.connection.send("Target.closeTarget", {"targetId": self.target})

    async def _send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A command to the page, answered within what is left of its budget (a page whose
        script never yields answers nothing: its browser is then killed)."""
        left = max(0.0, self.deadline - time.monotonic()) + ANSWER_GRACE
        return await self.connection.send(method, params, self.session, timeout=left)

    async def _evaluate(self, expression: str, wait: bool = False) -> Any:
        """The value of a JavaScript expression in the page (awaited if a promise, with
        `wait`); None when it throws."""
        answer = await self._send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": wait},
        )
        if "exceptionDetails" in answer:
            return None
        return answer.get("result", {}).get("value")

    async def _until(self, awaited: Awaitable[Any], deadline: float) -> None:
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                await awaited
        except TimeoutError:
            raise BrowserError(
                "timeout", f"{self.load.url}: the page did not load in time"
            ) from None
        self._check()

    def _crash(self) -> None:
        """The page's renderer died (out of memory, most often): every wait ends at once."""
        self.crashed.set()
        self.loaded.set()
        self.activity.set()

    def _check(self) -> None:
        if self.crashed.is_set():
            raise BrowserError("page-crashed", f"{self.load.url}: the page's renderer crashed")

    async def _idle(self, deadline: float) -> None:
        """Wait until no request has been waiting for IDLE seconds (or the deadline)."""
        while time.monotonic() < deadline:
            self._check()
            quiet = time.monotonic() - self.last_activity
            if self.waiting == 0 and quiet >= IDLE:
                return
            self.activity.clear()
            wait = IDLE - quiet if self.waiting == 0 else deadline - time.monotonic()
            try:
                async with asyncio.timeout(max(0.01, min(wait, deadline - time.monotonic()))):
                    await self.activity.wait()
            except TimeoutError:
                pass

    def _navigated(self, params: dict[str, Any]) -> None:
        frame = params.get("frame", {})
        if frame.get("id") == self.main_frame and not frame.get("parentId"):
            self.committed = self.committed or frame.get("url") != "about:blank"

    async def _paused(self, params: dict[str, Any]) -> None:
        request_id = params["requestId"]
        request = _request(params)
        if (
            self.committed
            and request.resource_type == "Document"
            and params.get("frameId") == self.main_frame
        ):
            # The page navigates itself: a link for the next level, not part of this page.
            self.load.links.append(request.url)
            await self._send(
                "Fetch.failRequest", {"requestId": request_id, "errorReason": "Aborted"}
            )
            return
        self.load.requests.append(request)
        self._touch(+1)
        try:
            response = await self.serve(request)
        except ServeError as exc:
            self.load.failed[request.url] = exc.kind
            await self._send(
                "Fetch.failRequest", {"requestId": request_id, "errorReason": "Failed"}
            )
        else:
            await self._send(
                "Fetch.fulfillRequest",
                {
                    "requestId": request_id,
                    "responseCode": response.status,
                    "responsePhrase": response.reason or "-",
                    "responseHeaders": [{"name": n, "value": v} for n, v in response.headers],
                    "body": base64.b64encode(response.body).decode(),
                },
            )
        finally:
            self._touch(-1)

    def _touch(self, change: int) -> None:
        self.waiting += change
        self.last_activity = time.monotonic()
        self.activity.set()


def _request(params: dict[str, Any]) -> BrowserRequest:
    """The request of a Fetch.requestPaused event, with its whole body."""
    request = params["request"]
    body: bytes | None = None
    entries = request.get("postDataEntries")
    if entries:
        body = b"".join(base64.b64decode(entry.get("bytes", "")) for entry in entries)
    elif "postData" in request:
        body = str(request["postData"]).encode()
    headers = [(str(k), str(v)) for k, v in request.get("headers", {}).items()]
    return BrowserRequest(
        method=str(request.get("method", "GET")),
        url=str(request["url"]),
        headers=headers,
        body=body,
        resource_type=str(params.get("resourceType", "Other")),
    )
