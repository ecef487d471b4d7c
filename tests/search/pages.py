"""A small WARC file of a few pages, written with warcio, for the search tests to import."""

import gzip
import io
from dataclasses import dataclass
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

MUSEUM = "http://museum.dlweb.test/"
FRENCH = "http://museum.dlweb.test/fr/phare.html"
NOTES = "http://museum.dlweb.test/notes.txt"
LOGO = "http://museum.dlweb.test/logo.png"
MOVED = "http://museum.dlweb.test/old"
BLOG = "http://blog.dlweb.test/2019/visit"

# The first sentence of the museum's home page, in 2019 and 2020 (unchanged), then replaced.
SENTENCE = "The keeper's logbooks from 1887 are shown in the east wing of the old lighthouse"
REOPENED = "The museum reopened in June after the restoration of its copper roof and lantern"
HIDDEN_WORD = "zanzibarquux"  # only in a script: never indexed


def _html(title: str, body: str, head: str = "") -> str:
    return (
        f"<!doctype html><html><head><title>{title}</title>{head}</head><body>{body}</body></html>"
    )


def home(sentence: str) -> bytes:
    return _html(
        "The Lighthouse Museum",
        f"<h1>Welcome</h1><p>{sentence}.</p>"
        "<p>Opening hours are listed below, with prices for groups and schools.</p>"
        f'<script>var secret = "{HIDDEN_WORD}";</script><style>p {{ color: red }}</style>'
        '<a href="fr/phare.html#top">En <b>français</b></a> <a href="/notes.txt">notes</a>'
        f' <a href="{BLOG}">a visitor writes</a>',
    ).encode()


FRENCH_PAGE = _html(
    "Le musée du phare",
    "<p>Le gardien du phare tenait ses registres avec soin; ils sont exposés dans l'aile est"
    " du musée, et les visiteurs peuvent les consulter tous les dimanches de l'été.</p>",
    '<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">',
).encode("latin-1")
BLOG_PAGE = _html(
    "A visit to the lighthouse",
    "<p>We went to see the old lighthouse last Sunday. The east wing shows logbooks, and a"
    " keeper's old coat. The children loved the lighthouse lantern.</p>",
).encode()
NOTES_TEXT = b"Notes for the guides: the lantern room is closed in winter for maintenance.\n"


@dataclass(frozen=True, slots=True)
class Capture:
    url: str
    date: str
    body: bytes
    content_type: str = "text/html"
    status: str = "200 OK"
    gzipped: bool = False


CAPTURES = [
    Capture(MUSEUM, "2019-03-01T10:00:00Z", home(SENTENCE)),
    Capture(MUSEUM, "2020-02-01T10:00:00Z", home(SENTENCE)),  # unchanged: the same version
    Capture(MUSEUM, "2021-06-15T10:00:00Z", home(REOPENED)),
    Capture(FRENCH, "2019-03-01T10:00:05Z", FRENCH_PAGE, "text/html"),
    Capture(NOTES, "2019-03-01T10:00:06Z", NOTES_TEXT, "text/plain; charset=utf-8"),
    Capture(LOGO, "2019-03-01T10:00:07Z", b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png"),
    Capture(MOVED, "2019-03-01T10:00:08Z", b"", status="301 Moved Permanently"),
    Capture(BLOG, "2019-04-02T08:30:00Z", BLOG_PAGE, gzipped=True),
]


def write_warc(path: Path) -> Path:
    """The captures above as one gzipped WARC file."""
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for capture in CAPTURES:
            body = gzip.compress(capture.body, mtime=0) if capture.gzipped else capture.body
            headers = [("Content-Type", capture.content_type), ("Content-Length", str(len(body)))]
            if capture.gzipped:
                headers.append(("Content-Encoding", "gzip"))
            if capture.status.startswith("301"):
                headers.append(("Location", MUSEUM))
            record = writer.create_warc_record(
                capture.url,
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=StatusAndHeaders(capture.status, headers, protocol="HTTP/1.1"),
                warc_headers_dict={"WARC-Date": capture.date},
            )
            writer.write_record(record)
    return path
