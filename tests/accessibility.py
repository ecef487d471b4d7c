"""Pages checked in a running headless Chromium, through the proxy: axe-core's accessibility
rules run in the page, and scripts evaluated in it while it stays loaded, in its closed shadow
roots and in its frames of other sites.

Chromium is driven over the DevTools protocol (the crawler's client), so a test can load a
page, leave its scripts running, and read its DOM again later; `--dump-dom` can only read a page
once. axe-core is the copy the `axe-core-python` package ships (`axe.min.js`, MPL 2.0).
"""

import asyncio
import importlib.resources
import json
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from crawler.browser._cdp import Connection
from crawler.browser._chromium import Chromium

LAPTOP = (1280, 800)
PHONE = (375, 740)
# The WCAG 2.1 A and AA rules, and axe's best practices (one h1, landmarks, heading order...).
TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice")
LOAD_TIMEOUT = 30.0
RUN_AXE = """
axe.run(document, {runOnly: {type: "tag", values: %s}, resultTypes: ["violations"]})
  .then((found) => found.violations.map((v) => ({
    rule: v.id, impact: v.impact || "", help: v.help,
    targets: v.nodes.map((n) => n.target.join(" ")),
  })))
"""
# Whether the shared style sheet came with the page and was read: its rules are readable from a
# page of the same harbor.
STYLESHEET_READ = """
Array.from(document.styleSheets).some((sheet) =>
  sheet.href && new URL(sheet.href).pathname === "/dlweb.css" && sheet.cssRules.length > 0)
"""
# How many pixels the page is wider than the window (0: no sideways scrolling).
OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


@dataclass(frozen=True)
class Violation:
    """An axe rule a page breaks, and the elements that break it (CSS selectors)."""

    rule: str
    impact: str
    help: str
    targets: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.rule} ({self.impact}): {self.help}: {', '.join(self.targets)}"


def axe_source() -> str:
    return (importlib.resources.files("axe_core_python") / "axe.min.js").read_text()


class Tab:
    """One page of the browser, loaded and left running."""

    def __init__(self, connection: Connection, session: str) -> None:
        self.connection = connection
        self.session = session
        self.loaded = asyncio.Event()
        connection.on("Page.loadEventFired", lambda _: self.loaded.set(), session)

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.connection.send(method, params, self.session)

    async def load(self, url: str) -> None:
        """Navigate to `url` and wait for its load event."""
        self.loaded.clear()
        navigated = await self.send("Page.navigate", {"url": url})
        assert not navigated.get("errorText"), f"{url}: {navigated['errorText']}"
        async with asyncio.timeout(LOAD_TIMEOUT):
            await self.loaded.wait()

    async def follow(self, expression: str) -> None:
        """Run a script that leads to another page (a click on a link or a button) and wait
        for that page's load event."""
        self.loaded.clear()
        await self.evaluate(expression)
        async with asyncio.timeout(LOAD_TIMEOUT):
            await self.loaded.wait()

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page, awaited if a promise."""
        answer = await self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            raise AssertionError(details.get("exception", {}).get("description", details))
        return answer.get("result", {}).get("value")

    async def in_shadow_root(self, host: str, function: str) -> Any:
        """The value of a JavaScript function called with `this` the shadow root of the element
        that the selector `host` picks, closed ones included (which the page's scripts cannot
        reach: the DevTools protocol can)."""
        document = await self.send("DOM.getDocument", {"depth": 0})
        found = await self.send(
            "DOM.querySelector", {"nodeId": document["root"]["nodeId"], "selector": host}
        )
        assert found.get("nodeId"), f"no element {host} in the page"
        node = await self.send("DOM.describeNode", {"nodeId": found["nodeId"], "pierce": True})
        roots = node["node"].get("shadowRoots", [])
        assert roots, f"{host} has no shadow root"
        resolved = await self.send("DOM.resolveNode", {"backendNodeId": roots[0]["backendNodeId"]})
        answer = await self.send(
            "Runtime.callFunctionOn",
            {
                "objectId": resolved["object"]["objectId"],
                "functionDeclaration": function,
                "returnByValue": True,
                "awaitPromise": True,
            },
        )
        assert "exceptionDetails" not in answer, answer["exceptionDetails"]
        return answer.get("result", {}).get("value")

    async def violations(self) -> list[Violation]:
        """What axe-core finds in the page as it is now."""
        await self.evaluate(axe_source())
        found = await self.evaluate(RUN_AXE % json.dumps(TAGS))
        return [Violation(v["rule"], v["impact"], v["help"], tuple(v["targets"])) for v in found]


class Browser:
    """A headless Chromium (the crawler's, crawler/browser) whose every request goes through the
    proxy at `proxy` (http://host:port), in a profile of its own removed when it stops."""

    def __init__(self, proxy: str) -> None:
        self.chromium = Chromium(proxy=proxy)
        self.connection: Connection | None = None

    async def __aenter__(self) -> "Browser":
        self.connection = await self.chromium.start()
        return self

    async def open(self, url: str, window: tuple[int, int] = LAPTOP) -> Tab:
        """A new tab of `window` pixels (a phone's when narrow) with `url` loaded."""
        assert self.connection is not None
        created = await self.connection.send("Target.createTarget", {"url": "about:blank"})
        attached = await self.connection.send(
            "Target.attachToTarget", {"targetId": created["targetId"], "flatten": True}
        )
        tab = Tab(self.connection, attached["sessionId"])
        await tab.send("Page.enable")
        width, height = window
        await tab.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
        )
        await tab.load(url)
        return tab

    async def frame(self, address: str) -> Tab:
        """The frame of another site whose address starts with `address`, in any open page, as a
        tab of its own (a frame of another site runs in a process of its own)."""
        assert self.connection is not None
        found = await self.connection.send("Target.getTargets")
        frames = [
            target
            for target in found["targetInfos"]
            if target["type"] == "iframe" and target["url"].startswith(address)
        ]
        assert frames, f"no frame at {address}: {found['targetInfos']}"
        attached = await self.connection.send(
            "Target.attachToTarget", {"targetId": frames[0]["targetId"], "flatten": True}
        )
        return Tab(self.connection, attached["sessionId"])

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.chromium.stop()


async def problems(proxy: str, url: str) -> list[str]:
    """What keeps the harbor page at `url` from being accessible and readable, on a laptop and
    on a phone: axe-core's violations, the shared style sheet not read, a page wider than a
    phone's screen. Empty when there is none."""
    found = []
    async with Browser(proxy) as browser:
        for window in (LAPTOP, PHONE):
            tab = await browser.open(url, window)
            size = f"{window[0]}x{window[1]}"
            found += [f"{size}: {violation}" for violation in await tab.violations()]
            if not await tab.evaluate(STYLESHEET_READ):
                found.append(f"{size}: /dlweb.css was not loaded")
            wider = await tab.evaluate(OVERFLOW)
            if wider > 0:
                found.append(f"{size}: the page is {wider} px wider than the window")
    return found
