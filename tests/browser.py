"""Headless Chromium, as the tests drive it: through a proxy, in a fresh profile."""

import json
import re
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy

from crawler.browser import chromium_path

BROWSER_TIMEOUT = 60


def _run(
    proxy: str, profile: Path, url: str, *mode: str, window: tuple[int, int], budget_ms: int
) -> "subprocess.CompletedProcess[str]":
    """Load url in headless Chromium through the proxy at `proxy` (http://host:port), in a fresh
    profile, with a window of a fixed size and `budget_ms` of virtual time for the page's
    scripts (fetches pause it, so a page whose scripts wait on the network still gets all of
    it)."""
    browser = chromium_path()
    done = subprocess.run(
        [
            browser,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            f"--proxy-server={proxy}",
            f"--window-size={window[0]},{window[1]}",
            f"--virtual-time-budget={budget_ms}",
            *mode,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def chromium(proxy: str, profile: Path, url: str, *mode: str) -> str:
    """What headless Chromium printed loading url through the proxy (the DOM with
    `--dump-dom`)."""
    return _run(proxy, profile, url, *mode, window=(800, 600), budget_ms=5000).stdout


def load_error(proxy: str, profile: Path, url: str) -> str | None:
    """The network error that ended Chromium's load of url (net::ERR_...), or None."""
    done = _run(proxy, profile, url, "--dump-dom", window=(800, 600), budget_ms=5000)
    failed = re.search(r"Page load failed: (net::ERR_\w+)", done.stderr)
    return failed.group(1) if failed else None


# Chromium sends requests for loopback addresses (127.0.0.1, localhost) past any proxy unless told
# not to: for a site served on loopback, this makes them go through the proxy too.
PROXY_LOOPBACK = "--proxy-bypass-list=<-loopback>"


def browse(
    proxy: str,
    profile: Path,
    url: str,
    *mode: str,
    window: tuple[int, int] = (800, 600),
    budget_ms: int = 10000,
) -> str:
    """What headless Chromium printed loading url through the proxy, loopback addresses
    included, drawn at a scale of 1 without scroll bars, media allowed to play."""
    return _run(
        proxy,
        profile,
        url,
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--autoplay-policy=no-user-gesture-required",
        PROXY_LOOPBACK,
        *mode,
        window=window,
        budget_ms=budget_ms,
    ).stdout


def screenshot(
    proxy: str,
    profile: Path,
    url: str,
    out: Path,
    window: tuple[int, int] = (800, 600),
    budget_ms: int = 10000,
) -> bytes:
    """A PNG of the page at `url` as headless Chromium draws it through the proxy once the page's
    scripts had `budget_ms` of virtual time; also written to `out`."""
    out.unlink(missing_ok=True)
    browse(proxy, profile, url, f"--screenshot={out}", window=window, budget_ms=budget_ms)
    assert out.exists(), f"Chromium wrote no screenshot of {url}"
    return out.read_bytes()


@dataclass(frozen=True)
class Pixels:
    """A decoded image: `data` holds `channels` bytes a pixel, row after row."""

    width: int
    height: int
    channels: int
    data: bytes

    def rgb(self, x: int, y: int) -> tuple[int, int, int]:
        at = (y * self.width + x) * self.channels
        red, green, blue = self.data[at : at + 3]
        return red, green, blue

    def differences(self, other: "Pixels") -> list[tuple[int, int]]:
        """The (x, y) of every pixel whose colour differs between two images of the same size."""
        assert (self.width, self.height) == (other.width, other.height)
        ours = numpy.frombuffer(self.data, numpy.uint8).reshape(self.height, self.width, -1)
        theirs = numpy.frombuffer(other.data, numpy.uint8).reshape(other.height, other.width, -1)
        differ = (ours[:, :, :3] != theirs[:, :, :3]).any(axis=2)
        return [(int(x), int(y)) for y, x in zip(*numpy.nonzero(differ), strict=True)]


def png_pixels(png: bytes) -> Pixels:
    """Decode an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes)."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n"), "not a PNG"
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", png[16:29])
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    channels = 3 if colour == 2 else 4
    compressed, at = bytearray(), 8
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at : at + 8])
        if kind == b"IDAT":
            compressed += png[at + 8 : at + 8 + length]
        at += 12 + length
    raw = numpy.frombuffer(zlib.decompress(bytes(compressed)), numpy.uint8)
    stride = width * channels
    rows = raw.reshape(height, stride + 1)
    image = numpy.zeros((height, stride), numpy.uint8)
    above = numpy.zeros(stride, numpy.uint8)
    for y in range(height):
        image[y] = _unfiltered(int(rows[y, 0]), rows[y, 1:], above, channels)
        above = image[y]
    return Pixels(width, height, channels, image.tobytes())


def _unfiltered(
    kind: int, line: "numpy.ndarray[Any, Any]", above: "numpy.ndarray[Any, Any]", step: int
) -> "numpy.ndarray[Any, Any]":
    """One row of a PNG with its filter undone (PNG specification, section 9)."""
    if kind == 0:
        return line
    if kind == 1:  # each byte adds the one a pixel to its left: a running sum per channel
        summed = line.reshape(-1, step).cumsum(axis=0, dtype=numpy.uint8)
        row: numpy.ndarray[Any, Any] = summed.reshape(-1)
        return row
    if kind == 2:
        added: numpy.ndarray[Any, Any] = line + above
        return added
    out = bytearray(len(line))
    for i in range(len(line)):
        left = out[i - step] if i >= step else 0
        up = int(above[i])
        if kind == 3:
            out[i] = (int(line[i]) + (left + up) // 2) & 0xFF
        else:  # 4, Paeth
            corner = int(above[i - step]) if i >= step else 0
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            near = left if pa <= pb and pa <= pc else up if pb <= pc else corner
            out[i] = (int(line[i]) + near) & 0xFF
    return numpy.frombuffer(bytes(out), numpy.uint8)


@dataclass(frozen=True)
class Exchange:
    """An HTTP request Chromium sent and the response head it read, from its net log."""

    method: str
    url: str
    request: dict[str, str]  # header names in lower case
    status: int
    response: dict[str, str]


def net_log_exchanges(net_log: Path) -> list[Exchange]:
    """The HTTP exchanges in a net log that Chromium wrote (`--log-net-log=FILE`), in order,
    each with the request's headers and the response's status and headers as they crossed the
    wire (a proxy's answer as the proxy sent it)."""
    text = net_log.read_text()
    try:
        log = json.loads(text)
    except json.JSONDecodeError:  # a log cut short ends inside its list of events
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    names = {number: name for name, number in log["constants"]["logEventTypes"].items()}
    started: dict[int, tuple[str, str]] = {}
    sent: dict[int, dict[str, str]] = {}
    exchanges: list[Exchange] = []
    for event in log["events"]:
        name, source, params = names[event["type"]], event["source"]["id"], event.get("params")
        if params is None:
            continue
        if name == "URL_REQUEST_START_JOB" and "url" in params:  # its start, not its end
            started[source] = (params["method"], params["url"])
        elif name == "HTTP_TRANSACTION_SEND_REQUEST_HEADERS":
            sent[source] = _header_fields(params["headers"])
        elif name == "HTTP_TRANSACTION_READ_RESPONSE_HEADERS" and source in started:
            status_line, *fields = params["headers"]
            method, url = started[source]
            exchanges.append(
                Exchange(
                    method,
                    url,
                    sent.get(source, {}),
                    int(status_line.split()[1]),
                    _header_fields(fields),
                )
            )
    return exchanges


def _header_fields(lines: list[str]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return fields
