"""A site crawled into the archive is found by the words of its pages soon after the crawl
ends, when a search indexer follows the cluster."""

import time
from typing import Any

from tests.crawler.sites import ALPHA, Sites
from tests.search.indexing import SEARCHABLE_WITHIN, Indexer, hits

from .test_crawl import QUICK, start

PHRASE = '"Alpha is a small site, deeper than it looks"'  # the first sentence of its home page


def test_a_crawled_site_is_searchable_by_phrase_within_10_s_of_the_crawl_ending(
    cluster_factory: Any, crawl: Any, sites: Sites, tmp_path: Any
) -> None:
    cluster = cluster_factory(nodes=2, replicas=1)
    indexer = Indexer(cluster, tmp_path / "search").start()  # beside the cluster
    try:
        crawl(cluster, *QUICK, start(sites))
        ended = time.monotonic()
        indexer.wait_until(lambda: bool(hits(indexer.folder, PHRASE)), "hit for the phrase")
        assert time.monotonic() - ended < SEARCHABLE_WITHIN
        assert hits(indexer.folder, PHRASE)[0][0] == sites.url(ALPHA, "/")
    finally:
        indexer.stop()
