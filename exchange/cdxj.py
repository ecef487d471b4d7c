"""`dlweb cdxj`: a sorted CDXJ index of WARC files, as pywb and other replay tools read it.

Each line is the URL's SURT key, the 14-digit capture time and a JSON object with the URL, MIME
type, status, payload digest, and the record's length, offset and file name, so a replay tool can
seek straight to the record. Files are read as an import reads them (archive/warc/bounded.py,
archive/warc/gunzip.py): lines and headers of bounded size, gzip members inflated no further than
their records.
"""

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import surt
from warcio.exceptions import ArchiveLoadFailed

from archive.atomic import atomic_file
from archive.errors import DlwebError
from archive.header_block import MAX_HEADER_BLOCK
from archive.timestamps import BadTime, format_digits, parse_time
from archive.warc.bounded import MAX_HEADER_LINES, MAX_WARC_HEADER, BoundedIterator
from archive.warc.gunzip import GZIP_MAGIC, GzipMembers

INDEXED_TYPES = ("response", "revisit", "resource")
# warcio parses the HTTP header block too, within the record header's bounds.
HEADERS_BUDGET = MAX_WARC_HEADER + MAX_HEADER_BLOCK
HEADERS_LINES = MAX_HEADER_LINES + 1024


def cdxj_lines(path: Path, visit: Callable[[Any], None] | None = None) -> Iterator[str]:
    """The unsorted index lines of one WARC file; `visit` gets each indexed record before it is
    read to its end, so that a WACZ export lists its pages in the same reading."""
    with open(path, "rb") as fh:
        members = GzipMembers(fh, 0) if fh.read(2) == GZIP_MAGIC[:2] else None
        fh.seek(0)
        records = BoundedIterator(
            members or fh, header_budget=HEADERS_BUDGET, header_lines=HEADERS_LINES
        )
        # A gzipped record's length is its member's, known once the next member starts.
        held: tuple[str, dict[str, str], int] | None = None
        offset = 0
        try:
            for record in records:
                if members is None:
                    offset = records.offset
                else:
                    offset = members.origin(records.offset)
                    members.allow(records.offset, record.length or 0)
                    if held is not None:
                        yield _line(*held, offset - held[2], path)
                        held = None
                headers = record.rec_headers
                length = headers.get_header("Content-Length") or ""
                if not length.strip().isdigit():
                    raise ValueError(f"Content-Length {length[:40]!r} is not a number")
                if record.rec_type not in INDEXED_TYPES:
                    continue
                uri = headers.get_header("WARC-Target-URI") or ""
                if not uri.startswith(("http:", "https:")):
                    continue
                when = format_digits(parse_time(headers.get_header("WARC-Date") or ""))
                fields = {"url": uri, **_kind_fields(record)}
                digest = headers.get_header("WARC-Payload-Digest")
                if digest:
                    fields["digest"] = digest
                if visit is not None:
                    visit(record)
                records.read_to_end()
                key = f"{surt.surt(uri)} {when}"
                if members is None:
                    yield _line(key, fields, offset, records.get_record_length(), path)
                else:
                    held = (key, fields, offset)
            if held is not None:
                yield _line(*held, fh.seek(0, os.SEEK_END) - held[2], path)
        except (ArchiveLoadFailed, BadTime, ValueError, EOFError, DlwebError) as exc:
            raise DlwebError(
                f"{path}: offset {offset}: cannot index: {str(exc).strip()[:200]}"
            ) from None


def _line(key: str, fields: dict[str, str], offset: int, length: int, path: Path) -> str:
    fields = {**fields, "length": str(length), "offset": str(offset), "filename": path.name}
    return f"{key} {json.dumps(fields)}"


def _kind_fields(record: object) -> dict[str, str]:
    rec_type = getattr(record, "rec_type", "")
    http = getattr(record, "http_headers", None)
    status = http.get_statuscode() if http is not None else None
    if rec_type == "revisit":
        return {"mime": "warc/revisit", **({"status": status} if status else {})}
    if rec_type == "resource":
        content_type = getattr(record, "content_type", None) or "application/octet-stream"
        return {"mime": content_type.split(";")[0].strip(), "status": "200"}
    mime = (http.get_header("Content-Type") if http is not None else None) or "unk"
    return {"mime": mime.split(";")[0].strip(), "status": status or "-"}


def write_cdxj(paths: list[Path], out: Path) -> int:
    """Index the files into `out`, sorted, written under a temporary name then renamed."""
    lines = sorted(line for path in paths for line in cdxj_lines(path))
    with atomic_file(out, shared=True) as fh:
        fh.writelines((line + "\n").encode("utf-8") for line in lines)
    return len(lines)
