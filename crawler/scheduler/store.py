"""The scheduler's whole state on disk: sites, their crawls, the graph of links between sites and
the campaign's settings, so that a scheduler killed at any moment resumes where it stopped.

`Store` is the interface the scheduler uses; `SqlStore` implements it in SQL written once for both
engines, `SqliteStore` on one SQLite file (the default) and `PgStore` (pg_store.py) on a PostgreSQL
database. Every write is one transaction, committed and synced before the method returns.

A site is a delimitation: a start URL, accept and reject expressions (crawler.delimitation) and a
maximum depth. Accept expressions are disjoint between sites, so a URL belongs to at most one
site, which `find_site_for` names. A site's state is one of:

- queued: to be crawled once `next_crawl` has come (0, a new site's, means at once);
- crawling: given to an agent;
- idle: crawled, to be crawled again at `next_crawl`;
- blacklisted: failed the campaign's filters; kept, so that links to it are recognised;
- paused: kept out of the schedule by the operator;
- removed: forgotten; no URL belongs to it any more.

A stream is a live stream URL a site's crawl reported (or the operator named), kept with that
site. Its state is one of:

- found: known, not to be recorded (until the operator asks);
- waiting: to be recorded, waiting for a streaming agent with a free slot;
- recording: given to a streaming agent;
- stopped: no longer recorded, by the operator's choice.

Every agent's recording of a stream has a row of its own (its progress as last reported), and
every decision about a stream (found, added, assigned, refused, released, ended, adopted,
stopped) is an event, in the same transaction as the change it made.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
import zlib
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import asdict, dataclass, fields
from heapq import heapify, heappop, heappush
from pathlib import Path
from typing import Any, Protocol, Self

from archive.errors import DlwebError, NotFound
from archive.sql import in_chunks
from archive.urlkey import BadUrl, canonical_url

from ..delimitation import (
    REGEX_PREFIX,
    Delimitation,
    _canonical_host_and_path,
    _split_terms,
    compile_expression,
    host_and_rest,
)

__all__ = [
    "DEFAULT_INTERVAL",
    "SCHEMA_VERSION",
    "STATES",
    "STREAM_STATES",
    "Crawl",
    "DuplicateSite",
    "Site",
    "SqlStore",
    "SqliteStore",
    "Store",
    "StoreError",
    "Stream",
    "StreamEvent",
    "StreamRecording",
]

SCHEMA_VERSION = 2  # 2: the stream tables
STATES = ("queued", "crawling", "idle", "blacklisted", "paused", "removed")
STREAM_STATES = ("found", "waiting", "recording", "stopped")
SCHEDULED = ("queued", "idle")  # the states next_sites picks from
DEFAULT_INTERVAL = 86_400.0  # a new site's re-crawl interval, until its changes are measured
COMPILED_KEPT = 10_000  # compiled delimitations find_site_for keeps (least recently used go)
EDGES_FETCHED = 10_000  # rows read at a time when edges are streamed
IN_USE = "the scheduler's database is in use by another process"

# The SQLite file's schema version (PostgreSQL's is in archive.pg's dlweb_meta).
_META_SCHEMA = "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
_SCHEMA = f"""
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE sites (
    id INTEGER PRIMARY KEY,
    start_url TEXT NOT NULL,
    accept TEXT NOT NULL,
    reject TEXT NOT NULL,
    max_depth INTEGER NOT NULL,
    state TEXT NOT NULL,
    priority REAL NOT NULL,
    relevance REAL NOT NULL DEFAULT 0,
    hub REAL NOT NULL DEFAULT 0,
    authority REAL NOT NULL DEFAULT 0,
    seed INTEGER NOT NULL,
    source TEXT NOT NULL,
    agent TEXT NOT NULL DEFAULT '',
    claimed REAL NOT NULL DEFAULT 0,
    next_crawl REAL NOT NULL,
    interval REAL NOT NULL,
    last_crawl REAL NOT NULL DEFAULT 0,
    signature_file TEXT NOT NULL DEFAULT '',
    chunk_file TEXT NOT NULL DEFAULT '',
    change_rate REAL NOT NULL DEFAULT 0,
    crawls INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE INDEX sites_by_state ON sites (state, id);
CREATE INDEX sites_by_start ON sites (start_url);
CREATE INDEX sites_due ON sites (next_crawl) WHERE state IN {SCHEDULED!r};
CREATE INDEX sites_by_agent ON sites (agent) WHERE state = 'crawling';
CREATE TABLE crawls (
    id INTEGER PRIMARY KEY,
    site INTEGER NOT NULL,
    agent TEXT NOT NULL,
    started REAL NOT NULL,
    finished REAL NOT NULL,
    pages INTEGER NOT NULL,
    new_contents INTEGER NOT NULL,
    known_contents INTEGER NOT NULL,
    new_chunk_share REAL,
    report BLOB NOT NULL
);
CREATE INDEX crawls_by_site ON crawls (site, id);
CREATE TABLE edges (
    src INTEGER NOT NULL,
    dst INTEGER NOT NULL,
    count INTEGER NOT NULL,
    last_seen REAL NOT NULL,
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;
CREATE INDEX edges_by_dst ON edges (dst, src);
"""
_STREAM_SCHEMA = """
CREATE TABLE streams (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    key TEXT NOT NULL UNIQUE,
    site INTEGER,
    state TEXT NOT NULL,
    agent TEXT NOT NULL DEFAULT '',
    assigned REAL NOT NULL DEFAULT 0,
    first_recorded REAL NOT NULL DEFAULT 0,
    last_recorded REAL NOT NULL DEFAULT 0,
    recordings INTEGER NOT NULL DEFAULT 0,
    gaps INTEGER NOT NULL DEFAULT 0,
    bytes INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX streams_by_state ON streams (state, id);
CREATE INDEX streams_by_agent ON streams (agent) WHERE state = 'recording';
CREATE TABLE stream_recordings (
    recording TEXT PRIMARY KEY,
    stream INTEGER NOT NULL,
    agent TEXT NOT NULL,
    started REAL NOT NULL,
    last REAL NOT NULL,
    bytes INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    titles INTEGER NOT NULL,
    gaps INTEGER NOT NULL,
    errors TEXT NOT NULL,
    drift TEXT NOT NULL,
    ended REAL NOT NULL DEFAULT 0,
    reason TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE INDEX recordings_by_stream ON stream_recordings (stream, started);
CREATE TABLE stream_events (
    id INTEGER PRIMARY KEY,
    stream INTEGER NOT NULL,
    time REAL NOT NULL,
    event TEXT NOT NULL,
    agent TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX stream_events_by_stream ON stream_events (stream, id);
"""


class StoreError(DlwebError):
    """The scheduler's database cannot be opened or written, or was asked something invalid."""


class DuplicateSite(StoreError):
    """A new site whose start URL already belongs to a registered site."""


@dataclass(frozen=True)
class Site:
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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Crawl:
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


@dataclass(frozen=True)
class Stream:
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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StreamRecording:
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


@dataclass(frozen=True)
class StreamEvent:
    """A decision about a stream, or what made the scheduler take one."""

    id: int
    stream: int
    time: float
    event: str
    agent: str
    detail: str


class Store(Protocol):
    """What the scheduler keeps; every write is committed before the method returns."""

    def close(self) -> None: ...

    def add_site(
        self,
        start_url: str,
        accept: str,
        reject: str = "",
        max_depth: int = 150,
        priority: float = 0.0,
        source: str = "operator",
        seed: bool = False,
        *,
        next_crawl: float = 0.0,
        interval: float = DEFAULT_INTERVAL,
    ) -> Site:
        """A new queued site; DuplicateSite when its start URL belongs to a registered one, and
        BadOrder when the delimitation is wrong (an empty accept is derived from the start URL)."""

    def site(self, site_id: int) -> Site | None: ...

    def sites(self, state: str | None = None, limit: int = 1000, offset: int = 0) -> list[Site]:
        """Sites in the order they were registered, all or those in `state`."""

    def find_site_for(self, url: str) -> Site | None:
        """The site a canonical URL belongs to (accepted, not rejected), removed ones aside."""

    def set_state(self, site_id: int, state: str, **changes: float | str) -> None:
        """Moves a site to `state`, also setting any of next_crawl, interval, priority,
        relevance, change_rate, max_depth, agent. Only crawling has an agent, and needs one
        (claim is the usual way there); the other states clear it."""

    def set_priority(self, site_id: int, priority: float) -> None: ...

    def set_priorities(self, priorities: Mapping[int, float]) -> None:
        """set_priority for many sites in one transaction."""

    def next_sites(self, now: float, limit: int) -> list[Site]:
        """Queued and idle sites due at `now`, highest priority first, then longest due."""

    def claim(self, site_id: int, agent: str, now: float) -> bool:
        """Gives a queued or idle site to `agent`; False when it is in no such state."""

    def agent_site(self, agent: str) -> Site | None:
        """The site `agent` is crawling."""

    def release_agent(self, agent: str) -> list[int]:
        """Puts back in the queue, due at once, the sites `agent` was crawling."""

    def finish(
        self,
        site_id: int,
        report: Mapping[str, Any],
        signature_file: str,
        chunk_file: str,
        now: float,
        *,
        new_chunk_share: float | None = None,
        second: str = "",
    ) -> None:
        """Records a crawl, keeps its signature and chunk files on the site and makes a crawling,
        queued or idle site idle, due again after its interval. The crawl of a `second` agent
        sent while the first still crawls is recorded and leaves the site as it is."""

    def crawls(self, site_id: int, limit: int = 10) -> list[Crawl]:
        """A site's last crawls, newest first."""

    def add_edges(self, src: int, dst_counts: Mapping[int, int], now: float) -> None:
        """Links from site `src` to other sites, and how many its last crawl found (self-links
        are left out); a later call for the same pair replaces its count."""

    def edges(self) -> Iterator[tuple[int, int, int]]:
        """Every (src, dst, count) of the graph, read a batch at a time."""

    def set_ranks(self, hubs: Mapping[int, float], authorities: Mapping[int, float]) -> None:
        """Replaces every site's hub and authority ranks (absent sites get 0)."""

    def referrers(self, site_id: int) -> list[tuple[Site, int]]:
        """Sites linking to a site, with their link counts, most links first."""

    def get_setting(self, key: str, default: str = "") -> str: ...

    def set_setting(self, key: str, value: str) -> None: ...

    def counts(self) -> dict[str, int]:
        """Sites in all and by state, edges, crawls."""

    def found_streams(
        self, site_id: int, urls: Iterable[str], record: bool, now: float
    ) -> list[Stream]:
        """Registers the stream URLs a crawl of a site reported that are not known yet (bad
        URLs are left out), waiting to be recorded if `record`, else found; the new ones."""

    def record_stream(self, url: str, site_id: int | None, now: float) -> Stream:
        """The operator's choice to record a stream: registered if new, waiting unless it is
        being recorded; BadUrl for a URL no agent can record, NotFound for an unknown site."""

    def move_stream(
        self,
        stream_id: int,
        state: str,
        event: str,
        now: float,
        *,
        agent: str = "",
        was: Sequence[str] = STREAM_STATES,
        was_agent: str | None = None,
        detail: str = "",
    ) -> bool:
        """Moves a stream in one of the states `was` (held by `was_agent`, when given) to
        `state`, recording `event`; only recording has an agent, and needs one. False when the
        stream was in none of them."""

    def stream(self, stream_id: int) -> Stream | None: ...

    def find_stream(self, url: str) -> Stream | None:
        """The stream of a URL, by its canonical form; BadUrl for a bad URL."""

    def streams(self, state: str | None = None, limit: int = 1000, offset: int = 0) -> list[Stream]:
        """Streams in the order they were registered, all or those in `state`."""

    def agent_streams(self, agent: str) -> list[Stream]:
        """The streams `agent` is recording."""

    def stream_load(self) -> dict[str, int]:
        """Streams being recorded, by agent."""

    def stream_progress(self, agent: str, report: Mapping[str, Any], now: float) -> Stream | None:
        """Keeps what an agent reported of one recording (its `stream`, `recording`, figures,
        whether it `ended`) and the stream's first and last recorded times and gaps; None when
        the report names no known stream."""

    def stream_recordings(self, stream_id: int) -> list[StreamRecording]:
        """A stream's recordings, oldest first."""

    def stream_events(self, stream_id: int, limit: int = 100) -> list[StreamEvent]:
        """A stream's last events, oldest first."""

    def stream_counts(self) -> dict[str, int]:
        """Streams in all and by state."""


HostKey = tuple[str, str]  # (host, or "." and a host suffix; first path segment or "")


def host_keys(accept: str) -> list[HostKey] | None:
    """Where a URL must be for the accept expression to match it, or None when anywhere.

    Each `//host` or `.host` term gives its host (a suffix keeps its dot) and, when its path
    prefix holds a whole first segment (`//host/~ann/`), that segment; a substring or regular
    expression term may match any URL.
    """
    keys: list[HostKey] = []
    for term in _split_terms(accept):
        if term.startswith(REGEX_PREFIX):
            return None
        if term.startswith("//"):
            host, prefix = _canonical_host_and_path(term[2:])
        elif term.startswith("."):
            host, prefix = _canonical_host_and_path(term[1:])
            host = "." + host
        else:
            return None
        segment, slash, _ = prefix[1:].partition("/") if prefix.startswith("/") else ("", "", "")
        keys.append((host, segment if slash else ""))
    return keys


def url_keys(url: str) -> list[HostKey]:
    """The host keys of every accept expression that could match a canonical URL."""
    host, rest = host_and_rest(url)
    segment, slash, _ = rest[1:].partition("/") if rest.startswith("/") else ("", "", "")
    hosts = [host]
    dot = host.find(".")
    while dot >= 0:
        hosts.append(host[dot:])
        dot = host.find(".", dot + 1)
    if slash and segment:
        return [(name, part) for name in hosts for part in ("", segment)]
    return [(name, "") for name in hosts]


Matcher = tuple[Callable[[str], bool], Callable[[str], bool]]


class Connection(Protocol):
    """What a store writes through in a transaction: an sqlite3 connection, or archive.pg's."""

    def execute(self, sql: str, parameters: Any = (), /) -> Any: ...

    def executemany(self, sql: str, rows: Any, /) -> Any: ...


class SqlStore(Store):
    """The store's SQL, written once for both engines, and what it keeps in memory, rebuilt at
    open (`_load`) and kept up to date by every write: the host index of the delimitations
    (find_site_for tests only the sites whose accept names the URL's host or one of its suffixes,
    plus those whose accept names no host), and the due queue (the queued and idle sites whose
    next crawl has come, a heap by priority, which an SQL index cannot give since being due
    depends on the time asked about). Its engines implement reading, streaming and writing."""

    where: str  # the database, as messages name it
    _LEAST = "MIN"  # the smaller of two values (SQLite's MIN, PostgreSQL's LEAST), and the larger
    _GREATEST = "MAX"
    # How next_sites reads the due sites: without statistics, SQLite would rather walk every
    # queued site by state.
    _DUE = "INDEXED BY sites_due"

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def _read(self, sql: str, parameters: Iterable[Any] = ()) -> list[Any]:
        """The rows of a query."""

    @abstractmethod
    def _stream(self, sql: str) -> Iterator[Any]:
        """The rows of a query, read a batch at a time."""

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Connection]:
        """One transaction, committed (and synced) on leaving, rolled back on an error."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _load(self) -> None:
        """Reads the host index from the database, and empties the due queue."""
        self._by_host: dict[HostKey, set[int]] = {}
        self._anywhere: set[int] = set()  # sites whose accept has a term that names no host
        self._keys: dict[int, list[HostKey] | None] = {}
        self._compiled: OrderedDict[int, Matcher] = OrderedDict()
        self._due: dict[int, tuple[float, float]] = {}  # site -> (priority, next_crawl)
        self._due_heap: list[tuple[float, float, int]] = []  # (-priority, next_crawl, site)
        self._due_until = -math.inf  # every scheduled site with next_crawl <= it is in _due
        for site_id, accept in self._read("SELECT id, accept FROM sites WHERE state != 'removed'"):
            self._index(site_id, accept)

    # -- sites ------------------------------------------------------------------------------------

    def add_site(
        self,
        start_url: str,
        accept: str,
        reject: str = "",
        max_depth: int = 150,
        priority: float = 0.0,
        source: str = "operator",
        seed: bool = False,
        *,
        next_crawl: float = 0.0,
        interval: float = DEFAULT_INTERVAL,
    ) -> Site:
        delimitation = Delimitation(start_url, accept, reject, max_depth)
        start = canonical_url(start_url)
        _check_number("priority", priority)
        _check_number("next_crawl", next_crawl)
        _check_number("interval", interval)
        owner = self.find_site_for(start)
        if owner is not None:
            raise DuplicateSite(
                f"{start} already belongs to site {owner.id} (start URL {owner.start_url},"
                f" accept {owner.accept!r}, reject {owner.reject!r})"
            )
        with self._writing() as db:
            site_id: int = db.execute(
                "INSERT INTO sites (start_url, accept, reject, max_depth, state, priority, seed,"
                " source, next_crawl, interval, created) VALUES (?,?,?,?,'queued',?,?,?,?,?,?)"
                " RETURNING id",
                (
                    start,
                    delimitation.accept,
                    reject,
                    max_depth,
                    priority,
                    int(seed),
                    source,
                    next_crawl,
                    interval,
                    time.time(),
                ),
            ).fetchone()[0]
        self._index(site_id, delimitation.accept)
        self._track([site_id])
        return self._existing(site_id)

    def site(self, site_id: int) -> Site | None:
        rows = self._read(f"SELECT {_SITE_COLUMNS} FROM sites WHERE id = ?", (site_id,))
        return _site(rows[0]) if rows else None

    def sites(self, state: str | None = None, limit: int = 1000, offset: int = 0) -> list[Site]:
        if state is None:
            rows = self._read(
                f"SELECT {_SITE_COLUMNS} FROM sites ORDER BY id LIMIT ? OFFSET ?", (limit, offset)
            )
        else:
            _check_state(state)
            rows = self._read(
                f"SELECT {_SITE_COLUMNS} FROM sites WHERE state = ? ORDER BY id LIMIT ? OFFSET ?",
                (state, limit, offset),
            )
        return [_site(row) for row in rows]

    def find_site_for(self, url: str) -> Site | None:
        candidates = set(self._anywhere)
        for key in url_keys(url):
            found = self._by_host.get(key)
            if found is not None:
                candidates.update(found)
        for site_id in sorted(candidates):
            accepts, rejects = self._matcher(site_id)
            if accepts(url) and not rejects(url):
                return self.site(site_id)
        return None

    def set_state(self, site_id: int, state: str, **changes: float | str) -> None:
        _check_state(state)
        columns: dict[str, float | str] = {"state": state, "agent": ""}
        for name, value in changes.items():
            kind = _CHANGEABLE.get(name)
            if kind is None:
                raise StoreError(
                    f"site field {name!r} cannot be set; these can: {', '.join(_CHANGEABLE)}"
                )
            if kind is str:
                if not isinstance(value, str):
                    raise StoreError(f"site field {name!r} must be a string, not {value!r}")
            else:
                _check_number(name, value, integer=kind is int)
            columns[name] = value
        if (state == "crawling") != bool(columns["agent"]):
            raise StoreError("a site has an agent when it is crawling, and only then")
        before = self._existing(site_id)
        if before.state == "removed" and state != "removed":
            owner = self.find_site_for(before.start_url)
            if owner is not None:
                raise DuplicateSite(
                    f"site {site_id} cannot come back: its start URL {before.start_url} now"
                    f" belongs to site {owner.id}"
                )
        with self._writing() as db:
            assignments = ", ".join(f"{name} = ?" for name in columns)
            db.execute(f"UPDATE sites SET {assignments} WHERE id = ?", (*columns.values(), site_id))
            if state == "removed":
                db.execute("DELETE FROM edges WHERE src = ? OR dst = ?", (site_id, site_id))
        if state == "removed":
            self._unindex(site_id)
        elif before.state == "removed":
            self._index(site_id, before.accept)
        self._track([site_id])

    def set_priority(self, site_id: int, priority: float) -> None:
        self._existing(site_id)
        self.set_priorities({site_id: priority})

    def set_priorities(self, priorities: Mapping[int, float]) -> None:
        for priority in priorities.values():
            _check_number("priority", priority)
        with self._writing() as db:
            db.executemany(
                "UPDATE sites SET priority = ? WHERE id = ?",
                [(priority, site_id) for site_id, priority in priorities.items()],
            )
        self._track(priorities)

    # -- the schedule -----------------------------------------------------------------------------

    def next_sites(self, now: float, limit: int) -> list[Site]:
        if now < self._due_until:
            # Asked about an earlier time: what is not due then goes back to the database's side.
            self._due = {site: due for site, due in self._due.items() if due[1] <= now}
            self._rebuild_heap()
            self._due_until = now
        elif now > self._due_until:
            rows = self._read(
                f"SELECT id, state, priority, next_crawl FROM sites {self._DUE}"
                f" WHERE state IN {SCHEDULED!r} AND next_crawl > ? AND next_crawl <= ?",
                (self._due_until, now),
            )
            self._due_until = now
            for row in rows:
                self._note(*row)
        chosen: list[int] = []
        taken: list[tuple[float, float, int]] = []
        heap = self._due_heap
        while heap and len(chosen) < limit:
            entry = heappop(heap)
            negative_priority, next_crawl, site_id = entry
            if self._due.get(site_id) == (-negative_priority, next_crawl):
                taken.append(entry)
                chosen.append(site_id)
        for entry in taken:
            heappush(heap, entry)
        if len(heap) > 2 * len(self._due) + 1024:
            self._rebuild_heap()
        return self._sites_by_id(chosen)

    def claim(self, site_id: int, agent: str, now: float) -> bool:
        if not agent:
            raise StoreError("a site is claimed by a named agent")
        with self._writing() as db:
            claimed: int = db.execute(
                "UPDATE sites SET state = 'crawling', agent = ?, claimed = ?"
                f" WHERE id = ? AND state IN {SCHEDULED!r}",
                (agent, now, site_id),
            ).rowcount
        if claimed:
            self._due.pop(site_id, None)
        return claimed == 1

    def agent_site(self, agent: str) -> Site | None:
        rows = self._read(
            f"SELECT {_SITE_COLUMNS} FROM sites WHERE state = 'crawling' AND agent = ?"
            " ORDER BY claimed LIMIT 1",
            (agent,),
        )
        return _site(rows[0]) if rows else None

    def release_agent(self, agent: str) -> list[int]:
        with self._writing() as db:
            released = [
                row[0]
                for row in db.execute(
                    "SELECT id FROM sites WHERE state = 'crawling' AND agent = ?", (agent,)
                )
            ]
            # Due when it was claimed (at the latest), so it keeps its place in the queue.
            db.execute(
                "UPDATE sites SET state = 'queued', agent = '',"
                f" next_crawl = {self._LEAST}(next_crawl, claimed)"
                " WHERE state = 'crawling' AND agent = ?",
                (agent,),
            )
        self._track(released)
        return released

    def finish(
        self,
        site_id: int,
        report: Mapping[str, Any],
        signature_file: str,
        chunk_file: str,
        now: float,
        *,
        new_chunk_share: float | None = None,
        second: str = "",
    ) -> None:
        site = self._existing(site_id)
        started = site.claimed if site.state == "crawling" else _number(report, "started") or now
        if second:
            started = _number(report, "started") or now
        with self._writing() as db:
            db.execute(
                "INSERT INTO crawls (site, agent, started, finished, pages, new_contents,"
                " known_contents, new_chunk_share, report) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    site_id,
                    second or site.agent,
                    started,
                    now,
                    _count(report, "pages"),
                    _count(report, "new_contents"),
                    _count(report, "known_contents"),
                    new_chunk_share,
                    _stored_report(report),
                ),
            )
            if second:
                db.execute(
                    "UPDATE sites SET crawls = crawls + 1, last_crawl = ? WHERE id = ?",
                    (now, site_id),
                )
                return
            # SET expressions see the row as it was: a site paused, blacklisted or removed while
            # it was crawled stays so.
            db.execute(
                "UPDATE sites SET signature_file = ?, chunk_file = ?, last_crawl = ?,"
                " crawls = crawls + 1,"
                " next_crawl = CASE WHEN state IN ('crawling', 'queued', 'idle')"
                " THEN ? + interval ELSE next_crawl END,"
                " agent = CASE WHEN state IN ('crawling', 'queued', 'idle') THEN '' ELSE agent END,"
                " state = CASE WHEN state IN ('crawling', 'queued', 'idle') THEN 'idle' ELSE state END"
                " WHERE id = ?",
                (signature_file, chunk_file, now, now, site_id),
            )
        self._track([site_id])

    def crawls(self, site_id: int, limit: int = 10) -> list[Crawl]:
        rows = self._read(
            f"SELECT {', '.join(_CRAWL_FIELDS)} FROM crawls WHERE site = ? ORDER BY id DESC LIMIT ?",
            (site_id, limit),
        )
        return [_crawl(row) for row in rows]

    # -- the graph --------------------------------------------------------------------------------

    def add_edges(self, src: int, dst_counts: Mapping[int, int], now: float) -> None:
        rows = [
            (src, dst, count, now) for dst, count in dst_counts.items() if dst != src and count > 0
        ]
        if not rows:
            return
        with self._writing() as db:
            db.executemany(
                "INSERT INTO edges (src, dst, count, last_seen) VALUES (?,?,?,?)"
                " ON CONFLICT (src, dst) DO UPDATE"
                " SET count = excluded.count, last_seen = excluded.last_seen",
                rows,
            )

    def edges(self) -> Iterator[tuple[int, int, int]]:
        return self._stream("SELECT src, dst, count FROM edges")

    def set_ranks(self, hubs: Mapping[int, float], authorities: Mapping[int, float]) -> None:
        with self._writing() as db:
            db.execute("UPDATE sites SET hub = 0, authority = 0 WHERE hub != 0 OR authority != 0")
            db.executemany(
                "UPDATE sites SET hub = ?, authority = ? WHERE id = ?",
                [
                    (hubs.get(site_id, 0.0), authorities.get(site_id, 0.0), site_id)
                    for site_id in hubs.keys() | authorities.keys()
                ],
            )

    def referrers(self, site_id: int) -> list[tuple[Site, int]]:
        columns = ", ".join(f"s.{name}" for name in _SITE_FIELDS)
        rows = self._read(
            f"SELECT {columns}, e.count FROM edges e JOIN sites s ON s.id = e.src"
            " WHERE e.dst = ? ORDER BY e.count DESC, s.id",
            (site_id,),
        )
        return [(_site(row[:-1]), row[-1]) for row in rows]

    # -- the campaign -----------------------------------------------------------------------------

    def get_setting(self, key: str, default: str = "") -> str:
        rows = self._read("SELECT value FROM settings WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else default

    def set_setting(self, key: str, value: str) -> None:
        with self._writing() as db:
            db.execute(
                "INSERT INTO settings (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATES, 0)
        for state, count in self._read("SELECT state, count(*) FROM sites GROUP BY state"):
            counts[state] = count
        counts["sites"] = sum(counts.values())
        counts["edges"] = self._read("SELECT count(*) FROM edges")[0][0]
        counts["crawls"] = self._read("SELECT count(*) FROM crawls")[0][0]
        return counts

    # -- streams ----------------------------------------------------------------------------------

    def found_streams(
        self, site_id: int, urls: Iterable[str], record: bool, now: float
    ) -> list[Stream]:
        keys: dict[str, str] = {}
        for url in urls:
            with suppress(BadUrl):
                keys.setdefault(canonical_url(url), url)
        state = "waiting" if record else "found"
        added = []
        with self._writing() as db:
            for key, url in keys.items():
                if db.execute("SELECT 1 FROM streams WHERE key = ?", (key,)).fetchone():
                    continue
                stream_id = _insert_stream(db, url, key, site_id, state, f"site {site_id}", now)
                _stream_event(db, stream_id, now, "found", "", f"site {site_id}, {state}")
                added.append(stream_id)
        return [stream for stream_id in added if (stream := self.stream(stream_id)) is not None]

    def record_stream(self, url: str, site_id: int | None, now: float) -> Stream:
        key = canonical_url(url)
        if site_id is not None:
            self._existing(site_id)
        with self._writing() as db:
            row = db.execute("SELECT id, state FROM streams WHERE key = ?", (key,)).fetchone()
            if row is None:
                stream_id = _insert_stream(db, url, key, site_id, "waiting", "operator", now)
                _stream_event(db, stream_id, now, "added", "", "")
            else:
                stream_id, state = row
                if site_id is not None:
                    db.execute("UPDATE streams SET site = ? WHERE id = ?", (site_id, stream_id))
                if state in ("found", "stopped"):
                    db.execute("UPDATE streams SET state = 'waiting' WHERE id = ?", (stream_id,))
                    _stream_event(db, stream_id, now, "added", "", f"was {state}")
        stream = self.stream(stream_id)
        assert stream is not None
        return stream

    def move_stream(
        self,
        stream_id: int,
        state: str,
        event: str,
        now: float,
        *,
        agent: str = "",
        was: Sequence[str] = STREAM_STATES,
        was_agent: str | None = None,
        detail: str = "",
    ) -> bool:
        _check_stream_state(state)
        if (state == "recording") != bool(agent):
            raise StoreError("a stream has an agent when it is recording, and only then")
        condition = f"id = ? AND state IN ({', '.join('?' * len(was))})"
        parameters: list[Any] = [stream_id, *was]
        if was_agent is not None:
            condition += " AND agent = ?"
            parameters.append(was_agent)
        with self._writing() as db:
            row = db.execute(f"SELECT agent FROM streams WHERE {condition}", parameters).fetchone()
            if row is None:
                return False
            db.execute(
                "UPDATE streams SET state = ?, agent = ?,"
                " assigned = CASE WHEN ? != '' THEN ? ELSE assigned END WHERE id = ?",
                (state, agent, agent, now, stream_id),
            )
            _stream_event(db, stream_id, now, event, agent or row[0], detail)
        return True

    def stream(self, stream_id: int) -> Stream | None:
        rows = self._read(f"SELECT {_STREAM_COLUMNS} FROM streams WHERE id = ?", (stream_id,))
        return _stream(rows[0]) if rows else None

    def find_stream(self, url: str) -> Stream | None:
        rows = self._read(
            f"SELECT {_STREAM_COLUMNS} FROM streams WHERE key = ?", (canonical_url(url),)
        )
        return _stream(rows[0]) if rows else None

    def streams(self, state: str | None = None, limit: int = 1000, offset: int = 0) -> list[Stream]:
        if state is None:
            rows = self._read(
                f"SELECT {_STREAM_COLUMNS} FROM streams ORDER BY id LIMIT ? OFFSET ?",
                (limit, offset),
            )
        else:
            _check_stream_state(state)
            rows = self._read(
                f"SELECT {_STREAM_COLUMNS} FROM streams WHERE state = ? ORDER BY id"
                " LIMIT ? OFFSET ?",
                (state, limit, offset),
            )
        return [_stream(row) for row in rows]

    def agent_streams(self, agent: str) -> list[Stream]:
        rows = self._read(
            f"SELECT {_STREAM_COLUMNS} FROM streams WHERE state = 'recording' AND agent = ?"
            " ORDER BY id",
            (agent,),
        )
        return [_stream(row) for row in rows]

    def stream_load(self) -> dict[str, int]:
        rows = self._read(
            "SELECT agent, count(*) FROM streams WHERE state = 'recording' GROUP BY agent"
        )
        return {agent: count for agent, count in rows}

    def stream_progress(self, agent: str, report: Mapping[str, Any], now: float) -> Stream | None:
        stream_id, recording = report.get("stream"), report.get("recording")
        if type(stream_id) is not int or not isinstance(recording, str) or not recording:
            return None
        errors = report.get("errors")
        with self._writing() as db:
            if not db.execute("SELECT 1 FROM streams WHERE id = ?", (stream_id,)).fetchone():
                return None
            db.execute(
                "INSERT INTO stream_recordings (recording, stream, agent, started, last, bytes,"
                " chunks, titles, gaps, errors, drift, ended, reason)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (recording) DO UPDATE"
                f" SET last = {self._GREATEST}(stream_recordings.last, excluded.last),"
                " bytes = excluded.bytes, chunks = excluded.chunks, titles = excluded.titles,"
                " gaps = excluded.gaps, errors = excluded.errors, drift = excluded.drift,"
                f" ended = {self._GREATEST}(stream_recordings.ended, excluded.ended),"
                " reason = CASE WHEN excluded.reason != '' THEN excluded.reason"
                " ELSE stream_recordings.reason END"
                " WHERE stream_recordings.stream = excluded.stream"
                " AND stream_recordings.agent = excluded.agent",
                (
                    recording,
                    stream_id,
                    agent,
                    _number(report, "started") or now,
                    _number(report, "last"),
                    _count(report, "bytes"),
                    _count(report, "chunks"),
                    _count(report, "titles"),
                    _count(report, "gaps"),
                    json.dumps(errors if isinstance(errors, dict) else {}, default=str),
                    str(report.get("drift_text", "")),
                    now if report.get("ended") is True else 0.0,
                    str(report.get("reason", "")),
                ),
            )
            count, gaps, total, first, last = db.execute(
                "SELECT count(*), sum(gaps), sum(bytes),"
                " min(CASE WHEN chunks > 0 THEN started END), max(last)"
                " FROM stream_recordings WHERE stream = ?",
                (stream_id,),
            ).fetchone()
            if count:  # none when the recording belongs to another stream
                # int(): PostgreSQL sums integers as numeric.
                db.execute(
                    "UPDATE streams SET recordings = ?, gaps = ?, bytes = ?, first_recorded = ?,"
                    " last_recorded = ? WHERE id = ?",
                    (
                        count,
                        count - 1 + int(gaps),
                        int(total),
                        first or 0.0,
                        last or 0.0,
                        stream_id,
                    ),
                )
        return self.stream(stream_id)

    def stream_recordings(self, stream_id: int) -> list[StreamRecording]:
        rows = self._read(
            f"SELECT {', '.join(_RECORDING_FIELDS)} FROM stream_recordings WHERE stream = ?"
            " ORDER BY started",
            (stream_id,),
        )
        return [_recording(row) for row in rows]

    def stream_events(self, stream_id: int, limit: int = 100) -> list[StreamEvent]:
        rows = self._read(
            f"SELECT {', '.join(_EVENT_FIELDS)} FROM stream_events WHERE stream = ?"
            " ORDER BY id DESC LIMIT ?",
            (stream_id, limit),
        )
        return [StreamEvent(*row) for row in reversed(rows)]

    def stream_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STREAM_STATES, 0)
        for state, count in self._read("SELECT state, count(*) FROM streams GROUP BY state"):
            counts[state] = count
        counts["streams"] = sum(counts.values())
        return counts

    # -- inside -----------------------------------------------------------------------------------

    def _existing(self, site_id: int) -> Site:
        site = self.site(site_id)
        if site is None:
            raise NotFound(f"no site {site_id}", where=self.where)
        return site

    def _sites_by_id(self, site_ids: list[int]) -> list[Site]:
        """The sites, in the order given."""
        found: dict[int, Site] = {}
        for chunk, marks in in_chunks(site_ids):
            for row in self._read(
                f"SELECT {_SITE_COLUMNS} FROM sites WHERE id IN ({marks})", chunk
            ):
                found[row[0]] = _site(row)
        return [found[site_id] for site_id in site_ids if site_id in found]

    def _index(self, site_id: int, accept: str) -> None:
        keys = host_keys(accept)
        self._keys[site_id] = keys
        if keys is None:
            self._anywhere.add(site_id)
            return
        for key in keys:
            self._by_host.setdefault(key, set()).add(site_id)

    def _unindex(self, site_id: int) -> None:
        self._compiled.pop(site_id, None)
        keys = self._keys.pop(site_id, None)
        self._anywhere.discard(site_id)
        for key in keys or ():
            holders = self._by_host.get(key)
            if holders is not None:
                holders.discard(site_id)
                if not holders:
                    del self._by_host[key]

    def _matcher(self, site_id: int) -> Matcher:
        matcher = self._compiled.get(site_id)
        if matcher is not None:
            self._compiled.move_to_end(site_id)
            return matcher
        accept, reject = self._read("SELECT accept, reject FROM sites WHERE id = ?", (site_id,))[0]
        matcher = (
            compile_expression(accept, "accept expression"),
            compile_expression(reject, "reject expression"),
        )
        self._compiled[site_id] = matcher
        if len(self._compiled) > COMPILED_KEPT:
            self._compiled.popitem(last=False)
        return matcher

    def _track(self, site_ids: Iterable[int]) -> None:
        """Brings the due queue up to date with sites just written."""
        for chunk, marks in in_chunks(list(site_ids)):
            for row in self._read(
                f"SELECT id, state, priority, next_crawl FROM sites WHERE id IN ({marks})", chunk
            ):
                self._note(*row)

    def _note(self, site_id: int, state: str, priority: float, next_crawl: float) -> None:
        if state in SCHEDULED and next_crawl <= self._due_until:
            due = (priority, next_crawl)
            if self._due.get(site_id) != due:
                self._due[site_id] = due
                heappush(self._due_heap, (-priority, next_crawl, site_id))
        else:
            self._due.pop(site_id, None)

    def _rebuild_heap(self) -> None:
        self._due_heap = [(-due[0], due[1], site) for site, due in self._due.items()]
        heapify(self._due_heap)


class SqliteStore(SqlStore):
    """The store in one SQLite file, used by one process: WAL journal with synchronous=FULL (a
    commit is on disk when it returns) and an exclusive lock, so a second scheduler on the same
    file is refused instead of racing this one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(
                path, isolation_level=None, timeout=1.0, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise StoreError(f"{path}: cannot open the scheduler's database: {error}") from None
        try:
            self._open()
            self._load()
        except BaseException:
            self._db.close()
            raise

    def _open(self) -> None:
        try:
            self._db.execute("PRAGMA locking_mode=EXCLUSIVE")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as error:
            raise self._failure(error) from None
        tables = {row[0] for row in self._read("SELECT name FROM sqlite_master")}
        if not tables:
            with self._writing() as db:
                _create(db, _META_SCHEMA + _SCHEMA + _STREAM_SCHEMA)
                db.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
            return
        found = "meta" in tables and self._read(
            "SELECT value FROM meta WHERE key = 'schema_version'"
        )
        if not found or not str(found[0][0]).isdigit():
            raise StoreError(f"{self.path}: an SQLite database, but not a scheduler's")
        version = int(found[0][0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: written by a newer dlweb (schema version {version}, this one reads"
                f" up to {SCHEMA_VERSION}); upgrade dlweb to open it"
            )
        if version < 2:
            # A campaign from before streams: it goes on with empty stream tables.
            with self._writing() as db:
                _create(db, _STREAM_SCHEMA)
                db.execute(
                    "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
                )

    def close(self) -> None:
        self._db.close()

    def _read(self, sql: str, parameters: Iterable[Any] = ()) -> list[Any]:
        try:
            return self._db.execute(sql, tuple(parameters)).fetchall()
        except sqlite3.Error as error:
            raise self._failure(error) from None

    def _stream(self, sql: str) -> Iterator[Any]:
        try:
            cursor = self._db.execute(sql)
            while rows := cursor.fetchmany(EDGES_FETCHED):
                yield from rows
        except sqlite3.Error as error:
            raise self._failure(error) from None

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One transaction, committed (and synced) on leaving, rolled back on an error."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            raise self._failure(error) from None
        try:
            yield self._db
            self._db.execute("COMMIT")
        except BaseException as error:
            if self._db.in_transaction:
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            if isinstance(error, sqlite3.Error):
                raise self._failure(error) from None
            raise

    def _failure(self, error: sqlite3.Error) -> StoreError:
        text = str(error)
        if "locked" in text:
            return StoreError(IN_USE, where=self.path)
        if "not a database" in text or "malformed" in text:
            return StoreError(
                f"not a scheduler's database, or a damaged one ({text})", where=self.path
            )
        return StoreError(text, where=self.path)


_SITE_FIELDS = tuple(field.name for field in fields(Site))
_SITE_COLUMNS = ", ".join(_SITE_FIELDS)
_CRAWL_FIELDS = tuple(field.name for field in fields(Crawl))
_STREAM_FIELDS = tuple(field.name for field in fields(Stream))
_STREAM_COLUMNS = ", ".join(_STREAM_FIELDS)
_RECORDING_FIELDS = tuple(field.name for field in fields(StreamRecording))
_EVENT_FIELDS = tuple(field.name for field in fields(StreamEvent))
# Fields set_state may change besides the state, and their types.
_CHANGEABLE: dict[str, type] = {
    "next_crawl": float,
    "interval": float,
    "priority": float,
    "relevance": float,
    "change_rate": float,
    "max_depth": int,
    "agent": str,
}


def _site(row: Iterable[Any]) -> Site:
    values = dict(zip(_SITE_FIELDS, row, strict=True))
    values["seed"] = bool(values["seed"])
    return Site(**values)


def _crawl(row: Sequence[Any]) -> Crawl:
    values = dict(zip(_CRAWL_FIELDS, row, strict=True))
    values["report"] = json.loads(zlib.decompress(values["report"]))
    return Crawl(**values)


def _create(db: sqlite3.Connection, schema: str) -> None:
    for statement in schema.split(";"):
        if statement.strip():
            db.execute(statement)


def _stream(row: Sequence[Any]) -> Stream:
    return Stream(*row)


def _recording(row: Sequence[Any]) -> StreamRecording:
    values = dict(zip(_RECORDING_FIELDS, row, strict=True))
    values["errors"] = json.loads(values["errors"])
    return StreamRecording(**values)


def _insert_stream(
    db: Connection,
    url: str,
    key: str,
    site_id: int | None,
    state: str,
    source: str,
    now: float,
) -> int:
    stream_id: int = db.execute(
        "INSERT INTO streams (url, key, site, state, source, created) VALUES (?,?,?,?,?,?)"
        " RETURNING id",
        (url, key, site_id, state, source, now),
    ).fetchone()[0]
    return stream_id


def _stream_event(
    db: Connection, stream_id: int, now: float, event: str, agent: str, detail: str
) -> None:
    db.execute(
        "INSERT INTO stream_events (stream, time, event, agent, detail) VALUES (?,?,?,?,?)",
        (stream_id, now, event, agent, detail),
    )


def _check_state(state: str) -> None:
    if state not in STATES:
        raise StoreError(f"site state {state!r} is not one of {', '.join(STATES)}")


def _check_stream_state(state: str) -> None:
    if state not in STREAM_STATES:
        raise StoreError(f"stream state {state!r} is not one of {', '.join(STREAM_STATES)}")


def _check_number(name: str, value: object, integer: bool = False) -> None:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value):
        raise StoreError(f"site field {name!r} must be a finite number, not {value!r}")
    if integer and value < 0:
        raise StoreError(f"site field {name!r} must not be negative, not {value!r}")


def _number(report: Mapping[str, Any], key: str) -> float:
    """A report's figure, 0 when absent or not a number (reports come from the network)."""
    value = report.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return float(value)


def _count(report: Mapping[str, Any], key: str) -> int:
    return int(_number(report, key))


def _stored_report(report: Mapping[str, Any]) -> bytes:
    """The report as kept with its crawl: its external links (up to 10,000, the graph keeps what
    they say) replaced by their number, the rest as compressed JSON."""
    kept = {key: value for key, value in report.items() if key != "external_links"}
    links = report.get("external_links")
    kept["external_link_count"] = len(links) if isinstance(links, list) else 0
    return zlib.compress(json.dumps(kept, separators=(",", ":"), default=str).encode(), 6)
