"""Steering a running campaign through the scheduler's API and `dlweb sites`: URLs injected into
the next crawls of their sites (or of sites guessed for them), the blacklist, the settings of
domains and the campaign's focus, each carried by the next orders; bad input refused with what
to change."""

import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from archive.crawl_calls import CrawlOrder, Focus, ScoredUrl
from archive.errors import DlwebError
from archive.scheduler_answers import DomainSettings
from crawler.focus_file import load_focus
from crawler.scheduler import cli
from crawler.scheduler.service import Scheduler, SchedulerOptions
from crawler.scheduler.steering import domain_politeness
from crawler.scheduler.store import SqliteStore
from deploy.testing.scheduler_api import scheduler_api
from tests.crawler.scheduler.test_api_answers import _dlweb

TOKEN = "write-token"
WRITE = {"Authorization": f"Bearer {TOKEN}"}
LATER = time.time() + 86_400
FOCUS = Focus(keywords=("museum",), update="max")

Api = tuple[TestClient[Any, Any], Scheduler]


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    """A focused scheduler on a store with one site, crawled and due tomorrow."""
    store = SqliteStore(tmp_path / "scheduler.db")
    options = SchedulerOptions(work=tmp_path, politeness={"delay": 1.0}, focus=FOCUS)
    scheduler = Scheduler(store, b"s" * 32, options)
    site = store.add_site("http://www.a.example/", "")
    store.set_state(site.id, "idle", next_crawl=LATER)
    async with scheduler_api(scheduler, TOKEN) as client:
        yield client, scheduler


async def _json(response: Any, status: int = 200) -> Any:
    assert response.status == status, await response.text()
    return await response.json()


async def _refusal(client: TestClient[Any, Any], method: str, path: str, body: Any) -> str:
    response = await client.request(method, path, json=body, headers=WRITE)
    answer = await _json(response, 400)
    return str(answer["error"])


def _order(scheduler: Scheduler, site_id: int) -> CrawlOrder:
    site = scheduler.store.site(site_id)
    assert site is not None
    return scheduler.order(site)


async def test_an_injected_url_waits_in_its_sites_next_order_brought_forward(api: Api) -> None:
    client, scheduler = api
    urls = [
        {"url": "http://www.a.example/x", "score": 0.3},
        {"url": "http://A.example/y#part", "score": 0.8, "campaign": "elections"},
        {"url": "https://new.example/news/1", "score": 0.6},
        {"url": "http://www.new.example/news/2", "score": 0.9},
    ]
    answer = await _json(await client.post("/api/urls/inject", json={"urls": urls}, headers=WRITE))
    assert answer == {
        "urls": [
            {"url": "http://www.a.example/x", "site": 1, "created": False},
            {"url": "http://a.example/y", "site": 1, "created": False},
            {"url": "https://new.example/news/1", "site": 2, "created": True},
            {"url": "http://www.new.example/news/2", "site": 2, "created": False},
        ]
    }
    a, new = scheduler.store.site(1), scheduler.store.site(2)
    assert a is not None and a.state == "queued" and a.next_crawl <= time.time()
    assert new is not None and (new.start_url, new.accept, new.source, new.state) == (
        "https://new.example/",
        "//new.example OR .new.example",
        "injected",
        "queued",
    )
    assert [site.id for site in scheduler.store.next_sites(time.time(), 5)] == [2, 1]
    assert _order(scheduler, 1).injected == (
        ScoredUrl("http://a.example/y", 0.8, "elections"),
        ScoredUrl("http://www.a.example/x", 0.3),
    )
    assert _order(scheduler, 2).injected == (
        ScoredUrl("http://www.new.example/news/2", 0.9),
        ScoredUrl("https://new.example/news/1", 0.6),
    )
    assert _order(scheduler, 2).focus == FOCUS


async def test_an_injection_with_a_bad_url_or_score_is_refused_whole(api: Api) -> None:
    client, scheduler = api
    good = {"url": "http://www.a.example/x", "score": 0.5}
    for urls, message in (
        ([good, {"url": "ftp://a.example/", "score": 0.5}], "urls[1].url must be an http or https"),
        ([good, {"url": "http://a.example:99999/", "score": 0.5}], "urls[1].url: "),
        ([{"url": "http://a.example/", "score": 1.5}], "urls[0].score must be a number from 0"),
        ([{"url": "http://a.example/"}], "urls[0].score must be a number from 0 to 1"),
        ([good] * 10_001, "at most 10,000 URLs a request, not 10,001"),
        ("http://a.example/", "urls must be a list of objects with url, score and campaign"),
    ):
        assert message in await _refusal(client, "POST", "/api/urls/inject", {"urls": urls})
    assert _order(scheduler, 1).injected == ()
    assert scheduler.store.counts()["sites"] == 1


