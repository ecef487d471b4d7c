"""The versions of a page: which of a URL's captures the search index holds a document of."""

from dataclasses import dataclass

from archive.structure import Capture, RecordKind

# Captures whose payload is the page itself, or a recorded stream's chunk log (whose titles are
# indexed, stream_titles.py): a stream segment is a piece of media, and a request, metadata,
# variant or pending record is no response.
PAGE_KINDS = frozenset(
    (RecordKind.RESPONSE, RecordKind.REVISIT, RecordKind.NOT_MODIFIED, RecordKind.STREAM_LOG)
)


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
