"""The consultation proxy, a real mitmproxy in its own process, used by real HTTP clients."""

import asyncio
import gzip
import hashlib
import json
import re
import ssl

import aiohttp
import brotlicffi
import pytest
from passlib.apache import HtpasswdFile

from archive.timestamps import format_http_date, parse_time
from tests.archive.warc.site import PAGES, TestSite

from .conftest import Proxy, Version, archive, header_block, post_set, put_setting, setting_of

PAGE = "http://old.example/page.html"
OLD = Version(
    PAGE,
    "2020-01-01T00:00:00Z",
    200,
    header_block(200, "OK", ("Content-Type", "text/html"), ("X-Version", "old")),
    b"<html><body>the page in 2020</body></html>",
)
NEW = Version(
    PAGE,
    "2022-01-01T00:00:00Z",
    200,
    header_block(200, "OK", ("Content-Type", "text/html"), ("X-Version", "new")),
    b"<html><body>the page in 2022</body></html>",
)
MOVED = Version(
    "http://old.example/moved",
    "2021-01-01T00:00:00Z",
    301,
    header_block(301, "Moved Permanently", ("Location", PAGE), ("Content-Type", "text/html")),
    b"moved",
)
LOST = Version(
    "http://old.example/lost.png",
    "2021-01-01T00:00:00Z",
    200,
    header_block(200, "OK", ("Content-Type", "image/png")),
    b"\x89PNG not really",
)


async def fetch(
    session: aiohttp.ClientSession, proxy: Proxy, url: str, **headers: str
) -> tuple[int, aiohttp.typedefs.LooseHeaders, bytes]:
    sent = {k.replace("_", "-"): v for k, v in headers.items()}
    async with session.get(url, proxy=proxy.url, headers=sent, allow_redirects=False) as r:
        return r.status, r.headers, await r.read()


async def test_each_date_gets_its_capture_with_memento_headers(
    cluster_factory, proxy_factory, sessions
):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [OLD, NEW, MOVED])
    proxy = proxy_factory(cluster)
    session = sessions()

    status, headers, body = await fetch(session, proxy, PAGE)
    assert (status, body, headers["X-Version"]) == (200, NEW.body, "new")  # the latest by default
    assert headers["Content-Length"] == str(len(NEW.body))
    assert headers["Memento-Datetime"] == "Sat, 01 Jan 2022 00:00:00 GMT"
    assert "accept-datetime" in headers.getall("Vary")
    links = dict(
        (rel, (uri, datetime))
        for uri, rel, datetime in re.findall(
            r'<([^>]+)>; rel="([^"]+)"(?:; type="[^"]+")?(?:; datetime="([^"]+)")?',
            headers["Link"],
        )
    )
    assert links["original"] == (PAGE, "") and links["timegate"] == (PAGE, "")
    assert links["timemap"][0].startswith("http://captures.dlweb/")
    assert links["first memento"] == (PAGE, format_http_date(parse_time(OLD.date)))
    assert links["last memento"] == (PAGE, format_http_date(parse_time(NEW.date)))
    assert links["prev memento"] == (PAGE, format_http_date(parse_time(OLD.date)))
    assert "next memento" not in links

    old_date = "Wed, 01 Jul 2020 00:00:00 GMT"
    status, headers, body = await fetch(session, proxy, PAGE, Accept_Datetime=old_date)
    assert (status, body, headers["X-Version"]) == (200, OLD.body, "old")
    assert headers["Memento-Datetime"] == "Wed, 01 Jan 2020 00:00:00 GMT"

    status, headers, _ = await fetch(session, proxy, MOVED.url)
    assert status == 301 and headers["Location"] == PAGE  # the browser then asks for PAGE

    status, _, body = await fetch(session, proxy, PAGE, Accept_Datetime="last tuesday")
    assert status == 400 and b"Accept-Datetime" in body

    # A hot page costs no lookup: with the storage node gone, it is still served, from memory.
    for node in cluster.nodes.values():
        node.stop()
    status, headers, body = await fetch(session, proxy, PAGE)
    assert (status, body) == (200, NEW.body)


