"""The API crawler's rounds: each source's new posts read, each post's own page archived, the
URLs the posts link to scored (popularity.py) and injected into the scheduler; the report of
what was done and skipped."""

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archive.atomic import atomic_write
from archive.cluster import ClusterClient
from archive.config import ClusterConfig
from archive.crawl_calls import ScoredUrl

from ..storage import CaptureSink
from .api_client import ApiClient, api_session
from .inject import InjectionRefused, inject
from .popularity import best_scores
from .sources import Source

__all__ = ["ApiCrawler", "Plan", "crawl"]

log = logging.getLogger(__name__)

MAX_SEEN = 100_000  # posts' pages remembered as archived; the set starts again past it
MAX_REPORTED = 1_000  # best-scored links the report lists


@dataclass
class Plan:
    """What to follow, where to send its links, and how often."""

    sources: Sequence[Source]
    campaign: str = ""
    scheduler: str = ""  # the scheduler's HTTP address; '' for none
    resolve: dict[str, list[str]] = field(default_factory=dict)
    max_wait: float = 300.0  # seconds a rate limit may hold a request
    rounds: int = 1  # 0 for no end
    every: float = 300.0  # seconds between the starts of two rounds
    report: Path | None = None


class ApiCrawler:
    def __init__(self, plan: Plan, api: ApiClient, token: str) -> None:
        self.plan = plan
        self.api = api
        self.token = token
        self.posts = 0
        self.pages = 0  # posts' own pages archived
        self.links: dict[str, float] = {}
        self.injected = 0
        self.refused = ""  # the scheduler's last refusal
        self._seen: set[str] = set()

    async def round(self) -> None:
        scored: list[tuple[str, float]] = []
        for source in self.plan.sources:
            async for post in source.posts(self.api):
                self.posts += 1
                scored.extend((link, post.score) for link in post.links)
                if post.page and post.page not in self._seen:
                    if len(self._seen) >= MAX_SEEN:
                        self._seen.clear()
                    self._seen.add(post.page)
                    if await self.api.get_page(post.page) is not None:
                        self.pages += 1
        best = best_scores(scored)
        for url, score in best.items():
            self.links[url] = max(score, self.links.get(url, 0.0))
        if self.plan.scheduler and best:
            await self._inject(best)

    async def _inject(self, best: dict[str, float]) -> None:
        urls = [
            ScoredUrl(url, round(score, 6), self.plan.campaign)
            for url, score in sorted(best.items(), key=lambda item: -item[1])
        ]
        try:
            self.injected += await inject(self.api.session, self.plan.scheduler, self.token, urls)
        except InjectionRefused as exc:
            self.refused = str(exc)
            log.error("%s; %d URLs not injected", exc, len(urls))

    def report(self) -> dict[str, Any]:
        tally = self.api.tally
        ranked = sorted(self.links.items(), key=lambda item: -item[1])[:MAX_REPORTED]
        return {
            "posts": self.posts,
            "pages": self.pages,
            "archived": tally.archived,
            "throttled": tally.throttled,
            "waited": round(tally.waited, 3),
            "skipped": dict(sorted(tally.skipped.items())),
            "links": [{"url": url, "score": score} for url, score in ranked],
            "injected": self.injected,
            "refused": self.refused,
        }


async def crawl(config: ClusterConfig, plan: Plan, name: str) -> dict[str, Any]:
    """Run the plan's rounds into the cluster; the report."""
    async with ClusterClient(config, name) as client, api_session(plan.resolve) as session:
        sink = CaptureSink(client)
        crawler = ApiCrawler(
            plan, ApiClient(session, sink, max_wait=plan.max_wait), config.write_token
        )
        done = 0
        while True:
            started = asyncio.get_running_loop().time()
            await crawler.round()
            await sink.flush()
            done += 1
            report = crawler.report()
            if plan.report is not None:
                atomic_write(plan.report, json.dumps(report, indent=1).encode())
            if done == plan.rounds:
                return report
            elapsed = asyncio.get_running_loop().time() - started
            await asyncio.sleep(max(plan.every - elapsed, 0.0))
