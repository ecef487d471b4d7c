"""`python -m deploy [up|down|demo] ...`: the same as `dlweb up` (the default), `dlweb down` and
`dlweb demo`."""

import argparse
import sys

from archive.command_line import run

from .cli import register

parser = argparse.ArgumentParser(prog="python -m deploy", description="a local dlweb cluster")
register(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
argv = sys.argv[1:]
if not argv or argv[0] not in ("up", "down", "demo", "-h", "--help"):
    argv = ["up", *argv]
sys.exit(run(parser, argv))
