"""The scheduler's whole state on disk: sites, their crawls, the graph of links between sites and
the campaign's settings, so that a scheduler killed at any moment resumes where it stopped; and
the streams its sites' crawls report, whose register (stream_registry.py) shares the database.
A finished crawl's external links wait in `link_reports` until the expansion policy has applied
them (expansion.py): the edges and the sites they register are written in the transaction that
takes the crawl out of the table.

`Store` is the interface the scheduler uses; `Store` implements it in SQL written once for both
engines (sql_engine.py), `SqliteStore` on one SQLite file (the default) and `PgStore` (pg_store.py)
on a PostgreSQL database. Every write is one transaction, committed and synced before the method
returns.

A site is a delimitation: a start URL, accept and reject expressions (crawler.delimitation) and a
maximum depth. Accept expressions are disjoint between sites, so a URL belongs to at most one
site, which `find_site_for` names. A site's state is one of:

- queued: to be crawled once `next_crawl` has come (0, a new site's, means at once);
- crawling: given to an agent;
- idle: crawled, to be crawled again at `next_crawl`;
- blacklisted: failed the campaign's filters; kept, so that links to it are recognised;
- paused: kept out of the schedule by the operator;
- removed: forgotten; no URL belongs to it any more.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
import zlib
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypedDict

from archive.errors import NotFound
from archive.scheduler_answers import Crawl, Site
from archive.sql import in_chunks
from archive.urlkey import canonical_url

from ..delimitation import Delimitation
from .due_queue import SCHEDULED, DueQueue
from .host_index import HostIndex
from .reports import report_count, report_number
from .sql_engine import IN_USE, Connection, StoreError
from .steering_registry import _STEERING_SCHEMA, SteeringRegistry, clear_injected
from .stream_registry import _STREAM_SCHEMA, StreamRegistry

__all__ = [
    "DEFAULT_INTERVAL",
    "SCHEMA_VERSION",
    "STATES",
    "Crawl",
    "DuplicateSite",
    "LinkReport",
    "NewSite",
    "Site",
    "SiteOptions",
    "SqliteStore",
    "Store",
    "StoreError",
]

SCHEMA_VERSION = 4  # 2: the stream tables; 3: link_reports; 4: injected, blacklist, domains
STATES = ("queued", "crawling", "idle", "blacklisted", "paused", "removed")
DEFAULT_INTERVAL = 86_400.0  # a new site's re-crawl interval, until its changes are measured
EDGES_FETCHED = 10_000  # rows read at a time when edges are streamed

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
# A finished crawl's external links (canonical URLs, a JSON list), until they are applied.
_LINKS_SCHEMA = """
CREATE TABLE link_reports (
    crawl INTEGER NOT NULL,
    site INTEGER NOT NULL,
    links TEXT NOT NULL,
    PRIMARY KEY (crawl)
);
"""
_INSERT_SITE = (
    "INSERT INTO sites (start_url, accept, reject, max_depth, state, priority, seed,"
    " source, next_crawl, interval, created) VALUES (?,?,?,?,'queued',?,?,?,?,?,?)"
    " RETURNING id"
)


class SiteOptions(TypedDict, total=False):
    """What a new site may be given besides its delimitation; `Store.add_site` holds the
    defaults of those left out."""

    max_depth: int
    priority: float
    source: str
    seed: bool


class DuplicateSite(StoreError):
    """A new site whose start URL already belongs to a registered site."""


@dataclass(frozen=True)
class LinkReport:
    """The external links of a finished crawl of `site`, waiting for the expansion policy."""

    crawl: int
    site: int
    links: tuple[str, ...]


@dataclass(frozen=True)
class NewSite:
    """A site the expansion policy registers, its delimitation checked (start URL canonical,
    accept not empty), and how many of the applied links lead to it."""

    start_url: str
    accept: str
    reject: str
    max_depth: int
    priority: float
    source: str
    links: int


class Store(StreamRegistry, SteeringRegistry):
    """What the scheduler keeps, every write committed before the method returns: its sites, its
    streams as StreamRegistry keeps them, and what the operator steers the campaign with as
    SteeringRegistry keeps it. The SQL is written once for both engines, and
    what it keeps in memory, rebuilt at open (`_load`) and kept up to date by every write: the
    host index of the delimitations (host_index.py) and the due queue (due_queue.py). Its engines
    implement reading, streaming and writing."""

    # How next_sites reads the due sites: without statistics, SQLite would rather walk every
    # queued site by state.
    _DUE = "INDEXED BY sites_due"

    def _load(self) -> None:
        """Reads the host index from the database, and empties the due queue."""
        self._hosts = HostIndex(self._delimitation)
        self._due = DueQueue()
        for site_id, accept in self._read("SELECT id, accept FROM sites WHERE state != 'removed'"):
            self._hosts.add(site_id, accept)

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
        """A new queued site; DuplicateSite when its start URL belongs to a registered one, and
        BadOrder when the delimitation is wrong (an empty accept is derived from the start URL)."""
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
                _INSERT_SITE,
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
        self._hosts.add(site_id, delimitation.accept)
        self._track([site_id])
        return self._existing(site_id)

    def site(self, site_id: int) -> Site | None:
        rows = self._read(f"SELECT {_SITE_COLUMNS} FROM sites WHERE id = ?", (site_id,))
        return _site(rows[0]) if rows else None

    def sites(self, state: str | None = None, limit: int = 1000, offset: int = 0) -> list[Site]:
        """Sites in the order they were registered, all or those in `state`."""
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
        """The site a canonical URL belongs to (accepted, not rejected), removed ones aside."""
        for site_id in self._hosts.candidates(url):
            accepts, rejects = self._hosts.matcher(site_id)
            if accepts(url) and not rejects(url):
                return self.site(site_id)
        return None

    def set_state(self, site_id: int, state: str, **changes: float | str) -> None:
        """Moves a site to `state`, also setting any of next_crawl, interval, priority,
        relevance, change_rate, max_depth, agent. Only crawling has an agent, and needs one
        (claim is the usual way there); the other states clear it."""
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
            self._hosts.remove(site_id)
        elif before.state == "removed":
            self._hosts.add(site_id, before.accept)
        self._track([site_id])

    def set_priority(self, site_id: int, priority: float) -> None:
        self._existing(site_id)
        self.set_priorities({site_id: priority})

    def set_priorities(self, priorities: Mapping[int, float]) -> None:
        """set_priority for many sites in one transaction."""
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
        """Queued and idle sites due at `now`, highest priority first, then longest due."""
        due = self._due
        if now < due.until:
            due.rewind(now)
        elif now > due.until:
            rows = self._read(
                f"SELECT id, state, priority, next_crawl FROM sites {self._DUE}"
                f" WHERE state IN {SCHEDULED!r} AND next_crawl > ? AND next_crawl <= ?",
                (due.until, now),
            )
            due.until = now
            for row in rows:
                due.note(*row)
        return self._sites_by_id(due.first(limit))

    def claim(self, site_id: int, agent: str, now: float) -> bool:
        """Gives a queued or idle site to `agent`; False when it is in no such state."""
        if not agent:
            raise StoreError("a site is claimed by a named agent")
        with self._writing() as db:
            claimed: int = db.execute(
                "UPDATE sites SET state = 'crawling', agent = ?, claimed = ?"
                f" WHERE id = ? AND state IN {SCHEDULED!r}",
                (agent, now, site_id),
            ).rowcount
        if claimed:
            self._due.drop(site_id)
        return claimed == 1

    def agent_site(self, agent: str) -> Site | None:
        """The site `agent` is crawling."""
        rows = self._read(
            f"SELECT {_SITE_COLUMNS} FROM sites WHERE state = 'crawling' AND agent = ?"
            " ORDER BY claimed LIMIT 1",
            (agent,),
        )
        return _site(rows[0]) if rows else None

    def release_agent(self, agent: str) -> list[int]:
        """Puts back in the queue, due at once, the sites `agent` was crawling."""
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
        links: Sequence[str] = (),
    ) -> None:
        """Records a crawl, keeps its signature and chunk files on the site and makes a crawling,
        queued or idle site idle, due again after its interval. The crawl of a `second` agent
        sent while the first still crawls is recorded and leaves the site as it is. Its
        external `links` (canonical URLs) wait in link_reports for the expansion policy. The URLs
        injected into the site before the crawl was given out are forgotten."""
        site = self._existing(site_id)
        started = (
            site.claimed if site.state == "crawling" else report_number(report, "started") or now
        )
        if second:
            started = report_number(report, "started") or now
        with self._writing() as db:
            crawl_id = db.execute(
                "INSERT INTO crawls (site, agent, started, finished, pages, new_contents,"
                " known_contents, new_chunk_share, report) VALUES (?,?,?,?,?,?,?,?,?)"
                " RETURNING id",
                (
                    site_id,
                    second or site.agent,
                    started,
                    now,
                    report_count(report, "pages"),
                    report_count(report, "new_contents"),
                    report_count(report, "known_contents"),
                    new_chunk_share,
                    _stored_report(report),
                ),
            ).fetchone()[0]
            if links:
                db.execute(
                    "INSERT INTO link_reports (crawl, site, links) VALUES (?,?,?)",
                    (crawl_id, site_id, json.dumps(list(links))),
                )
            if second:
                db.execute(
                    "UPDATE sites SET crawls = crawls + 1, last_crawl = ? WHERE id = ?",
                    (now, site_id),
                )
                return
            clear_injected(db, site_id, started)
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
        """A site's last crawls, newest first."""
        rows = self._read(
            f"SELECT {', '.join(_CRAWL_FIELDS)} FROM crawls WHERE site = ? ORDER BY id DESC LIMIT ?",
            (site_id, limit),
        )
        return [_crawl(row) for row in rows]

    # -- the graph --------------------------------------------------------------------------------

    def add_edges(self, src: int, dst_counts: Mapping[int, int], now: float) -> None:
        """Links from site `src` to other sites, and how many its last crawl found (self-links
        are left out); a later call for the same pair replaces its count."""
        with self._writing() as db:
            _upsert_edges(db, src, dst_counts, now)

    def link_reports(self, limit: int, leave_out: Collection[int] = ()) -> list[LinkReport]:
        """Crawls whose external links wait for the expansion policy, oldest first, those in
        `leave_out` (being resolved) aside."""
        rows = self._read(
            "SELECT crawl, site, links FROM link_reports ORDER BY crawl LIMIT ?",
            (limit + len(leave_out),),
        )
        return [
            LinkReport(crawl, site, tuple(json.loads(links)))
            for crawl, site, links in rows
            if crawl not in leave_out
        ][:limit]

    def links_waiting(self) -> int:
        """How many crawls' links wait for the expansion policy."""
        return int(self._read("SELECT count(*) FROM link_reports")[0][0])

    def apply_links(
        self, crawl: int, src: int, known: Mapping[int, int], new: Sequence[NewSite], now: float
    ) -> list[int] | None:
        """In one transaction, the links of crawl `crawl` applied: the sites in `new` registered
        (queued for a crawl now), the edges from `src` to them and to the `known` sites (with
        their counts) added, and the crawl taken out of link_reports. The new sites' ids; None
        when the crawl's links were applied already (nothing is written)."""
        with self._writing() as db:
            if not db.execute("SELECT 1 FROM link_reports WHERE crawl = ?", (crawl,)).fetchone():
                return None
            added = []
            counts = dict(known)
            for site in new:
                site_id: int = db.execute(
                    _INSERT_SITE,
                    (
                        site.start_url,
                        site.accept,
                        site.reject,
                        site.max_depth,
                        site.priority,
                        0,
                        site.source,
                        now,
                        DEFAULT_INTERVAL,
                        now,
                    ),
                ).fetchone()[0]
                added.append(site_id)
                counts[site_id] = site.links
            _upsert_edges(db, src, counts, now)
            db.execute("DELETE FROM link_reports WHERE crawl = ?", (crawl,))
        for site_id, site in zip(added, new, strict=True):
            self._hosts.add(site_id, site.accept)
        self._track(added)
        return added

    def edges(self) -> Iterator[tuple[int, int, int]]:
        """Every (src, dst, count) of the graph, read a batch at a time."""
        return self._stream("SELECT src, dst, count FROM edges")

    def set_ranks(self, hubs: Mapping[int, float], authorities: Mapping[int, float]) -> None:
        """Replaces every site's hub and authority ranks (absent sites get 0)."""
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
        """Sites linking to a site, with their link counts, most links first."""
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

    def settings_under(self, prefix: str) -> dict[str, str]:
        """The settings whose keys start with `prefix`, by key."""
        rows = self._read(
            "SELECT key, value FROM settings WHERE key >= ? AND key < ?",
            (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)),
        )
        return {str(key): str(value) for key, value in rows}

    def counts(self) -> dict[str, int]:
        """Sites in all and by state, edges, crawls."""
        counts = dict.fromkeys(STATES, 0)
        for state, count in self._read("SELECT state, count(*) FROM sites GROUP BY state"):
            counts[state] = count
        counts["sites"] = sum(counts.values())
        counts["edges"] = self._read("SELECT count(*) FROM edges")[0][0]
        counts["crawls"] = self._read("SELECT count(*) FROM crawls")[0][0]
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

    def _delimitation(self, site_id: int) -> tuple[str, str]:
        """A site's accept and reject expressions, for the host index to compile."""
        accept, reject = self._read("SELECT accept, reject FROM sites WHERE id = ?", (site_id,))[0]
        return accept, reject

    def _track(self, site_ids: Iterable[int]) -> None:
        """Brings the due queue up to date with sites just written."""
        for chunk, marks in in_chunks(list(site_ids)):
            for row in self._read(
                f"SELECT id, state, priority, next_crawl FROM sites WHERE id IN ({marks})", chunk
            ):
                self._due.note(*row)


