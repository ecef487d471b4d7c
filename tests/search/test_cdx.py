"""The CDX API (`http://api.dlweb/cdx`, `dlweb cdx`) on a real cluster, compared line by line
with pywb 2.8.3's CDX server (`/<coll>/cdx` of its `wayback`) over the same WARC file; and its
filters, fields, time range, limit and orders on rows made in the test.

What is compared with pywb, and why only that: the URL key, timestamp, URL, MIME type, status
and digest of every line, in order, for every match type and every output. The digest is
compared through the payload it names: pywb gives the WARC's `sha1:` digest in base32, the
archive the SHA-256 it stores contents by (`sha256:` in base32), so each pywb digest is mapped to
the SHA-256 of the same payload first. `length`, `offset` and `filename` locate a record in
pywb's copy of the WARC file, which the archive does not keep, and `source`, `source-coll` and
`access` are pywb's collection bookkeeping: they are left out (and `collection="coll"` from
pywb's link lines, its collection's name).
"""

import base64
import hashlib
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

import harbors
from archive.cluster import ClusterClient
from archive.structure import Capture, RecordKind
from deploy.testing.cluster import Cluster
from deploy.testing.pywb import get, running_pywb
from search import cdx
from search.errors import BadCdxQuery
from tests.master.conftest import module_cluster_factory  # noqa: F401  (a fixture)

from .conftest import dlweb

COMPARED = ("urlkey", "timestamp", "url", "mime", "status", "digest")
HOME = "http://museum.cdx.test/"


@dataclass(frozen=True)
class Shot:
    url: str
    date: str
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    status: str = "200 OK"
    revisit: bool = False  # a revisit of the capture before with the same body


SHOTS = [
    Shot(HOME, "2019-03-01T10:00:00Z", b"<p>home 2019</p>"),
    Shot(HOME, "2020-02-01T10:00:00Z", b"<p>home 2019</p>", revisit=True),
    Shot(HOME, "2021-06-15T10:00:00Z", b"<p>home 2021</p>"),
    Shot(HOME + "about.html", "2019-03-01T10:00:05Z", b"<p>about</p>"),
    Shot(HOME + "about.html", "2022-01-10T09:00:00Z", b"gone", "text/plain", "404 Not Found"),
    Shot(HOME + "img/logo.png", "2019-03-01T10:00:07Z", b"\x89PNG" + bytes(32), "image/png"),
    Shot(HOME + "old", "2019-03-01T10:00:08Z", b"", "text/html", "301 Moved Permanently"),
    Shot("https://museum.cdx.test/secure", "2020-05-05T05:05:05Z", b"{}", "application/json"),
    Shot("http://shop.museum.cdx.test/cart?item=1", "2019-07-01T12:00:00Z", b"<p>cart</p>"),
    Shot("http://blog.cdx.test/2019/visit", "2019-04-02T08:30:00Z", b"<p>visit</p>"),
    Shot("http://blog.cdx.test/2019/visit", "2019-04-03T08:30:00Z", b"<p>visit, edited</p>"),
    Shot("http://other.test/", "2019-01-01T00:00:00Z", b"<p>elsewhere</p>"),
]


def _b32(digest: bytes) -> str:
    return base64.b32encode(digest).decode("ascii")


def write_warc(path: Path) -> dict[str, str]:
    """The shots as a gzipped WARC file; pywb's digest of each payload mapped to the archive's."""
    digests = {}
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for shot in SHOTS:
            sha1 = _b32(hashlib.sha1(shot.body).digest())
            digests[sha1] = "sha256:" + _b32(hashlib.sha256(shot.body).digest())
            headers = [("Content-Type", shot.content_type), ("Content-Length", str(len(shot.body)))]
            http = StatusAndHeaders(shot.status, headers, protocol="HTTP/1.1")
            if shot.revisit:
                record = writer.create_revisit_record(
                    shot.url, digest=f"sha1:{sha1}", refers_to_uri=shot.url,
                    refers_to_date="2019-03-01T10:00:00Z", http_headers=http,
                    warc_headers_dict={"WARC-Date": shot.date},
                )  # fmt: skip
            else:
                record = writer.create_warc_record(
                    shot.url, "response", payload=io.BytesIO(shot.body), length=len(shot.body),
                    http_headers=http, warc_headers_dict={"WARC-Date": shot.date},
                )  # fmt: skip
            writer.write_record(record)
    return digests


