"""Sites grouped by what they are about: the characteristic phrases of each site's last crawl
(its report's text.phrases, crawler/keywords.py) as a vector, the cosine of two vectors as the
sites' likeness, and single-link clusters at a threshold (docs/scheduler.md "Topics").

A site's vector holds each phrase, weighed 1 + ln(count), and each word of a phrase of several,
at half its phrase's weight (so "solar panels" and "solar energy" meet on "solar"). Likeness is
only counted between sites that share a feature, through an index of features; a feature more
than MAX_SHARED sites hold tells nothing and is left out, so the work stays near-linear.
Clusters are the connected parts of the graph of sites at least `threshold` alike: deterministic,
whatever the order sites come in.
"""

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from archive.scheduler_answers import Site, SiteCluster, SiteClusters

from ..keywords import COMMON_WORDS, STOP_WORDS
from .store import Store

__all__ = ["DEFAULT_THRESHOLD", "SiteTopics", "cluster", "phrases_of", "vector_of"]

DEFAULT_THRESHOLD = 0.2
MAX_SITES = 20_000  # sites clustered, at most (the first by id)
MAX_SHARED = 1_000
CLUSTER_PHRASES = 5  # phrases named for a cluster: those its sites weigh most
MAX_PHRASES = 100  # phrases of a report read, at most
WORD_SHARE = 0.5

Vector = dict[str, float]


def phrases_of(report: Mapping[str, Any]) -> list[tuple[str, int]]:
    """A report's phrases and their counts; what is not one is left out (reports come from the
    network)."""
    text = report.get("text")
    found = text.get("phrases") if isinstance(text, Mapping) else None
    if not isinstance(found, list):
        return []
    return [
        (entry["phrase"], entry["count"])
        for entry in found[:MAX_PHRASES]
        if isinstance(entry, Mapping)
        and isinstance(entry.get("phrase"), str)
        and type(entry.get("count")) is int
        and entry["count"] > 0
    ]


def vector_of(phrases: Iterable[tuple[str, int]]) -> Vector:
    """A site's phrases as a unit vector of phrases (prefixed "p:") and their words ("w:")."""
    vector: Vector = defaultdict(float)
    for phrase, count in phrases:
        weight = 1.0 + math.log(count)
        vector[f"p:{phrase}"] += weight
        words = phrase.split()
        if len(words) > 1:
            for word in words:
                if word not in STOP_WORDS and word not in COMMON_WORDS:
                    vector[f"w:{word}"] += WORD_SHARE * weight
    norm = math.sqrt(sum(w * w for w in vector.values()))
    return {feature: w / norm for feature, w in vector.items()} if norm else {}


@dataclass(frozen=True)
class Topic:
    """A site and the vector of its phrases."""

    site: int
    start_url: str
    vector: Vector


def cluster(topics: Iterable[Topic], threshold: float = DEFAULT_THRESHOLD) -> SiteClusters:
    """Single-link clusters of the sites at least `threshold` alike (cosine); the sites like no
    other apart."""
    kept = sorted((t for t in topics if t.vector), key=lambda t: t.site)
    parent = list(range(len(kept)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for (a, b), likeness in _likeness(kept).items():
        if likeness >= threshold:
            ra, rb = root(a), root(b)
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(kept)):
        groups[root(i)].append(i)
    found = sorted((g for g in groups.values() if len(g) > 1), key=lambda g: (-len(g), g[0]))
    return SiteClusters(
        threshold,
        len(kept),
        tuple(
            SiteCluster(
                tuple(kept[i].site for i in group),
                tuple(kept[i].start_url for i in group),
                _top_phrases(kept[i].vector for i in group),
            )
            for group in found
        ),
        tuple(kept[g[0]].site for g in groups.values() if len(g) == 1),
    )


def _likeness(topics: list[Topic]) -> dict[tuple[int, int], float]:
    """The cosine of every two sites that share a feature, by their places in `topics`."""
    holders: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for i, topic in enumerate(topics):
        for feature, weight in topic.vector.items():
            holders[feature].append((i, weight))
    dot: dict[tuple[int, int], float] = defaultdict(float)
    for held in holders.values():
        if len(held) > MAX_SHARED:
            continue
        for x, (a, wa) in enumerate(held):
            for b, wb in held[x + 1 :]:
                dot[a, b] += wa * wb
    return dot


def _top_phrases(vectors: Iterable[Vector]) -> tuple[str, ...]:
    total: dict[str, float] = defaultdict(float)
    for vector in vectors:
        for feature, weight in vector.items():
            if feature.startswith("p:"):
                total[feature[2:]] += weight
    return tuple(sorted(total, key=lambda p: (-total[p], p))[:CLUSTER_PHRASES])


class SiteTopics:
    """The phrase vector of each crawled site, read from its last crawl's report once a crawl
    (the store's reports are compressed JSON: read again only when a site was crawled again)."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[float, Topic]] = {}

    def topics(self, store: Store) -> list[Topic]:
        found = []
        for site in store.sites(limit=MAX_SITES):
            if site.crawls == 0 or site.state == "removed":
                continue
            known = self._known.get(site.id)
            if known is None or known[0] != site.last_crawl:
                known = self._known[site.id] = (site.last_crawl, self._topic(store, site))
            found.append(known[1])
        return found

    def _topic(self, store: Store, site: Site) -> Topic:
        crawls = store.crawls(site.id, limit=1)
        phrases = phrases_of(crawls[0].report) if crawls else []
        return Topic(site.id, site.start_url, vector_of(phrases))