async def test_two_clients_browse_at_their_own_dates(cluster_factory, proxy_factory, sessions):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [OLD, NEW])
    proxy = proxy_factory(cluster)
    first, second = sessions("127.0.0.2"), sessions("127.0.0.3")

    status, answer = put_setting(proxy, "127.0.0.2", date="2020-06-01")
    assert status == 200 and answer["date"] == "2020-06-01T00:00:00Z"
    assert (await fetch(first, proxy, PAGE))[2] == OLD.body
    assert (await fetch(second, proxy, PAGE))[2] == NEW.body
    # Accept-Datetime wins over the harbor's setting.
    newer = await fetch(first, proxy, PAGE, Accept_Datetime="Sat, 01 Jan 2022 00:00:00 GMT")
    assert newer[2] == NEW.body

    # The date harbor, as a browser uses it: a form, then back to the page.
    status, headers, _ = post_set(proxy, "127.0.0.3", at="2019", back=PAGE)
    assert status == 303 and headers["location"] == PAGE
    assert headers["link"] == '<http://mementoweb.org/terms/donotnegotiate>; rel="type"'
    assert (await fetch(second, proxy, PAGE))[2] == OLD.body  # 2020 is the closest to 2019
    async with second.get("http://date.dlweb/", proxy=proxy.url) as r:
        assert "2019-01-01T00:00:00Z" in await r.text()

    # Settings survive a restart of the proxy.
    proxy.stop()
    again = proxy_factory(cluster, data=proxy.data)
    assert (await fetch(sessions("127.0.0.2"), again, PAGE))[2] == OLD.body
    assert (await fetch(sessions("127.0.0.4"), again, PAGE))[2] == NEW.body

    status, answer = put_setting(again, "127.0.0.2", date="not a date")
    assert status == 400 and "not a date" in answer["error"]


@pytest.mark.parametrize(
    ("path", "accept", "content_type"),
    [
        ("/nowhere.html", "text/html", "text/html; charset=utf-8"),
        ("/nowhere", "text/html,application/xhtml+xml", "text/html; charset=utf-8"),
        ("/nowhere.png", "*/*", "image/svg+xml"),
        ("/nowhere", "image/avif,image/webp,*/*", "image/svg+xml"),
        ("/nowhere.js", "*/*", "application/javascript"),
        ("/nowhere.css", "text/css,*/*;q=0.1", "text/css"),
        ("/nowhere.json", "*/*", "application/json"),
        ("/nowhere.bin", "*/*", "text/plain; charset=utf-8"),
    ],
)
async def test_missing_urls_get_a_fault_of_the_expected_type(
    cluster_factory, proxy_factory, sessions, path: str, accept: str, content_type: str
):
    cluster = cluster_factory(nodes=1, replicas=1)
    proxy = proxy_factory(cluster)
    status, headers, body = await fetch(
        sessions(), proxy, f"http://old.example{path}", Accept=accept
    )
    assert status == 404 and headers["Content-Type"] == content_type
    assert b"missing from the archive" in body


async def test_content_that_cannot_be_read_is_a_500_fault(cluster_factory, proxy_factory, sessions):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [LOST])
    name = hashlib.sha256(LOST.body).hexdigest()
    node = next(iter(cluster.nodes.values()))
    token = {"Authorization": f"Bearer {cluster.config.write_token}"}
    session = sessions()
    async with session.delete(f"{node.url}/content/{name}", headers=token) as r:
        assert r.status == 200
    proxy = proxy_factory(cluster)
    status, headers, body = await fetch(session, proxy, LOST.url, Accept="image/png")
    assert status == 500 and headers["Content-Type"] == "image/svg+xml"
    assert b"missing from the archive" in body


async def test_clients_outside_the_allowed_networks_get_403(
    cluster_factory, proxy_factory, sessions
):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [NEW])
    proxy = proxy_factory(cluster, "--allow", "127.0.0.5/32")
    assert (await fetch(sessions("127.0.0.5"), proxy, PAGE))[0] == 200
    status, _, body = await fetch(sessions("127.0.0.6"), proxy, PAGE)
    assert status == 403 and b"127.0.0.6 may not use this proxy" in body
    status, _, _ = await fetch(sessions("127.0.0.6"), proxy, "http://api.dlweb/date")
    assert status == 403


