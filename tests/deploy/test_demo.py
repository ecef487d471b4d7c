"""`dlweb demo` as a newcomer runs it: a real cluster, proxy, site, crawls and WARC import, browsed
through the proxy at the dates it prints, then stopped with Ctrl-C or SIGTERM."""

import asyncio
import json
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from archive.timestamps import format_iso, parse_http_date
from deploy.demo_warc import WARC_PATH, build
from deploy.testing.ports import free_port
from deploy.testing.waits import eventually, wait_until
from tests.accessibility import Browser
from tests.deploy.run_dlweb import dlweb, one_line_error, processes_naming, recorded_pids, running

READY_TIMEOUT = 150
STOP_TIMEOUT = 60
READY = "Press Ctrl-C to stop the demo"
pytestmark = pytest.mark.timeout(600)  # each test starts whole clusters and crawls
CURL = re.compile(r"^\s*curl -x (\S+) -H 'Accept-Datetime: ([^']+)' (\S+)$")
SET_DATE = re.compile(r"open (http://date\.dlweb/set\?at=\d{14}&back=\S+)$")


class Demo:
    """`dlweb demo` in a subprocess, its output read as it comes."""

    def __init__(self, data: Path, proxy_port: int) -> None:
        self.data = data
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dlweb",
                "demo",
                "--data",
                str(data),
                "--proxy-port",
                str(proxy_port),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self.readers = [
            threading.Thread(target=self._read, args=(stream, into), daemon=True)
            for stream, into in ((self.process.stdout, self.out), (self.process.stderr, self.err))
        ]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream: IO[str], into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.out) + "\n--- stderr:\n" + "\n".join(self.err)

    def wait_ready(self) -> None:
        def ready() -> bool:
            assert self.process.poll() is None, f"dlweb demo exited:\n{self.output}"
            return any(line.startswith(READY) for line in self.out)

        wait_until(ready, f"dlweb demo to be ready in {self.data}", timeout=READY_TIMEOUT)

    def stop(self, sig: int) -> int:
        """Send sig, wait for the exit status and the end of the output."""
        self.process.send_signal(sig)
        code = self.process.wait(timeout=STOP_TIMEOUT)
        for reader in self.readers:
            reader.join(timeout=10)
        return code

    def curl_lines(self) -> list[tuple[str, str, str]]:
        """The printed curl lines: proxy, Accept-Datetime, URL."""
        found = [m.groups() for line in self.out if (m := CURL.match(line))]
        assert len(found) == 4, self.output
        return [(str(p), str(d), str(u)) for p, d, u in found]


@pytest.fixture
def demos(tmp_path: Path) -> Iterator[list[Demo]]:
    """The demos a test started; any still running at its end is stopped."""
    started: list[Demo] = []
    yield started
    for demo in started:
        if demo.process.poll() is None:
            demo.process.kill()
            demo.process.wait(timeout=STOP_TIMEOUT)
        if demo.data.is_dir():
            dlweb("down", "--data", str(demo.data), check=False)


