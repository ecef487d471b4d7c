"""ReplayWeb.page, a viewer dlweb did not write, opens a WACZ package that `dlweb export` wrote:
its list shows every page under its title, and a page opened in it is replayed with its text.

The viewer runs in headless Chromium, driven over the DevTools protocol; what it shows is read
from its DOM, through the shadow roots of its elements and the documents of its frames (all of
one origin), polled until it shows what is awaited."""

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from deploy.testing.cluster import Cluster
from deploy.testing.replayweb import serving
from deploy.testing.waits import eventually
from tests.accessibility import Browser, Tab

from .conftest import dlweb

pytestmark = pytest.mark.timeout(180)  # a cluster, then a browser loading the viewer
# The viewer's first load registers its service worker and reads the package's index.
VIEW_TIMEOUT = 60.0
POLL = 0.2
# The browser fetches straight from the loopback server, through no proxy.
DIRECT = "direct://"


@dataclass(frozen=True)
class Page:
    url: str
    date: str
    title: str
    sentence: str

    def html(self) -> bytes:
        return (
            f"<!doctype html><html><head><title>{self.title}</title></head>"
            f"<body><h1>{self.title}</h1><p>{self.sentence}</p></body></html>"
        ).encode()


PAGES = (
    Page(
        "http://harbour.example/",
        "2024-03-01T10:00:00Z",
        "Harbour Lights",
        "Eleven herons stood on the breakwater at dawn.",
    ),
    Page(
        "http://harbour.example/tides",
        "2024-03-01T10:00:05Z",
        "Tide Tables",
        "Low water comes at four minutes past the hour of the owl.",
    ),
    Page(
        "http://harbour.example/ferries",
        "2024-03-01T10:00:10Z",
        "Ferry Crossings",
        "The blue ferry leaves when the bell has rung twice.",
    ),
)

# What the viewer shows now: the text of each entry of its list of pages, and the address and
# text of each frame, found through every shadow root and frame (all of one origin).
SNAPSHOT = """
(() => {
  const seen = {entries: [], frames: []};
  const visit = (root) => {
    for (const element of root.querySelectorAll("*")) {
      if (element.localName === "wr-page-entry") {
        seen.entries.push((element.shadowRoot || element).textContent.replace(/\\s+/g, " "));
      }
      if (element.shadowRoot) visit(element.shadowRoot);
      if (element.localName === "iframe" && element.contentDocument) {
        const frame = element.contentDocument;
        seen.frames.push({src: element.src, text: frame.body ? frame.body.innerText : ""});
        visit(frame);
      }
    }
  };
  visit(document);
  return seen;
})()
"""


def write_pages(path: Path) -> Path:
    """A WARC file of the pages' responses, written by warcio."""
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        for page in PAGES:
            body = page.html()
            headers = StatusAndHeaders(
                "200 OK",
                [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))],
                protocol="HTTP/1.1",
            )
            record = writer.create_warc_record(
                page.url,
                "response",
                payload=io.BytesIO(body),
                http_headers=headers,
                warc_headers_dict={"WARC-Date": page.date},
            )
            writer.write_record(record)
    return path


async def shown(tab: Tab, what: str, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Poll the viewer's DOM until `check(snapshot)` holds; the snapshot that satisfied it."""
    last: dict[str, Any] = {}

    async def satisfied() -> bool:
        nonlocal last
        last = await tab.evaluate(SNAPSHOT)
        return check(last)

    await eventually(
        satisfied, what, VIEW_TIMEOUT, interval=POLL, details=lambda: f"the viewer showed {last}"
    )
    return last


def replays(frame: dict[str, str], base: str, page: Page) -> bool:
    """Whether a frame is the viewer's replay of `page` (served by its service worker, under
    `/replay/w/`, from the package) and shows the page's sentence."""
    src = frame["src"]
    return (
        src.startswith(f"{base}/replay/w/")
        and src.endswith(f"mp_/{page.url}")
        and page.sentence in frame["text"]
    )


async def test_replayweb_lists_and_replays_the_exported_pages(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    warc = write_pages(tmp_path / "harbour.warc.gz")
    done = dlweb("import", "-c", str(cluster.config_path), str(warc))
    assert done.returncode == 0, done.stderr
    wacz = tmp_path / "site.wacz"
    done = dlweb("export", "-c", str(cluster.config_path), "--out", str(wacz))
    assert done.returncode == 0, done.stderr
    assert f"{len(PAGES)} pages listed" in done.stdout, done.stdout

    with serving(wacz) as viewer:
        async with Browser(DIRECT) as browser:
            tab = await browser.open(viewer.pages)
            listed = await shown(
                tab,
                "ReplayWeb.page to list every page of the package",
                lambda seen: all(
                    any(page.title in entry and page.url in entry for entry in seen["entries"])
                    for page in PAGES
                ),
            )
            assert len(listed["entries"]) == len(PAGES), listed["entries"]

            tides = PAGES[1]
            tab = await browser.open(viewer.replay(tides.url))
            replayed = await shown(
                tab,
                f"ReplayWeb.page to replay {tides.url} with its text",
                lambda seen: any(replays(frame, viewer.base, tides) for frame in seen["frames"]),
            )
            texts = " ".join(frame["text"] for frame in replayed["frames"])
            assert not any(page.sentence in texts for page in PAGES if page != tides), texts
