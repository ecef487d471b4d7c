"""A real browser through the proxy: headless Chromium loads an imported page with its style sheet,
image and script at two dates, and every resource comes from the archive at that date."""

import io
import struct
import zlib
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.browser import chromium
from tests.exchange.conftest import dlweb

from .conftest import put_setting

SITE = "http://museum.example"
BROWSER_TIMEOUT = 60
# Each version's page colour (style sheet), logo colour (image) and title (script).
VERSIONS = {
    "2020-03-01T12:00:00Z": ((200, 30, 30), (250, 220, 0), "museum in 2020"),
    "2023-09-01T12:00:00Z": ((30, 30, 200), (0, 200, 90), "museum in 2023"),
}
LOGO_AT = (40, 110)  # a pixel inside the logo, below the heading
RESOURCES = ("/", "/style.css", "/logo.svg", "/app.js")


def resources(
    page: tuple[int, ...], logo: tuple[int, ...], title: str
) -> dict[str, tuple[str, bytes]]:
    return {
        "/": (
            "text/html",
            b'<!DOCTYPE html><html><head><link rel="stylesheet" href="/style.css">'
            b'<script src="/app.js"></script></head><body><h1>The museum</h1>'
            b'<img id="logo" src="/logo.svg" width="120" height="60"></body></html>',
        ),
        "/style.css": ("text/css", f"body {{ background: rgb{page}; }}".encode()),
        "/logo.svg": (
            "image/svg+xml",
            f'<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60">'
            f'<rect width="120" height="60" fill="rgb{logo}"/></svg>'.encode(),
        ),
        "/app.js": (
            "application/javascript",
            f'document.title = "{title}";'.encode(),
        ),
    }


def write_site(path: Path) -> None:
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for date, (page, logo, title) in VERSIONS.items():
            for resource, (content_type, body) in resources(page, logo, title).items():
                headers = StatusAndHeaders(
                    "200 OK",
                    [("Content-Type", content_type), ("Content-Length", str(len(body)))],
                    protocol="HTTP/1.1",
                )
                record = writer.create_warc_record(
                    SITE + resource,
                    "response",
                    payload=io.BytesIO(body),
                    http_headers=headers,
                    warc_headers_dict={"WARC-Date": date},
                )
                writer.write_record(record)


def pixel(png: bytes, x: int, y: int) -> tuple[int, ...]:
    """The RGB colour of one pixel of an 8-bit RGB or RGBA PNG (what Chromium writes)."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height, depth, colour = struct.unpack(">IIBB", png[16:26])
    assert depth == 8 and colour in (2, 6), (depth, colour)
    channels = 3 if colour == 2 else 4
    data, at = b"", 8
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at : at + 8])
        if kind == b"IDAT":
            data += png[at + 8 : at + 8 + length]
        at += 12 + length
    raw, stride = zlib.decompress(data), width * channels
    previous = bytearray(stride)
    for row in range(y + 1):
        line = raw[row * (stride + 1) : (row + 1) * (stride + 1)]
        current = _unfilter(line[0], bytearray(line[1:]), previous, channels)
        previous = current
    return tuple(previous[x * channels : x * channels + 3])


def _unfilter(kind: int, line: bytearray, above: bytearray, step: int) -> bytearray:
    for i in range(len(line)):
        left = line[i - step] if i >= step else 0
        up, corner = above[i], above[i - step] if i >= step else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            p = left + up - corner
            near = min((abs(p - left), 0, left), (abs(p - up), 1, up), (abs(p - corner), 2, corner))
            line[i] = (line[i] + near[2]) & 0xFF
    return line


def test_chromium_browses_the_page_at_two_dates(cluster_factory, proxy_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    warc = tmp_path / "museum.warc.gz"
    write_site(warc)
    done = dlweb("import", "-c", str(cluster.config_path), str(warc))
    assert done.returncode == 0, done.stderr
    proxy = proxy_factory(cluster, "--log-requests")

    for number, (date, (page, logo, title)) in enumerate(VERSIONS.items()):
        assert put_setting(proxy, date=date)[0] == 200
        seen_before = proxy.log.read_text().count("replayed ")
        dom = chromium(proxy.url, tmp_path / f"profile-{number}", SITE + "/", "--dump-dom")
        assert f"<title>{title}</title>" in dom  # the archived script of that date ran
        shot = tmp_path / f"museum-{date[:4]}.png"
        chromium(proxy.url, tmp_path / f"profile-{number}", SITE + "/", f"--screenshot={shot}")
        # The style sheet and the image of that date were applied.
        assert pixel(shot.read_bytes(), 700, 500) == page
        assert pixel(shot.read_bytes(), *LOGO_AT) == logo
        replayed = [line for line in proxy.log.read_text().splitlines() if "replayed " in line][
            seen_before:
        ]
        for resource in RESOURCES:
            lines = [line for line in replayed if f"GET {SITE}{resource}: " in line]
            assert lines, f"{resource} was not asked of the archive at {date}"
            assert all(line.endswith(f"200, capture of {date}") for line in lines), lines
