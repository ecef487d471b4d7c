"""The `dlweb` command: `config`, `get` and `captures` here, every other subcommand found through
entry points.

Each package of the project registers its own subcommands in the ``dlweb.commands`` entry-point
group with a function ``register(subparsers)``, so the command root imports none of them. An
entry named after the command that runs is the only one loaded; without one (`--help`, or a
command whose package registers it under another name), all are.
"""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from archive.command_line import add_config_option, run
from archive.config import load_config, write_new_config

from . import browse


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
    """The parser of the root's own commands and of the package whose entry `argv`'s command
    names; of every package's only when no entry is named after it (`--help`, a mistyped
    command). The other packages are then not loaded: a command starts sooner."""
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
    browse.register(subparsers)
    command = _command_word(argv or [])
    if command not in subparsers.choices:
        from importlib.metadata import entry_points

        entries = sorted(entry_points(group="dlweb.commands"), key=lambda e: e.name)
        loaded: set[str] = set()
        for entry in [e for e in entries if e.name == command] or entries:
            if entry.value not in loaded:  # one register() may be named by several commands
                loaded.add(entry.value)
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


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    return run(build_parser(argv), argv)
