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
MENU = "http://journal.dlweb.test/2020/menu"
MENU_COPY = "http://mirror.dlweb.test/menu.html"  # the same text under another title
LOGO = "http://museum.dlweb.test/logo.png"
MOVED = "http://museum.dlweb.test/old"
BLOG = "http://blog.dlweb.test/2019/visit"
TIDES = "http://journal.dlweb.test/2019/tides"  # links to the visit: //www.blog…/visit#comments
MIRROR = "http://mirror.dlweb.test/tides.html"  # a copy of it, one paragraph changed

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
# An essay of eight paragraphs, and a copy of it elsewhere with its fourth paragraph rewritten:
# near-duplicates by simhash. Their words are none that the text search tests look for.
TIDES_PARAGRAPHS = [
    "Rock pools fill twice a day when the sea climbs over the ledges below the cliffs, and each"
    " pool becomes a small world of its own until the water returns again.",
    "Anemones close into soft red beads when the tide drops, then open their tentacles as soon"
    " as fresh water washes over them, catching tiny shrimp that drift past.",
    "Hermit crabs trade shells along the bottom of the deeper pools, and a patient observer can"
    " watch one inspect three or four empty whelk shells before choosing a home.",
    "Limpets graze on thin films of algae, each returning to the same scar on the rock where its"
    " shell fits exactly, so that it can clamp down hard against waves and gulls.",
    "Starfish move slowly on hundreds of tube feet, prying mussels apart with steady pressure"
    " that lasts for hours, and turning their stomachs outward to digest them.",
    "Sea slugs in bright orange and violet feed on sponges that grow in the shade under the"
    " overhangs, and lay their eggs in pale ribbons coiled against the stone.",
    "Blennies hide in cracks with only their eyes showing, darting out to snatch a meal and"
    " back again before the shadow of a bird can cross the surface of the pool.",
    "Visitors should step only on bare rock, lift nothing without putting it back the same way"
    " up, and leave before the flood tide cuts off the path around the point.",
]
CHANGED_PARAGRAPH = (
    "Barnacles glue their heads to the stone for life and kick food into their mouths with"
    " feathery legs whenever the water covers them, then seal their plates shut at low tide."
)


def essay(paragraphs: list[str], links: str) -> bytes:
    body = "".join(f"<p>{text}</p>" for text in paragraphs)
    return _html("Life in the rock pools", f"<h1>Rock pools</h1>{body}<p>{links}</p>").encode()


# A scheme-relative link, to the www. spelling of the blog's URL, with a fragment.
TIDES_PAGE = essay(
    TIDES_PARAGRAPHS, '<a href="//www.blog.dlweb.test/2019/visit#comments">our day out in March</a>'
)
MIRROR_PAGE = essay(
    [*TIDES_PARAGRAPHS[:3], CHANGED_PARAGRAPH, *TIDES_PARAGRAPHS[4:]],
    f'<a href="{TIDES}">the original essay</a>',
)
MENU_TEXT = (
    "<p>Soup of the day with warm rye bread, a plate of grilled sardines with lemon and parsley,"
    " and apple pie with cream for dessert; tea or coffee included on weekdays.</p>"
)
MENU_PAGE = _html("Harbour café menu", MENU_TEXT).encode()
MENU_COPY_PAGE = _html("Menu (copied)", MENU_TEXT).encode()
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
    Capture(TIDES, "2019-05-10T09:00:00Z", TIDES_PAGE),
    Capture(MIRROR, "2020-01-20T16:45:00Z", MIRROR_PAGE),
    Capture(MENU, "2020-03-03T12:00:00Z", MENU_PAGE),
    Capture(MENU_COPY, "2020-03-04T12:00:00Z", MENU_COPY_PAGE),
]


def write_warc(path: Path, captures: list[Capture] = CAPTURES) -> Path:
    """These captures (all those above) as one gzipped WARC file."""
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for capture in captures:
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
