"""`dlweb import`, `dlweb export` and `dlweb cdxj`: WARC files in and out of the archive."""

import argparse
import asyncio
import functools
import logging
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archive import collector
from archive.cache import ReadCache
from archive.command_line import (
    Subparsers,
    add_config_option,
    add_search_index_option,
    search_index,
    timestamp,
)
from archive.config import load_config
from archive.errors import DlwebError

from .batches import DEFAULT_MAX_RECORD, BatchReader
from .wacz import check_wacz, export_wacz, is_wacz

if TYPE_CHECKING:
    from tqdm import tqdm

    from .importer import ImportSummary

# The reading thread lets the GIL go at every piece it inflates or hashes, then waits for the
# event loop's thread to give it back: by default up to 5 ms each time, which held up the reading,
# the stage that sets an import's pace. At 0.5 ms an import of 10,000 records took 4% less time
# (13 of 18 alternated runs) and no more CPU; the servers, tried the same way, gained nothing.
IMPORT_SWITCH_INTERVAL = 0.0005

_SIZE_RE = re.compile(r"(\d+)\s*([kmgt]?)i?b?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def byte_size(text: str) -> int:
    """An argparse type for a size in bytes: 5000, 64K, 100M, 2G."""
    match = _SIZE_RE.fullmatch(text.strip())
    if match is None or int(match[1]) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size such as 5000, 64K, 100M or 2G")
    return int(match[1]) * _UNITS[match[2].lower()]


def _input_files(paths: list[Path]) -> list[Path]:
    for path in paths:
        if not path.is_file():
            raise DlwebError(f"{path}: no such file")
    return paths


def _checked_inputs(paths: list[Path]) -> list[Path]:
    """The files to import, each WACZ package among them checked against its hashes first, so
    that a damaged one is refused before anything is imported."""
    for path in _input_files(paths):
        if is_wacz(path):
            check_wacz(path)
    return paths


def _terminal_bar(**options: Any) -> "tqdm[Any] | None":
    """A progress bar when stderr is a terminal, else None: tqdm is then not loaded at all (an
    import's client would load it while it reads its first batch)."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(**options)


class _Progress:
    """An import's progress bar in bytes (so MB/s) with records/s."""

    def __init__(self, bar: "tqdm[Any]") -> None:
        self.bar = bar
        self.started = time.monotonic()

    def batch(self, done: int, summary: "ImportSummary") -> None:
        records = sum(summary.records.values())
        rate = records / max(time.monotonic() - self.started, 1e-9)
        self.bar.set_postfix_str(f"{records:,} records, {rate:,.0f} records/s", refresh=False)
        self.bar.update(done - self.bar.n)

    def write(self, line: str) -> None:
        self.bar.write(line, file=sys.stderr)


async def _import(args: argparse.Namespace) -> int:
    paths = _checked_inputs(args.files)
    config = load_config(args.config)
    total = sum(p.stat().st_size for p in paths)
    started = time.monotonic()
    reading = BatchReader(paths, args.max_record_size).start()
    # Set where nothing can fail before the `try` that puts it back.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(IMPORT_SWITCH_INTERVAL)
    progress: _Progress | None = None
    try:
        # Loaded once the reading began (the bar and the network modules take a tenth of a second).
        bar = _terminal_bar(
            total=total, unit="B", unit_scale=True, unit_divisor=1000, desc="importing"
        )
        progress = _Progress(bar) if bar is not None else None
        from archive.cluster import ClusterClient

        from .importer import Importer

        async with ClusterClient(config) as client:
            importer = Importer(client, report=progress.write if progress else None)
            importer.on_batch = progress.batch if progress else None
            try:
                summary = await importer.run(reading)
            except DlwebError as exc:
                # The cluster refused a batch (no node has room for it, say): a batch it did
                # not confirm is not counted as stored, and importing again adds what is missing.
                print(
                    f"dlweb import: error: the import stopped: {exc}; what the cluster did not"
                    " confirm is not stored, and importing the same files again stores the rest",
                    file=sys.stderr,
                )
                return 1
    finally:
        if progress is not None:
            progress.bar.close()
        await reading.close()
        sys.setswitchinterval(switch_interval)
    elapsed = time.monotonic() - started
    for line in summary.lines():
        print(line)
    records = sum(summary.records.values())
    print(
        f"  {elapsed:.1f} s: {records / elapsed:,.0f} records/s,"
        f" {summary.read_bytes / elapsed / 1e6:,.1f} MB/s"
    )
    return 1 if summary.problems else 0


def _output(path: Path) -> Path:
    if path.is_dir() or not path.parent.is_dir():
        raise DlwebError(f"--out {path}: not a file in an existing folder")
    return path


def _export_format(args: argparse.Namespace) -> str:
    """The format asked for, else the one the name of `--out` says."""
    chosen: str = args.format or ("wacz" if args.out.suffix.lower() == ".wacz" else "warc")
    if chosen == "wacz" and args.out.suffix.lower() != ".wacz":
        raise DlwebError(f"--out {args.out}: the name of a WACZ file ends in .wacz")
    return chosen


def _show_export(bar: "tqdm[Any]", done: int, total: int) -> None:
    """An export's progress: `done` of `total` records written."""
    bar.total = total
    bar.update(done - bar.n)


async def _export(args: argparse.Namespace) -> int:
    out = _output(args.out)
    chosen = _export_format(args)
    if args.start is not None and args.end is not None and args.start > args.end:
        raise DlwebError("--from is later than --to")
    config = load_config(args.config)
    bar = _terminal_bar(unit=" records", desc="exporting")
    from archive.cluster import ClusterClient  # here: every other command would load aiohttp for it

    from .exporter import Selection, export_warc

    progress = functools.partial(_show_export, bar) if bar is not None else None
    index = search_index(args.search_index, args.config)
    selection = Selection(args.url_prefix, args.start, args.end, index)
    pages = None
    # The cache keeps the small contents read lately: a bundle of request records is read once,
    # though its records are written among other captures, in time order.
    async with ClusterClient(config, cache=ReadCache()) as client:
        try:
            if chosen == "wacz":
                summary, pages = await export_wacz(client, out, selection, progress)
            else:
                summary = await export_warc(client, out, selection, progress)
        finally:
            if bar is not None:
                bar.close()
    print(summary.line(out) + ("" if pages is None else f", {pages:,} pages listed"))
    return 0


def _cdxj(args: argparse.Namespace) -> int:
    from .cdxj import write_cdxj  # here: surt's imports slow down every other command

    out = _output(args.out)
    count = write_cdxj(_input_files(args.files), out)
    print(f"wrote {out}: {count:,} index lines")
    return 0


def register(subparsers: Subparsers) -> None:
    """Add `import`, `export` and `cdxj`."""
    importing = subparsers.add_parser(
        "import", help="import WARC and ARC files (gzipped or not) and WACZ packages"
    )
    importing.add_argument(
        "files", nargs="+", type=Path, metavar="FILE", help="WARC, ARC or WACZ file"
    )
    importing.add_argument(
        "--max-record-size",
        type=byte_size,
        default=DEFAULT_MAX_RECORD,
        metavar="SIZE",
        help="skip records larger than this (default 1G)",
    )
    importing.set_defaults(run=lambda args: asyncio.run(_import(args)))
    exporting = subparsers.add_parser(
        "export", help="write archived captures to a WARC file or a WACZ package"
    )
    exporting.add_argument(
        "--out", type=Path, required=True, help="the WARC file (.warc.gz) or WACZ package (.wacz)"
    )
    exporting.add_argument(
        "--format",
        choices=("warc", "wacz"),
        default=None,
        help="warc, or wacz (the WARC with its index and page list); default: by --out's name",
    )
    exporting.add_argument("--url-prefix", default=None, help="only URLs starting with this")
    add_search_index_option(
        exporting,
        "a search index whose URL keys find the URLs of --url-prefix without reading every"
        " structure file, when it holds them",
        "--search-index",
    )
    exporting.add_argument(
        "--from", dest="start", type=timestamp, default=None, help="earliest date"
    )
    exporting.add_argument("--to", dest="end", type=timestamp, default=None, help="latest date")
    exporting.set_defaults(run=lambda args: asyncio.run(_export(args)))
    for parser in (importing, exporting):
        add_config_option(parser)
        # A user's command: no connection chatter; a batch: the collector runs seldom.
        parser.set_defaults(log_level=logging.WARNING, collection=collector.BATCH)
    index = subparsers.add_parser("cdxj", help="write a sorted CDXJ index of WARC files")
    index.add_argument("files", nargs="+", type=Path, metavar="WARC", help="WARC file")
    index.add_argument("--out", type=Path, required=True, help="the index file (.cdxj)")
    index.set_defaults(run=_cdxj)
