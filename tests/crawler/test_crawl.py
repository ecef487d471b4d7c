"""`dlweb crawl` against the local test web, into a real cluster: exhaustive, polite, bounded."""

import asyncio
import gzip
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from archive.cluster import ClusterClient
from archive.config import ClusterConfig
from archive.header_block import parse_header_block
from archive.structure import RecordKind
from deploy.testing.cluster import Cluster
from tests.crawler.conftest import Crawl, resolving, run_crawler
from tests.crawler.sites import (
    ALPHA,
    ALPHA_CSS,
    BETA,
    EXPECTED_ALPHA,
    GAMMA,
    TRAPS,
    Sites,
    expected_urls,
    serve_sites,
)

# Short limits so the slow and endless resources of the test web cost seconds, not minutes.
QUICK = ("--delay", "0", "--timeout", "2", "--max-size", "200000", "--retry-delay", "0.5")


def start(sites: Sites) -> str:
    return sites.url(ALPHA, "/")


async def capture_kinds(config: ClusterConfig, urls: set[str]) -> dict[str, list[str]]:
    """Every capture of each URL, by kind, as the archive answers."""
    async with ClusterClient(config) as client:
        found = {}
        for url in sorted(urls):
            found[url] = [RecordKind(c.kind).name for c in await client.captures(url)]
        return found


@dataclass
class AlphaCrawl:
    """One crawl of the test web from alpha, and what the test web saw of it."""

    cluster: Cluster
    done: Crawl
    sites: Sites
    log: list[dict[str, Any]]  # the test web's requests, as the crawl ended
    stats: dict[str, dict[str, int]]  # its connections and requests by address, as it ended

    def requested(self) -> Counter[tuple[str, str]]:
        return Counter((entry["host"].split(":")[0], entry["path"]) for entry in self.log)


@pytest.fixture(scope="module")
def alpha_crawl(
    module_cluster_factory: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AlphaCrawl]:
    """The crawl the module's tests read: the archive, the report, and the test web's log and
    figures taken when it ended (a test's own requests come after)."""
    folder = tmp_path_factory.mktemp("alpha")
    with serve_sites(folder) as sites:
        cluster = module_cluster_factory(nodes=2, replicas=1)
        report, work = folder / "report.json", folder / "work"
        done = run_crawler(cluster, report, work, *resolving(sites), *QUICK, start(sites))
        yield AlphaCrawl(cluster, done, sites, sites.log(), sites.stats())


def test_every_page_and_requisite_is_fetched_and_stored(alpha_crawl):
    cluster, done, sites = alpha_crawl.cluster, alpha_crawl.done, alpha_crawl.sites
    asked = alpha_crawl.requested()
    missing = EXPECTED_ALPHA["fetched"] - set(asked)
    assert not missing, f"never requested: {sorted(missing)}\n{done.output}"
    # Every URL answered with a response is in the archive (bad ones: at least asked for).
    stored = expected_urls("fetched", sites.port) - expected_urls("bad", sites.port)
    kinds = asyncio.run(capture_kinds(cluster.config, stored))
    assert all(kinds[url] == ["RESPONSE"] for url in stored), {
        url: k for url, k in kinds.items() if k != ["RESPONSE"]
    }
    report = done.report
    assert report["pages"] >= len(EXPECTED_ALPHA["pages"])
    assert report["new_contents"] > 0 and report["uploaded"] > 0


async def stored(config: ClusterConfig, address: str) -> tuple[str | None, bytes]:
    """The Content-Encoding and the stored payload of a URL's capture."""
    async with ClusterClient(config) as client:
        (capture,) = await client.captures(address)
        header = parse_header_block(await client.get_content(capture.header))
        return header.get("Content-Encoding"), await client.get_content(capture.content)


def test_compression_is_asked_for_and_what_is_sent_is_stored_as_sent(alpha_crawl):
    cluster, sites = alpha_crawl.cluster, alpha_crawl.sites
    assert {entry["accept_encoding"] for entry in alpha_crawl.log} == {"gzip"}  # plain HTTP: no br
    home, style = sites.url(ALPHA, "/"), sites.url(ALPHA, "/css/main.css")
    coding, payload = asyncio.run(stored(cluster.config, home))
    assert coding == "gzip" and gzip.decompress(payload) == sites.get(ALPHA, "/").body
    coding, payload = asyncio.run(stored(cluster.config, style))
    assert coding == "gzip" and gzip.decompress(payload) == ALPHA_CSS
    png, _ = asyncio.run(stored(cluster.config, sites.url(ALPHA, "/img/home.png")))
    assert png is None  # an image is not compressed: sent and stored as it is
    # What the compressed pages and styles link to was read out of them and fetched.
    asked = alpha_crawl.requested()
    assert (ALPHA, "/level1/a.html") in asked and (ALPHA, "/css/theme.css") in asked


