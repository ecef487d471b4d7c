"""WACZ 1.1.1 packages: `dlweb export --format wacz` writes one, `dlweb import` reads them.

A WACZ is a ZIP holding a WARC file (`archive/`, stored uncompressed so that a replay tool reads a
record at the offset its index gives), a CDXJ index of it (`indexes/`), the list of its HTML pages
with their titles and text (`pages/pages.jsonl`), and `datapackage.json`, which names every file
with its size and SHA-256 and is itself hashed in `datapackage-digest.json`. The export writes the
WARC as `dlweb export` does, into a folder beside the package, reads it once for the index and
the pages, then zips it all under a temporary name renamed when complete. The import checks every
hash before reading any record, so a damaged package is refused whole, then reads each WARC
straight from the ZIP. A package is hostile until checked: its ZIP layout first
(exchange/zip_layout.py), then its JSON files, read only up to MAX_JSON bytes and MAX_JSON_DEPTH
levels of nesting, with no key given twice.
"""

import asyncio
import codecs
import contextlib
import hashlib
import json
import shutil
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, Any, cast

from archive.atomic import atomic_file
from archive.errors import DlwebError
from archive.header_block import charset_of
from archive.warc.digests import parse_digest

from .warcinfo import SOFTWARE
from .zip_layout import (
    MAX_DIRECTORY,
    MAX_ENTRIES,
    BadPackage,
    Entry,
    StoredEntry,
    checked_entries,
    directory_size,
    shown,
)

if TYPE_CHECKING:
    from archive.cluster import ClusterClient

    from .exporter import ExportSummary, Selection

WACZ_VERSION = "1.1.1"
WARC_NAME = "data.warc.gz"
INDEX_PATH = "indexes/index.cdxj"
PAGES_PATH = "pages/pages.jsonl"
DATAPACKAGE = "datapackage.json"
DIGEST = "datapackage-digest.json"
ZIP_MAGIC = b"PK\x03\x04"
PIECE = 1024 * 1024
# What of a page is read for its title and text, and the most text kept for each.
PAGE_READ = 2 * 1024 * 1024
TEXT_CHARS = 100_000
HTML_TYPES = ("text/html", "application/xhtml+xml")
# The JSON files of a package read on import (datapackage.json and its digest file).
MAX_JSON = 4 * 1024 * 1024
MAX_JSON_DEPTH = 32


