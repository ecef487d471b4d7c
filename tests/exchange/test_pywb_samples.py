"""pywb's own sample WARC and ARC files (`sample_archive/warcs/` of its source release), imported
with `dlweb import` into a real cluster: every capture pywb's cdx-indexer lists in them is listed
by dlweb's CDX API under the same URL key and 14-digit timestamp.

Compared: the lines pywb's cdx-indexer writes for response, revisit and resource records of
http(s) URLs, the captures pywb replays. The index is made as `wb-manager add` makes a
collection's (`--postappend`): the response to a POST is keyed by its URL with the method and
the form body folded into the query, as dlweb keys it too.

Left out, and why:
- the lines of metadata and resource records of other URIs (wget's `metadata://gnu.org/...`
  log and arguments, wpull's `urn:X-wpull:log`): dlweb keeps those whole for export, under
  `http://records.dlweb/TYPE`, not as captures (tests/exchange/test_kept_records.py);
- in `example-extra.warc`, the response at offset 3207, a copy of the one at offset 0 edited by
  hand: its status line says `HTTPX/1.1`, no HTTP version, and its WARC Content-Length, left as
  it was, cuts the last byte of its payload, so that its WARC-Payload-Digest no longer matches.
  pywb reads any first word as the protocol and checks no digest; dlweb refuses the record on
  either count, and names it (the test of the records skipped);
- `bad.arc` and `example-bad.warc.gz.bad`, which pywb keeps as damaged examples.
"""

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from archive.cluster import ClusterClient
from archive.reading import CaptureReader
from archive.timestamps import parse_time
from deploy.testing.cluster import Cluster
from deploy.testing.pywb import pywb_bin, pywb_source
from search.cdx import answer, parse_query
from tests.master.conftest import module_cluster_factory  # noqa: F401  (a fixture)

from .conftest import COMMAND_TIMEOUT, dlweb

SAMPLES = (
    "dupes.warc.gz",
    "example-extra.warc",
    "example-url-agnostic-orig.warc.gz",
    "example-url-agnostic-revisit.warc.gz",
    "example-wget-1-14.warc.gz",
    "example-wpull.warc.gz",
    "example.arc",
    "example.arc.gz",
    "example.warc",
    "example.warc.gz",
    "example2.warc.gz",
    "httpbin-resource.warc.gz",
    "iana.warc.gz",
    "missing-status-text.warc",
    "post-test.warc.gz",
)
# The records a sample holds that dlweb skips, by file and offset, and why: the response edited
# by hand (see above), and a request record whose Content-Length is wrong (pywb warns of it).
SKIPPED = {
    ("example-extra.warc", 3207): "not an HTTP status line and headers (it starts 'HTTPX/1.1",
    ("example.warc", 4061): "does not end where its Content-Length says",
}
REPLAYED_SCHEMES = ("http:", "https:")


@dataclass(frozen=True)
class IndexLine:
    """A line of pywb's index: where its record is, and what it is listed under."""

    file: str
    offset: int
    key: str
    timestamp: str
    lookup: str  # the URL a replay asks for, the form body of a POST folded in as pywb folds it


@dataclass(frozen=True)
class Imported:
    cluster: Cluster
    summary: str  # what `dlweb import` printed
    folder: Path  # the samples


def samples_folder() -> Path:
    return pywb_source() / "sample_archive" / "warcs"


def lookup_url(fields: dict[str, str]) -> str:
    """The URL pywb keys a line by with --postappend: a request other than a GET adds
    `__wb_method` and its body to the URL's query."""
    url = fields["url"]
    if "method" not in fields:
        return url
    query = f"__wb_method={fields['method'].lower()}"
    if fields.get("requestBody"):
        query += "&" + fields["requestBody"]
    return f"{url}{'&' if '?' in url else '?'}{query}"


