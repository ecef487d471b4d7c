"""The scripted site's pages for crawler tests, and its record of when it handled requests, checked
without a browser: what the feed's JSON says, what the images are, and what `max_in_flight()` and
`gaps()` measure."""

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import pytest

from tests.browser import png_pixels
from tests.scripted_site import (
    FEED,
    FEED_API_PATHS,
    FEED_IMAGE_PATHS,
    FEED_PATH,
    FEED_SCRIPT_PATH,
    IMAGE_SIZE,
    LAZY_ITEMS,
    LAZY_PATHS,
    STATIC_IMAGE,
    ScriptedSite,
    feed_load_paths,
)

DELAY = 0.3  # how long the site holds each request in the tests of overlap


def get(url: str, method: str = "GET") -> tuple[int, str, bytes]:
    """The status, the Content-Type and the body answered, faults included."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as got:
            return got.status, got.headers.get("Content-Type", ""), got.read()
    except urllib.error.HTTPError as fault:
        return fault.code, fault.headers.get("Content-Type", ""), fault.read()


@pytest.fixture(scope="module")
def site() -> Iterator[ScriptedSite]:
    with ScriptedSite() as site:
        yield site


def feed_page(site: ScriptedSite, path: str) -> dict[str, object]:
    """A page of the feed, which must be answered 200, as JSON."""
    status, kind, body = get(site.base + path)
    assert (status, kind) == (200, "application/json"), (path, status, kind)
    page: dict[str, object] = json.loads(body)
    return page


def test_the_feed_has_three_pages_each_naming_its_image_and_the_last_no_next_page(
    site: ScriptedSite,
) -> None:
    for number, path in enumerate(FEED_API_PATHS, start=1):
        page = feed_page(site, path)
        assert sorted(page) == ["entries", "image", "next", "page"], page
        assert page["page"] == number
        assert page["next"] == (number + 1 if number < 3 else None), page
        assert page["image"] == {
            "src": f"/feed/{number}.png",
            "caption": FEED[number - 1].image.caption,
        }
        entries = page["entries"]
        assert isinstance(entries, list) and entries, page
        assert all(isinstance(entry, str) and entry for entry in entries), entries
    # Following `next` from the first page, as the page's script does, reads the three and stops.
    read: list[object] = []
    following: object = 1
    while following is not None:
        page = feed_page(site, f"/api/feed?page={following}")
        read.append(page["page"])
        following = page["next"]
    assert read == [1, 2, 3]


def test_lazy_feed_and_static_images_are_pngs_of_their_own_colour(site: ScriptedSite) -> None:
    assert len(LAZY_PATHS) == 4 and len(FEED_IMAGE_PATHS) == 3
    items = (*LAZY_ITEMS, *(page.image for page in FEED), STATIC_IMAGE)
    assert len({item.rgb for item in items}) == len(items), "two images share a colour"
    for item in items:
        status, kind, body = get(site.base + item.path)
        assert (status, kind) == (200, "image/png"), item.path
        pixels = png_pixels(body)
        assert (pixels.width, pixels.height) == IMAGE_SIZE, item.path
        assert pixels.rgb(0, 0) == pixels.rgb(IMAGE_SIZE[0] - 1, IMAGE_SIZE[1] - 1) == item.rgb


def test_the_feed_page_is_built_by_its_script_and_the_static_pages_have_none(
    site: ScriptedSite,
) -> None:
    status, kind, feed = get(site.base + FEED_PATH)
    assert (status, kind) == (200, "text/html; charset=utf-8")
    assert b"<body></body>" in feed and f'src="{FEED_SCRIPT_PATH}"'.encode() in feed
    status, kind, script = get(site.base + FEED_SCRIPT_PATH)
    assert (status, kind) == (200, "application/javascript")
    for path in (*LAZY_PATHS, "/api/feed?page="):
        assert path.encode() in script, path
    status, kind, static = get(site.base + "/static.html")
    assert (status, kind) == (200, "text/html; charset=utf-8")
    assert b"<script" not in static and static.count(b"<p>") >= 3
    assert b'href="/static2.html"' in static and f'src="{STATIC_IMAGE.path}"'.encode() in static
    status, _, second = get(site.base + "/static2.html")
    assert status == 200 and b"<script" not in second and b"<p>" in second


def test_every_path_of_a_full_feed_load_is_served_and_others_are_not_found() -> None:
    paths = feed_load_paths()
    assert len(set(paths)) == len(paths) == 2 + 3 + 3 + 4, paths
    with ScriptedSite() as site:
        for path in paths:
            assert get(site.base + path)[0] == 200, path
        asked = [r.path + ("?" + r.query if r.query else "") for r in site.received]
        assert asked == list(paths)
        for path in (
            "/nowhere",
            "/lazy/5.png",
            "/feed/4.png",
            "/api/feed",
            "/api/feed?page=0",
            "/api/feed?page=4",
            "/api/feed?page=one",
            "/static3.html",
        ):
            assert get(site.base + path)[0] == 404, path
        assert get(site.base + FEED_PATH, method="POST")[0] == 404


def test_requests_made_at_once_overlap_when_the_site_holds_them() -> None:
    with ScriptedSite(delay=DELAY) as site, ThreadPoolExecutor(2) as pool:
        statuses = list(pool.map(lambda path: get(site.base + path)[0], LAZY_PATHS[:2]))
        assert statuses == [200, 200]
        assert site.max_in_flight() == 2
        first, second = sorted(site.handled, key=lambda handled: handled.started)
        assert second.started < first.ended
        assert all(h.ended - h.started >= DELAY for h in (first, second))
        # Each request came on a connection of its own, from loopback.
        assert first.peer[0] == second.peer[0] == "127.0.0.1"
        assert first.peer[1] != second.peer[1]
        [gap] = site.gaps()
        assert gap == pytest.approx(second.started - first.ended) and gap < 0


def test_requests_made_one_after_another_never_overlap_and_their_pauses_are_measured() -> None:
    pause = 0.2
    with ScriptedSite(delay=DELAY) as site:
        for path in LAZY_PATHS[:3]:
            assert get(site.base + path)[0] == 200, path
            time.sleep(pause)
        assert site.max_in_flight() == 1
        assert [h.path for h in site.handled] == list(LAZY_PATHS[:3])
        gaps = site.gaps()
        assert len(gaps) == 2
        assert all(pause <= gap < pause + 1.0 for gap in gaps), gaps
        assert gaps == [later.started - earlier.ended for earlier, later in pairwise(site.handled)]
