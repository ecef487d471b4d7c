"""`dlweb import` of hostile WARC files and WACZ packages into a real cluster: a damaged or
refused record is skipped with its file, offset and reason while the rest is imported; a hostile
package is refused whole, naming the entry, before anything of the files given is imported."""

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from archive.cluster import ClusterClient
from archive.errors import NotFound
from deploy.testing.cluster import Cluster
from tests.exchange.conftest import dlweb
from tests.master.conftest import module_cluster_factory  # noqa: F401  (a fixture)
from tests.security.wacz_packages import (
    DATAPACKAGE,
    DEFLATED,
    ENCRYPTED,
    PAGES,
    WARC,
    Entry,
    overlapping,
    package,
    package_bytes,
    sound_entries,
)
from tests.security.warc_inputs import FIRST, LAST, inflating_to, member, record

OUTSIDE = "is outside the dates this archive holds, 1970-01-01T00:00:00Z to 2999-12-31T23:59:59"


@pytest.fixture(scope="module")
def cluster(module_cluster_factory: Callable[..., Cluster]) -> Cluster:  # noqa: F811
    return module_cluster_factory(nodes=1, replicas=1)


def dlweb_import(cluster: Cluster, *files: Path) -> subprocess.CompletedProcess[str]:
    return dlweb("import", "-c", str(cluster.config_path), *map(str, files))


async def archived(cluster: Cluster, *urls: str) -> dict[str, int]:
    """How many captures the archive holds of each URL."""
    found = {}
    async with ClusterClient(cluster.config) as client:
        for url in urls:
            try:
                found[url] = len(await client.captures(url))
            except NotFound:
                found[url] = 0
    return found


def dated(url: str, date: str) -> bytes:
    return record(url).replace(b"2024-05-01T00:00:00Z", date.encode())


# Each WARC-Date, and whether a record of it is imported.
DATES = {
    "1970-01-01T00:00:00Z": True,
    "0001-01-01T00:00:00Z": False,
    "2024-05-01T12:00:00Z": True,
    "9999-12-31T23:59:59Z": False,
    "1969-12-31T23:59:59Z": False,
    "2999-12-31T23:59:59Z": True,
}