async def test_the_blacklist_is_kept_carried_by_orders_and_refuses_injected_urls(
    api: Api,
) -> None:
    client, scheduler = api
    patterns = ["host:spam.example", "re:/print/"]
    added = await client.post("/api/blacklist", json={"patterns": patterns}, headers=WRITE)
    assert await _json(added) == {"patterns": patterns}
    assert await _json(await client.get("/api/blacklist")) == {"patterns": patterns}
    assert _order(scheduler, 1).blocked == tuple(patterns)
    for bad, message in (
        (["spam.example"], "pattern 'spam.example' must start with host:, prefix: or re:"),
        (["re:(unclosed"], "'(unclosed' is not a regular expression"),
        ([3], "a pattern must be a string, not int"),
        ("host:a.example", "patterns must be a list of host:, prefix: or re: patterns"),
    ):
        assert message in await _refusal(client, "POST", "/api/blacklist", {"patterns": bad})
    urls = [
        {"url": "http://www.spam.example/", "score": 1},
        {"url": "http://www.a.example/print/1", "score": 1},
        {"url": "http://www.a.example/2", "score": 1},
    ]
    answer = await _json(await client.post("/api/urls/inject", json={"urls": urls}, headers=WRITE))
    assert [(url["site"], url.get("refused")) for url in answer["urls"]] == [
        (None, "blocked by the blacklist"),
        (None, "blocked by the blacklist"),
        (1, None),
    ]
    assert scheduler.store.counts()["sites"] == 1
    removed = await client.delete(
        "/api/blacklist", json={"patterns": ["re:/print/"]}, headers=WRITE
    )
    assert await _json(removed) == {"patterns": ["host:spam.example"]}
    assert _order(scheduler, 1).blocked == ("host:spam.example",)


async def test_domain_settings_bound_the_politeness_of_their_sites_orders(api: Api) -> None:
    client, scheduler = api
    other = scheduler.store.add_site("http://b.example/", "")
    body = {"budget": 50, "min_delay": 2.5}
    put = await client.put("/api/domains/A.Example", json=body, headers=WRITE)
    assert await _json(put) == {
        "domain": "a.example",
        "budget": 50,
        "min_delay": 2.5,
        "max_delay": None,
    }
    put = await client.put("/api/domains/b.example", json={"max_delay": 0.2}, headers=WRITE)
    assert (await _json(put))["max_delay"] == 0.2
    assert await _json(await client.get("/api/domains")) == {
        "domains": [
            {"domain": "a.example", "budget": 50, "min_delay": 2.5, "max_delay": None},
            {"domain": "b.example", "budget": None, "min_delay": None, "max_delay": 0.2},
        ]
    }
    assert _order(scheduler, 1).politeness == {"delay": 2.5, "max_pages": 50}
    assert _order(scheduler, other.id).politeness == {"delay": 0.2}
    for domain, bad, message in (
        ("a.example", {"budget": 0}, "budget must be a whole number of pages from 1"),
        ("a.example", {"budget": 2.5}, "budget must be a whole number of pages from 1"),
        ("a.example", {"min_delay": -1}, "min_delay must be a number of seconds from 0"),
        ("a.example", {"max_delay": "1"}, "max_delay must be a number of seconds from 0"),
        ("a.example", {"min_delay": 3, "max_delay": 1}, "min_delay (3 s) is above max_delay"),
        ("a.example", {"pages": 3}, "unknown domain settings: pages"),
        ("a_b.example", {"budget": 3}, "'a_b.example' is not a domain name"),
    ):
        assert message in await _refusal(client, "PUT", f"/api/domains/{domain}", bad)
    assert _order(scheduler, 1).politeness == {"delay": 2.5, "max_pages": 50}


