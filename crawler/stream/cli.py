"""`dlweb stream URL --duration D`: record live streams into the cluster for a while."""

import argparse

from archive.command_line import Subparsers, add_config_option, positive_int, positive_seconds

from ..cli import add_resolve_option, add_scheduler_options
from .assignment import parse_rendition
from .settings import StreamSettings

__all__ = [
    "add_agent_arguments",
    "add_chunk_options",
    "add_stream_arguments",
    "register_agent",
    "register_stream",
]

DEFAULT_CAPACITY = 16
REPORT_EVERY = 30.0


def add_chunk_options(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """--chunk-seconds and --point-seconds, the shape of the recorded chunks; named with
    `prefix` ("stream-") among options that are not all about streams."""
    chunk = prefix.replace("-", " ") + "chunk"
    metavar = "SECONDS" if prefix else None
    for name, default, what in (
        ("chunk", StreamSettings.chunk_seconds, f"a stored {chunk} spans at most"),
        ("point", StreamSettings.point_seconds, f"between two points of a {chunk}"),
    ):
        parser.add_argument(
            f"--{prefix}{name}-seconds",
            type=positive_seconds,
            default=default,
            metavar=metavar,
            help=f"collection seconds {what} (default %(default)g)",
        )


def add_stream_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("urls", nargs="+", metavar="URL", help="stream to record")
    parser.add_argument(
        "--duration", type=positive_seconds, required=True, help="seconds to record for"
    )
    add_chunk_options(parser)
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
    parser.set_defaults(
        run="crawler.stream.session:run_stream"
    )  # a server's collector schedule, as the stream agent's


def register_stream(subparsers: Subparsers) -> None:
    add_stream_arguments(
        subparsers.add_parser("stream", help="record live streams (Icecast, HLS) for a while")
    )


def add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    add_scheduler_options(parser, "streamer")
    parser.add_argument(
        "--capacity",
        type=positive_int,
        default=DEFAULT_CAPACITY,
        help="streams recorded at once, at most (default %(default)s)",
    )
    parser.add_argument(
        "--report-every",
        type=positive_seconds,
        default=REPORT_EVERY,
        metavar="SECONDS",
        help="seconds between two progress reports to the scheduler (default %(default)g)",
    )
    add_config_option(parser)
    parser.set_defaults(run="crawler.stream.agent:run")


def register_agent(subparsers: Subparsers) -> None:
    add_agent_arguments(
        subparsers.add_parser(
            "stream-agent", help="run a streaming agent that records live streams for a scheduler"
        )
    )