async def test_live_web_is_refused_unless_the_operator_allows_it(
    cluster_factory, proxy_factory, sessions
):
    cluster = cluster_factory(nodes=1, replicas=1)
    proxy = proxy_factory(cluster)
    session = sessions()
    status, answer = put_setting(proxy, live=True)
    assert status == 403 and "does not allow the live web" in answer["error"]
    assert post_set(proxy, live="on")[0] == 403
    async with session.get("http://date.dlweb/set?live=on", proxy=proxy.url) as r:
        assert r.status == 403
    assert setting_of(proxy)["live"] is False


SECURE = Version(
    "https://secure.example/account.html",
    "2021-05-01T00:00:00Z",
    200,
    header_block(
        200, "OK", ("Content-Type", "text/html"), ("Strict-Transport-Security", "max-age=1")
    ),
    b"<html><body>archived over HTTPS</body></html>",
)


async def test_https_through_the_archive_ca(cluster_factory, proxy_factory, sessions, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [SECURE])
    proxy = proxy_factory(cluster)
    session = sessions()
    async with session.get("http://cert.dlweb/", proxy=proxy.url) as r:
        assert r.status == 200 and "dlweb-ca.pem" in await r.text()
    async with session.get("http://cert.dlweb/dlweb-ca.pem", proxy=proxy.url) as r:
        pem = await r.read()
    assert pem.startswith(b"-----BEGIN CERTIFICATE-----") and b"PRIVATE KEY" not in pem
    ca = tmp_path / "dlweb-ca.pem"
    ca.write_bytes(pem)
    trusting = ssl.create_default_context(cafile=str(ca))
    connector = aiohttp.TCPConnector(ssl=trusting, limit=1)
    async with aiohttp.ClientSession(connector=connector) as browser:
        for _ in range(3):  # one kept-alive TLS connection
            async with browser.get(SECURE.url, proxy=proxy.url) as r:
                assert r.status == 200 and await r.read() == SECURE.body
                assert r.headers["Memento-Datetime"] == "Sat, 01 May 2021 00:00:00 GMT"
        missing = await browser.get("https://secure.example/other.css", proxy=proxy.url)
        assert missing.status == 404 and missing.headers["Content-Type"] == "text/css"
    untrusting = aiohttp.TCPConnector(ssl=ssl.create_default_context())
    async with aiohttp.ClientSession(connector=untrusting) as stranger:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await stranger.get(SECURE.url, proxy=proxy.url)


async def test_captures_and_status_harbors(cluster_factory, proxy_factory, sessions):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [OLD, NEW])
    proxy = proxy_factory(cluster)
    session = sessions()
    listed = f"http://captures.dlweb/?url={PAGE}"
    async with session.get(listed + "&format=json", proxy=proxy.url) as r:
        dates = [c["date"] for c in (await r.json())["captures"]]
    assert dates == ["2020-01-01T00:00:00Z", "2022-01-01T00:00:00Z"]
    async with session.get(listed + "&format=link", proxy=proxy.url) as r:
        assert r.headers["Content-Type"] == "application/link-format"
        assert "Vary" not in r.headers
        timemap = await r.text()
    assert f'<{PAGE}>; rel="original"' in timemap
    assert f'<{PAGE}>; rel="first memento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT"' in timemap
    assert f'<{PAGE}>; rel="last memento"; datetime="Sat, 01 Jan 2022 00:00:00 GMT"' in timemap
    async with session.get(listed, proxy=proxy.url) as r:
        page = await r.text()
    assert "2020-01-01T00:00:00Z" in page and "http://date.dlweb/set?at=20200101000000" in page
    async with session.get(
        "http://captures.dlweb/?url=http://never.example/", proxy=proxy.url
    ) as r:
        assert r.status == 404

    async with session.get("http://status.dlweb/?format=json", proxy=proxy.url) as r:
        status = await r.json()
    assert [n["id"] for n in status["nodes"]] == ["node1"]
    async with session.get("http://status.dlweb/", proxy=proxy.url) as r:
        assert r.status == 200 and "node1" in await r.text()
    async with session.get("http://nowhere.dlweb/", proxy=proxy.url) as r:
        assert r.status == 404 and "date.dlweb" in await r.text()


