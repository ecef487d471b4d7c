"""Record mode: a client that turns recording on browses the live site through the proxy and every
response it gets is archived (the POST under its body's key) and marked; once the site is gone,
another client replays the page to the pixel. A client that browsed the live web without
recording stored nothing, and recording needs the operator's leave."""

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from archive.requestkey import lookup_url
from deploy.testing.cluster import Cluster
from tests.browser import browse, png_pixels, screenshot
from tests.scripted_site import QUERY, READY_TITLE, STATIC_IMAGE, ScriptedSite, post_body
from tests.source_relay import SourceRelay

from .conftest import Proxy, post_set, put_setting, setting_of

RECORDER, BYSTANDER = "127.0.0.2", "127.0.0.3"
WINDOW = (800, 600)


@pytest.fixture
async def client() -> AsyncIterator[Callable[[str], aiohttp.ClientSession]]:
    made: list[aiohttp.ClientSession] = []

    def make(source: str) -> aiohttp.ClientSession:
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(source, 0)))
        made.append(session)
        return session

    yield make
    for session in made:
        await session.close()


async def captures_of(session: aiohttp.ClientSession, proxy: Proxy, url: str) -> list[Any]:
    async with session.get("http://api.dlweb/captures", params={"url": url}, proxy=proxy.url) as r:
        answer = json.loads(await r.read())
    return list(answer.get("captures", []))


async def test_a_recording_client_archives_what_it_browses_and_another_replays_it(
    cluster_factory: Callable[..., Cluster],
    proxy_factory: Callable[..., Proxy],
    client: Callable[[str], aiohttp.ClientSession],
    tmp_path: Path,
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    # The test site is on loopback: an intranet the operator lets the live web reach.
    proxy = proxy_factory(cluster, "--allow-live", "--live-network", "127.0.0.0/8")
    recorder, bystander = client(RECORDER), client(BYSTANDER)
    assert put_setting(proxy, RECORDER, record=True)[0] == 200
    assert put_setting(proxy, BYSTANDER, live=True)[0] == 200
    target = ("127.0.0.1", proxy.port)
    with ScriptedSite() as site, SourceRelay(target, RECORDER) as relay:
        live = screenshot("direct://", tmp_path / "live", site.base + "/", tmp_path / "live.png")
        before = len(site.received)
        dom = browse(relay.url, tmp_path / "recording", site.base + "/", "--dump-dom")
        assert f"<title>{READY_TITLE}</title>" in dom
        async with recorder.get(site.base + "/config.json?ts=1", proxy=proxy.url) as r:
            assert r.status == 200 and r.headers["X-Dlweb-Recorded"].startswith("20")
        # Live without recording: the page comes, nothing is kept.
        async with bystander.get(site.base + "/static.html", proxy=proxy.url) as r:
            assert r.status == 200 and "X-Dlweb-Recorded" not in r.headers
            assert r.headers["X-Dlweb-Live"]
        posted = [r.body for r in site.received[before:] if r.method == "POST"]
        assert posted == [post_body(QUERY)]

    # The site is gone. The recorder turns recording off and replays; a third client too.
    assert put_setting(proxy, RECORDER, record=False)[0] == 200
    with SourceRelay(target, RECORDER) as relay:
        dom = browse(relay.url, tmp_path / "replaying", site.base + "/", "--dump-dom")
    assert f"<title>{READY_TITLE}</title>" in dom
    replayed = png_pixels(
        screenshot(proxy.url, tmp_path / "other", site.base + "/", tmp_path / "replay.png")
    )
    differences = replayed.differences(png_pixels(live))
    assert not differences, f"{len(differences)} pixels differ, the first at {differences[0]}"

    key = lookup_url("POST", site.base + "/api/items", "application/json", post_body(QUERY))
    assert len(await captures_of(recorder, proxy, key)) == 1
    assert await captures_of(recorder, proxy, site.base + "/static.html") == []
    assert await captures_of(recorder, proxy, site.base + STATIC_IMAGE.path) == []


async def test_recording_needs_the_operator_s_leave(
    cluster_factory: Callable[..., Cluster],
    proxy_factory: Callable[..., Proxy],
    client: Callable[[str], aiohttp.ClientSession],
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    proxy = proxy_factory(cluster)
    session = client(RECORDER)
    assert put_setting(proxy, RECORDER, record=True)[0] == 403
    assert post_set(proxy, RECORDER, record="on")[0] == 403
    async with session.get("http://date.dlweb/set?record=on", proxy=proxy.url) as r:
        assert r.status == 403
    assert setting_of(proxy, RECORDER)["record"] is False
