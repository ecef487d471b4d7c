"""The `dlweb` command: kernel subcommands here, the others found through entry points.

Each package of the project registers its own subcommand in the ``dlweb.commands`` entry-point
group with a function ``register(subparsers)``, so the kernel never imports them.
"""

import argparse
import gc
import importlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import browse, collector, warc
from .config import load_config, write_new_config
from .errors import ConfigError, DlwebError

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


def _config_init(args: argparse.Namespace) -> int:
    write_new_config(args.config, args.name, args.multicast_port)
    print(f"wrote {args.config} with a new cluster secret")
    return 0


def _config_check(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    print(f"{args.config}: cluster {config.name!r}, lookup {config.lookup}, ok")
    return 0


def _register_config(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    config = subparsers.add_parser("config", help="create or check a cluster configuration")
    actions = config.add_subparsers(dest="action", required=True)
    init = actions.add_parser("init", help="write a new configuration with a generated secret")
    add_config_option(init)
    init.add_argument("--name", default="dlweb", help="cluster name")
    init.add_argument("--multicast-port", type=int, default=None, help="UDP port for lookups")
    init.set_defaults(run=_config_init)
    check = actions.add_parser("check", help="validate a configuration file")
    add_config_option(check)
    check.set_defaults(run=_config_check)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or, when `argv` asks for one of the kernel's, of the
    kernel's only: the other packages' are then not loaded (a command starts sooner)."""
    parser = argparse.ArgumentParser(prog="dlweb", description="dlweb web archive")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument(
        "-c",
        "--config",
        dest="config_first",
        type=Path,
        metavar="CONFIG",
        help="cluster configuration file, for a command that takes one (also after it)",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _register_config(subparsers)
    browse.register(subparsers, add_config_option)
    warc.register(subparsers, add_config_option)
    command = _command_word(argv or [])
    if command not in subparsers.choices:
        from importlib.metadata import entry_points

        for entry in sorted(entry_points(group="dlweb.commands"), key=lambda e: e.name):
            entry.load()(subparsers)
    return parser


def _command_word(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` names: its first word that is neither an option nor the file
    given to a `-c` before it."""
    words = iter(argv)
    for word in words:
        if word in ("-c", "--config"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _config_first(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Apply a `-c` given before the subcommand, as git and kubectl take their options."""
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


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    return run(build_parser(argv), argv)
