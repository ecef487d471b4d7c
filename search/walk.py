"""Every version of every page of the archive, from the walk over its structure files that
`dlweb export` makes too (archive/walk.py)."""

from collections.abc import Callable
from dataclasses import dataclass

from archive.cluster import ClusterClient
from archive.requestkey import original_url
from archive.structure import Capture, RecordKind
from archive.walk import walk_structures
from archive.warc.pending import REGISTRY_URL

# Captures whose payload is the page itself: a stream segment is a piece of media, and a
# request, metadata, variant or pending record is no response.
PAGE_KINDS = frozenset((RecordKind.RESPONSE, RecordKind.REVISIT, RecordKind.NOT_MODIFIED))


@dataclass(frozen=True, slots=True)
class Version:
    """A capture of a URL whose payload differs from the capture of it before."""

    url: str
    capture: Capture


def has_body(capture: Capture) -> bool:
    """Whether a capture's status comes with a page: not an informational, redirect, "no
    content" or "not modified" answer."""
    return capture.status >= 200 and not 300 <= capture.status < 400 and capture.status != 204


def versions(url: str, captures: list[Capture]) -> list[Version]:
    """The captures of `url` that begin a version: those with a body whose content differs from
    the one captured before (a page unchanged across captures is one version, at its first)."""
    chosen: list[Version] = []
    last = None
    for capture in sorted(captures, key=lambda c: c.time):
        if capture.kind not in PAGE_KINDS or not has_body(capture):
            continue
        if capture.content != last:
            chosen.append(Version(url, capture))
        last = capture.content
    return chosen


async def all_versions(
    client: ClusterClient,
    on_file: Callable[[int], None] | None = None,
    on_url: Callable[[str, list[Capture]], None] | None = None,
) -> list[Version]:
    """Every version of every URL of the archive, by URL then time; `on_file(read)` reports how
    many structure files were read, `on_url(url, captures)` gets every structure file read."""
    found: list[Version] = []
    read_files = 0

    def visit(url: str, captures: list[Capture]) -> None:
        nonlocal read_files
        read_files += 1
        if on_file is not None:
            on_file(read_files)
        if on_url is not None:
            on_url(url, captures)
        # A response to a request other than GET (archived under a lookup URL) is no page.
        if url == REGISTRY_URL or original_url(url) != url:
            return
        found.extend(versions(url, captures))

    await walk_structures(client, visit)
    found.sort(key=lambda v: (v.url, v.capture.time))
    return found
