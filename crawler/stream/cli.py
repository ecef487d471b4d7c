"""`dlweb stream URL --duration D`: record live streams into the cluster for a while."""

import argparse
import asyncio
import json
import logging

from archive.cli import add_config_option, positive_seconds
from archive.cluster import ClusterClient
from archive.config import load_config
from archive.timestamps import format_iso

from ..cli import add_resolve_option, resolve_map
from ..fetch import Resolver
from .recorder import record
from .recording import Recording, StreamSettings
from .store import StreamStore

__all__ = ["add_stream_arguments", "register_stream"]

log = logging.getLogger(__name__)

# Seconds the recorder has, once the duration is over, to store what it holds.
STORE_GRACE = 120.0


def parse_rendition(text: str) -> str:
    """An argparse type for an HLS rendition rule: highest, lowest, or a most bits/s."""
    if text in ("highest", "lowest") or (text.isdigit() and int(text) > 0):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not highest, lowest or a number of bits/s")


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


def _stream(args: argparse.Namespace) -> int:
    recordings = asyncio.run(_record_for(args))
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


def add_stream_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("urls", nargs="+", metavar="URL", help="stream to record")
    parser.add_argument(
        "--duration", type=positive_seconds, required=True, help="seconds to record for"
    )
    parser.add_argument(
        "--chunk-seconds",
        type=positive_seconds,
        default=StreamSettings.chunk_seconds,
        help="collection seconds a stored chunk spans at most (default %(default)g)",
    )
    parser.add_argument(
        "--point-seconds",
        type=positive_seconds,
        default=StreamSettings.point_seconds,
        help="collection seconds between two points of a chunk (default %(default)g)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=StreamSettings.timeout,
        help="seconds a server may stay silent before the stream counts as stalled",
    )
    parser.add_argument(
        "--rendition",
        type=parse_rendition,
        default=StreamSettings.rendition,
        help="HLS: the variant of a master playlist to record: highest, lowest, or the most"
        " bits/s (default %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print each report as JSON")
    add_resolve_option(parser)
    add_config_option(parser)
    parser.set_defaults(run=_stream, collection=None)


def register_stream(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    add_stream_arguments(
        subparsers.add_parser("stream", help="record live streams (Icecast, HLS) for a while")
    )
