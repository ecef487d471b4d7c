"""The client's consent to a change of its harbor settings, in headless Chromium through the real
proxy where the operator allows the live web: an archived page's images, auto-submitted forms
and fetches to the date and api harbors change nothing (the date, the banner, the live web,
recording), guessed tokens, another client's and a leaked link's included; the date page's forms,
a harbor's links and a printed link confirmed with one click do."""

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from archive.timestamps import parse_time
from deploy.testing.cluster import Cluster
from harbors.calendar import set_link
from harbors.consent import Consent
from tests.accessibility import Browser
from tests.browser import chromium
from tests.master.conftest import module_cluster_factory  # noqa: F401  (a fixture)
from tests.proxy.conftest import (
    Proxy,
    Version,
    archive,
    header_block,
    setting_of,
    start_proxy,
)
from tests.security.harbor_setting import BASELINE, HELD, HTML, reset, setting

ATTACKER = "http://attacker.test"
ASKED = {"at": "2001", "live": "on", "record": "on", "banner": "on", "back": ATTACKER + "/"}
# What every attack asks for, in a query string.
QUERY = "&".join(f"{name}={quote(value, safe='')}" for name, value in ASKED.items())
# Each fetch a page's script may try; what it got is written in the page's title.
FETCHES = """
<script>
const got = [];
async function attempt(name, run) {
  try { got.push(name + ":" + await run()); } catch (error) { got.push(name + ":blocked"); }
}
(async () => {
  await attempt("set", () => fetch("http://date.dlweb/set?%(query)s", {method: "POST",
    mode: "no-cors", body: new URLSearchParams({%(fields)s, token: "guessed"})})
    .then((r) => r.type));
  await attempt("api-post", () => fetch("http://api.dlweb/date", {method: "POST",
    mode: "no-cors", headers: {"Content-Type": "text/plain"},
    body: JSON.stringify({date: "2001", live: true, record: true, banner: true})})
    .then((r) => r.type));
  await attempt("api-put", () => fetch("http://api.dlweb/date", {method: "PUT",
    headers: {"Content-Type": "application/json", "X-Dlweb-Token": "guessed"},
    body: JSON.stringify({date: "2001", live: true})}).then((r) => r.status));
  await attempt("read", () => fetch("http://api.dlweb/date").then((r) => r.json())
    .then((setting) => setting.token));
  document.title = got.join(" ");
})();
</script>
"""


def _form(token: str) -> str:
    """A form that posts itself, what it asks in its address and in its fields."""
    fields = "".join(
        f'<input name="{name}" value="{value}">'
        for name, value in {**ASKED, "token": token}.items()
    )
    return (
        f'<form method="post" action="http://date.dlweb/set?{QUERY}">{fields}</form>'
        "<script>document.forms[0].submit();</script>"
    )


def _attacks(consent: Consent, other_token: str) -> dict[str, str]:
    """The body of each attacking page: what it asks of the harbors for the client loading it."""
    at = parse_time("2019")
    leaked = set_link(consent, "127.0.0.1", at, HELD)  # as the banner of HELD holds it
    for_other = set_link(consent, "127.0.0.2", at, HELD)
    images = [
        f"http://date.dlweb/set?{QUERY}",
        "http://date.dlweb/set?live=on",
        "http://date.dlweb/set?record=on",
        "http://date.dlweb/set?banner=on",
        for_other,
        f"{leaked}&live=on&record=on&banner=on",
    ]
    fields = ", ".join(f"{name}: {json.dumps(value)}" for name, value in ASKED.items())
    return {
        "/images.html": "".join(f'<img src="{src.replace("&", "&amp;")}">' for src in images),
        "/form.html": _form("guessed"),
        "/other-client.html": _form(other_token),
        "/fetches.html": FETCHES % {"query": QUERY, "fields": fields},
    }


