"""WACZ packages: `dlweb export --format wacz` writes one that py-wacz's validator accepts and
that `dlweb import` brings back into an empty cluster capture for capture; a damaged one is
refused whole, with one line saying why."""

import io
import json
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive.cluster import ClusterClient
from archive.errors import NotFound
from archive.structure import REPLAYED_KINDS
from deploy.testing.cluster import Cluster, clusters_in
from deploy.testing.peers import wacz_validate
from exchange.cdxj import cdxj_lines
from exchange.wacz import DATAPACKAGE, DIGEST, INDEX_PATH, PAGES_PATH
from tests.archive.warc import sources
from tests.archive.warc.site import PAGES, TestSite

from .conftest import dlweb

WARC_MEMBER = "archive/data.warc.gz"
SMUGGLED = "http://smuggled.example/"


@dataclass(frozen=True)
class Exported:
    source: Cluster
    target: Cluster
    wacz: Path


@pytest.fixture(scope="module")
def exported(site: TestSite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    """A cluster holding a wget crawl of the test site and a warcio file of every record type,
    exported as a WACZ package, and an empty cluster to import it into."""
    work = tmp_path_factory.mktemp("wacz")
    with (
        clusters_in(tmp_path_factory.mktemp("source")) as make_source,
        clusters_in(tmp_path_factory.mktemp("target")) as make_target,
    ):
        source = make_source(nodes=1, replicas=1)
        target = make_target(nodes=1, replicas=1)
        crawl = sources.wget_crawl(site.base, work, "crawl")
        warcio = sources.warcio_file(work)
        done = dlweb("import", "-c", str(source.config_path), str(crawl.warc), str(warcio.path))
        assert done.returncode == 0, done.stderr
        wacz = work / "site.wacz"
        done = dlweb("export", "-c", str(source.config_path), "--out", str(wacz))
        assert done.returncode == 0, done.stderr
        assert f"wrote {wacz}" in done.stdout and "pages listed" in done.stdout
        yield Exported(source, target, wacz)


async def all_captures(cluster: Cluster) -> set[tuple[str, int, str, int]]:
    """URL, time, content digest and status of every capture a replay tool serves."""
    found = set()
    async with ClusterClient(cluster.config) as client:
        async for name, holders in client.structure_files():
            url, records = await client.read_structure(name, holders=holders)
            found |= {
                (url, r.time, r.content, r.status) for r in records if r.kind in REPLAYED_KINDS
            }
    return found


def rewritten(source: Path, out: Path, change: Callable[[str, bytes], bytes | None]) -> Path:
    """A copy of a ZIP whose members are what `change(name, data)` makes (None leaves one out)."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(out, "w") as copy:
        for info in original.infolist():
            data = change(info.filename, original.read(info))
            if data is not None:
                copy.writestr(info, data)
    return out


def smuggled_record() -> bytes:
    """One more response record, as a gzip member, to add to a package's WARC."""
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.1")
    writer.write_record(
        writer.create_warc_record(
            SMUGGLED, "response", payload=io.BytesIO(b"not listed"), http_headers=http
        )
    )
    return buffer.getvalue()


def test_the_export_is_a_valid_wacz(exported: Exported, tmp_path):
    checked = wacz_validate(exported.wacz)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Validation succeeded" in checked.stdout

    with zipfile.ZipFile(exported.wacz) as package:
        names = set(package.namelist())
        assert names == {WARC_MEMBER, INDEX_PATH, PAGES_PATH, DATAPACKAGE, DIGEST}
        assert package.getinfo(WARC_MEMBER).compress_type == zipfile.ZIP_STORED
        manifest = json.loads(package.read(DATAPACKAGE))
        index = package.read(INDEX_PATH).decode().splitlines()
        pages = [json.loads(line) for line in package.read(PAGES_PATH).decode().splitlines()]
        warc = tmp_path / "data.warc.gz"
        warc.write_bytes(package.read(WARC_MEMBER))
    assert manifest["profile"] == "data-package" and manifest["wacz_version"] == "1.1.1"
    assert {r["path"] for r in manifest["resources"]} == names - {DATAPACKAGE, DIGEST}
    # The index is that of `dlweb cdxj`, sorted, with the WARC's name inside the package.
    assert index == sorted(cdxj_lines(warc)) and '"filename": "data.warc.gz"' in index[0]

    assert pages[0]["format"] == "json-pages-1.0" and pages[0]["id"] == "pages"
    titles = {(page["url"], page["title"]) for page in pages[1:]}
    base = next(p["url"] for p in pages[1:] if p["title"] == "Test site")
    base = base.removesuffix("/")
    # Every page of status 200 with its title, whether sent chunked or gzipped; copy-b's bytes
    # are a revisit of copy-a's, and get its title.
    for path, title in [("/", "Test site"), ("/chunked.html", "Chunked"), ("/gzip.html", "Gzip")]:
        assert (base + path, title) in titles
    assert {(base + "/copy-a.html", "Copy"), (base + "/copy-b.html", "Copy")} <= titles
    # A page without a title is listed under its URL.
    assert (f"{sources.WARCIO_HOST}/a-copy", f"{sources.WARCIO_HOST}/a-copy") in titles
    listed = {url for url, _ in titles}
    assert not listed & {base + "/missing.html", base + "/old.html", base + "/image.png"}
    home = next(p for p in pages[1:] if p["title"] == "Test site")
    assert home["text"].startswith("Test site /chunked.html") and "<" not in home["text"]
    assert all(p["ts"].endswith("Z") for p in pages[1:])


async def test_importing_the_export_brings_back_every_capture(exported: Exported):
    done = dlweb("import", "-c", str(exported.target.config_path), str(exported.wacz))
    assert done.returncode == 0, done.stdout + done.stderr
    expected = await all_captures(exported.source)
    assert len({url for url, *_ in expected}) >= len(PAGES)
    assert await all_captures(exported.target) == expected


async def test_a_damaged_package_is_refused_whole(exported: Exported, tmp_path):
    added = rewritten(
        exported.wacz,
        tmp_path / "added.wacz",
        lambda name, data: data + smuggled_record() if name == WARC_MEMBER else data,
    )
    retitled = rewritten(
        exported.wacz,
        tmp_path / "retitled.wacz",
        lambda name, data: data.replace(b"All Pages", b"All pages") if name == PAGES_PATH else data,
    )
    for damaged in (added, retitled):
        checked = wacz_validate(damaged)
        assert checked.returncode == 1 and "Validation failed" in checked.stdout, damaged

    no_manifest = rewritten(
        exported.wacz,
        tmp_path / "bare.zip",
        lambda name, data: None if name in (DATAPACKAGE, DIGEST) else data,
    )
    # A datapackage.json changed after its digest file was written.
    resealed = rewritten(
        exported.wacz,
        tmp_path / "resealed.wacz",
        lambda name, data: data.replace(b"dlweb", b"other") if name == DATAPACKAGE else data,
    )
    with zipfile.ZipFile(added) as package:
        size = package.getinfo(WARC_MEMBER).file_size
        listed = json.loads(package.read(DATAPACKAGE))["resources"][0]["bytes"]
    config = str(exported.target.config_path)
    for path, problem in [
        (added, f"{WARC_MEMBER} has {size} bytes, datapackage.json says {listed}"),
        (retitled, f"{PAGES_PATH} does not match its hash in datapackage.json"),
        (no_manifest, "no datapackage.json: not a WACZ file, or a damaged one"),
        (resealed, "datapackage.json does not match its hash in datapackage-digest.json"),
    ]:
        done = dlweb("import", "-c", config, str(path))
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr == f"dlweb: error: {path}: {problem}\n"
    async with ClusterClient(exported.target.config) as client:
        with pytest.raises(NotFound):
            await client.captures(SMUGGLED)

    wrong_name = dlweb("export", "-c", config, "--format", "wacz", "--out", str(tmp_path / "x.zip"))
    assert wrong_name.returncode == 2 and "ends in .wacz" in wrong_name.stderr
