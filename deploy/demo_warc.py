"""The demo's bundled WARC: a small museum site captured in 2019 and in 2021.

`python -m deploy.demo_warc` remakes deploy/demo_data/museum.warc.gz; the output is the same
bytes every time (fixed record ids and dates), so the committed file can be checked against it.
"""

import base64
import hashlib
import io
import struct
import sys
import uuid
import zlib
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

SITE = "http://museum.dlweb.test/"
FIRST = "2019-03-01T10:00:00Z"
SECOND = "2021-06-15T10:00:00Z"
WARC_PATH = Path(__file__).parent / "demo_data" / "museum.warc.gz"

_STYLE = b"body { font-family: serif; background: #f8f4ec; margin: 2em; }\nimg { border: 1px solid #555; }\n"


def _page(year: str, news: str) -> bytes:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>The demo museum, {year}</title>"
        '<link rel="stylesheet" href="style.css"></head>\n<body>\n'
        f'<h1>The demo museum</h1>\n<p id="version">{news}</p>\n'
        '<img src="hall.png" alt="the main hall">\n</body></html>\n'
    ).encode()


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A plain PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


# (capture date, path, content type, payload); a payload seen before becomes a revisit record.
CAPTURES = [
    (FIRST, "", "text/html", _page("2019", "Spring 2019: the museum opens its doors in April.")),
    (FIRST, "style.css", "text/css", _STYLE),
    (FIRST, "hall.png", "image/png", _png(100, 60, (150, 150, 150))),
    (SECOND, "", "text/html", _page("2021", "Summer 2021: the museum has reopened, hall renewed.")),
    (SECOND, "style.css", "text/css", _STYLE),
    (SECOND, "hall.png", "image/png", _png(100, 60, (60, 160, 90))),
]


def _record_id(*parts: str) -> dict[str, str]:
    name = uuid.uuid5(uuid.NAMESPACE_URL, " ".join(parts))
    return {"WARC-Record-ID": f"<urn:uuid:{name}>", "WARC-Date": parts[0]}


def _http_date(iso: str) -> str:
    from email.utils import format_datetime

    from archive.timestamps import from_micros, parse_time

    return format_datetime(from_micros(parse_time(iso)), usegmt=True)


def build() -> bytes:
    """The WARC file's bytes."""
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=True)
    info = writer.create_warcinfo_record(
        "museum.warc.gz", {"software": "deploy/demo_warc.py", "description": "dlweb demo data"}
    )
    info.rec_headers.replace_header(
        "WARC-Record-ID", _record_id(FIRST, "warcinfo")["WARC-Record-ID"]
    )
    info.rec_headers.replace_header("WARC-Date", FIRST)
    writer.write_record(info)
    seen: dict[str, tuple[str, str]] = {}
    for date, path, kind, payload in CAPTURES:
        url = SITE + path
        headers = StatusAndHeaders(
            "200 OK",
            [
                ("Content-Type", kind),
                ("Content-Length", str(len(payload))),
                ("Date", _http_date(date)),
                ("Server", "demo"),
            ],
            protocol="HTTP/1.1",
        )
        # The digest warcio writes in response records, so the revisit names the same one.
        digest = "sha1:" + base64.b32encode(hashlib.sha1(payload).digest()).decode()
        ids = _record_id(date, url)
        if digest in seen:
            first_url, first_date = seen[digest]
            record = writer.create_revisit_record(
                url, digest, first_url, first_date, http_headers=headers, warc_headers_dict=ids
            )
        else:
            seen[digest] = (url, date)
            record = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(payload),
                length=len(payload),
                http_headers=headers,
                warc_headers_dict=ids,
            )
        writer.write_record(record)
    return out.getvalue()


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else WARC_PATH
    path.write_bytes(build())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