def test_requisite_on_another_host_fetched_and_external_page_reported_not_followed(alpha_crawl):
    done, sites = alpha_crawl.done, alpha_crawl.sites
    hosts = {host for host, _ in alpha_crawl.requested()}
    assert BETA in hosts
    assert GAMMA not in hosts
    external = {link["url"] for link in done.report["external_links"]}
    assert expected_urls("external", sites.port) <= external


def test_robots_exclusions_honoured(alpha_crawl):
    done = alpha_crawl.done
    asked = alpha_crawl.requested()
    assert not EXPECTED_ALPHA["never"] & set(asked)
    assert done.report["robots_excluded"] >= 1
    assert asked[(ALPHA, "/robots.txt")] == 1


def test_traps_stay_bounded(alpha_crawl):
    done = alpha_crawl.done
    asked = alpha_crawl.requested()
    for prefix in TRAPS:
        count = sum(
            n for (host, path), n in asked.items() if host == ALPHA and path.startswith(prefix)
        )
        assert 1 <= count <= 40, (prefix, count)
    assert done.report["traps"] >= 1


def test_one_request_at_a_time_per_server_and_each_url_once(alpha_crawl):
    done, sites = alpha_crawl.done, alpha_crawl.sites
    stats = alpha_crawl.stats
    assert all(address["max_in_flight"] <= 1 for address in stats.values()), stats
    # Each URL once, but the page that timed out: tried again twice later in the crawl.
    again = {place: n for place, n in alpha_crawl.requested().items() if n > 1}
    assert again == {(ALPHA, "/slow.html"): 3}
    (given_up,) = done.report["retries"]["given_up"]
    assert (
        given_up["url"] == sites.url(ALPHA, "/slow.html")
        and "nothing received" in given_up["reason"]
    )
    # Connections are kept alive: far fewer connections than requests to alpha.
    alpha = stats[sites.hosts[ALPHA]]
    assert alpha["connections"] * 4 < alpha["requests"], alpha


def test_bad_resources_are_logged_with_their_reason_and_the_crawl_goes_on(alpha_crawl):
    done = alpha_crawl.done
    errors = done.report["errors"]
    for kind in ("timeout", "too-large", "broken-redirect", "redirect-loop", "malformed"):
        assert errors.get(kind, 0) >= 1, (kind, errors, done.output)
    assert done.report["feeds"], done.report


def test_text_statistics_keywords_and_chunk_signatures(cluster_factory, crawl, sites):
    cluster = cluster_factory(nodes=1, replicas=1)
    done = crawl(cluster, *QUICK, "--depth", "1", "--keywords", "alpha,level", start(sites))
    text = done.report["text"]
    assert text["words"] > 0 and text["documents"] > 0
    assert text["keywords"].get("alpha", 0) > 0
    chunks = Path(done.report["chunk_file"]).read_bytes()
    assert text["chunks"] > 0 and len(chunks) == 8 * text["chunks"]


def test_recrawl_with_signatures_uploads_only_what_changed(cluster_factory, crawl, sites, tmp_path):
    cluster = cluster_factory(nodes=2, replicas=1)
    work = tmp_path / "work"
    first = crawl(cluster, *QUICK, "--work", str(work), start(sites)).report
    sites.change(ALPHA)
    sites.reset()
    second = crawl(
        cluster, *QUICK, "--work", str(work), "--previous", first["signature_file"], start(sites)
    ).report
    log = sites.log()
    conditional = [e for e in log if e["if_none_match"] or e["if_modified_since"]]
    assert len(conditional) >= len(EXPECTED_ALPHA["pages"])
    answered_304 = sum(1 for e in log if e["status"] == 304)
    assert second["not_modified"] == answered_304 > 0
    changed = {
        (ALPHA, p) for p in ("/level1/a.html", "/level1/level2/level3/c.html", "/img/level2.png")
    }
    changed_fetched = sum(
        1 for e in log if (e["host"].split(":")[0], e["path"]) in changed and e["status"] == 200
    )
    assert changed_fetched == 3
    # Only the changed contents are new; besides them, only the header blocks of the answers
    # that were not 304 (each has its own Date) are uploaded.
    assert second["new_contents"] == len(changed)
    # Where it changed: a.html at level 1, c.html at level 3; nothing with the start page.
    levels = second["levels"]
    assert levels["0"]["new_contents"] == 0 and levels["0"]["known_contents"] > 0
    assert levels["1"]["new_contents"] >= 1 and levels["3"]["new_contents"] >= 1
    not_304 = sum(1 for e in log if e["status"] != 304)
    assert second["uploaded"] <= len(changed) + not_304
    assert second["uploaded"] < first["uploaded"] / 2
    # Structure files are kept on both nodes; after an append the master refreshes the other
    # copy, and a read until then may be answered by it.
    cluster.wait_settled()
    kinds = asyncio.run(
        capture_kinds(
            cluster.config,
            {sites.url(ALPHA, "/level1/level2/b.html"), sites.url(ALPHA, "/level1/a.html")},
        )
    )
    assert kinds[sites.url(ALPHA, "/level1/level2/b.html")] == ["RESPONSE", "NOT_MODIFIED"], (
        kinds,
        second["errors"],
    )
    assert kinds[sites.url(ALPHA, "/level1/a.html")] == ["RESPONSE", "RESPONSE"], kinds


