"""The harbor pages in headless Chromium through the proxy: the status page draws each storage
node's used space and redraws it from the master without a reload, and every harbor page passes
axe-core's accessibility rules, on a laptop and a phone, with the shared style sheet."""

import asyncio
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import lxml.html
import pytest

from deploy.testing.cluster import Cluster
from deploy.testing.waits import eventually
from tests.accessibility import Browser, Tab, problems
from tests.master.conftest import module_cluster_factory  # noqa: F401  (a fixture)
from tests.search.conftest import dlweb

from .conftest import Proxy, Version, archive, header_block, start_proxy

PAGE = "http://lighthouse.test/keeper"
HTML = ("Content-Type", "text/html; charset=utf-8")


def _page(when: str, text: str) -> Version:
    body = (
        f"<!doctype html><html><head><title>Keeper</title></head><body><p>{text}</p></body></html>"
    )
    return Version(PAGE, when, 200, header_block(200, "OK", HTML), body.encode())


VERSIONS = [
    _page("2019-03-01T10:00:00Z", "The lighthouse keeper lit the lamp by hand."),
    _page("2021-06-15T10:00:00Z", "The lighthouse lamp is now lit by a timer."),
]
HARBOR_PAGES = {
    "date": "http://date.dlweb/",
    "captures": f"http://captures.dlweb/?url={quote(PAGE, safe='')}",
    "search": "http://search.dlweb/?q=lighthouse",
    "streams": "http://streams.dlweb/",
    "status": "http://status.dlweb/",
    "cert": "http://cert.dlweb/",
    "date-back": f"http://date.dlweb/?back={quote(PAGE, safe='')}",
    "date-confirm": f"http://date.dlweb/set?at=2019&banner=on&back={quote(PAGE, safe='')}",
    "captures-day": f"http://captures.dlweb/?url={quote(PAGE, safe='')}&year=2021&month=06&day=15",
    "captures-empty": f"http://captures.dlweb/?url={quote(PAGE, safe='')}&year=2015",
}
# Each node card as the page shows it: its figures (data attributes), its state, the share of
# the bar drawn (percent of the disk) and the bar's text alternative.
CARDS = """
Array.from(document.querySelectorAll("#nodes > li.node"), (li) => ({
  id: li.dataset.node, state: li.querySelector(".state").dataset.state,
  used: li.dataset.used, total: li.dataset.total, files: li.dataset.files,
  bytes: li.dataset.bytes,
  drawn: Array.from(li.querySelectorAll(".gauge > span"),
    (s) => parseFloat(s.style.width)).reduce((a, b) => a + b, 0),
  label: li.querySelector('.gauge[role="img"]').getAttribute("aria-label"),
}))
"""
FIGURES = """
Object.fromEntries(Array.from(document.querySelectorAll("[data-figure]"),
  (e) => [e.dataset.figure, e.textContent]))
"""


@pytest.fixture(scope="module")
def harbor_proxy(
    module_cluster_factory: Callable[..., Cluster],  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Proxy]:
    """A proxy on a one-node cluster holding two captures of a page, indexed for search."""
    cluster = module_cluster_factory(nodes=1, replicas=1)
    asyncio.run(archive(cluster, VERSIONS))
    folder = tmp_path_factory.mktemp("harbors")
    done = dlweb(
        "search", "rebuild", "-c", str(cluster.config_path), "--index", str(folder / "search")
    )
    assert done.returncode == 0, done.stdout + done.stderr
    proxy = start_proxy(cluster, folder / "proxy", folder / "proxy.log")
    yield proxy
    proxy.stop()


@pytest.mark.parametrize("harbor", HARBOR_PAGES)
async def test_the_harbor_page_is_accessible_on_a_laptop_and_a_phone(
    harbor_proxy: Proxy, harbor: str
) -> None:
    found = await problems(harbor_proxy.url, HARBOR_PAGES[harbor])
    assert not found, f"{HARBOR_PAGES[harbor]}:\n" + "\n".join(found)


def _expected(status: dict[str, Any]) -> list[dict[str, str]]:
    """The figures each node card should show, from the master's /status."""
    cards = []
    for node in sorted(status["nodes"], key=lambda n: str(n["id"])):
        total = node["total"]
        used = min(max(total - node["free"], 0), total)
        cards.append(
            {
                "id": node["id"],
                "state": node["state"],
                **{k: str(v) for k, v in [("used", used), ("total", total)]},
                **{k: str(node[k]) for k in ("files", "bytes")},
            }
        )
    return cards


async def _shows(tab: Tab, cluster: Cluster) -> bool:
    """Whether the page shows what the master reports now: a card per node with its state and
    space, its bar drawn to its used share of the disk and labelled, and the files below
    target."""
    cards: list[dict[str, Any]] = await tab.evaluate(CARDS)
    status = cluster.status()
    for card in cards:
        total = int(card["total"])
        assert total > 0 and abs(card["drawn"] - int(card["used"]) * 100 / total) < 0.02, card
        assert card["label"].startswith(f"{card['id']}: ") and " used of " in card["label"]
    figures = await tab.evaluate(FIGURES)
    shown = [{k: c[k] for k in ("id", "state", "used", "total", "files", "bytes")} for c in cards]
    return shown == _expected(status) and figures["below_target"] == f"{status['below_target']:,}"


async def test_the_status_page_draws_each_node_and_refreshes_without_a_reload(
    cluster_factory: Callable[..., Cluster], proxy_factory: Callable[..., Proxy]
) -> None:
    cluster = cluster_factory(nodes=2, replicas=2)
    await archive(cluster, VERSIONS[:1])
    cluster.wait_settled(contents=1)
    proxy = proxy_factory(cluster)

    # Without scripts the page is whole: a card with its bar per node, and a word to reload.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url}))
    with opener.open("http://status.dlweb/", timeout=30) as answer:
        served = lxml.html.fromstring(answer.read())
    assert len(served.xpath('//ul[@id="nodes"]/li[@class="node"]/div[@role="img"]')) == 2
    assert "Reload the page" in served.xpath("string(//noscript)")

    async with Browser(proxy.url) as browser:
        tab = await browser.open("http://status.dlweb/")
        assert [c["id"] for c in await tab.evaluate(CARDS)] == ["node1", "node2"]
        await eventually(lambda: _shows(tab, cluster), "the page to show the master's figures")
        files_before = sum(int(c["files"]) for c in await tab.evaluate(CARDS))
        await tab.evaluate("window.loadedOnce = true")

        # More files, and a node stopped: the page's script redraws both, in the same page.
        await archive(cluster, VERSIONS[1:])
        cluster.nodes["node2"].stop()

        async def redrawn() -> bool:
            cards = {c["id"]: c for c in await tab.evaluate(CARDS)}
            files = sum(int(c["files"]) for c in cards.values())
            return cards["node2"]["state"] != "alive" and files > files_before

        await eventually(redrawn, "the page to show the stopped node and the new files")
        await eventually(lambda: _shows(tab, cluster), "the page to show the master's figures")
        assert await tab.evaluate("window.loadedOnce === true"), "the page was loaded again"
