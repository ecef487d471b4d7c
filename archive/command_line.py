"""What the command lines of every package share: argparse types, the options several commands
declare alike (--listen, --data and --db, a search index, the configuration), and running a
parsed command (`run`, for `dlweb` and `python -m <package>` alike: `command` makes both of one
declaration).

The `dlweb` command itself, into which each package registers its subcommands, is dlweb/cli.py.
"""

import argparse
import gc
import importlib
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from . import collector
from .config import SEARCH_FOLDER, ClusterConfig, load_config
from .errors import ConfigError, DlwebError
from .metadata import MetadataUrl, parse_metadata_url
from .timestamps import BadTime, parse_time

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Runner = Callable[[argparse.Namespace], int]
ArgumentAdder = Callable[[argparse.ArgumentParser], None]
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
DEFAULT_CONFIG = Path("dlweb-data") / "dlweb.yaml"
DB_FORMS = "a path, sqlite:///path or postgresql://user:password@host:port/database"
Parsed = TypeVar("Parsed")
Options = TypeVar("Options", bound="DataclassInstance")


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


def counting_to(highest: int, lowest: int = 1) -> Callable[[str], int]:
    """An argparse type for a whole number from `lowest` to `highest`."""

    def count(text: str) -> int:
        if not text.isdigit() or not lowest <= int(text) <= highest:
            raise argparse.ArgumentTypeError(
                f"{text!r} must be a whole number from {lowest} to {highest}"
            )
        return int(text)

    return count


def argument_type(
    parse: Callable[[str], Parsed], error: type[Exception], prefix: str = ""
) -> Callable[[str], Parsed]:
    """An argparse type made of a parser of text: the message of its `error` (less `prefix`) is
    what argparse tells of a bad value."""

    def parse_argument(text: str) -> Parsed:
        try:
            return parse(text)
        except error as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(prefix)) from None

    parse_argument.__name__ = parse.__name__
    return parse_argument


# An argparse type for a date (YYYYMMDD..., ISO 8601), in microseconds.
timestamp = argument_type(parse_time, BadTime)


def checked_directory(path: Path, option: str) -> Path:
    """A directory a command will create or use; refuses a path that is something else."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{option} {path} exists and is not a directory")
    return path


def serve_until_stopped(main: Coroutine[Any, Any, None]) -> int:
    """Run a server's `main` on uvloop until it returns (SIGINT or SIGTERM); the exit code."""
    # Here, not at the top: every `dlweb` command imports this module for its options.
    import uvloop

    uvloop.run(main)
    return 0


def add_number_option(
    parser: argparse.ArgumentParser,
    name: str,
    kind: Callable[[str], float],
    default: float,
    text: str,
    shown: str | None = None,
    metavar: str | None = None,
) -> None:
    """An option taking a number, its help `text` ending with its default: "(default N)", N the
    value itself unless `shown` tells it otherwise (in words, or with what it means), so that
    the help tells the default the option takes."""
    told = format(default, "g") if shown is None else shown
    parser.add_argument(
        name, type=kind, default=default, metavar=metavar, help=f"{text} (default {told})"
    )


def add_listen_option(parser: argparse.ArgumentParser, port: int, purpose: str = "") -> None:
    """--listen HOST:PORT, on loopback unless told otherwise."""
    parser.add_argument(
        "--listen",
        type=parse_listen,
        default=("127.0.0.1", port),
        help=" ".join(filter(None, ("HOST:PORT", purpose, f"(default 127.0.0.1:{port})"))),
    )


def add_data_option(
    parser: argparse.ArgumentParser, text: str, default: Path | None = None
) -> None:
    """--data, the folder a command keeps its files in: required where it has no default."""
    parser.add_argument("--data", type=Path, default=default, required=default is None, help=text)


def add_search_index_option(
    parser: argparse.ArgumentParser, text: str, option: str = "--index"
) -> None:
    """The folder of a search index, as `dlweb search rebuild` and the search indexer write it;
    `search_index` gives the default."""
    parser.add_argument(
        option,
        type=Path,
        default=None,
        metavar="DIR",
        help=f"{text} (default: {SEARCH_FOLDER} beside the configuration file, as `dlweb up`"
        " keeps it)",
    )


def search_index(given: Path | None, config: Path) -> Path:
    """The search index a command uses: the one given, else the cluster's own, beside its
    configuration file (`dlweb up --data DIR` keeps DIR/dlweb.yaml and DIR/search)."""
    return given if given is not None else config.parent / SEARCH_FOLDER


def add_state_options(
    parser: argparse.ArgumentParser,
    data: str,
    db: str,
    port: int,
    purpose: str = "",
    *,
    default: Path | None = None,
    db_after: str = "",
) -> None:
    """--data, --db and --listen: where a server keeps its state (a folder, its database there
    unless --db names another) and where it listens; `data`, `db` and `purpose` tell what for."""
    add_data_option(parser, data, default)
    parser.add_argument("--db", metavar="URL", help=f"{db}: {DB_FORMS}{db_after}")
    add_listen_option(parser, port, purpose)


def checked_db(args: argparse.Namespace) -> MetadataUrl | None:
    """The database --db names, if any: a bad URL is told before anything starts."""
    return None if args.db is None else parse_metadata_url(args.db, "--db")


def checked_state(args: argparse.Namespace) -> ClusterConfig:
    """The configuration of a server declared with `add_state_options`, once its --data folder
    and its --db URL are found good: what every such server checks before it starts."""
    checked_directory(args.data, "--data")
    config = load_config(args.config)
    checked_db(args)
    return config


def server_options(
    kind: type[Options], args: argparse.Namespace, config: ClusterConfig, **given: Any
) -> Options:
    """The options of a server declared with `add_state_options`, a dataclass: its --data, the
    host and port of its --listen, its `config`, the values `given`, and each other field the
    argument of its name (what the server takes as parsed is named once, not twice)."""
    host, port = args.listen
    known = {"data": args.data, "host": host, "port": port, "config": config, **given}
    return kind(
        **{
            field.name: known[field.name] if field.name in known else getattr(args, field.name)
            for field in fields(kind)
        }
    )


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


def standalone(prog: str, description: str, add_arguments: ArgumentAdder) -> int:
    """Run one command on its own, as `python -m <package>` does."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    add_arguments(parser)
    return run(parser)


def command(
    name: str, text: str, description: str, add_arguments: ArgumentAdder
) -> tuple[Callable[[Subparsers], None], Callable[[], int]]:
    """A package's own command: its `register` (its `dlweb.commands` entry point: `dlweb NAME`,
    `text` its help) and its `main` (`python -m <package>`, the package of `add_arguments`)."""
    package = add_arguments.__module__.rpartition(".")[0]

    def register(subparsers: Subparsers) -> None:
        add_arguments(subparsers.add_parser(name, help=text))

    def main() -> int:
        return standalone(f"python -m {package}", description, add_arguments)

    return register, main