@pytest.fixture(scope="module")
def harbor(
    module_cluster_factory: Callable[..., Cluster],  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Proxy]:
    """A proxy that allows the live web, on a cluster holding a page and the attacking pages,
    these written for the token another client (127.0.0.2) has."""
    cluster = module_cluster_factory(nodes=1, replicas=1)
    folder = tmp_path_factory.mktemp("consent")
    proxy = start_proxy(cluster, folder / "proxy", folder / "proxy.log", "--allow-live")
    other = setting_of(proxy, "127.0.0.2")["token"]
    versions = [
        Version(HELD, "2021-06-15T10:00:00Z", 200, header_block(200, "OK", HTML), b"<p>held</p>")
    ]
    for path, body in _attacks(Consent(cluster.config.secret), other).items():
        page = f"<!doctype html><html><head><title>attack</title></head><body>{body}</body></html>"
        versions.append(
            Version(
                ATTACKER + path,
                "2021-01-01T00:00:00Z",
                200,
                header_block(200, "OK", HTML),
                page.encode(),
            )
        )
    asyncio.run(archive(cluster, versions))
    yield proxy
    proxy.stop()


@pytest.fixture
def proxy(harbor: Proxy) -> Proxy:
    """The proxy, with the setting of its client at 127.0.0.1 (Chromium's) at the baseline."""
    return reset(harbor)


@pytest.mark.parametrize("page", ["/images.html", "/form.html", "/other-client.html"])
def test_an_archived_page_cannot_change_the_clients_setting(
    proxy: Proxy, tmp_path: Path, page: str
) -> None:
    dom = chromium(proxy.url, tmp_path / "profile", ATTACKER + page, "--dump-dom")
    if page != "/images.html":  # the form was sent: the date harbor asks the client instead
        assert "Confirm the change" in dom
    assert setting(proxy) == BASELINE


def test_an_archived_pages_fetches_change_nothing_and_cannot_read_the_token(
    proxy: Proxy, tmp_path: Path
) -> None:
    dom = chromium(proxy.url, tmp_path / "profile", ATTACKER + "/fetches.html", "--dump-dom")
    title = dom.split("<title>")[1].split("</title>")[0]
    assert title == "set:opaque api-post:opaque api-put:blocked read:blocked"
    assert setting(proxy) == BASELINE


async def test_the_date_pages_form_posts_the_clients_token_and_sets_the_date(
    proxy: Proxy,
) -> None:
    async with Browser(proxy.url) as browser:
        tab = await browser.open(f"http://date.dlweb/?back={quote(HELD, safe='')}")
        assert await tab.evaluate(
            """Array.from(document.forms).filter((f) => f.getAttribute("action") === "/set")
               .every((f) => f.method === "post" && f.elements.token.value.length === 22)"""
        )
        await tab.follow(
            """(() => {
              const typed = Array.from(document.querySelectorAll('input[name="at"]'))
                .find((input) => input.type === "text");
              typed.value = "2019-05-01";
              typed.form.querySelector("button").click();
            })()"""
        )
        assert await tab.evaluate("location.href") == HELD
    assert setting(proxy) == {**BASELINE, "date": "2019-05-01T00:00:00Z"}


async def test_a_harbor_link_with_its_token_sets_the_date_with_one_click(proxy: Proxy) -> None:
    async with Browser(proxy.url) as browser:
        tab = await browser.open(f"http://captures.dlweb/?url={quote(HELD, safe='')}")
        day = 'document.querySelector("table.calendar td[data-day] a")'
        assert "&token=" in await tab.evaluate(f"{day}.href")
        await tab.follow(f"{day}.click()")
        assert await tab.evaluate("location.href") == HELD
    assert setting(proxy) == {**BASELINE, "date": "2021-06-15T10:00:00Z"}


async def test_a_printed_link_asks_first_and_one_click_sets_the_date(proxy: Proxy) -> None:
    async with Browser(proxy.url) as browser:
        tab = await browser.open(f"http://date.dlweb/set?at=2019&back={quote(HELD, safe='')}")
        asked = await tab.evaluate('document.querySelector("section.confirm").textContent')
        assert f"Browse at 2019-01-01T00:00:00Z and open {HELD}?" in asked
        assert setting(proxy) == BASELINE
        await tab.follow('document.querySelector("section.confirm button").click()')
        assert await tab.evaluate("location.href") == HELD
    assert setting(proxy) == {**BASELINE, "date": "2019-01-01T00:00:00Z"}
