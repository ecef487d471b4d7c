"""The application-aware rules: the software behind a site told from its pages, the links its
rules drop, URLs in canonical form, rules relaxed when a theme changed, bad rules refused, hostile
markup bounded; and a crawl of three such sites asking for fewer URLs than without the rules."""

import resource
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from crawler.apps import AppRules, BadRules, load_rules, read_page, shipped_rules
from crawler.apps.page import MAX_DOCUMENT
from crawler.apps.site_rules import TRUST_AFTER
from crawler.links import Link, LinkKind
from crawler.parsers import parse
from deploy.testing.cluster import Cluster

from .apps_web import FIXTURES, IGNORED, PAGES, RESTYLED_PAGER, restyled, serve_app_sites
from .conftest import run_crawler

WP, FORUM, WIKI, DRUPAL = "http://wp.test", "http://forum.test", "http://wiki.test", "http://d.test"


def examined(fixture: str, url: str, rules: AppRules | None = None) -> tuple[AppRules, list[str]]:
    """The rules after reading a fixture at `url`, and the page links they keep."""
    rules = rules or AppRules(shipped_rules())
    document = (FIXTURES / fixture).read_bytes()
    result = parse(url, "text/html", document)
    assert result is not None
    kept = rules.links(url, document, result.links)
    return rules, [link.url for link in kept if link.kind is LinkKind.PAGE]


@pytest.mark.parametrize(
    ("fixture", "url", "application", "kind"),
    [
        ("wordpress/home.html", f"{WP}/", "WordPress", "home"),
        ("wordpress/post.html", f"{WP}/2026/11/28/hello-archive/", "WordPress", "post"),
        ("wordpress/category.html", f"{WP}/category/news/", "WordPress", "archive"),
        ("phpbb/index.html", f"{FORUM}/index.php", "phpBB", "index"),
        ("phpbb/viewforum.html", f"{FORUM}/viewforum.php?f=2", "phpBB", "forum"),
        ("phpbb/viewtopic.html", f"{FORUM}/viewtopic.php?f=2&t=1", "phpBB", "topic"),
        ("mediawiki/article.html", f"{WIKI}/wiki/Web_archiving", "MediaWiki", "article"),
        ("drupal/front.html", f"{DRUPAL}/", "Drupal", "front"),
    ],
)
def test_each_fixture_tells_its_application_and_page_kind(fixture, url, application, kind):
    found = AppRules(shipped_rules()).examine(url, (FIXTURES / fixture).read_bytes())
    assert found is not None
    assert (found.application, found.kind) == (application, kind)


def test_the_content_area_of_a_post_a_topic_and_an_article_is_found():
    for fixture, url, words in [
        ("wordpress/post.html", f"{WP}/2026/11/28/hello-archive/", "Every page kept as it was"),
        ("phpbb/viewtopic.html", f"{FORUM}/viewtopic.php?t=1", "Drop the sid parameter"),
        ("mediawiki/article.html", f"{WIKI}/wiki/Web_archiving", "Web archiving is the"),
    ]:
        found = AppRules(shipped_rules()).examine(url, (FIXTURES / fixture).read_bytes())
        assert found is not None and any(words in text for text in found.content), fixture


def test_a_site_of_unknown_software_keeps_every_link():
    document = b'<html><body><a href="/print?id=1">print</a><a href="/login">in</a></body></html>'
    links = [Link(f"http://plain.test{p}", LinkKind.PAGE, False) for p in ("/print?id=1", "/login")]
    rules = AppRules(shipped_rules())
    assert rules.links("http://plain.test/", document, links) == links
    assert rules.summary() is None


def test_wordpress_rules_drop_login_edit_reply_share_and_feed_links_and_keep_pagination():
    rules, kept = examined("wordpress/home.html", f"{WP}/")
    assert f"{WP}/page/2/" in kept and f"{WP}/category/news/" in kept
    assert f"{WP}/2026/11/28/hello-archive/" in kept
    assert not [u for u in kept if "wp-login" in u or "wp-admin" in u or u.endswith("/feed/")]
    rules, kept = examined("wordpress/post.html", f"{WP}/2026/11/28/hello-archive/", rules)
    assert not [u for u in kept if "share=" in u or "replytocom" in u or "wp-admin" in u]
    assert f"{WP}/2026/11/20/crawling-politely/" in kept
    summary = rules.summary()
    assert summary is not None and summary["name"] == "WordPress" and summary["saved"] >= 10