def test_temporisation_is_spent_as_pauses_between_bursts(cluster_factory, crawl, sites):
    cluster = cluster_factory(nodes=1, replicas=1)
    crawl(
        cluster, "--delay", "0.1", "--burst", "0.5", "--timeout", "2", "--depth", "1", start(sites)
    )
    times = sorted(e["time"] for e in sites.log() if e["address"] == sites.hosts[ALPHA])
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    pauses = [gap for gap in gaps if gap >= 0.4]
    quick = [gap for gap in gaps if gap < 0.1]
    # Owed 0.1 s a request, paid 0.5 s at a time: about one pause every 5 requests.
    assert pauses and len(pauses) <= len(gaps) // 4 + 1, gaps
    assert len(quick) >= len(gaps) // 2, gaps
    assert sum(gaps) >= 0.1 * len(gaps) * 0.8


def test_bad_command_line_input_is_refused_clearly(cluster_factory, crawl, sites, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1, start=False)
    focus = tmp_path / "focus.yaml"
    focus.write_text("keywords: [museum]\nweights: {title: 1}\n")
    for args, message in (
        (("--resolve", "www.alpha.test", start(sites)), "is not HOST:IP"),
        (("--accept", "re:(", start(sites)), "invalid regular expression"),
        (("--previous", str(tmp_path / "none"), start(sites)), "no such file"),
        (("--quick", start(sites)), "--quick walks the previous crawl: give --previous"),
        (("--retries", "11", start(sites)), "must be a whole number from 0 to 10"),
        (("--focus", str(focus), start(sites)), "focus.yaml: line 2: focus.weights must map"),
        (("ftp://example.org/",), "start"),
    ):
        done = crawl(cluster, *args, check=False)
        assert done.returncode != 0
        assert message in done.output, done.output
        assert "Traceback" not in done.output


def test_a_quick_recrawl_asks_conditionally_and_parses_only_what_changed(
    cluster_factory, crawl, sites, tmp_path
):
    cluster = cluster_factory(nodes=1, replicas=1)
    work = str(tmp_path / "work")
    first = crawl(cluster, *QUICK, "--work", work, start(sites)).report
    sites.change(ALPHA)
    sites.reset()
    previous = first["signature_file"]
    # The previous crawl's folder: each site's latest signature file in it.
    second = crawl(
        cluster, *QUICK, "--work", work, "--previous", work, "--quick", start(sites)
    ).report
    log = sites.log()
    # Every URL of the first crawl is asked again, conditionally where its answer had an ETag
    # or a Last-Modified (robots.txt aside, read in full for its rules).
    former = [json.loads(line) for line in Path(previous).read_text().splitlines()]
    asked = {sites.url(e["host"].split(":")[0], e["path"]): e for e in log}
    assert {entry["url"] for entry in former} - asked.keys() == set()
    validated = {e["url"] for e in former if e["etag"] or e["last_modified"]}
    unconditional = [
        url
        for url, e in asked.items()
        if url in validated and not (e["if_none_match"] or e["if_modified_since"])
    ]
    assert all(url.endswith("/robots.txt") for url in unconditional), unconditional
    assert len(validated) > len(EXPECTED_ALPHA["pages"])
    # Only the two changed pages are parsed: their documents, and no archived copy, are read.
    changed = {sites.url(ALPHA, p) for p in ("/level1/a.html", "/level1/level2/level3/c.html")}
    assert {
        url for url, e in asked.items() if e["status"] == 200 and url.endswith(".html")
    } >= changed
    assert second["text"]["documents"] == len(changed)
    assert second["not_modified"] > len(EXPECTED_ALPHA["pages"])
    assert second["new_contents"] == len(changed) + 1  # and the changed image
    # Its chunk file carries the first crawl's text (the unread pages still hold it) with the
    # changed pages' own, so the next crawl and the change rate compare with the whole site.
    carried = Path(first["chunk_file"]).read_bytes()
    chunks = Path(second["chunk_file"]).read_bytes()
    assert carried and chunks.startswith(carried), (len(carried), len(chunks))
    assert len(chunks) == len(carried) + 8 * second["text"]["chunks"]
