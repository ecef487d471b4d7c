"""What a program asks of one archived document through `api.dlweb`: its capture's metadata,
its links and its text, read from the archived HTML with lxml."""

from typing import Any

import lxml.html
from lxml.etree import ParserError

from archive.cluster import FoundCapture
from archive.content_coding import BadCoding, TooLarge, inflate
from archive.errors import ClientFault
from archive.header_block import HeaderBlock
from archive.reading import CaptureReader, Reading
from archive.timestamps import format_iso
from archive.visible_text import visible_text

# Bytes of a document read, as stored and once its coding is undone: lxml's tree of a page takes
# ten times its size, and a harbor parses it while others wait for theirs.
MAX_DOCUMENT = 8 * 1024 * 1024


class NotADocument(ClientFault):
    """An archived payload that cannot be read as an HTML document."""

    status = 422


def metadata(found: FoundCapture, header: HeaderBlock) -> dict[str, Any]:
    capture = found.capture
    return {
        **capture.to_json(),
        "date": format_iso(capture.time),
        "headers": header.headers,
        **{
            key: None if other is None else format_iso(other.time)
            for key, other in found.neighbours.items()
        },
    }


async def body(reader: CaptureReader, reading: Reading) -> bytes:
    """The body of a capture to parse as a document: NotADocument when larger than
    MAX_DOCUMENT."""
    if reading.size > MAX_DOCUMENT:
        raise NotADocument(f"the archived document is larger than {MAX_DOCUMENT} bytes")
    return await reader.whole_body(reading)


def _decoded(header: HeaderBlock, body: bytes) -> bytes:
    """The body without its content coding, at most MAX_DOCUMENT bytes of it: a small payload
    may inflate to gigabytes."""
    try:
        return inflate(header.get("Content-Encoding") or "", body, MAX_DOCUMENT)
    except (BadCoding, TooLarge) as exc:
        raise NotADocument(str(exc)) from None


def parse(url: str, header: HeaderBlock, body: bytes) -> lxml.html.HtmlElement:
    content_type = (header.get("Content-Type") or "").lower()
    if "html" not in content_type:
        raise NotADocument(f"the archived resource is {content_type or 'untyped'}, not HTML")
    try:
        document = lxml.html.document_fromstring(_decoded(header, body))
    except (ParserError, ValueError) as exc:
        raise NotADocument(f"the archived document cannot be parsed: {exc}") from None
    document.make_links_absolute(url, resolve_base_href=True)
    return document


def extracted(what: str, url: str, header: HeaderBlock, body: bytes) -> Any:
    """The links or the text of an archived document (`what`), parsed here: on a thread, as the
    harbors call it, since a large page takes a second to read."""
    parsed = parse(url, header, body)
    return links(parsed) if what == "links" else text(parsed)


def links(document: lxml.html.HtmlElement) -> list[dict[str, str]]:
    """Every link of the document: its target, the element and attribute that hold it."""
    return [
        {"url": link, "element": element.tag, "attribute": attribute or "style"}
        for element, attribute, link, _ in document.iterlinks()
    ]


def text(document: lxml.html.HtmlElement) -> str:
    """The text a reader sees, read as the search index and WACZ page lists read it."""
    return visible_text(document)
