"""A round trip through pywb: import WARC files written by wget and warcio, export them, and let
pywb replay the export (indexed by pywb itself, and by `dlweb cdxj`): every archived response
comes back with the original status, headers and payload."""

import shutil
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from archive.timestamps import format_digits, parse_time
from deploy.testing.pywb import replay, running_pywb
from tests.archive.warc import sources
from tests.archive.warc.site import PAGES, TestSite

from .conftest import dlweb

# Headers a replay tool sets itself: framing, connection handling and the time of the replay.
NOT_REPLAYED = frozenset(
    {"transfer-encoding", "content-length", "connection", "keep-alive", "date"}
)


@dataclass(frozen=True)
class Original:
    url: str
    timestamp: str
    status: int
    headers: list[tuple[str, str]]
    payload: bytes


def header_fields(block: bytes) -> list[tuple[str, str]]:
    lines = block.decode("latin-1").split("\r\n")[1:]
    return [(n.strip(), v.strip()) for n, _, v in (line.partition(":") for line in lines) if n]


def originals(site: TestSite, crawl: Path, source: sources.Source) -> list[Original]:
    """Every response and revisit of the source files, read with warcio, with its payload."""
    found = []
    with open(crawl, "rb") as fh:
        for record in ArchiveIterator(fh):
            url = record.rec_headers.get_header("WARC-Target-URI")
            if record.rec_type != "response" or not url.startswith(site.base):
                continue
            page = PAGES[url[len(site.base) :]]
            stamp = format_digits(parse_time(record.rec_headers.get_header("WARC-Date")))
            headers = list(record.http_headers.headers)
            found.append(Original(url, stamp, page.status, headers, page.body))
    for entry in source.entries:
        if entry.type in ("response", "revisit"):
            assert entry.header_block is not None
            stamp = format_digits(parse_time(entry.date))
            headers = header_fields(entry.header_block)
            found.append(Original(entry.url, stamp, entry.status, headers, entry.payload))
    return found


def check_replay(base: str, collection: str, original: Original) -> None:
    status, headers, body = replay(base, collection, original.url, original.timestamp)
    where = f"{collection}: {original.url} at {original.timestamp}"
    assert status == original.status, where
    assert body == original.payload, where
    replayed = {}
    for name, value in headers:
        replayed.setdefault(name.lower().removeprefix("x-archive-orig-"), value)
    for name, value in original.headers:
        key = name.lower()
        if key in NOT_REPLAYED:
            continue
        if key == "location":  # pywb points it into the archive
            assert replayed[key].endswith(value), where
        else:
            assert replayed.get(key) == value, f"{where}: {name}"


async def test_pywb_replays_the_export_as_the_originals(cluster_factory, site, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    source = sources.warcio_file(tmp_path)
    crawl = sources.wget_crawl(site.base, tmp_path, "crawl")
    done = dlweb("import", "-c", str(cluster.config_path), str(crawl.warc), str(source.path))
    assert done.returncode == 0, done.stderr
    export = tmp_path / "export.warc.gz"
    done = dlweb("export", "-c", str(cluster.config_path), "--out", str(export))
    assert done.returncode == 0, done.stderr

    # A second collection replays the export from the index `dlweb cdxj` wrote.
    workdir = tmp_path / "pywb"
    ours = workdir / "collections" / "ours"
    (ours / "archive").mkdir(parents=True)
    (ours / "indexes").mkdir()
    shutil.copy(export, ours / "archive" / export.name)
    done = dlweb("cdxj", str(export), "--out", str(ours / "indexes" / "index.cdxj"))
    assert done.returncode == 0, done.stderr

    expected = originals(site, crawl.warc, source)
    assert len(expected) == len(PAGES) + 7  # every page, and the warcio responses and revisits
    with running_pywb(workdir, [export]) as base:
        for original in expected:
            check_replay(base, "coll", original)
            check_replay(base, "ours", original)