@dataclass
class _Context:
    """What the api harbor uses of the proxy for /cdx."""

    client: ClusterClient
    search_index: Path


@dataclass
class Peers:
    cluster: Cluster
    index: Path
    pywb: str  # pywb's base URL
    digests: dict[str, str]  # pywb's digest -> the archive's

    async def ours(self, query: str, index: Path | None = None) -> tuple[int, str, str]:
        """Status, content type and body of GET http://api.dlweb/cdx?query."""
        request = harbors.HarborRequest(
            "127.0.0.1", "GET", "api.dlweb", "/cdx",
            query_pairs=tuple(_pairs(query)),
        )  # fmt: skip
        async with ClusterClient(self.cluster.config) as client:
            context: Any = _Context(client, index or self.index)
            answer = await harbors.answer(context, request)
        return answer.status, answer.content_type, answer.body.decode()

    def theirs(self, query: str) -> tuple[int, str, str]:
        status, headers, body = get(self.pywb, f"/coll/cdx?{query}&allowFuzzy=0")
        return status, dict(headers)["Content-Type"], body.decode()

    def comparable(self, output: str, body: str, pywb: bool) -> list[Any]:
        """The lines of an answer reduced to the fields compared, pywb's digests mapped."""
        lines = body.splitlines()
        if output == "link":
            return [line.replace('; collection="coll"', "") for line in lines]
        if output == "text":
            return [line.split() for line in lines]
        found = []
        for line in lines:
            if output == "cdxj":
                key, stamp, rest = line.split(" ", 2)
                fields = {"urlkey": key, "timestamp": stamp, **json.loads(rest)}
            else:
                fields = json.loads(line)
            fields = {k: v for k, v in fields.items() if k in COMPARED}
            if pywb and "digest" in fields:
                fields["digest"] = self.digests[fields["digest"]]
            found.append(fields)
        return found


def _pairs(query: str) -> list[tuple[str, str]]:
    from urllib.parse import parse_qsl

    return parse_qsl(query, keep_blank_values=True)


@pytest.fixture(scope="module")
def peers(
    module_cluster_factory: Callable[..., Cluster],  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Peers]:
    """A one-node cluster with the WARC imported and the search index rebuilt, and pywb's
    `wayback` over the same WARC."""
    cluster = module_cluster_factory(nodes=1, replicas=1)
    folder = tmp_path_factory.mktemp("cdx")
    warc = folder / "shots.warc.gz"
    digests = write_warc(warc)
    config = str(cluster.config_path)
    done = dlweb("import", "-c", config, str(warc))
    assert done.returncode == 0, done.stdout + done.stderr
    index = folder / "index"
    done = dlweb("search", "rebuild", "-c", config, "--index", str(index))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "8 URLs in the URL-key index" in done.stdout, done.stdout
    pywb_dir = folder / "pywb"
    pywb_dir.mkdir()
    with running_pywb(pywb_dir, [warc]) as base:
        yield Peers(cluster, index, base, digests)


QUERIES = [
    "url=http://museum.cdx.test/",  # exact
    "url=museum.cdx.test/about.html",  # exact, without a scheme
    "url=museum.cdx.test/*",  # prefix by wildcard
    "url=http://museum.cdx.test/a&matchType=prefix",
    "url=museum.cdx.test/secure&matchType=host",  # the host's every URL, http and https
    "url=*.cdx.test",  # domain by wildcard: subdomains too
    "url=museum.cdx.test&matchType=domain",
    "url=nothing.cdx.test/",  # no capture: an empty answer
    "url=*.cdx.test&from=2019&to=201903",
    "url=*.cdx.test&from=20190301100005&to=2020",
    "url=*.cdx.test&limit=3",
    "url=*.cdx.test&sort=reverse&limit=4",
    "url=museum.cdx.test/*&closest=20200101&limit=3",
    "url=museum.cdx.test/*&closest=2019030110&sort=closest",
    "url=*.cdx.test&filter=status:30",
    "url=*.cdx.test&filter=!=status:200",
    "url=*.cdx.test&filter=~mime:text/.*&filter=!url:about",
    "url=*.cdx.test&filter=~url:.*html$",
    "url=*.cdx.test&filter=2019",  # the whole line
]
TEXT_FIELDS = "urlkey,timestamp,url,mime,status"