async def export_wacz(
    client: "ClusterClient",
    out: Path,
    selection: "Selection",
    on_record: Callable[[int, int], None] | None = None,
) -> "tuple[ExportSummary, int]":
    """Write the selected captures to `out` as a WACZ package; the summary and the page count."""
    # Here: the import reads packages with this module, before it loads the network modules.
    from .exporter import export_warc

    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".part", dir=out.parent))
    try:
        summary = await export_warc(client, work / WARC_NAME, selection, on_record)
        pages = await asyncio.to_thread(_package, work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary.bytes = out.stat().st_size
    return summary, pages


def _package(work: Path, out: Path) -> int:
    """Index the WARC in `work`, list its pages and zip it all into `out`; the page count."""
    from .cdxj import cdxj_lines

    warc = work / WARC_NAME
    with open(work / "pages.jsonl", "w", encoding="utf-8") as fh:
        pages = _PageList(fh)
        lines = sorted(cdxj_lines(warc, pages.visit))
    with open(work / "index.cdxj", "w", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in lines)
    resources = []
    with atomic_file(out, shared=True) as written, zipfile.ZipFile(written, "w") as package:
        for path, source, compression in (
            (f"archive/{WARC_NAME}", warc, zipfile.ZIP_STORED),
            (INDEX_PATH, work / "index.cdxj", zipfile.ZIP_DEFLATED),
            (PAGES_PATH, work / "pages.jsonl", zipfile.ZIP_DEFLATED),
        ):
            digest, size = _add(package, path, source, compression)
            name = PurePosixPath(path).name
            resources.append({"name": name, "path": path, "hash": digest, "bytes": size})
        manifest = {
            "profile": "data-package",
            "wacz_version": WACZ_VERSION,
            "title": out.stem,
            "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "software": SOFTWARE,
            "resources": resources,
        }
        data = json.dumps(manifest, indent=2).encode()
        package.writestr(_member(DATAPACKAGE, zipfile.ZIP_DEFLATED), data)
        seal = {"path": DATAPACKAGE, "hash": f"sha256:{hashlib.sha256(data).hexdigest()}"}
        package.writestr(_member(DIGEST, zipfile.ZIP_DEFLATED), json.dumps(seal, indent=2))
    return pages.count


def _member(path: str, compression: int, size: int = 0) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(path, time.localtime()[:6])
    info.compress_type = compression
    info.external_attr = 0o644 << 16
    # Known beforehand, so that zipfile writes ZIP64 fields only for a member that needs them.
    info.file_size = size
    return info


def _add(package: zipfile.ZipFile, path: str, source: Path, compression: int) -> tuple[str, int]:
    """Copy a file into the package by pieces; its `sha256:` hash and size, as listed."""
    digest = hashlib.sha256()
    size = 0
    info = _member(path, compression, source.stat().st_size)
    with open(source, "rb") as fh, package.open(info, "w") as member:
        while piece := fh.read(PIECE):
            digest.update(piece)
            member.write(piece)
            size += len(piece)
    return f"sha256:{digest.hexdigest()}", size


class _PageList:
    """The HTML pages of status 200 of a WARC as pages.jsonl lines, written while the index reads
    its records; a revisit of a page gets the title of the response it repeats. A page without a
    title is listed under its URL, as py-wacz does."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.count = 0
        self.titles: dict[str, str] = {}
        header = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages", "hasText": True}
        out.write(json.dumps(header) + "\n")

    def visit(self, record: Any) -> None:
        headers = record.rec_headers
        http = record.http_headers
        if record.rec_type not in ("response", "revisit") or http is None:
            return
        if http.get_statuscode() != "200":
            return
        url = headers.get_header("WARC-Target-URI")
        digest = headers.get_header("WARC-Payload-Digest") or ""
        page: dict[str, str] = {
            "id": headers.get_header("WARC-Record-ID").strip("<>").rpartition(":")[2],
            "url": url,
            "ts": headers.get_header("WARC-Date"),
        }
        if record.rec_type == "revisit":
            if digest not in self.titles:
                return
            page["title"] = self.titles[digest] or url
        else:
            content_type = http.get_header("Content-Type") or ""
            if content_type.split(";")[0].strip().lower() not in HTML_TYPES:
                return
            title, text = _title_and_text(record, _charset(content_type))
            self.titles[digest] = title
            page["title"] = title or url
            if text:
                page["text"] = text
        self.out.write(json.dumps(page) + "\n")
        self.count += 1


def _charset(content_type: str) -> str | None:
    """The Python name of the charset a Content-Type names; None for none or an unknown one."""
    given = charset_of(content_type)
    try:
        return None if given is None else codecs.lookup(given).name
    except LookupError:
        return None


def _title_and_text(record: Any, charset: str | None) -> tuple[str, str]:
    """A page's title and visible text, from its first PAGE_READ bytes; empty when it cannot
    be read (an unknown content encoding, a body that is no HTML)."""
    from lxml import etree  # here: only an export to WACZ reads pages

    from archive.visible_text import title_of, visible_text

    try:
        data = record.content_stream().read(PAGE_READ)
    except (OSError, EOFError, ValueError, zlib.error):
        return "", ""
    if charset is None:
        try:
            data.decode("utf-8")
            charset = "utf-8"
        except UnicodeDecodeError as exc:
            # Cut inside a character at the end of what was read, the rest being UTF-8.
            charset = "utf-8" if exc.start >= len(data) - 3 else None
    parser = etree.HTMLParser(encoding=charset, recover=True, no_network=True)
    try:
        root = etree.fromstring(data, parser)
    except (etree.LxmlError, ValueError):
        return "", ""
    if root is None:
        return "", ""
    return title_of(root), visible_text(root)[:TEXT_CHARS]


def is_wacz(path: Path) -> bool:
    """Whether an input file is a WACZ package: by its name, or a ZIP (no WARC starts so)."""
    if path.suffix.lower() == ".wacz":
        return True
    with open(path, "rb") as fh:
        return fh.read(len(ZIP_MAGIC)) == ZIP_MAGIC


def check_wacz(path: Path) -> None:
    """Refuse a WACZ package whose ZIP layout is hostile, whose files do not match the hashes of
    its datapackage.json, or that holds a WARC file it does not list or cannot be read as it is
    stored: nothing of a damaged package is imported."""
    with _opened(path) as (package, entries):
        listed = _check_listed(path, package, entries)
        warcs = _warc_entries(entries)
        for entry in entries.values():
            _check_not_zip(path, package, entry)
    if not warcs:
        raise DlwebError(f"{path}: no WARC file under archive/ in this WACZ")
    for entry in warcs:
        if entry.name not in listed:
            raise DlwebError(
                f"{path}: {shown(entry.name)} is not listed in {DATAPACKAGE}, so it cannot be"
                " checked"
            )
        if entry.info.compress_type != zipfile.ZIP_STORED:
            raise DlwebError(
                f"{path}: {shown(entry.name)} is compressed in the ZIP file; a WACZ stores its"
                " WARC files as they are (STORE), so that they are read at any offset"
            )


@contextlib.contextmanager
def _opened(path: Path) -> "Iterator[tuple[zipfile.ZipFile, dict[str, Entry]]]":
    """The package open, and its entries by name, its layout checked first (its directory's size
    before zipfile reads it); a DlwebError naming the package for anything unreadable."""
    try:
        with open(path, "rb") as fh:
            entries, size = directory_size(fh)
            if entries > MAX_ENTRIES or size > MAX_DIRECTORY:
                raise BadPackage(
                    f"a central directory of {entries} entries and {size} bytes, more than"
                    f" {MAX_ENTRIES} entries or {MAX_DIRECTORY // (1024 * 1024)} MiB"
                )
            with zipfile.ZipFile(fh) as package:
                yield package, {e.name: e for e in checked_entries(path, package, fh)}
    except BadPackage as exc:
        raise DlwebError(f"{path}: {exc}") from None
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        NotImplementedError,
        RuntimeError,
        OSError,
    ) as exc:
        raise DlwebError(f"{path}: not a readable WACZ (ZIP) file: {str(exc)[:300]}") from None


def _check_listed(path: Path, package: zipfile.ZipFile, entries: dict[str, Entry]) -> set[str]:
    """Check every file the package lists, and its datapackage.json against its digest file;
    the paths listed."""
    if DATAPACKAGE not in entries:
        raise DlwebError(f"{path}: no {DATAPACKAGE}: not a WACZ file, or a damaged one")
    data = _small_file(path, package, entries[DATAPACKAGE])
    if DIGEST in entries:
        seal = _json(path, DIGEST, _small_file(path, package, entries[DIGEST]))
        if not isinstance(seal, dict) or not _matches(path, DIGEST, seal.get("hash"), [data]):
            raise DlwebError(f"{path}: {DATAPACKAGE} does not match its hash in {DIGEST}")
    manifest = _json(path, DATAPACKAGE, data)
    resources = manifest.get("resources") if isinstance(manifest, dict) else None
    if not isinstance(resources, list) or not all(isinstance(r, dict) for r in resources):
        raise DlwebError(f"{path}: {DATAPACKAGE} has no list of resources")
    for resource in resources:
        member = resource.get("path")
        if not isinstance(member, str) or member not in entries:
            shown_member = shown(member) if isinstance(member, str) else repr(member)[:200]
            raise DlwebError(f"{path}: {shown_member}, listed in {DATAPACKAGE}, is not in the file")
        size = entries[member].info.file_size
        if "bytes" in resource and resource["bytes"] != size:
            raise DlwebError(
                f"{path}: {shown(member)} has {size} bytes, {DATAPACKAGE} says"
                f" {str(resource['bytes'])[:40]}"
            )
        with package.open(entries[member].info) as fh:
            if not _matches(path, member, resource.get("hash"), iter(lambda: fh.read(PIECE), b"")):
                raise DlwebError(
                    f"{path}: {shown(member)} does not match its hash in {DATAPACKAGE}"
                )
    return {resource["path"] for resource in resources}


def _small_file(path: Path, package: zipfile.ZipFile, entry: Entry) -> bytes:
    """A JSON file of the package, whole, when it is no larger than MAX_JSON."""
    if entry.info.file_size > MAX_JSON:
        raise DlwebError(
            f"{path}: {entry.name} has {entry.info.file_size} bytes, more than the"
            f" {MAX_JSON // (1024 * 1024)} MiB read of it"
        )
    with package.open(entry.info) as fh:
        data: bytes = fh.read(MAX_JSON)
    return data


def _check_not_zip(path: Path, package: zipfile.ZipFile, entry: Entry) -> None:
    """Refuse a ZIP file inside the package: nothing in a WACZ is one."""
    with package.open(entry.info) as fh:
        if fh.read(len(ZIP_MAGIC)) == ZIP_MAGIC:
            raise DlwebError(f"{path}: {shown(entry.name)} is a ZIP file inside the package")


def _json(path: Path, member: str, data: bytes) -> Any:
    """JSON read with no key given twice (readers that keep the first would see another
    document) and no deeper than MAX_JSON_DEPTH."""
    try:
        value = json.loads(data, object_pairs_hook=_no_twice)
    except RecursionError:
        value = None
        depth = MAX_JSON_DEPTH + 1
    except ValueError as exc:
        raise DlwebError(f"{path}: {member} is not JSON: {str(exc)[:200]}") from None
    else:
        depth = _depth(value)
    if depth > MAX_JSON_DEPTH:
        raise DlwebError(f"{path}: {member} is nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def _no_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        twice = next(k for i, (k, _) in enumerate(pairs) if k in dict(pairs[:i]))
        raise ValueError(f"the key {twice[:100]!r} is given twice in one object")
    return value


def _depth(value: Any) -> int:
    """How many arrays and objects deep a JSON value is nested, counted without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is not None:
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _matches(path: Path, member: str, declared: object, pieces: Any) -> bool:
    """Whether the bytes of `pieces` have the hash declared (`sha256:` and hex, or another
    algorithm or spelling that WARC digests use)."""
    try:
        digest = parse_digest(declared) if isinstance(declared, str) else None
    except ValueError:
        digest = None
    if digest is None:
        raise DlwebError(
            f"{path}: {shown(member)}: no hash that can be checked: {repr(declared)[:100]}"
        )
    hasher = digest.hasher()
    for piece in pieces:
        hasher.update(piece)
    return hasher.digest() == digest.value


def _warc_entries(entries: dict[str, Entry]) -> list[Entry]:
    return [
        entry
        for name, entry in entries.items()
        if name.startswith("archive/") and name.lower().endswith((".warc", ".warc.gz"))
    ]


def archive_inputs(path: Path) -> Iterator[tuple[Path, IO[bytes], int]]:
    """The WARC or ARC files to read in an input file, opened: the file itself, or each WARC of
    a WACZ package (checked by check_wacz), read straight from the ZIP; each with the name its
    records are reported under and where it starts in the file (for progress)."""
    if not is_wacz(path):
        with open(path, "rb") as fh:
            yield path, fh, 0
        return
    with _opened(path) as (package, entries), open(path, "rb") as fh:
        for entry in _warc_entries(entries):
            stored = StoredEntry(fh, entry.data_start, entry.info.file_size)
            yield path / entry.name, cast(IO[bytes], stored), entry.info.header_offset