def test_phpbb_rules_drop_login_posting_and_print_view_and_keep_topics_and_pagination():
    _, kept = examined("phpbb/viewforum.html", f"{FORUM}/viewforum.php?f=2")
    assert f"{FORUM}/viewforum.php?f=2&start=25" in kept
    assert f"{FORUM}/viewtopic.php?f=2&t=1" in kept and f"{FORUM}/viewtopic.php?f=2&t=2" in kept
    assert not [u for u in kept if "ucp.php" in u or "posting.php" in u]
    _, kept = examined("phpbb/viewtopic.html", f"{FORUM}/viewtopic.php?f=2&t=1")
    assert not [u for u in kept if "view=print" in u or "posting.php" in u or "mode=login" in u]


def test_mediawiki_rules_drop_edit_history_diff_print_and_login_links_and_keep_articles():
    _, kept = examined("mediawiki/main.html", f"{WIKI}/wiki/Main_Page")
    assert f"{WIKI}/wiki/Web_archiving" in kept and f"{WIKI}/wiki/Category:Archiving" in kept
    dropped = ("action=", "oldid=", "printable=", "UserLogin", "CreateAccount", "WhatLinksHere")
    assert not [u for u in kept if any(d in u for d in dropped)], kept


def test_parameters_that_change_nothing_are_dropped_from_the_sites_urls():
    rules, _ = examined("wordpress/home.html", f"{WP}/")
    assert rules.canonical(f"{WP}/a/?utm_source=x&p=2&replytocom=5") == f"{WP}/a/?p=2"
    assert rules.canonical(f"{WP}/a/?p=2") == f"{WP}/a/?p=2"


def test_a_changed_theme_is_followed_by_a_relaxed_rule_trusted_once_it_matches_again():
    rules = AppRules(shipped_rules())
    restyled = (FIXTURES / "wordpress/home-restyled.html").read_bytes()
    relaxed = "//div[contains(@class, 'navigation pagination')]//a"
    for number in range(TRUST_AFTER + 1):
        found = rules.examine(f"{WP}/page/{number + 3}/", restyled)
        assert found is not None and f"{WP}/page/2/" in found.follow
        summary = rules.summary()
        assert summary is not None
        trusted = number == TRUST_AFTER
        assert summary["relaxed" if trusted else "on_trial"] == {"pagination": relaxed}
        assert summary["on_trial" if trusted else "relaxed"] == {}


def test_a_relaxed_rule_that_fails_on_the_next_page_is_dropped_for_the_original():
    rules, _ = examined("wordpress/home-restyled.html", f"{WP}/")
    summary = rules.summary()
    assert summary is not None and "pagination" in summary["on_trial"]
    found = rules.examine(f"{WP}/page/3/", (FIXTURES / "wordpress/home.html").read_bytes())
    assert found is not None and f"{WP}/page/2/" in found.follow
    summary = rules.summary()
    assert summary is not None and not summary["on_trial"] and not summary["relaxed"]


def test_malformed_rules_are_refused_with_their_line(tmp_path: Path):
    (tmp_path / "bad.yaml").write_text("application: X\ncategory: blog\nrules: [\n  - name: a\n")
    with pytest.raises(BadRules, match=r"bad\.yaml: not YAML at line 4"):
        load_rules(tmp_path)


def test_an_xpath_that_does_not_compile_is_refused_with_its_rules_name(tmp_path: Path):
    (tmp_path / "bad.yaml").write_text(
        "application: X\ncategory: blog\nrules:\n"
        '  - name: broken-pager\n    action: follow\n    xpath: "//nav[[@class]//a"\n'
    )
    with pytest.raises(BadRules, match="rule broken-pager: the XPath .* does not compile"):
        load_rules(tmp_path)


