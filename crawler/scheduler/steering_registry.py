"""What the operator steers a running campaign with, in the scheduler's database beside the sites
(store.py): the URLs injected into each site's next crawl, the campaign's blacklist patterns
(archive/blocklist.py) and the settings of domains. Every order carries them (service.py).

An injected URL waits for its site's next crawl; a crawl that reports clears those injected
before it was given out, so a URL injected while its site is crawled waits for the crawl after.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from archive.crawl_calls import MAX_INJECTED, ScoredUrl
from archive.scheduler_answers import DomainSettings

from .sql_engine import Connection, SqlEngine

__all__ = ["SteeringRegistry", "clear_injected"]

_STEERING_SCHEMA = """
CREATE TABLE injected (
    site INTEGER NOT NULL,
    url TEXT NOT NULL,
    score REAL NOT NULL,
    campaign TEXT NOT NULL,
    added REAL NOT NULL,
    PRIMARY KEY (site, url)
) WITHOUT ROWID;
CREATE TABLE blacklist (
    id INTEGER PRIMARY KEY,
    pattern TEXT NOT NULL UNIQUE
);
CREATE TABLE domains (
    domain TEXT PRIMARY KEY,
    budget INTEGER,
    min_delay REAL,
    max_delay REAL
) WITHOUT ROWID;
"""


class SteeringRegistry(SqlEngine):
    """Injected URLs, blacklist patterns and domain settings, each write one transaction."""

    def inject(self, site_id: int, urls: Sequence[ScoredUrl], now: float) -> None:
        """URLs waiting for the next crawl of a site; one injected again takes its new score."""
        with self._writing() as db:
            db.executemany(
                "INSERT INTO injected (site, url, score, campaign, added) VALUES (?,?,?,?,?)"
                " ON CONFLICT (site, url) DO UPDATE SET score = excluded.score,"
                " campaign = excluded.campaign, added = excluded.added",
                [(site_id, url.url, url.score, url.campaign, now) for url in urls],
            )

    def injected(self, site_id: int, limit: int = MAX_INJECTED) -> tuple[ScoredUrl, ...]:
        """The URLs waiting for a site's next crawl, highest score first."""
        rows = self._read(
            "SELECT url, score, campaign FROM injected WHERE site = ?"
            " ORDER BY score DESC, added, url LIMIT ?",
            (site_id, limit),
        )
        return tuple(ScoredUrl(url, score, campaign) for url, score, campaign in rows)

    def blacklist(self) -> tuple[str, ...]:
        """The blacklist's patterns, in the order they were added."""
        return tuple(str(row[0]) for row in self._read("SELECT pattern FROM blacklist ORDER BY id"))

    def add_to_blacklist(self, patterns: Iterable[str]) -> None:
        """Patterns (checked by the caller) added; one there already stays in its place."""
        with self._writing() as db:
            for pattern in patterns:
                db.execute(
                    "INSERT INTO blacklist (pattern) VALUES (?) ON CONFLICT (pattern) DO NOTHING",
                    (pattern,),
                )

    def remove_from_blacklist(self, patterns: Iterable[str]) -> None:
        with self._writing() as db:
            db.executemany("DELETE FROM blacklist WHERE pattern = ?", [(p,) for p in patterns])

    def set_domain(self, settings: DomainSettings) -> None:
        """A domain's settings replaced; with none set, the domain is forgotten."""
        with self._writing() as db:
            db.execute("DELETE FROM domains WHERE domain = ?", (settings.domain,))
            values = (settings.budget, settings.min_delay, settings.max_delay)
            if any(value is not None for value in values):
                db.execute(
                    "INSERT INTO domains (domain, budget, min_delay, max_delay) VALUES (?,?,?,?)",
                    (settings.domain, *values),
                )

    def domains(self) -> list[DomainSettings]:
        """Every domain's settings, by name."""
        rows = self._read(
            "SELECT domain, budget, min_delay, max_delay FROM domains ORDER BY domain"
        )
        return [DomainSettings(*row) for row in rows]


def clear_injected(db: Connection, site_id: int, until: float) -> None:
    """Forgets the URLs injected into a site up to `until`, when the crawl given them reports."""
    db.execute("DELETE FROM injected WHERE site = ? AND added <= ?", (site_id, until))
