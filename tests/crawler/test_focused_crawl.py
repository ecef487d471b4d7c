"""A focused crawl of the loopback test web: the injected URLs are requested before the rest, in
score order, even beyond the depth limit; a blocked pattern's URLs are never requested; the
report counts the blocked URLs and sums up the pages' relevance."""

from pathlib import Path
from typing import Any

from crawler.pool import crawl_sites
from tests.crawler.sites import ALPHA, LEVELS


def test_injected_urls_come_first_in_score_order_and_blocked_ones_are_never_asked(
    cluster_factory: Any, sites: Any, tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    injected = {LEVELS[5]: 0.9, LEVELS[3]: 0.6, LEVELS[2]: 0.3}  # deeper than max_depth
    order = {
        "start_url": sites.url(ALPHA, "/"),
        "max_depth": 1,
        "politeness": {"delay": 0, "read_timeout": 2, "connect_timeout": 2, "retry_delay": 0.5},
        "resolve": {host: [address] for host, address in sites.hosts.items()},
        "focus": {"keywords": ["level", "deep"], "update": "max"},
        "injected": [{"url": sites.url(ALPHA, path), "score": s} for path, s in injected.items()],
        "blocked": ["re:/level1/odd", f"prefix:{sites.url(ALPHA, '/frames')}"],
    }
    [report] = crawl_sites(cluster.config, [order], tmp_path / "work")
    assert "failed" not in report, report
    asked = [entry["path"] for entry in sites.log() if entry["host"].startswith(ALPHA)]
    pages = [path for path in asked if path in (*injected, "/")]
    assert pages == [LEVELS[5], LEVELS[3], LEVELS[2], "/"], asked
    assert not [path for path in asked if path.startswith(("/level1/odd", "/frames"))]
    assert "/level1/a.html" in asked  # the rest of the site is crawled
    assert report["blocked"] == 2  # /level1/odd.html and /frames.html, linked from the start
    relevance = report["relevance"]
    assert 4 < relevance["pages"] <= report["pages"]  # those with text
    assert sum(relevance["tenths"]) == relevance["pages"] and relevance["relevant_pages"] >= 1
