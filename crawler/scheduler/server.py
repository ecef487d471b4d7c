"""Running the scheduler: its store opened, its HTTP side served, until told to stop."""

import logging
from dataclasses import dataclass, field
from pathlib import Path

from archive.config import ClusterConfig
from archive.crawl_calls import Focus
from archive.discovery import SCHEDULER, Announcement
from archive.metadata import MetadataUrl, cluster_id
from archive.serving import serving

from ..stream.settings import StreamSettings
from .http import build_app
from .policy import Filters
from .service import Scheduler, SchedulerOptions
from .store import SqliteStore, Store

__all__ = ["DATABASE", "ServerOptions", "open_store", "serve"]

log = logging.getLogger(__name__)

DATABASE = "campaign.sqlite"


@dataclass
class ServerOptions:
    config: ClusterConfig
    data: Path
    host: str
    port: int
    keywords: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    expand: bool = True
    delay: float = 1.0
    burst: float = 10.0
    browser: str = "never"
    resolve: dict[str, list[str]] = field(default_factory=dict)
    first_interval: float = 86_400.0
    shortest: float = 3_600.0
    longest: float = 30 * 86_400.0
    feed_interval: float = 900.0
    agent_grace: float = 10.0
    agent_poll: float = 30.0
    quiet_crawls: int = 3
    full_crawl_every: int = 10
    paused: bool = False
    record_streams: bool = False
    stream_settings: StreamSettings = field(default_factory=StreamSettings)
    database: MetadataUrl | None = None  # --db; None for DATABASE in `data`
    inline: bool = True  # links and feeds handled here while no agent of the kind is connected
    focus: Focus | None = None  # --focus, read and checked


async def serve(options: ServerOptions) -> None:
    options.data.mkdir(parents=True, exist_ok=True)
    store = open_store(options)
    try:
        scheduler = Scheduler(
            store,
            options.config.secret,
            SchedulerOptions(
                work=options.data,
                filters=Filters(keywords=options.keywords, languages=options.languages),
                expand=options.expand,
                politeness={"delay": options.delay, "burst": options.burst},
                browser=options.browser,
                resolve=options.resolve,
                first_interval=options.first_interval,
                shortest=options.shortest,
                longest=options.longest,
                feed_interval=options.feed_interval,
                agent_grace=options.agent_grace,
                agent_poll=options.agent_poll,
                quiet_crawls=options.quiet_crawls,
                full_crawl_every=options.full_crawl_every,
                record_streams=options.record_streams,
                stream_settings=options.stream_settings,
                inline=options.inline,
                focus=options.focus,
            ),
        )
        if options.paused:
            scheduler.set_campaign("paused")
        app = build_app(scheduler, options.config.write_token)
        url = f"http://{options.host}:{options.port}"
        async with serving(app, options.host, options.port, options.config.http) as stop:
            await scheduler.start()
            log.info(
                "scheduler on %s/, campaign %s", url, "running" if scheduler.running else "paused"
            )
            try:
                async with Announcement(SCHEDULER, options.config, url):
                    await stop.wait()
            finally:
                await scheduler.stop()
    finally:
        store.close()


def open_store(options: ServerOptions) -> Store:
    """The campaign's store: the database --db names, else the SQLite file in the data folder."""
    database = options.database
    if database is None:
        return SqliteStore(options.data / DATABASE)
    if database.path is not None:
        return SqliteStore(database.path)
    from .pg_store import PgStore  # psycopg is loaded for a campaign on PostgreSQL only

    return PgStore(database.url, cluster_id(options.config.name, options.config.secret))
