"""The scheduler's JSON API answers (crawler/scheduler/http.py), typed once for the scheduler that
serves them and the `dlweb sites`, `dlweb streams` and `dlweb campaign` commands that read them.

`/api/status` and `/api/campaign` answer a SchedulerStatus; `/api/sites` a Sites, or the
Site it added; `/api/sites/{id}` a SiteDetail, or (blacklist, inject, remove) the Site
changed; `/api/sites/{id}/second-agent` a SecondAgentSent; `/api/streams` a Streams, or the
Stream added or stopped; `/api/streams/{id}` a StreamDetail; `/api/clusters` a SiteClusters;
`/api/sites/{id}/graph` a CrawlGraph; `/api/urls/inject` an InjectedUrls; `/api/blacklist` a
BlacklistPatterns; `/api/domains` a Domains, or the DomainSettings set. `/api/agents/{name}/clone`
answers the agent's Cloned (archive/crawl_calls.py). An entry is a row of the scheduler's
database, its fields those of the scheduler's record in their order (`of` copies them).

Each is an `Answer` (archive/answers.py): its JSON is its fields, `from_json` checks them.
"""

from typing import Any, Self

from .answers import Answer
from .crawl_calls import AgentStatus
from .hip import bad_params, left_out

__all__ = [
    "BlacklistPatterns",
    "Crawl",
    "CrawlGraph",
    "CrawlerAgent",
    "DomainSettings",
    "Domains",
    "InjectedUrl",
    "InjectedUrls",
    "PolicyAgent",
    "StreamRecording",
    "Referrer",
    "SchedulerStatus",
    "SecondAgentSent",
    "SiteCluster",
    "SiteClusters",
    "SiteDetail",
    "Site",
    "Sites",
    "StreamDetail",
    "Stream",
    "StreamEvent",
    "StreamingAgent",
    "Streams",
]


class Site(Answer):
    """A site of the campaign, a row of the scheduler's database."""

    id: int
    start_url: str
    accept: str
    reject: str
    max_depth: int
    state: str
    priority: float
    relevance: float  # how well its last crawl passed the campaign's filters
    hub: float  # HITS ranks on the site graph
    authority: float
    seed: bool
    source: str  # who registered it: "operator", or which site it was discovered from
    agent: str  # the agent crawling it, while crawling
    claimed: float  # when that agent was given it
    next_crawl: float
    interval: float  # seconds between crawls
    last_crawl: float
    signature_file: str  # the last crawl's, for the next order's `previous`
    chunk_file: str  # the last crawl's text-chunk signatures, to measure the next one's changes
    change_rate: float
    crawls: int
    created: float


class Crawl(Answer):
    """A crawl of a site."""

    id: int
    site: int
    agent: str
    started: float
    finished: float
    pages: int
    new_contents: int
    known_contents: int
    new_chunk_share: float | None  # None when not measured
    report: dict[str, Any]  # without its external links, which only their count replaces


class Referrer(Answer):
    """A site linking to another, and how many links it has to it."""

    site: int
    start_url: str
    links: int


class Sites(Answer):
    sites: tuple[Site, ...]


class SiteDetail(Answer):
    """A site, its last crawls (newest first) and the sites linking to it (most links first)."""

    site: Site
    crawls: tuple[Crawl, ...]
    referrers: tuple[Referrer, ...]


class SecondAgentSent(Answer):
    """The agent sent on a site another agent crawls."""

    site: int
    agent: str


class Stream(Answer):
    """A live stream the scheduler has recorded."""

    id: int
    url: str  # as reported or given: what the agents record
    key: str  # its canonical form: one stream per key
    site: int | None  # the site whose crawl reported it, or the operator named
    state: str
    agent: str  # the streaming agent recording it, while recording
    assigned: float  # when that agent was given it
    first_recorded: float  # when its first recording that stored anything began (0: never)
    last_recorded: float  # the end of the last chunk an agent reported (0: never)
    recordings: int  # agents' recordings of it, one per assignment
    gaps: int  # holes in its timeline: between recordings, and within each
    bytes: int
    source: str  # "operator", or which site's crawl found it
    created: float


class StreamRecording(Answer):
    """One agent's recording of a stream, as it last reported it."""

    recording: str  # the id the agent's chunk logs carry
    stream: int
    agent: str
    started: float
    last: float
    bytes: int
    chunks: int
    titles: int
    gaps: int
    errors: dict[str, int]
    drift: str
    ended: float  # when the agent reported its end (0: not reported)
    reason: str