class SqliteStore(Store):
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
                _create(
                    db,
                    _META_SCHEMA + _SCHEMA + _STREAM_SCHEMA + _LINKS_SCHEMA + _STEERING_SCHEMA,
                )
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
        if version < SCHEMA_VERSION:
            # A campaign from before streams goes on with empty stream tables, one from before
            # link_reports with no links waiting, one from before steering with nothing injected,
            # blacklisted or set.
            with self._writing() as db:
                _create(
                    db,
                    (_STREAM_SCHEMA if version < 2 else "")
                    + ("" if "link_reports" in tables else _LINKS_SCHEMA)
                    + ("" if "injected" in tables else _STEERING_SCHEMA),
                )
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


def _upsert_edges(db: Connection, src: int, dst_counts: Mapping[int, int], now: float) -> None:
    """Edges from `src` with their counts (self-links and counts of 0 left out), a pair's count
    replaced if it has one."""
    rows = [(src, dst, count, now) for dst, count in dst_counts.items() if dst != src and count > 0]
    if rows:
        db.executemany(
            "INSERT INTO edges (src, dst, count, last_seen) VALUES (?,?,?,?)"
            " ON CONFLICT (src, dst) DO UPDATE"
            " SET count = excluded.count, last_seen = excluded.last_seen",
            rows,
        )


def _create(db: sqlite3.Connection, schema: str) -> None:
    for statement in schema.split(";"):
        if statement.strip():
            db.execute(statement)


def _check_state(state: str) -> None:
    if state not in STATES:
        raise StoreError(f"site state {state!r} is not one of {', '.join(STATES)}")


def _check_number(name: str, value: object, integer: bool = False) -> None:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value):
        raise StoreError(f"site field {name!r} must be a finite number, not {value!r}")
    if integer and value < 0:
        raise StoreError(f"site field {name!r} must not be negative, not {value!r}")


def _stored_report(report: Mapping[str, Any]) -> bytes:
    """The report as kept with its crawl: its external links (up to 10,000, the graph keeps what
    they say) replaced by their number, the rest as compressed JSON."""
    kept = {key: value for key, value in report.items() if key != "external_links"}
    links = report.get("external_links")
    kept["external_link_count"] = len(links) if isinstance(links, list) else 0
    return zlib.compress(json.dumps(kept, separators=(",", ":"), default=str).encode(), 6)