def test_every_shipped_rules_file_loads_and_names_its_category():
    applications = load_rules()
    names = {a.name for a in applications}
    assert {"WordPress", "Drupal", "Joomla", "MediaWiki", "phpBB", "Discourse", "Ghost"} <= names
    assert all(a.category and a.rules for a in applications)


@pytest.mark.parametrize(
    "document",
    [
        b"<html><body>" + b"<div>" * 100_000 + b"deep" + b"</div>" * 100_000 + b"</body></html>",
        b'<html><body><a class="x" href="' + b"a" * 10_000_000 + b'">wide</a></body></html>',
    ],
    ids=["nesting-100k", "attribute-10MB"],
)
def test_hostile_markup_is_read_within_bounds_of_time_and_memory(document):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    rules = AppRules(shipped_rules())
    for n in range(3):
        rules.examine(f"{WP}/{n}", b'<meta name="generator" content="WordPress 6">' + document)
    page = read_page(f"{WP}/", document)
    elapsed = time.monotonic() - started
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
    assert elapsed < 1.0
    assert grown < 64 * 1024 * 1024
    assert page is not None
    assert max(len(e.get("href") or "") for e in page.root.iter()) <= MAX_DOCUMENT
    assert sum(1 for _ in page.root.iter()) < 1_000  # lxml stops the nesting at 256 levels


def test_a_crawl_of_three_cms_sites_asks_for_fewer_urls_with_the_rules_for_the_same_pages(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    asked: dict[str, dict[str, list[str]]] = {}
    reports = {}
    for setting in ("", "--no-app-rules"):
        with serve_app_sites() as served:
            starts = [base + "/" for _, base in served.values()]
            done = run_crawler(
                cluster, tmp_path / f"report{setting}.json", tmp_path / f"work{setting}",
                "--delay", "0", *([setting] if setting else []), *starts,
            )  # fmt: skip
            asked[setting] = {name: site.requested() for name, (site, _) in served.items()}
            reports[setting] = {r["start_url"]: r for r in done.reports}
    with_rules, without = asked[""], asked["--no-app-rules"]
    total_with = sum(map(len, with_rules.values()))
    total_without = sum(map(len, without.values()))
    print(f"requests for the pages of three CMS sites: {total_without} without the rules,")
    print(f"  {total_with} with them ({total_without - total_with} saved)")
    assert total_with < total_without
    for name, pages in without.items():
        same = {_fixture_page(name, p) for p in pages} - {None}
        assert same == {_fixture_page(name, p) for p in with_rules[name]} - {None}, name
        assert len(with_rules[name]) < len(pages), name
    found = {r["application"]["name"]: r["application"] for r in reports[""].values()}
    assert set(found) == {"WordPress", "phpBB", "MediaWiki"}
    assert all(a["saved"] > 0 for a in found.values())
    assert all(r["application"] is None for r in reports["--no-app-rules"].values())


def _fixture_page(name: str, path_qs: str) -> str | None:
    """The page of the site a request was answered with, when the site has it."""
    path, _, query = path_qs.partition("?")
    kept = "&".join(p for p in query.split("&") if p and p.split("=")[0] not in IGNORED)
    key = path + ("?" + kept if kept else "")
    return key if key in PAGES[name] else None


def test_a_crawl_of_a_restyled_site_follows_its_pager_by_a_relaxed_rule(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    with serve_app_sites(("wordpress",), restyle=True) as served:
        site, base = served["wordpress"]
        done = run_crawler(
            cluster, tmp_path / "report.json", tmp_path / "work", "--delay", "0", f"{base}/"
        )
        asked = site.requested()
    (report,) = done.reports
    application = report["application"]
    assert application["name"] == "WordPress", application
    assert set(application["relaxed"]) == {"pagination"}, application
    assert application["saved"] > 0
    assert "/page/2/" in asked
    assert RESTYLED_PAGER in restyled((FIXTURES / "wordpress/home.html").read_text())