def test_a_domains_settings_apply_to_its_subdomains_the_most_specific_first() -> None:
    domains = [
        DomainSettings("example.org", budget=10, min_delay=5.0),
        DomainSettings("news.example.org", max_delay=0.5),
    ]
    polite = {"delay": 1.0, "burst": 10.0}
    assert domain_politeness("http://www.example.org/", polite, domains) == {
        "delay": 5.0,
        "burst": 10.0,
        "max_pages": 10,
    }
    assert domain_politeness("http://a.news.example.org/", polite, domains) == {
        "delay": 0.5,
        "burst": 10.0,
    }
    assert domain_politeness("http://example.com/", polite, domains) == polite


def test_a_focus_file_is_read_with_its_example_files_and_refused_with_its_line(
    tmp_path: Path,
) -> None:
    (tmp_path / "example.txt").write_text("The museum opens a new wing.")
    focus = tmp_path / "focus.yaml"
    focus.write_text(
        "keywords: [museum, gallery]\n"
        "examples:\n  - example.txt\n  - Exhibitions of painting\n"
        "url_scores: {'/events/': 0.8}\n"
        "weights: {document: 1, anchor: 2}\n"
        "update: max\n"
    )
    assert load_focus(focus) == Focus(
        keywords=("museum", "gallery"),
        examples=("The museum opens a new wing.", "Exhibitions of painting"),
        url_scores={"/events/": 0.8},
        weights={"document": 1.0, "anchor": 2.0},
        update="max",
    )
    for text, message in (
        ("keywords: [a]\nweights: {page: 1}\n", "line 2: focus.weights must map some of"),
        ("keywords: [a]\n\nupdate: most\n", "line 3: focus.update must be one of max, avg"),
        ("spam: ['host:']\n", "line 1: focus.spam: pattern 'host:' has nothing after host:"),
        ("keywords: [a]\nlanguages: [fr]\n", "line 2: unknown key 'languages'"),
        ("keywords: [a\nupdate: max\n", "not valid YAML at line 2"),
        ("- museum\n", "a focus file maps some of keywords, examples"),
    ):
        focus.write_text(text)
        with pytest.raises(DlwebError, match="focus.yaml: ") as refused:
            load_focus(focus)
        assert message in str(refused.value), text


async def test_the_sites_command_injects_blacklists_and_sets_domains(
    api: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, scheduler = api
    monkeypatch.setattr(cli, "load_config", lambda path: SimpleNamespace(write_token=TOKEN))
    status, out, err = await _dlweb(
        client,
        capsys,
        *("sites", "inject", "http://www.a.example/p", "http://c.example/q"),
        *("--score", "0.7", "--campaign", "c1"),
    )
    assert (status, err) == (0, "")
    assert '"site": 1,' in out and '"site": 2,' in out and '"created": true' in out
    assert _order(scheduler, 2).injected == (ScoredUrl("http://c.example/q", 0.7, "c1"),)
    status, out, err = await _dlweb(client, capsys, "sites", "inject", "2", "--priority", "4")
    site = scheduler.store.site(2)
    assert (status, err) == (0, "") and site is not None and site.priority == 4.0
    status, out, err = await _dlweb(client, capsys, "sites", "inject", "http://c.example/")
    assert status != 0 and "takes --score (--priority is for a site id)" in err
    with pytest.raises(SystemExit):
        await _dlweb(client, capsys, "sites", "inject", "http://c.example/", "--score", "2")
    assert "--score: '2' must be a number from 0 to 1" in capsys.readouterr().err
    status, out, err = await _dlweb(
        client, capsys, "sites", "blacklist", "--pattern", "host:x.example", "--pattern", "re:/a/"
    )
    assert (status, err) == (0, "") and scheduler.store.blacklist() == ("host:x.example", "re:/a/")
    status, out, err = await _dlweb(
        client, capsys, "sites", "blacklist", "--remove-pattern", "re:/a/"
    )
    assert (status, err) == (0, "") and scheduler.store.blacklist() == ("host:x.example",)
    status, out, err = await _dlweb(client, capsys, "sites", "blacklist", "--pattern", "x.example")
    assert status != 0 and "must start with host:, prefix: or re:" in err
    status, out, err = await _dlweb(
        client, capsys, "sites", "domain", "c.example", "--budget", "20", "--max-delay", "3"
    )
    assert (status, err) == (0, "")
    assert scheduler.store.domains() == [DomainSettings("c.example", 20, None, 3.0)]
    status, out, err = await _dlweb(client, capsys, "sites", "domain")
    assert (status, err) == (0, "") and '"domain": "c.example"' in out