@pytest.mark.parametrize("output", ["cdxj", "json", "text", "link"])
async def test_answers_as_pywb_does(peers: Peers, output: str) -> None:
    for query in QUERIES:
        asked = f"{query}&output={output}"
        if output == "text":  # pywb's text lines end with its WARC fields: ask for the others
            asked += f"&fields={TEXT_FIELDS}"
        status, kind, body = await peers.ours(asked)
        their_status, their_kind, their_body = peers.theirs(asked)
        assert (status, kind) == (their_status, their_kind) == (200, cdx.OUTPUTS[output]), asked
        ours = peers.comparable(output, body, pywb=False)
        theirs = peers.comparable(output, their_body, pywb=True)
        assert ours == theirs, asked
        if "nothing" not in query:
            assert ours, asked  # every query but one finds something
    # Fields chosen, in the order asked, in JSON too.
    asked = "url=museum.cdx.test/*&output=json&fields=timestamp,status,url&limit=2"
    body = (await peers.ours(asked))[2]
    assert body == peers.theirs(asked)[2]
    assert body.splitlines()[0] == (
        '{"timestamp": "20190301100000", "status": "200", "url": "http://museum.cdx.test/"}'
    )


async def test_lines_of_the_archive(peers: Peers) -> None:
    status, kind, body = await peers.ours("url=museum.cdx.test/")
    assert (status, kind) == (200, "text/x-cdxj")
    first, revisit, last = body.splitlines()
    assert first == (
        'test,cdx,museum)/ 20190301100000 {"url": "http://museum.cdx.test/", "mime": "text/html",'
        ' "status": "200", "digest": "sha256:'
        + _b32(hashlib.sha256(b"<p>home 2019</p>").digest())
        + '"}'
    )
    assert json.loads(revisit.split(" ", 2)[2])["mime"] == "warc/revisit"
    assert last.startswith("test,cdx,museum)/ 20210615100000 ")
    # Absent fields: "-" in text, left out of JSON.
    text = (await peers.ours("url=museum.cdx.test/old&output=text&fields=url,length,status"))[2]
    assert text == "http://museum.cdx.test/old - 301\n"
    link = (await peers.ours("url=museum.cdx.test/old&output=link"))[2]
    when = "Fri, 01 Mar 2019 10:00:08 GMT"
    assert link == f'<http://museum.cdx.test/old>; rel="memento"; datetime="{when}"\n'


async def test_bad_queries_are_refused(peers: Peers, tmp_path: Path) -> None:
    for query, said in [
        ("url=museum.cdx.test/&matchType=subtree", "matchType='subtree'"),
        ("url=museum.cdx.test/&output=xml", "output='xml'"),
        ("url=museum.cdx.test/&sort=newest", "sort='newest'"),
        ("url=museum.cdx.test/&sort=closest", "sort=closest needs closest"),
        ("url=museum.cdx.test/&from=2019-01-01", "from='2019-01-01'"),
        ("url=museum.cdx.test/&to=201901011200000", "to='201901011200000'"),
        ("url=museum.cdx.test/&filter=~status:(", "bad regular expression"),
        ("url=museum.cdx.test/&limit=0", "limit='0'"),
        ("url=museum.cdx.test/&limit=ten", "limit='ten'"),
        ("url=museum.cdx.test/&fields=url,size", "no field 'size'"),
        ("url=", "give the URL"),
        ("url=ftp://museum.cdx.test/", "not http or https"),
    ]:
        status, kind, body = await peers.ours(query)
        assert status == 400 and kind == "application/json", query
        assert said in json.loads(body)["error"], (query, body)
    # Without the URL-key index, a range query says what to do; an exact one still answers.
    status, _, body = await peers.ours("url=museum.cdx.test/*", index=tmp_path)
    assert status == 503 and "dlweb search rebuild" in json.loads(body)["error"]
    status, _, body = await peers.ours("url=museum.cdx.test/&output=json", index=tmp_path)
    assert status == 200 and len(body.splitlines()) == 3


