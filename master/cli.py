"""`dlweb master`: run the master of a cluster."""

import argparse

from archive.command_line import (
    add_config_option,
    add_state_options,
    checked_state,
    command,
    positive_seconds,
    serve_until_stopped,
    server_options,
)


def _run(args: argparse.Namespace) -> int:
    # Here, not at the top: every `dlweb` command imports this module for its options.
    from .server import serve
    from .service import MasterOptions

    config = checked_state(args)
    options = server_options(
        MasterOptions,
        args,
        config,
        metadata=args.db or config.metadata,
        scrub_every=args.scrub_every * 3600,
    )
    return serve_until_stopped(serve(options))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_state_options(
        parser,
        "directory for the master's database",
        "the master's metadata, if not the configuration's `metadata` or the SQLite file in --data",
        8100,
        "for HTTP and HIP",
    )
    parser.add_argument(
        "--grace",
        type=positive_seconds,
        default=30.0,
        help="seconds a lost node has to come back before it is down and re-replicated (30)",
    )
    parser.add_argument(
        "--dead-after",
        type=positive_seconds,
        default=7 * 86400.0,
        help="seconds down before a node is dead and its locations forgotten (one week)",
    )
    parser.add_argument(
        "--repair-rate",
        type=positive_seconds,
        default=20_000.0,
        help="files copied per second at most when restoring replicas (20000)",
    )
    parser.add_argument(
        "--scrub-every",
        type=float,
        default=168.0,
        help="hours between scrubs of each node; 0 scrubs only on demand (168)",
    )
    parser.add_argument(
        "--full-scan-every",
        type=positive_seconds,
        default=300.0,
        help="seconds between full scans for files below or above target, a safety net for the"
        " repair pass that otherwise looks only at files that changed (300)",
    )
    add_config_option(parser)
    parser.set_defaults(run=_run)


register, main = command(
    "master", "run the master of a cluster", "run a cluster master", add_arguments
)