async def test_live_mode_where_the_operator_allows_it(cluster_factory, proxy_factory, sessions):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [NEW])
    # The test site is on loopback: an intranet the operator lets the live web reach.
    proxy = proxy_factory(cluster, "--allow-live", "--live-network", "127.0.0.0/8")
    live, archived_only = sessions("127.0.0.7"), sessions("127.0.0.8")
    with TestSite() as site:
        page = site.base + "/new.html"
        assert (await fetch(live, proxy, page))[0] == 404  # live mode is off until turned on
        status, answer = put_setting(proxy, "127.0.0.7", live=True)
        assert status == 200 and answer["live"] is True
        status, headers, body = await fetch(live, proxy, page)
        assert status == 200 and body == PAGES["/new.html"].body
        assert headers["X-Dlweb-Live"] == "fetched from the live web, not archived"
        status, headers, body = await fetch(live, proxy, PAGE)  # archived: still the archive's
        assert body == NEW.body and "X-Dlweb-Live" not in headers
        assert (await fetch(archived_only, proxy, page))[0] == 404  # another client's setting


async def test_proxy_authentication(cluster_factory, proxy_factory, sessions, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [NEW])
    users = HtpasswdFile(str(tmp_path / "users.htpasswd"), new=True)
    users.set_password("researcher", "long enough secret")
    users.save()
    proxy = proxy_factory(cluster, "--auth", str(tmp_path / "users.htpasswd"))
    session = sessions()
    assert (await fetch(session, proxy, PAGE))[0] == 407
    wrong = {"Proxy-Authorization": aiohttp.encode_basic_auth("researcher", "guess")}
    async with session.get(PAGE, proxy=proxy.url, headers=wrong) as r:
        assert r.status == 407
    right = {"Proxy-Authorization": aiohttp.encode_basic_auth("researcher", "long enough secret")}
    async with session.get(PAGE, proxy=proxy.url, headers=right) as r:
        assert r.status == 200 and await r.read() == NEW.body


async def test_session_ids_do_not_hide_a_capture(cluster_factory, proxy_factory, sessions):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [NEW])
    proxy = proxy_factory(cluster)
    with_session = PAGE + ";jsessionid=0123456789ABCDEF?sid=" + "ab" * 16
    status, _, body = await fetch(sessions(), proxy, with_session)
    assert (status, body) == (200, NEW.body)


async def test_two_proxies_share_the_clients_settings(cluster_factory, proxy_factory, sessions):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [OLD, NEW])
    first = proxy_factory(cluster)
    second = proxy_factory(cluster, data=first.data)
    client = sessions("127.0.0.9")
    assert put_setting(first, "127.0.0.9", date="2020")[0] == 200

    async def second_sees_it() -> bool:
        return (await fetch(client, second, PAGE))[2] == OLD.body

    deadline = asyncio.get_running_loop().time() + 10
    while not await second_sees_it():
        assert asyncio.get_running_loop().time() < deadline, "the second proxy kept the old date"
        await asyncio.sleep(0.2)