class StreamEvent(Answer):
    """A decision about a stream, or what made the scheduler take one."""

    id: int
    stream: int
    time: float
    event: str
    agent: str
    detail: str


class Streams(Answer):
    streams: tuple[Stream, ...]


class StreamDetail(Answer):
    """A stream, its recordings (oldest first) and its last events (oldest first)."""

    stream: Stream
    recordings: tuple[StreamRecording, ...]
    events: tuple[StreamEvent, ...]


class CrawlerAgent(Answer):
    """A site crawler agent, the site it crawls (-1: one given before a restart) and its state as
    it last answered the scheduler's poll (None before its first answer)."""

    name: str
    connected: bool
    site: int | None
    status: AgentStatus | None = left_out(None)
    polled: float = left_out(0.0)  # when it last answered
    unanswered: str = left_out("")  # why its last poll got no answer; "" when it answered


class StreamingAgent(Answer):
    """A streaming agent, its slots and the streams it records."""

    name: str
    connected: bool
    capacity: int
    streams: int


class PolicyAgent(Answer):
    """A connectivity agent (role connectivity: `work` the crawls whose links it resolves now,
    `done` those it resolved) or a feed aggregator (role feeds: `work` the feeds it polls,
    `done` the changes it reported)."""

    name: str
    role: str
    connected: bool
    work: int
    done: int


class SchedulerStatus(Answer):
    """The campaign's state, its agents, its sites and streams counted by state, and how many
    decisions the scheduler took."""

    campaign: str  # running or paused
    agents: tuple[CrawlerAgent, ...]
    counts: dict[str, int]  # sites by state and in all, edges, crawls
    decisions: int
    stream_agents: tuple[StreamingAgent, ...]
    streams: dict[str, int]  # streams by state and in all
    stream_decisions: int
    policy_agents: tuple[PolicyAgent, ...] = left_out(())
    links_waiting: int = left_out(0)  # finished crawls whose external links are not applied yet


class SiteCluster(Answer):
    """Sites about one topic (crawler/scheduler/clusters.py): their ids and start URLs, and the
    phrases they weigh most."""

    sites: tuple[int, ...]
    start_urls: tuple[str, ...]
    phrases: tuple[str, ...]


class SiteClusters(Answer):
    """The crawled sites grouped by their phrases, at a likeness threshold: clusters, largest
    first, and the sites like no other."""

    threshold: float
    sites: int  # sites with phrases, clustered
    clusters: tuple[SiteCluster, ...]
    alone: tuple[int, ...]


class CrawlGraph(Answer):
    """The pages of a site as one crawl found them and the links between them: the crawl begun
    last at or before the date asked. `pages` are in the order the crawl met them (its start
    page first, breadth-first), cut to the number asked; `edges` link two of them by their
    places in `pages`."""

    site: int
    start_url: str
    crawl: int
    started: float
    finished: float
    pages: tuple[str, ...]
    edges: tuple[tuple[int, int], ...]
    total_pages: int  # pages in the crawl's graph, more than `pages` holds when cut
    total_edges: int
    truncated: bool  # the crawl's graph itself was cut at its limits (crawler/site_graph.py)

    @classmethod
    def from_json(cls, data: Any, where: str) -> Self:
        """The graph, each edge checked to be two places in `pages`."""
        graph = super().from_json(data, where)
        for i, edge in enumerate(graph.edges):
            if len(edge) != 2 or not all(0 <= end < len(graph.pages) for end in edge):
                raise bad_params(
                    where, f"edges[{i}] must be two places in pages, below {len(graph.pages)}"
                )
        return graph


class InjectedUrl(Answer):
    """What became of one injected URL (canonical): the site whose next crawl it waits for,
    whether that site was registered for it, or why it was refused (then no site)."""

    url: str
    site: int | None
    created: bool
    refused: str = left_out("")


class InjectedUrls(Answer):
    """The injected URLs, in the order given."""

    urls: tuple[InjectedUrl, ...]


class BlacklistPatterns(Answer):
    """The campaign's blacklist (archive/blocklist.py patterns), in the order they were added."""

    patterns: tuple[str, ...]


class DomainSettings(Answer):
    """What the operator set for the sites of a domain (and its subdomains): the pages a crawl
    of one of its sites may fetch, and the bounds of the politeness delay (None: not set)."""

    domain: str
    budget: int | None = None
    min_delay: float | None = None
    max_delay: float | None = None


class Domains(Answer):
    domains: tuple[DomainSettings, ...]