@pytest.mark.parametrize("gzipped", [False, True], ids=["warc", "warc.gz"])
async def test_a_record_dated_outside_1970_to_2999_is_skipped_and_the_others_imported(
    cluster: Cluster, tmp_path: Path, gzipped: bool
) -> None:
    kind = "gz" if gzipped else "plain"
    records = [dated(f"http://dated.example/{kind}/{n}", d) for n, d in enumerate(DATES)]
    if gzipped:
        records = [member(r) for r in records]
    path = tmp_path / f"dated.warc{'.gz' if gzipped else ''}"
    path.write_bytes(b"".join(records))
    done = dlweb_import(cluster, path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    skipped = [line for line in done.stderr.splitlines() if line.startswith("skipped: ")]
    offsets = [sum(map(len, records[:n])) for n in range(len(records))]
    refused = [n for n, imported in enumerate(DATES.values()) if not imported]
    assert len(skipped) == len(refused)
    for line, n in zip(skipped, refused, strict=True):
        date = list(DATES)[n]
        assert line.startswith(f"skipped: {path}: offset {offsets[n]}: WARC-Date '{date}': ")
        assert OUTSIDE in line
    assert "3 records skipped with problems (date out of range: 3" in done.stdout
    urls = [f"http://dated.example/{kind}/{n}" for n in range(len(DATES))]
    assert list((await archived(cluster, *urls)).values()) == [int(i) for i in DATES.values()]


async def test_a_member_inflating_to_a_gigabyte_after_its_record_costs_the_import_nothing(
    cluster: Cluster, tmp_path: Path
) -> None:
    """About 1 MB of file: the NUL bytes after the record are a damaged record of their own,
    named with the member's offset, and the records around them are imported."""
    before = member(record("http://bomb.example/before"))
    bomb = inflating_to(record("http://bomb.example/in"), b"\0", 1024 * 1024 * 1024)
    path = tmp_path / "bomb.warc.gz"
    path.write_bytes(before + bomb + member(record("http://bomb.example/after")))
    done = dlweb_import(cluster, path)
    assert done.returncode == 1, done.stdout + done.stderr
    (skipped,) = [line for line in done.stderr.splitlines() if line.startswith("skipped: ")]
    assert skipped.startswith(f"skipped: {path}: offset {len(before)}: malformed record header")
    assert len(skipped) < 400
    urls = ["http://bomb.example/before", "http://bomb.example/in", "http://bomb.example/after"]
    assert await archived(cluster, *urls) == dict.fromkeys(urls, 1)


async def test_a_run_of_nul_bytes_between_records_is_one_damaged_record(
    cluster: Cluster, tmp_path: Path
) -> None:
    path = tmp_path / "nul.warc"
    with open(path, "wb") as out:
        out.write(FIRST)
        for _ in range(64):
            out.write(b"\0" * (1024 * 1024))
        out.write(b"\n" + LAST)
    done = dlweb_import(cluster, path)
    assert done.returncode == 1, done.stdout + done.stderr
    (skipped,) = [line for line in done.stderr.splitlines() if line.startswith("skipped: ")]
    assert skipped.startswith(f"skipped: {path}: offset {len(FIRST)}: malformed record header")
    assert len(skipped) < 400
    urls = ["http://first.example/", "http://last.example/"]
    assert await archived(cluster, *urls) == dict.fromkeys(urls, 1)


def encrypted(entries: list[Entry]) -> list[Entry]:
    return [
        Entry(e.name, e.content, e.method, ENCRYPTED) if e.name == PAGES else e for e in entries
    ]


def lying(entry: Entry) -> Entry:
    """The entry with a local header saying it is deflated, its directory record stored."""
    return Entry(entry.name, entry.content, entry.method, local_method=DEFLATED)


def deep(depth: int) -> str:
    return '"deep": ' + "[" * depth + "]" * depth + ", "


def smuggling(url: str) -> list[Entry]:
    """Two entries of the WARC's name: the last, listed and checked, and the first, read too."""
    sound = sound_entries(url)
    return [Entry(WARC, member(record(url + "smuggled"))), *sound]


# Each hostile package: its entries, the JSON put in its datapackage.json, and what the refusal
# says (after the package's name).
PACKAGES: dict[str, tuple[Callable[[str], list[Entry]], str, str]] = {
    "an entry named twice": (smuggling, "", f"{WARC} is in the ZIP file twice"),
    "an encrypted entry": (lambda url: encrypted(sound_entries(url)), "", f"{PAGES} is encrypted"),
    "a datapackage.json nested 40 deep": (
        sound_entries,
        deep(40),
        f"{DATAPACKAGE} is nested more than 32 levels deep",
    ),
    "a datapackage.json nested 100,000 deep": (
        sound_entries,
        deep(100_000),
        f"{DATAPACKAGE} is nested more than 32 levels deep",
    ),
    "a datapackage.json of more than 4 MiB": (
        sound_entries,
        '"description": "' + "x" * (5 * 1024 * 1024) + '", ',
        "bytes, more than the 4 MiB read of it",
    ),
    "a key twice in datapackage.json": (
        sound_entries,
        '"resources": [], ',
        f"{DATAPACKAGE} is not JSON: the key 'resources' is given twice in one object",
    ),
    "an entry name that climbs out": (
        lambda url: [*sound_entries(url), Entry("archive/../../x.warc.gz", member(record(url)))],
        "",
        "'archive/../../x.warc.gz': an entry name that is absolute or leaves the package",
    ),
    "an absolute entry name": (
        lambda url: [*sound_entries(url), Entry("/etc/dlweb.yaml", b"x")],
        "",
        "'/etc/dlweb.yaml': an entry name that is absolute or leaves the package",
    ),
    "a local header that disagrees with the directory": (
        lambda url: [lying(e) if e.name == WARC else e for e in sound_entries(url)],
        "",
        f"{WARC}: its local header and the central directory differ (compression)",
    ),
    "entries that overlap": (overlapping, "", "extra/outer and extra/inner overlap in the file"),
    "10,001 entries": (
        lambda url: [*sound_entries(url), *(Entry(f"extra/{n}", b"") for n in range(10_001))],
        "",
        "more than 10000 entries",
    ),
    "an entry inflating a thousand times": (
        lambda url: [
            *sound_entries(url),
            Entry("extra/spaces", b" " * (20 * 1024 * 1024), DEFLATED),
        ],
        "",
        "extra/spaces would inflate from",
    ),
    "a WARC file deflated in the ZIP": (
        lambda url: [Entry(e.name, e.content, DEFLATED) for e in sound_entries(url)],
        "",
        f"{WARC} is compressed in the ZIP file",
    ),
    "a ZIP file inside": (
        lambda url: [
            *sound_entries(url),
            Entry("extra/inner.zip", package_bytes(sound_entries(url + "inner"))),
        ],
        "",
        "extra/inner.zip is a ZIP file inside the package",
    ),
}


@pytest.mark.parametrize("hostile", list(PACKAGES))
async def test_a_hostile_package_is_refused_whole_naming_the_entry(
    cluster: Cluster, tmp_path: Path, hostile: str
) -> None:
    entries, extra, said = PACKAGES[hostile]
    url = f"http://packaged.example/{re.sub(r'[^a-z0-9]+', '-', hostile)}/"
    path = package(tmp_path / "hostile.wacz", entries(url), extra)
    # A sound file given with it: nothing of either is imported.
    beside = tmp_path / "beside.warc"
    beside.write_bytes(record(url + "beside"))
    done = dlweb_import(cluster, path, beside)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"dlweb: error: {path}: ") and done.stderr.count("\n") == 1
    assert said in done.stderr and len(done.stderr) < 1000
    urls = [url, url + "smuggled", url + "beside", url + "inner"]
    assert await archived(cluster, *urls) == dict.fromkeys(urls, 0)
