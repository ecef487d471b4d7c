"""`dlweb stream`'s run: streams recorded for a while, then a report a stream."""

import argparse
import asyncio
import json
import logging

import uvloop

from archive.cluster import ClusterClient
from archive.config import load_config
from archive.timestamps import format_iso

from ..cli import resolve_map
from ..fetch import Resolver
from .recorder import record
from .report import Recording
from .settings import StreamSettings
from .store import STORE_GRACE, StreamStore

__all__ = ["run_stream"]

log = logging.getLogger(__name__)


def settings_of(args: argparse.Namespace) -> StreamSettings:
    return StreamSettings(
        chunk_seconds=args.chunk_seconds,
        point_seconds=args.point_seconds,
        timeout=args.timeout,
        rendition=args.rendition,
    )


async def _record_for(args: argparse.Namespace) -> list[Recording]:
    config = load_config(args.config)
    settings = settings_of(args)
    resolver = Resolver(resolve_map(args))
    recordings = [Recording(url) for url in args.urls]
    async with ClusterClient(config, "stream-recorder") as client:
        store = StreamStore(client)
        tasks = [asyncio.create_task(record(r, store, resolver, settings)) for r in recordings]
        await asyncio.sleep(args.duration)
        for task in tasks:
            task.cancel()
        ended = await asyncio.gather(*tasks, return_exceptions=True)
        for recording, outcome in zip(recordings, ended, strict=True):
            if isinstance(outcome, Exception):
                recording.errors["internal"] += 1
                log.error("%s: recording failed", recording.url, exc_info=outcome)
        try:
            await asyncio.wait_for(store.join(), STORE_GRACE)
        except TimeoutError:
            log.error("%d inserts still failing after %g s: given up", store.pending, STORE_GRACE)
    return recordings


def run_stream(args: argparse.Namespace) -> int:
    recordings = uvloop.run(_record_for(args))
    failed = 0
    for recording in recordings:
        report = recording.report()
        if args.json:
            print(json.dumps(report))
        else:
            _print(recording, report)
        if not recording.chunks:
            failed += 1
    return 1 if failed else 0


def _print(recording: Recording, report: dict[str, object]) -> None:
    if not recording.chunks:
        errors = ", ".join(f"{k} x{n}" for k, n in recording.errors.items()) or "nothing received"
        print(f"{recording.url}: NOT RECORDED ({errors})")
        return
    print(
        f"{recording.url}: {recording.protocol}, {recording.bytes / 1e6:.1f} MB in"
        f" {recording.chunks} chunks, {len(recording.titles)} titles,"
        f" {len(recording.gaps)} gaps; {report['drift_text']}"
    )
    for gap in recording.gaps:
        print(f"  gap {format_iso(gap.start)} .. {format_iso(gap.end)}: {gap.kind}: {gap.message}")
