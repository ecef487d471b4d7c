import sys

from archive.cli import build_parser, run

sys.exit(run(build_parser(), ["up", *sys.argv[1:]]))