ARTICLE = Version(
    "http://news.example/story.html",
    "2021-03-04T05:06:07Z",
    200,
    header_block(
        200, "OK", ("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "gzip")
    ),
    gzip.compress(
        b"<html><head><style>p {color: red}</style><script>var hidden = 1;</script></head>"
        b'<body><h1>Big news</h1><p>Read <a href="/more.html">more</a> and see '
        b'<img src="pic.png">.</p></body></html>',
        mtime=0,
    ),
)


async def test_the_api_reads_an_archived_document(cluster_factory, proxy_factory, sessions):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [ARTICLE, NEW])
    proxy = proxy_factory(cluster)
    session = sessions()

    async def api(path: str) -> tuple[int, dict[str, object]]:
        async with session.get(f"http://api.dlweb{path}", proxy=proxy.url) as r:
            return r.status, await r.json()

    status, capture = await api(f"/capture?url={ARTICLE.url}")
    assert status == 200 and capture["date"] == "2021-03-04T05:06:07Z"
    assert ["Content-Encoding", "gzip"] in capture["headers"]
    status, found = await api(f"/links?url={ARTICLE.url}")
    assert status == 200
    assert {(link["element"], link["url"]) for link in found["links"]} == {
        ("a", "http://news.example/more.html"),
        ("img", "http://news.example/pic.png"),
    }
    status, read = await api(f"/text?url={ARTICLE.url}")
    assert (status, read["text"]) == (200, "Big news Read more and see .")
    status, old = await api(f"/capture?url={PAGE}&at=2000")
    assert status == 200 and old["date"] == "2022-01-01T00:00:00Z" and old["prev"] is None
    assert (await api("/links?url=http://never.example/"))[0] == 404
    assert (await api(f"/text?url={ARTICLE.url}&at=yesterday"))[0] == 400
    # pywb's CDX API: an exact query needs no search index; a prefix query says it needs one.
    cdx = f"http://api.dlweb/cdx?url={ARTICLE.url}&output=json&filter=status:200"
    async with session.get(cdx, proxy=proxy.url) as r:
        lines = [json.loads(line) for line in (await r.text()).splitlines()]
    assert r.status == 200 and r.content_type == "text/x-ndjson"
    assert [(line["url"], line["timestamp"]) for line in lines] == [(ARTICLE.url, "20210304050607")]
    status, refused = await api("/cdx?url=news.example/*")
    assert status == 503 and "dlweb search rebuild" in str(refused["error"])


async def test_the_date_harbor_calendar(cluster_factory, proxy_factory, sessions):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [OLD, NEW])
    proxy = proxy_factory(cluster)
    session = sessions()
    async with session.get("http://date.dlweb/", proxy=proxy.url) as r:
        page = await r.text()
    assert 'type="date"' in page and "the latest capture" in page
    status, headers, _ = post_set(proxy, day="2020-02-03", time="04:05")
    assert status == 303 and headers["location"] == "http://date.dlweb/"
    assert setting_of(proxy)["date"] == "2020-02-03T04:05:00Z"
    assert (await fetch(session, proxy, PAGE))[2] == OLD.body
    async with session.get("http://date.dlweb/set?at=someday", proxy=proxy.url) as r:
        assert r.status == 400 and "someday" in await r.text()


STYLE = Version(
    "http://news.example/style.css",
    "2021-03-04T05:06:07Z",
    200,
    header_block(200, "OK", ("Content-Type", "text/css"), ("Content-Encoding", "br")),
    brotlicffi.compress(b"p { color: red }\n" * 20),
)


async def test_a_body_in_a_coding_the_client_does_not_take_is_sent_decoded(
    cluster_factory, proxy_factory, sessions
):
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [ARTICLE, STYLE])
    proxy = proxy_factory(cluster)
    session = sessions()
    # A browser over plain HTTP takes gzip, not Brotli: the style comes decoded, the page as
    # archived; a client that takes Brotli, or says nothing, gets the archived bytes.
    for url, accepted, coding, body in [
        (STYLE.url, "gzip, deflate", None, brotlicffi.decompress(STYLE.body)),
        (STYLE.url, "gzip, br;q=0", None, brotlicffi.decompress(STYLE.body)),
        (STYLE.url, "gzip, deflate, br", "br", STYLE.body),
        (ARTICLE.url, "gzip, deflate", "gzip", ARTICLE.body),
        (ARTICLE.url, "identity", None, gzip.decompress(ARTICLE.body)),
    ]:
        for _ in range(2):  # made once, then kept
            status, headers, got = await fetch(session, proxy, url, accept_encoding=accepted)
            assert (status, headers.get("Content-Encoding"), got) == (200, coding, body), accepted
            assert headers["Content-Length"] == str(len(body))
    async with session.get(STYLE.url, proxy=proxy.url, skip_auto_headers=["Accept-Encoding"]) as r:
        assert r.headers.get("Content-Encoding") == "br" and await r.read() == STYLE.body
