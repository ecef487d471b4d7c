"""`dlweb cdxj`: a sorted CDXJ index of WARC files, as pywb and other replay tools read it.

Each line is the URL's SURT key, the 14-digit capture time and a JSON object with the URL, MIME
type, status, payload digest, and the record's length, offset and file name, so a replay tool can
seek straight to the record.
"""

import json
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import surt
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from ..errors import DlwebError
from ..timestamps import BadTime, format_digits, parse_time

INDEXED_TYPES = ("response", "revisit", "resource")


def cdxj_lines(path: Path, visit: Callable[[Any], None] | None = None) -> Iterator[str]:
    """The unsorted index lines of one WARC file; `visit` gets each indexed record before it is
    read to its end, so that a WACZ export lists its pages in the same reading."""
    with open(path, "rb") as fh:
        records = ArchiveIterator(fh)
        try:
            for record in records:
                headers = record.rec_headers
                length = headers.get_header("Content-Length") or ""
                if not length.strip().isdigit():
                    raise ValueError(f"Content-Length {length!r} is not a number")
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
                fields["length"] = str(records.get_record_length())
                fields["offset"] = str(records.get_record_offset())
                fields["filename"] = path.name
                yield f"{surt.surt(uri)} {when} {json.dumps(fields)}"
        except (ArchiveLoadFailed, BadTime, ValueError, EOFError) as exc:
            raise DlwebError(
                f"{path}: offset {records.offset}: cannot index: {str(exc).strip()[:200]}"
            ) from None


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
    temp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.part")
    try:
        with open(temp, "w", encoding="utf-8") as fh:
            fh.writelines(line + "\n" for line in lines)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, out)
    finally:
        temp.unlink(missing_ok=True)
    return len(lines)
