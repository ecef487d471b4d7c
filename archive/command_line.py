"""What the command lines of every package share: argparse types, the configuration option, and
running a parsed command (`run`, for `dlweb` and `python -m <package>` alike).

The `dlweb` command itself, into which each package registers its subcommands, is dlweb/cli.py.
"""

import argparse
import gc
import importlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import collector
from .errors import ConfigError, DlwebError
from .timestamps import BadTime, parse_time

Runner = Callable[[argparse.Namespace], int]
DEFAULT_CONFIG = Path("dlweb-data") / "dlweb.yaml"


def parse_listen(text: str) -> tuple[str, int]:
    """An argparse type for HOST:PORT."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT with a port 1-65535")
    return host.strip("[]"), int(port)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def positive_seconds(text: str) -> float:
    """An argparse type for a positive number (of seconds, or of anything per second)."""
    value = _number(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return value


def non_negative(text: str) -> float:
    """An argparse type for a finite number >= 0 (a delay that may be none)."""
    value = _number(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a number >= 0")
    return value


def positive_int(text: str) -> int:
    """An argparse type for a whole number >= 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return int(text)


def timestamp(text: str) -> int:
    """An argparse type for a date (YYYYMMDD..., ISO 8601), in microseconds."""
    try:
        return parse_time(text)
    except BadTime as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def checked_directory(path: Path, option: str) -> Path:
    """A directory a command will create or use; refuses a path that is something else."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{option} {path} exists and is not a directory")
    return path


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c",
        "--config",
        type=Path,
        default=DEFAULT_CONFIG,
        help=f"cluster configuration file (default: {DEFAULT_CONFIG})",
    )


def _config_first(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Apply a `-c` given before the subcommand (the `dlweb` parser's, dlweb/cli.py), as git and
    kubectl take their options."""
    first = getattr(args, "config_first", None)
    if first is None:
        return
    if not hasattr(args, "config"):
        parser.error(f"dlweb {args.command} takes no configuration file (-c)")
    if args.config not in (DEFAULT_CONFIG, first):
        parser.error(f"-c given twice, as {first} and {args.config}")
    args.config = first


def _reader_gone() -> int:
    """End quietly when the reader of the output went away (`dlweb status | head -3`): what
    is still buffered goes nowhere, and the status is that of a command killed by SIGPIPE."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 128 + 13


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse arguments and run the chosen command, turning dlweb errors into one clear line."""
    try:
        status = _run(parser, argv)
        sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()
    return status


def _run(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    parser.set_defaults(log_level=logging.INFO)
    args, extra = parser.parse_known_args(argv)
    _config_first(parser, args)
    # A command whose positionals may come after its options (`set_defaults(intermixed=NAME)`)
    # gets the words argparse left over; anything else left over is an error, as usual.
    intermixed = getattr(args, "intermixed", None)
    if extra and intermixed is not None and not any(word.startswith("-") for word in extra):
        getattr(args, intermixed).extend(extra)
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(
        level=logging.DEBUG if getattr(args, "verbose", False) else args.log_level,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    runner = _runner(args.run)
    # What start-up built (modules, classes, the parser) lives as long as the process: the
    # collector's passes need not look at it again.
    gc.freeze()
    # A command says how often its collector runs with `set_defaults(collection=...)`: a server
    # takes collector.SERVING, a command whose memory has a budget (a site crawler agent) None,
    # for Python's own schedule.
    collection = getattr(args, "collection", collector.SERVING)
    if collection is not None:
        gc.set_threshold(*collection)
    try:
        return runner(args)
    except DlwebError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _runner(run: "Runner | str") -> Runner:
    """A command's function to run: given itself, or named as "module:function" so that the
    module that defines the command's arguments need not import the module that does the work
    (which imports aiohttp and the rest only when its command runs)."""
    if not isinstance(run, str):
        return run
    module, _, name = run.partition(":")
    runner: Runner = getattr(importlib.import_module(module), name)
    return runner


def standalone(
    prog: str, description: str, add_arguments: Callable[[argparse.ArgumentParser], None]
) -> int:
    """Run one command on its own, as `python -m <package>` does."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    add_arguments(parser)
    return run(parser)
