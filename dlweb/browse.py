"""`dlweb get URL` and `dlweb captures URL`: a researcher's command-line view of one URL."""

import argparse
import asyncio
import json
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from archive.atomic import atomic_file
from archive.command_line import add_config_option, timestamp
from archive.config import load_config
from archive.structure import KEPT_RECORDS_URL
from archive.timestamps import format_iso

if TYPE_CHECKING:
    from archive.cluster import ClusterClient

MODES = ("closest", "before", "after", "exact")


async def _get(args: argparse.Namespace) -> int:
    from archive.cluster import ClusterClient  # here: every other command would load aiohttp for it
    from archive.reading import CaptureQuery, CaptureReader

    at = args.at if args.at is not None else time.time_ns() // 1000
    async with ClusterClient(load_config(args.config)) as client:
        reader = CaptureReader(client)
        if args.mode == "closest":
            reading = await reader.read(CaptureQuery(args.url, at))
        else:
            reading = await reader.read_at(args.url, at, args.mode)
        print(
            f"capture of {format_iso(reading.capture.time)}, status {reading.capture.status},"
            f" {reading.size} bytes" + (f" (fuzzy match: {reading.key})" if reading.fuzzy else ""),
            file=sys.stderr,
        )
        header = reading.block if args.headers else b""
        if args.out is None:
            sys.stdout.buffer.write(header)
            async for piece in reader.pieces(reading):
                sys.stdout.buffer.write(piece)
            sys.stdout.buffer.flush()
            return 0
        with atomic_file(args.out) as out:
            out.write(header)
            async for piece in reader.pieces(reading):
                out.write(piece)
    return 0


async def _captures(args: argparse.Namespace) -> int:
    from archive.cluster import ClusterClient  # here: every other command would load aiohttp for it

    async with ClusterClient(load_config(args.config)) as client:
        if args.url.startswith(KEPT_RECORDS_URL):
            return await _kept(client, args)
        found = await client.captures(args.url)
    if args.json:
        print(json.dumps([{**c.to_json(), "date": format_iso(c.time)} for c in found], indent=2))
        return 0
    for capture in found:
        print(
            f"{format_iso(capture.time):<28} {capture.status:>3} {capture.kind.name.lower():<13}"
            f" {capture.content}"
        )
    print(f"{len(found)} captures of {args.url}", file=sys.stderr)
    return 0


async def _kept(client: "ClusterClient", args: argparse.Namespace) -> int:
    """List the records an import kept that are not captures (warcinfo, a crawler's log...),
    with the WARC type and URI (or, for a warcinfo, the file name) each was read with."""
    from archive.errors import NotFound
    from archive.urlkey import structure_name
    from archive.warc.reader import split_kept
    from exchange.bundles import bundled_body

    try:
        _, records = await client.read_structure(structure_name(args.url), args.url)
    except NotFound:
        records = []
    contents: dict[str, bytes] = {}
    listed = []
    for record in records:
        if record.content not in contents:
            contents[record.content] = await client.get_content(record.content)
        fields, _ = split_kept(bundled_body(record, contents[record.content]))
        values = {name.lower(): value for name, value in reversed(fields)}
        names = values.get("warc-target-uri") or values.get("warc-filename") or ""
        listed.append((record, values.get("warc-type", ""), names))
    if args.json:
        shown = [
            {**c.to_json(), "date": format_iso(c.time), "warc_type": kind, "names": names}
            for c, kind, names in listed
        ]
        print(json.dumps(shown, indent=2))
        return 0
    for record, kind, names in listed:
        print(f"{format_iso(record.time):<28} {kind:<13} {names} {record.content}")
    print(f"{len(listed)} records kept at {args.url}", file=sys.stderr)
    return 0


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `get` and `captures` (the command root registers them: they only need the kernel)."""
    get = subparsers.add_parser("get", help="print the archived copy of a URL at a date")
    get.add_argument("url", help="the URL as it was archived")
    get.add_argument(
        "--at", type=timestamp, default=None, help="date (YYYYMMDD..., ISO); default now"
    )
    get.add_argument("--mode", choices=MODES, default="closest", help="which capture (closest)")
    get.add_argument("--headers", action="store_true", help="print the archived headers first")
    get.add_argument("-o", "--out", type=Path, default=None, help="write to FILE, not stdout")
    get.set_defaults(run=lambda args: asyncio.run(_get(args)))
    listing = subparsers.add_parser(
        "captures",
        help="list every capture of a URL (of http://records.dlweb/TYPE: the WARC records of"
        " that type an import kept that are not captures)",
    )
    listing.add_argument("url", help="the URL as it was archived")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(run=lambda args: asyncio.run(_captures(args)))
    for parser in (get, listing):
        add_config_option(parser)
        parser.set_defaults(log_level=logging.WARNING)  # a user's command: no connection chatter
