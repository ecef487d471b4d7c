"""What the index keeps of one capture: text, title, language, outlinks, signature, or why not."""

import gzip
import io
import logging

import pypdf
import pytest

from archive.header_block import parse_header_block
from archive.simhash import distance, simhash
from search import extract as extract_module
from search.domains import host_of, registered_domain
from search.errors import NotIndexed
from search.extract import MAX_BYTES, extract, extract_many

PAGE = "http://www.example.co.uk/dir/page.html"


def header(content_type: str, *more: str) -> object:
    lines = [f"Content-Type: {content_type}", *more]
    return parse_header_block(("HTTP/1.1 200 OK\r\n" + "\r\n".join(lines) + "\r\n\r\n").encode())


def pdf(*pages: str, title: str = "", link: str = "") -> bytes:
    """A small PDF written by hand: one page a line of text in Helvetica (no parentheses or
    backslashes in it), the title in its document information, a link annotation on page 1."""
    count = len(pages)
    kids = " ".join(f"{5 + 2 * n} 0 R" for n in range(count))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count} >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) >>" if title else "<< >>",
    ]
    for n, line in enumerate(pages):
        annots = ""
        if link and n == 0:
            action = f"<< /S /URI /URI ({link}) >>"
            annots = f"/Annots [<< /Subtype /Link /Rect [72 700 300 720] /A {action} >>]"
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {6 + 2 * n} 0 R {annots}>>"
        )
        stream = f"BT /F1 12 Tf 72 720 Td ({line}) Tj ET" if line else ""
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    out = "%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n"
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 4 0 R >>\n"
    return (out + f"startxref\n{xref}\n%%EOF\n").encode("latin-1")


def test_an_html_page_gives_its_title_visible_text_and_links() -> None:
    html = (
        "<html><head><title> Le  café </title><style>body{}</style>"
        '<meta charset="windows-1252"><base href="/base/"></head><body>'
        "<h1>Le café du port</h1><p>Il ouvre tous les jours de la semaine, sauf le dimanche,"
        " et sert le meilleur chocolat de la ville.</p><script>var hidden = 1;</script>"
        '<a href="menu.html#prix">la <b>carte</b></a><a href="mailto:x@example.com">écrire</a>'
        '<a href="https://other.example/"><img alt="logo"></a><a href="menu.html">la carte</a>'
        "</body></html>"
    ).encode("cp1252")
    got = extract(PAGE, header("text/html"), html)  # type: ignore[arg-type]
    assert got.title == "Le café"
    assert got.text.startswith("Le café du port Il ouvre tous les jours")
    assert "hidden" not in got.text and "body{}" not in got.text
    assert got.lang == "fr"
    assert list(got.links) == [
        ("http://www.example.co.uk/base/menu.html", "la carte"),
        ("https://other.example/", "logo"),
    ]
    assert got.simhash == simhash(got.text) != 0


def test_the_charset_of_the_header_comes_before_the_meta() -> None:
    html = '<meta charset="iso-8859-1"><p>naïve</p>'.encode()
    got = extract(PAGE, header("text/html; charset=UTF-8"), html)  # type: ignore[arg-type]
    assert got.text == "naïve"
    # Without either, UTF-8 that does not decode is read as Windows-1252.
    got = extract(PAGE, header("text/html"), "<p>naïve</p>".encode("latin-1"))  # type: ignore[arg-type]
    assert got.text == "naïve"


def test_plain_text_is_text_only() -> None:
    body = gzip.compress(b"Just   some\nnotes, no <b>markup</b> read.")
    got = extract(PAGE, header("text/plain", "Content-Encoding: gzip"), body)  # type: ignore[arg-type]
    assert (got.title, got.text, got.links) == ("", "Just some notes, no <b>markup</b> read.", ())


@pytest.mark.parametrize(
    ("content_type", "body", "reason"),
    [
        ("image/png", b"\x89PNG", "not HTML or text"),
        ("text/html", b"<p>" + b"x" * MAX_BYTES, "larger than 5 MB"),
        ("text/plain", b"\0\1\2binary", "binary"),
    ],
    ids=["image", "huge", "binary"],
)
def test_other_captures_are_left_out_with_a_reason(
    content_type: str, body: bytes, reason: str
) -> None:
    with pytest.raises(NotIndexed) as raised:
        extract(PAGE, header(content_type), body)  # type: ignore[arg-type]
    assert raised.value.reason == reason