def fetch(proxy: str, url: str, when: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """GET url through the proxy, at `when` (an HTTP date) if given."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
    request = urllib.request.Request(url, headers={"Accept-Datetime": when} if when else {})
    try:
        with opener.open(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


async def confirmed(proxy: str, link: str) -> str:
    """The page a link of the date harbor opens in Chromium once its date is confirmed, as its
    script left it."""
    async with Browser(proxy) as browser:
        tab = await browser.open(link)
        await tab.follow('document.querySelector("section.confirm button").click()')
        ran = "document.body.textContent.includes('script.js ran')"
        await eventually(lambda: tab.evaluate(ran), "the page's script to run")
        html: str = await tab.evaluate("document.documentElement.outerHTML")
        return html


def version_text(body: bytes) -> str:
    found = re.search(rb'id="version">([^<]*)<', body)
    assert found is not None, body[:300]
    return found[1].decode()


def png_size(body: bytes) -> tuple[int, int]:
    assert body.startswith(b"\x89PNG"), body[:40]
    width, height = struct.unpack(">II", body[16:24])
    return width, height


def port_answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_the_committed_warc_is_what_its_generator_makes() -> None:
    assert WARC_PATH.read_bytes() == build(), "remake it: python -m deploy.demo_warc"


def test_demo_shows_both_crawls_and_the_warc_through_the_proxy_and_ctrl_c_stops_it(
    tmp_path: Path, demos: list[Demo]
) -> None:
    data = tmp_path / "demo"
    proxy_port = free_port()
    demo = Demo(data, proxy_port)
    demos.append(demo)
    demo.wait_ready()
    text = "\n".join(demo.out)
    proxy = f"http://127.0.0.1:{proxy_port}"
    assert f"127.0.0.1:{proxy_port} as your browser's HTTP and HTTPS proxy" in text
    assert "http://cert.dlweb/" in text and "http://date.dlweb/" in text
    (_, v1_date, site), (_, v2_date, site2), (_, old_date, museum), (_, new_date, museum2) = (
        demo.curl_lines()
    )
    assert {p for p, _, _ in demo.curl_lines()} == {proxy}
    assert site == site2 and site.startswith("http://demo.dlweb.test:")
    assert museum == museum2 == "http://museum.dlweb.test/"
    assert old_date.endswith("01 Mar 2019 10:00:00 GMT")
    assert new_date.endswith("15 Jun 2021 10:00:00 GMT")
    for date in (v1_date, v2_date, old_date, new_date):  # the same dates, for the date harbor
        assert f"pick {format_iso(parse_http_date(date))}" in text

    # Each printed date shows its version: page text, and the logo image that changed.
    assert version_text(fetch(proxy, site, v1_date)[2]).startswith("This is version 1")
    assert version_text(fetch(proxy, site, v2_date)[2]).startswith("This is version 2")
    assert version_text(fetch(proxy, site + "news.html", v1_date)[2]).startswith("Version 1")
    assert version_text(fetch(proxy, site + "news.html", v2_date)[2]).startswith("Version 2")
    assert png_size(fetch(proxy, site + "images/logo.png", v1_date)[2]) == (120, 40)
    assert png_size(fetch(proxy, site + "images/logo.png", v2_date)[2]) == (160, 40)
    # The banner is named only by the style sheet's url(): the crawl found it there.
    status, headers, body = fetch(proxy, site + "images/banner.png", v1_date)
    assert status == 200 and "Memento-Datetime" in headers and png_size(body) == (8, 8)
    assert version_text(fetch(proxy, museum, old_date)[2]).startswith("Spring 2019")
    assert version_text(fetch(proxy, museum, new_date)[2]).startswith("Summer 2021")
    status, headers, _ = fetch(proxy, museum + "style.css", new_date)  # a revisit record
    assert status == 200 and headers["Memento-Datetime"] == new_date

    # A browser opening the printed link for version 1 is asked to confirm the date, and one
    # click gets that version's page, and its script, style sheet and logo, from the archive (the
    # live site serves version 2 by now).
    v1_link = next(
        m[1] for line in demo.out if "version 1" in line and (m := SET_DATE.search(line))
    )
    assert v1_link.endswith(site)
    dom = asyncio.run(confirmed(proxy, v1_link))
    assert "This is version 1" in dom
    assert "script.js ran; logo.png is 120x40; style.css loaded" in dom

    # Its search indexer made the pages searchable: the search harbor's API finds the museum.
    def museum_found() -> bool:
        status, _, body = fetch(proxy, "http://api.dlweb/search?q=%22hall+renewed%22")
        return status == 200 and [hit["url"] for hit in json.loads(body)["hits"]] == [museum]

    wait_until(museum_found, "the museum page in the search index")
    assert "http://search.dlweb/" in text

    pids = recorded_pids(data)
    assert set(pids) == {"master", "index", "node1", "node2", "node3", "proxy", "search"}
    site_port = int(site.rsplit(":", 1)[1].strip("/"))
    assert port_answers(site_port)
    assert demo.stop(signal.SIGINT) == 0, demo.output
    assert "Traceback" not in demo.output
    assert demo.out[-1] == "stopped", demo.output
    assert not [name for name, pid in pids.items() if running(pid)]
    assert processes_naming(data) == []
    assert not port_answers(site_port) and not port_answers(proxy_port)


def test_a_second_demo_on_the_same_data_starts_again_and_sigterm_stops_it(
    tmp_path: Path, demos: list[Demo]
) -> None:
    data = tmp_path / "demo"
    for number in (1, 2):
        proxy_port = free_port()
        demo = Demo(data, proxy_port)
        demos.append(demo)
        demo.wait_ready()
        proxy, v1_date, site = demo.curl_lines()[0]
        assert version_text(fetch(proxy, site, v1_date)[2]).startswith("This is version 1")
        _, v2_date, _ = demo.curl_lines()[1]
        assert version_text(fetch(proxy, site, v2_date)[2]).startswith("This is version 2")
        assert demo.stop(signal.SIGTERM) == 0, f"run {number}:\n{demo.output}"
        assert "Traceback" not in demo.output
        assert processes_naming(data) == []
    assert "imported museum.warc.gz: 7 captures, 0 new" in demos[1].out


def test_a_busy_proxy_port_is_refused_in_one_line_and_nothing_starts(tmp_path: Path) -> None:
    data = tmp_path / "demo"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = dlweb("demo", "--data", str(data), "--proxy-port", str(port), check=False)
    assert f"--proxy-port {port}" in one_line_error(result)
    assert processes_naming(data) == []
