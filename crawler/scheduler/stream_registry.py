"""The scheduler's register of live streams, in its database beside the sites (store.py): which
streaming agent records each stream, every agent's recordings of it and every decision about it.
Stream scheduling (streams.py) decides through it.

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
from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import fields
from typing import Any

from archive.scheduler_answers import Stream, StreamEvent, StreamRecording
from archive.urlkey import BadUrl, canonical_url

from .reports import report_count, report_number
from .sql_engine import Connection, SqlEngine, StoreError

__all__ = [
    "STREAM_STATES",
    "StreamRegistry",
    "Stream",
    "StreamEvent",
    "StreamRecording",
    "StreamRegistry",
]

STREAM_STATES = ("found", "waiting", "recording", "stopped")
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


class StreamRegistry(SqlEngine):
    """The streams the scheduler keeps, every write committed before the method returns; the SQL
    written once for both engines. Store (store.py) keeps it with the sites, whose existence it
    is asked about."""

    @abstractmethod
    def _existing(self, site_id: int) -> object:
        """The site `site_id`; NotFound when there is none."""

    def found_streams(
        self, site_id: int, urls: Iterable[str], record: bool, now: float
    ) -> list[Stream]:
        """Registers the stream URLs a crawl of a site reported that are not known yet (bad
        URLs are left out), waiting to be recorded if `record`, else found; the new ones."""
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
        """The operator's choice to record a stream: registered if new, waiting unless it is
        being recorded; BadUrl for a URL no agent can record, NotFound for an unknown site."""
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
        """Moves a stream in one of the states `was` (held by `was_agent`, when given) to
        `state`, recording `event`; only recording has an agent, and needs one. False when the
        stream was in none of them."""
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
        found = self._streams("WHERE id = ?", (stream_id,))
        return found[0] if found else None

    def find_stream(self, url: str) -> Stream | None:
        """The stream of a URL, by its canonical form; BadUrl for a bad URL."""
        found = self._streams("WHERE key = ?", (canonical_url(url),))
        return found[0] if found else None

    def streams(self, state: str | None = None, limit: int = 1000, offset: int = 0) -> list[Stream]:
        """Streams in the order they were registered, all or those in `state`."""
        if state is None:
            return self._streams("ORDER BY id LIMIT ? OFFSET ?", (limit, offset))
        _check_stream_state(state)
        return self._streams("WHERE state = ? ORDER BY id LIMIT ? OFFSET ?", (state, limit, offset))

    def agent_streams(self, agent: str) -> list[Stream]:
        """The streams `agent` is recording."""
        return self._streams("WHERE state = 'recording' AND agent = ? ORDER BY id", (agent,))

    def _streams(self, where: str, parameters: Sequence[Any]) -> list[Stream]:
        """The streams `where` (a WHERE clause, an ORDER BY) picks out."""
        return [
            _stream(row)
            for row in self._read(f"SELECT {_STREAM_COLUMNS} FROM streams {where}", parameters)
        ]

    def stream_load(self) -> dict[str, int]:
        """Streams being recorded, by agent."""
        rows = self._read(
            "SELECT agent, count(*) FROM streams WHERE state = 'recording' GROUP BY agent"
        )
        return {agent: count for agent, count in rows}

    def stream_progress(self, agent: str, report: Mapping[str, Any], now: float) -> Stream | None:
        """Keeps what an agent reported of one recording (its `stream`, `recording`, figures,
        whether it `ended`) and the stream's first and last recorded times and gaps; None when
        the report names no known stream."""
        stream_id, recording = report.get("stream"), report.get("recording")
        if type(stream_id) is not int or not isinstance(recording, str) or not recording:
            return None
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
                (recording, stream_id, agent, *_recording_figures(report, now)),
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
        """A stream's recordings, oldest first."""
        rows = self._read(
            f"SELECT {', '.join(_RECORDING_FIELDS)} FROM stream_recordings WHERE stream = ?"
            " ORDER BY started",
            (stream_id,),
        )
        return [_recording(row) for row in rows]

    def stream_events(self, stream_id: int, limit: int = 100) -> list[StreamEvent]:
        """A stream's last events, oldest first."""
        rows = self._read(
            f"SELECT {', '.join(_EVENT_FIELDS)} FROM stream_events WHERE stream = ?"
            " ORDER BY id DESC LIMIT ?",
            (stream_id, limit),
        )
        return [StreamEvent(*row) for row in reversed(rows)]

    def stream_counts(self) -> dict[str, int]:
        """Streams in all and by state."""
        counts = dict.fromkeys(STREAM_STATES, 0)
        for state, count in self._read("SELECT state, count(*) FROM streams GROUP BY state"):
            counts[state] = count
        counts["streams"] = sum(counts.values())
        return counts


_STREAM_FIELDS = tuple(field.name for field in fields(Stream))
_STREAM_COLUMNS = ", ".join(_STREAM_FIELDS)
_RECORDING_FIELDS = tuple(field.name for field in fields(StreamRecording))
_EVENT_FIELDS = tuple(field.name for field in fields(StreamEvent))


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


def _check_stream_state(state: str) -> None:
    if state not in STREAM_STATES:
        raise StoreError(f"stream state {state!r} is not one of {', '.join(STREAM_STATES)}")


def _recording_figures(report: Mapping[str, Any], now: float) -> tuple[Any, ...]:
    """The columns of stream_recordings from `started` on, as an agent's report gives them."""
    errors = report.get("errors")
    return (
        report_number(report, "started") or now,
        report_number(report, "last"),
        report_count(report, "bytes"),
        report_count(report, "chunks"),
        report_count(report, "titles"),
        report_count(report, "gaps"),
        json.dumps(errors if isinstance(errors, dict) else {}, default=str),
        str(report.get("drift_text", "")),
        now if report.get("ended") is True else 0.0,
        str(report.get("reason", "")),
    )