def test_a_batch_gives_each_capture_what_it_gives_alone_and_the_others_reasons_in_order() -> None:
    french = (
        "<html><title>Le port</title><p>Les bateaux rentrent au port avant la nuit, et les"
        " pêcheurs vendent leur poisson sur le quai.</p></html>"
    )
    english = (
        "The boats come back to the harbour before night, and the fishermen sell their fish"
        " on the quay."
    )
    items = [
        (PAGE, header("text/html"), french.encode()),
        (PAGE, header("image/png"), b"\x89PNG"),
        (PAGE, header("text/plain"), english.encode()),
        (PAGE, header("text/plain"), b"\0\1\2binary"),
    ]
    got = extract_many(items)  # type: ignore[arg-type]
    assert [o.reason for o in got if isinstance(o, NotIndexed)] == ["not HTML or text", "binary"]
    assert [isinstance(o, NotIndexed) for o in got] == [False, True, False, True]
    assert got[0] == extract(*items[0])  # type: ignore[arg-type]
    assert got[2] == extract(*items[2])  # type: ignore[arg-type]
    assert [got[0].lang, got[2].lang] == ["fr", "en"]  # type: ignore[union-attr]
    assert got[0].simhash != got[2].simhash  # type: ignore[union-attr]
    assert extract_many([]) == []
    left_out = extract_many([items[1], items[3]])  # type: ignore[list-item]
    assert [o.reason for o in left_out] == ["not HTML or text", "binary"]  # type: ignore[union-attr]


def test_a_pdf_gives_its_title_text_and_links() -> None:
    lines = [
        "The lighthouse keeper wrote in his logbook every evening of the year.",
        "Storms, passing ships and the state of the lantern were noted down.",
    ]
    document = pdf(*lines, title="The  Keeper's Logbook", link="https://example.org/log#p2")
    pypdf.PdfReader(io.BytesIO(document), strict=True)  # the helper writes a valid PDF
    got = extract(PAGE, header("application/pdf"), document)  # type: ignore[arg-type]
    assert (got.content_type, got.title) == ("application/pdf", "The Keeper's Logbook")
    assert got.text == " ".join(lines)
    assert got.lang == "en" and got.simhash == simhash(got.text) != 0
    assert list(got.links) == [("https://example.org/log", "")]
    # Without a title of its own, a PDF is named by its first line.
    got = extract(PAGE, header("application/pdf"), pdf(*lines))  # type: ignore[arg-type]
    assert got.title == lines[0]


def test_only_the_first_pages_of_a_pdf_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    document = pdf("one", "two", "three")  # five drawing operations a page
    monkeypatch.setattr(extract_module, "MAX_PDF_PAGES", 2)
    assert extract(PAGE, header("application/pdf"), document).text == "one two"  # type: ignore[arg-type]
    monkeypatch.setattr(extract_module, "MAX_PDF_PAGES", 200)
    monkeypatch.setattr(extract_module, "MAX_PDF_OPERATIONS", 12)
    assert extract(PAGE, header("application/pdf"), document).text == "one two"  # type: ignore[arg-type]
    monkeypatch.setattr(extract_module, "MAX_PDF_OPERATIONS", 4)
    with pytest.raises(NotIndexed, match="unreadable PDF: .*more than 4 drawing operations"):
        extract(PAGE, header("application/pdf"), document)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (pdf("Some words on the page.")[:300], "unreadable PDF"),
        (b"%PDF-1.7\n" + bytes(range(256)) * 8, "unreadable PDF"),
        (b"%PDF-1.4\n", "unreadable PDF"),
        (pdf("A page of its own kids.").replace(b"[5 0 R]", b"[2 0 R]"), "unreadable PDF"),
        (pdf(""), "PDF without text"),
        (pdf(), "PDF without text"),
    ],
    ids=["truncated", "garbage", "header-only", "cyclic-pages", "blank-page", "no-page"],
)
def test_a_damaged_or_empty_pdf_is_left_out_and_logged(
    body: bytes, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING), pytest.raises(NotIndexed) as raised:
        extract(PAGE, header("application/pdf"), body)  # type: ignore[arg-type]
    assert raised.value.reason == reason
    logged = [r.getMessage() for r in caplog.records if r.name == "search.extract"]
    assert logged == [f"{PAGE}: {raised.value}"]


def test_a_gzip_bomb_is_cut_at_the_limit() -> None:
    bomb = gzip.compress(b"<p>" + b"a " * MAX_BYTES)
    with pytest.raises(NotIndexed, match="larger than 5 MB"):
        extract(PAGE, header("text/html", "Content-Encoding: gzip"), bomb)  # type: ignore[arg-type]


def test_near_duplicates_have_close_signatures() -> None:
    words = [f"word{i % 97}x{i % 13}" for i in range(400)]
    text = " ".join(words)
    changed = " ".join(words[:200] + ["updated"] + words[201:])
    other = " ".join(reversed(words))
    assert distance(simhash(text), simhash(changed)) <= 6
    assert distance(simhash(text), simhash(other)) > 12
    assert simhash("") == 0


@pytest.mark.parametrize(
    ("url", "host", "domain"),
    [
        ("http://www.bbc.co.uk/news", "www.bbc.co.uk", "bbc.co.uk"),
        ("https://a.b.example.com:8443/", "a.b.example.com", "example.com"),
        ("http://museum.dlweb.test/", "museum.dlweb.test", "dlweb.test"),
        ("http://127.0.0.1:8080/x", "127.0.0.1", "127.0.0.1"),
        ("http://LOCALHOST/", "localhost", "localhost"),
    ],
)
def test_host_and_registered_domain(url: str, host: str, domain: str) -> None:
    assert host_of(url) == host
    assert registered_domain(host) == domain
