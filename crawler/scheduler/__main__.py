import sys

from archive.command_line import standalone

from .cli import add_scheduler_arguments

sys.exit(
    standalone("python -m crawler.scheduler", "dlweb crawl scheduler", add_scheduler_arguments)
)
