"""What the index keeps of one capture: text, title, language, outlinks, signature, or why not."""

import gzip

import pytest

from archive.header_block import parse_header_block
from search.domains import host_of, registered_domain
from search.errors import NotIndexed
from search.extract import MAX_BYTES, extract
from search.simhash import distance, simhash

PAGE = "http://www.example.co.uk/dir/page.html"


def header(content_type: str, *more: str) -> object:
    lines = [f"Content-Type: {content_type}", *more]
    return parse_header_block(("HTTP/1.1 200 OK\r\n" + "\r\n".join(lines) + "\r\n\r\n").encode())


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
    assert [(link.url, link.text) for link in got.links] == [
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
        ("application/pdf", b"%PDF-1.4", "PDF (not read yet)"),
        ("text/html", b"<p>" + b"x" * MAX_BYTES, "larger than 5 MB"),
        ("text/plain", b"\0\1\2binary", "binary"),
    ],
    ids=["image", "pdf", "huge", "binary"],
)
def test_other_captures_are_left_out_with_a_reason(
    content_type: str, body: bytes, reason: str
) -> None:
    with pytest.raises(NotIndexed) as raised:
        extract(PAGE, header(content_type), body)  # type: ignore[arg-type]
    assert raised.value.reason == reason


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