def pywb_index(path: Path) -> list[IndexLine]:
    """The CDXJ lines pywb's own cdx-indexer writes for a file, as a collection indexes it."""
    done = subprocess.run(
        [str(pywb_bin() / "cdx-indexer"), "--cdxj", "--postappend", "-o", "-", str(path)],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=True,
    )
    lines = []
    for line in done.stdout.splitlines():
        key, timestamp, text = line.split(" ", 2)
        fields = json.loads(text)
        lines.append(
            IndexLine(path.name, int(fields["offset"]), key, timestamp, lookup_url(fields))
        )
    return lines


def compared(line: IndexLine) -> bool:
    return line.lookup.startswith(REPLAYED_SCHEMES) and (line.file, line.offset) not in SKIPPED


async def dlweb_listing(cluster: Cluster, urls: set[str], index: Path) -> set[tuple[str, str]]:
    """The URL key and timestamp of every capture dlweb's CDX API lists for the URLs (exact
    queries: `index`, the search index folder, may have no URL-key index)."""
    listed = set()
    async with ClusterClient(cluster.config) as client:
        for url in sorted(urls):
            body = await answer(client, parse_query([("url", url), ("output", "json")]), index)
            for line in body.splitlines():
                row = json.loads(line)
                listed.add((row["urlkey"], row["timestamp"]))
    return listed


@pytest.fixture(scope="module")
def imported(
    module_cluster_factory: Callable[..., Cluster],  # noqa: F811
) -> Imported:
    """Every sample imported at once into a one-node cluster, as a collection holds them all
    (a URL-agnostic revisit's original is in another file)."""
    cluster = module_cluster_factory(nodes=1, replicas=1)
    folder = samples_folder()
    done = dlweb("import", "-c", str(cluster.config_path), *(str(folder / n) for n in SAMPLES))
    assert "Traceback" not in done.stderr, done.stderr
    return Imported(cluster, done.stdout + done.stderr, folder)


async def test_every_capture_pywb_indexes_in_its_samples_is_imported(
    imported: Imported, tmp_path: Path
) -> None:
    lines = [line for name in SAMPLES for line in pywb_index(imported.folder / name)]
    expected = [line for line in lines if compared(line)]
    # Each sample holds captures pywb lists: none is compared by an empty index.
    assert {line.file for line in expected} == set(SAMPLES)
    listed = await dlweb_listing(imported.cluster, {line.lookup for line in expected}, tmp_path)
    missing = [line for line in expected if (line.key, line.timestamp) not in listed]
    assert missing == []


def test_only_the_records_whose_bytes_contradict_their_fields_are_skipped(
    imported: Imported,
) -> None:
    skipped = {}
    for line in imported.summary.splitlines():
        if line.startswith("skipped: "):
            path, offset, reason = line.removeprefix("skipped: ").split(": ", 2)
            skipped[(Path(path).name, int(offset.removeprefix("offset ")))] = reason
    assert skipped.keys() == SKIPPED.keys(), imported.summary
    for where, said in SKIPPED.items():
        assert said in skipped[where], where


def archived_response(path: Path) -> tuple[str, int, list[tuple[str, str]], bytes]:
    """The URL, status, headers and payload of a file's one response, as warcio (and so pywb)
    reads them."""
    with open(path, "rb") as fh:
        (record,) = (r for r in ArchiveIterator(fh) if r.rec_type == "response")
        url = record.rec_headers.get_header("WARC-Target-URI")
        status = int(record.http_headers.get_statuscode())
        return url, status, record.http_headers.headers, record.content_stream().read()


async def test_a_response_with_lines_ended_by_cr_cr_lf_replays_as_archived(
    imported: Imported,
) -> None:
    """missing-status-text.warc: its WARC and HTTP header lines end in CR CR LF and its status
    line has no reason phrase."""
    path = imported.folder / "missing-status-text.warc"
    url, status, headers, payload = archived_response(path)
    async with ClusterClient(imported.cluster.config) as client:
        reader = CaptureReader(client)
        reading = await reader.read_at(url, parse_time("20140127171238"), "exact")
        assert (reading.header.status, reading.header.headers) == (status, headers)
        assert await reader.whole_body(reading) == payload