def test_the_command_line(peers: Peers) -> None:
    config = str(peers.cluster.config_path)
    done = dlweb(
        "cdx", "*.cdx.test", "--index", str(peers.index), "-c", config, "--output", "text",
        "--fields", "timestamp,status", "--filter", "!status:200", "--sort", "reverse",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # By key then time (the home page's revisit, the about page, the redirect), reversed.
    assert done.stdout == "20190301100008 301\n20220110090000 404\n20200201100000 -\n"
    done = dlweb("cdx", "museum.cdx.test/*", "--limit", "-3", "-c", config)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == "dlweb: error: limit='-3': give a whole number >= 1\n"


# -- the pure functions, on rows made here ---------------------------------------------------


def _rows() -> list[cdx.Row]:
    def capture(stamp: str, status: int, kind: RecordKind = RecordKind.RESPONSE) -> Capture:
        from archive.timestamps import parse_time

        return Capture(parse_time(stamp), "a" * 64, "b" * 64, status, kind)

    home = [
        capture("20190101000000", 200),
        capture("20190615120000", 200, RecordKind.REVISIT),
        capture("20200101000000", 404),
        capture("20200101000001", 200, RecordKind.REQUEST),  # never listed
    ]
    rows = cdx.lines_of("http://example.org/", home)
    rows += cdx.lines_of("http://example.org/a", [capture("20210301000000", 500)])
    for row in rows:
        row.mime = row.mime or ("text/html" if row.status == "200" else "text/plain")
    return sorted(rows, key=cdx.sort_key)


def _answer(query: str) -> list[str]:
    parsed = cdx.parse_query(_pairs(query))
    rows = cdx.apply_filters(parsed, cdx.clamp(parsed, _rows()))
    return cdx.render(parsed, cdx.order(parsed, rows)).splitlines()


def test_query_parameters() -> None:
    query = cdx.parse_query(_pairs("url=*.example.org&from=2019&to=202003&limit=5&reverse=true"))
    assert (query.match_type, query.key) == ("domain", "org,example)/")
    assert query.end_key == "org,example-"
    assert (query.from_ts, query.to_ts, query.limit, query.reverse) == (
        "20190101000000", "20200331235959", 5, True,
    )  # fmt: skip
    assert cdx.search_range("http://example.org/path/", "prefix") == (
        "org,example)/path/", "org,example)/path0",
    )  # fmt: skip
    assert cdx.search_range("example.org/p", "host") == ("org,example)/", "org,example*")
    assert cdx.search_range("org", "domain") == ("org,", "org-")
    with pytest.raises(BadCdxQuery, match="limit='-1'"):
        cdx.parse_query(_pairs("url=example.org&limit=-1"))


def test_filters_fields_time_range_limit_and_order() -> None:
    fields = "&output=text&fields=timestamp,status"
    assert _answer("url=example.org/*" + fields) == [
        "20190101000000 200", "20190615120000 -", "20200101000000 404", "20210301000000 500",
    ]  # fmt: skip
    # from and to: timestamp prefixes, padded down and up.
    assert _answer("url=example.org/*&from=2019061&to=2020" + fields) == [
        "20190615120000 -", "20200101000000 404",
    ]  # fmt: skip
    # filters: contains, = exact, ~ regex from the start, ! inverts, all must hold.
    assert _answer("url=x&filter=status:0" + fields) == [
        "20190101000000 200", "20200101000000 404", "20210301000000 500",
    ]  # fmt: skip
    assert _answer("url=x&filter==status:20" + fields) == []
    assert _answer("url=x&filter=~status:[45]" + fields) == [
        "20200101000000 404", "20210301000000 500",
    ]  # fmt: skip
    assert _answer("url=x&filter=~status:0" + fields) == []  # matched from its start
    assert _answer("url=x&filter=!~mimetype:text/&filter=!=s:500" + fields) == ["20190615120000 -"]
    assert _answer("url=x&filter=example)/a" + fields) == ["20210301000000 500"]  # the line
    # limit; reverse keeps the last ones, newest first; closest, nearest first.
    assert _answer("url=x&limit=2" + fields) == ["20190101000000 200", "20190615120000 -"]
    assert _answer("url=x&sort=reverse&limit=2" + fields) == [
        "20210301000000 500", "20200101000000 404",
    ]  # fmt: skip
    assert _answer("url=x&closest=20200301&sort=closest&limit=3" + fields) == [
        "20200101000000 404", "20190615120000 -", "20210301000000 500",
    ]  # fmt: skip
    assert _answer("url=x&closest=2021&limit=1" + fields) == ["20210301000000 500"]  # 2021-12-31
    # fields in the order asked; JSON leaves out those the archive has not.
    assert _answer("url=x&limit=1&output=json&fields=status,offset,urlkey") == [
        '{"status": "200", "urlkey": "org,example)/"}'
    ]
    assert _answer("url=x&limit=1&output=cdxj&fields=mime") == [
        'org,example)/ 20190101000000 {"mime": "text/html"}'
    ]
