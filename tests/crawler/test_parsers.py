import logging
import random
from types import SimpleNamespace

import pytest

from crawler import parsers
from crawler.links import Link, LinkKind
from crawler.parsers import ParseResult, common, parse, parser_for, register
from crawler.parsers.css import CssParser
from crawler.parsers.feeds import FeedParser
from crawler.parsers.html import HtmlParser, refresh_target, srcset_urls
from crawler.parsers.javascript import JavaScriptParser
from crawler.parsers.playlists import AsxParser, M3uParser, PlsParser, RamParser
from crawler.parsers.sitemap import SitemapParser, robots_sitemaps
from crawler.parsers.text import TextParser

PAGE, COMPONENT, FEED, STREAM = LinkKind.PAGE, LinkKind.COMPONENT, LinkKind.FEED, LinkKind.STREAM
BASE = "http://example.com/dir/index.html"


def links(result: ParseResult | None) -> list[tuple[str, LinkKind, bool, str]]:
    assert result is not None
    return [(link.url, link.kind, link.requisite, link.text) for link in result.links]


def urls(result: ParseResult | None) -> list[str]:
    assert result is not None
    return [link.url for link in result.links]


def html(body: str | bytes, url: str = BASE, content_type: str = "text/html") -> ParseResult:
    result = parse(url, content_type, body.encode() if isinstance(body, str) else body)
    assert result is not None
    return result


PAGE_HTML = b"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>A page</title>
<link rel="stylesheet" href="/css/site.css"><link rel="shortcut icon" href="/favicon.ico">
<link rel="apple-touch-icon" href="touch.png"><link rel="preload" href="font.woff2" as="font">
<link rel="alternate" type="application/rss+xml" title="News" href="/news.rss">
<link rel="alternate" type="application/atom+xml" href="/atom.xml"><link rel="canonical" href="/c">
<script src="/js/app.js"></script>
<script>var logo = "/img/logo.png"; document.write('<img src="' + '/img/written.png">');</script>
<script type="application/ld+json">{"url": "http://example.com/ld.png"}</script>
<style>body { background: url(bg.png) } @import "print.css";</style>
</head>
<body background="body.gif">
<h1>Welcome</h1>
<p>Read <a href="page2.html#top">the <b>second</b> page</a> or <a href="/x" title="X page"></a>
<a href="javascript:go()">js</a> <a href="mailto:me@example.com">mail</a> <a href="#top">top</a>
<a href="tel:123">tel</a> <a href="data:text/html,x">data</a> <a href="about:blank">about</a>
<a href="  /spaced  ">spaced</a> <a href="ftp://example.com/f">ftp</a> <a href="">empty</a>
<img src="a.png" alt="An image"><img data-src="lazy.jpg">
<map><area href="/area" alt="Area"></map>
<iframe src="frame.html"></iframe>
<embed src="movie.swf"><object data="obj.swf"><param name="movie" value="param.swf"></object>
<video src="v.mp4" poster="poster.jpg"><source src="v.webm"><track src="subs.vtt"></video>
<audio src="a.mp3"></audio>
<table background="table.png"><tr><td background="cell.png">cell</td></tr></table>
<div style="background-image: url('div.png')">styled</div>
<a href="rtsp://media.example.com/live">live</a> <a href="list.m3u">playlist</a>
</body></html>
"""

PAGE_LINKS = [
    ("http://example.com/css/site.css", COMPONENT, True, ""),
    ("http://example.com/favicon.ico", COMPONENT, True, ""),
    ("http://example.com/dir/touch.png", COMPONENT, True, ""),
    ("http://example.com/dir/font.woff2", COMPONENT, True, ""),
    ("http://example.com/news.rss", FEED, False, "News"),
    ("http://example.com/atom.xml", FEED, False, ""),
    ("http://example.com/js/app.js", COMPONENT, True, ""),
    ("http://example.com/img/logo.png", COMPONENT, True, ""),
    ("http://example.com/img/written.png", COMPONENT, True, ""),
    ("http://example.com/dir/bg.png", COMPONENT, True, ""),
    ("http://example.com/dir/print.css", COMPONENT, True, ""),
    ("http://example.com/dir/body.gif", COMPONENT, True, ""),
    ("http://example.com/dir/page2.html", PAGE, False, "the second page"),
    ("http://example.com/x", PAGE, False, "X page"),
    ("http://example.com/spaced", PAGE, False, "spaced"),
    ("http://example.com/dir/a.png", COMPONENT, True, "An image"),
    ("http://example.com/dir/lazy.jpg", COMPONENT, True, ""),
    ("http://example.com/area", PAGE, False, "Area"),
    ("http://example.com/dir/frame.html", COMPONENT, False, ""),
    ("http://example.com/dir/movie.swf", COMPONENT, True, ""),
    ("http://example.com/dir/obj.swf", COMPONENT, True, ""),
    ("http://example.com/dir/param.swf", COMPONENT, True, ""),
    ("http://example.com/dir/v.mp4", COMPONENT, True, ""),
    ("http://example.com/dir/poster.jpg", COMPONENT, True, ""),
    ("http://example.com/dir/v.webm", COMPONENT, True, ""),
    ("http://example.com/dir/subs.vtt", COMPONENT, True, ""),
    ("http://example.com/dir/a.mp3", COMPONENT, True, ""),
    ("http://example.com/dir/table.png", COMPONENT, True, ""),
    ("http://example.com/dir/cell.png", COMPONENT, True, ""),
    ("http://example.com/dir/div.png", COMPONENT, True, ""),
    ("rtsp://media.example.com/live", STREAM, False, "live"),
    ("http://example.com/dir/list.m3u", PAGE, False, "playlist"),
]


def test_html_links_of_a_realistic_page() -> None:
    result = html(PAGE_HTML)
    assert links(result) == PAGE_LINKS
    assert result.problems == []
    assert result.base == BASE


def test_html_visible_text() -> None:
    result = html(PAGE_HTML)
    assert result.text.startswith("A page Welcome Read the second page or js mail top")
    assert "logo" not in result.text and "background" not in result.text
    assert (
        html("<p>one</p><p>two<br>three &amp;  four\n\tfive</p>").text
        == "one two three & four five"
    )


def test_html_base_href_applies_to_later_links() -> None:
    result = html(
        '<html><head><link rel=stylesheet href="before.css"><base href="http://cdn.example.org/b/">'
        '<base href="/ignored/"></head><body><a href="p.html">p</a><img src="/i.png"></body></html>'
    )
    assert urls(result) == [
        "http://example.com/dir/before.css",
        "http://cdn.example.org/b/p.html",
        "http://cdn.example.org/i.png",
    ]
    assert result.base == "http://cdn.example.org/b/"
    relative = html('<base href="../up/"><a href="x">x</a>')
    assert relative.base == "http://example.com/up/"
    assert urls(relative) == ["http://example.com/up/x"]


def test_html_form_get_is_a_page_with_its_default_query() -> None:
    result = html(
        """<form action="/search#results">
        <input name="q" value="caf\u00e9 au lait"><input type="hidden" name="lang" value="fr">
        <input type="checkbox" name="c1" checked><input type="checkbox" name="c2" value="x">
        <input type="radio" name="r" value="a"><input type="radio" name="r" value="b" checked>
        <input name="off" value="1" disabled><input type="submit" name="go" value="Go">
        <select name="s"><option value="1">one<option selected>two</select>
        <select name="first"><option>alpha<option>beta</select>
        <textarea name="t">some text</textarea><input type="image" src="go.png" alt="Go">
        </form>
        <form method="POST" action="/login"><input name="user"></form>
        <form method="get"><input name="page" value="2"></form>
        <form action="/empty"></form>"""
    )
    assert links(result) == [
        (
            "http://example.com/search?q=caf%C3%A9+au+lait&lang=fr&c1=on&r=b&s=two&first=alpha&t=some+text",
            PAGE,
            False,
            "",
        ),
        ("http://example.com/dir/go.png", COMPONENT, True, "Go"),
        ("http://example.com/dir/index.html?page=2", PAGE, False, ""),
        ("http://example.com/empty", PAGE, False, ""),
    ]


def test_srcset_with_several_candidates_and_descriptors() -> None:
    assert srcset_urls("a.png 1x, b.png 2x,c.png") == ["a.png", "b.png", "c.png"]
    assert srcset_urls(" small.jpg 480w , large.jpg  1080w ") == ["small.jpg", "large.jpg"]
    assert srcset_urls("/a,b.png 100w, x.png 1.5x") == ["/a,b.png", "x.png"]
    assert srcset_urls("img.png, other.png") == ["img.png", "other.png"]
    assert srcset_urls("") == []
    result = html(
        '<picture><source srcset="p.webp 1x, p2.webp 2x" type="image/webp">'
        '<img src="p.jpg" srcset="p-400.jpg 400w, p-800.jpg 800w" alt="P"></picture>'
    )
    assert links(result) == [
        ("http://example.com/dir/p.webp", COMPONENT, True, ""),
        ("http://example.com/dir/p2.webp", COMPONENT, True, ""),
        ("http://example.com/dir/p.jpg", COMPONENT, True, "P"),
        ("http://example.com/dir/p-400.jpg", COMPONENT, True, "P"),
        ("http://example.com/dir/p-800.jpg", COMPONENT, True, "P"),
    ]


@pytest.mark.parametrize(
    ("content", "target"),
    [
        ("0;URL='next.html'", "next.html"),
        ("5; url=next.html", "next.html"),
        ('0; URL="next.html"', "next.html"),
        ("3;url=http://other.example.org/", "http://other.example.org/"),
        ("0; next.html", "next.html"),
        ("10", ""),
        ("", ""),
    ],
)
def test_meta_refresh_variants(content: str, target: str) -> None:
    assert refresh_target(content) == target


def test_meta_refresh_is_a_component_not_requisite() -> None:
    result = html(
        '<meta http-equiv="Refresh" content="0;URL=\'/moved\'"><meta http-equiv=refresh content=5>'
    )
    assert links(result) == [("http://example.com/moved", COMPONENT, False, "")]


def test_html_frames_are_not_requisites() -> None:
    result = html('<frameset><frame src="top.html"><frame src="main.html"></frameset>')
    assert links(result) == [
        ("http://example.com/dir/top.html", COMPONENT, False, ""),
        ("http://example.com/dir/main.html", COMPONENT, False, ""),
    ]


def test_html_invalid_urls_are_dropped_and_counted() -> None:
    result = html(
        '<a href="http://[bad">x</a><a href="http://example.com:99999/">y</a><a href="/ok">ok</a>'
    )
    assert urls(result) == ["http://example.com/ok"]
    assert len(result.problems) == 2
    assert all(problem.startswith("invalid URL") for problem in result.problems)


def test_html_problems_are_counted_past_a_limit() -> None:
    result = html("".join(f'<a href="http://[bad{n}">x</a>' for n in range(50)))
    assert result.links == []
    assert len(result.problems) == 21
    assert result.problems[-1] == "30 more problems not listed"


def test_html_charsets() -> None:
    latin = "<p>Caf\u00e9 <a href='/\u00e9t\u00e9'>\u00e9t\u00e9</a></p>".encode("cp1252")
    assert (
        html(latin, content_type="text/html; charset=windows-1252").text
        == "Caf\u00e9 \u00e9t\u00e9"
    )
    meta = (
        b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'
        + latin
    )
    assert html(meta).text == "Caf\u00e9 \u00e9t\u00e9"
    assert links(html(meta))[0][3] == "\u00e9t\u00e9"
    japanese = "<meta charset=shift_jis><p>\u65e5\u672c\u8a9e</p>".encode("shift_jis")
    assert html(japanese).text == "\u65e5\u672c\u8a9e"
    bom = b"\xef\xbb\xbf<p>\xc3\xa9</p>"
    assert html(bom, content_type="text/html; charset=iso-8859-1").text == "\u00e9"
    broken = html(b"<p>caf\xe9</p>")  # latin-1 bytes with no charset: read as utf-8
    assert broken.text == "caf\ufffd"
    assert "1 characters could not be decoded" in broken.problems
    unknown = html(b"<p>x</p>", content_type="text/html; charset=no-such-thing")
    assert unknown.text == "x"
    assert any("unknown charset" in problem for problem in unknown.problems)


def test_html_bad_input_is_reported_not_raised() -> None:
    comment = html('<p>text <a href="/a">a</a><!-- never closed <a href="/hidden">')
    assert urls(comment) == ["http://example.com/a"]
    assert any("comment not closed" in problem for problem in comment.problems)
    cut = html('<p><a href="/a">a</a><img src="/cut.png" alt="trun')
    assert urls(cut) == ["http://example.com/a"]
    assert any("cut inside a tag" in problem for problem in cut.problems)
    binary = html(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00<a href=/x>x</a>\xff\xfe")
    assert "http://example.com/x" in urls(binary)
    assert any("NUL" in problem for problem in binary.problems)
    unclosed = html(
        "<div><a href='/one'>one<a href='/two'>two<table><td><form action=/f><input name=a>"
    )
    assert urls(unclosed) == [
        "http://example.com/one",
        "http://example.com/two",
        "http://example.com/f?a=",
    ]


def test_html_inline_script_markup_and_strings() -> None:
    result = html(
        "<script>\n"
        "document.write('<a href=\"/w.html\">written</a>' + '<img src=\"/w.png\">');\n"
        "var api = '/api/v1/items', page = 'about.html', cdn = \"https://cdn.example.net/x\";\n"
        "var t = `tpl/${name}.png`, u = `static.css`; // 'commented.js'\n"
        "/* \"commented.css\" */ if (a < b) { s = 'just words'; }\n"
        "</script>"
    )
    assert links(result) == [
        ("http://example.com/w.html", PAGE, False, "written"),
        ("http://example.com/w.png", COMPONENT, True, ""),
        ("http://example.com/api/v1/items", PAGE, False, ""),
        ("http://example.com/dir/about.html", PAGE, False, ""),
        ("https://cdn.example.net/x", PAGE, False, ""),
        ("http://example.com/dir/static.css", COMPONENT, True, ""),
    ]


def test_incremental_html_across_lxml_blocks() -> None:
    rows = "".join(
        f'<tr><td><a href="/p{n}">caf\u00e9 {n}</a><img src="i{n}.png"></td></tr>'
        for n in range(3000)
    )
    body = f"<html><body><table>{rows}</table></body></html>".encode()
    assert len(body) > 3 * 64 * 1024
    whole = html(body)
    assert len(whole.links) == 6000
    assert whole.links[-2] == Link("http://example.com/p2999", PAGE, False, "caf\u00e9 2999")
    parser = HtmlParser(BASE, None)
    for start in range(0, len(body), 7):
        parser.feed(body[start : start + 7])
    assert parser.close() == whole


CSS = b"""@charset "utf-8";
@import "reset.css";
@import url(print.css) print;
@import url('theme.css');
/* url(commented.png) @import "commented.css"; */
body { background: url(bg.png) no-repeat; }
.a { background-image: url( "quoted.png" ); }
.b { background: url('single.png'), url(/abs.gif); }
@font-face { src: url(font.woff2) format("woff2"), url(data:font/woff;base64,AAAA); }
.c { filter: url(#svg-filter); cursor: url(http://other.example.org/c.cur), auto; }
.d { background: url(esc\\(1\\).png); }
"""


def test_css_references() -> None:
    result = parse("http://example.com/css/site.css", "text/css", CSS)
    assert links(result) == [
        (f"http://example.com/css/{name}", COMPONENT, True, "")
        for name in ("reset.css", "print.css", "theme.css", "bg.png", "quoted.png", "single.png")
    ] + [
        ("http://example.com/abs.gif", COMPONENT, True, ""),
        ("http://example.com/css/font.woff2", COMPONENT, True, ""),
        ("http://other.example.org/c.cur", COMPONENT, True, ""),
        ("http://example.com/css/esc(1).png", COMPONENT, True, ""),
    ]
    assert result is not None and result.problems == [] and result.text == ""


def test_css_over_2_mb_is_cut_and_reported() -> None:
    filler = b".x { color: red; margin: 0 auto; padding: 1px 2px }\n"
    body = b".a { background: url(first.png) }\n" + filler * (3 * 1024 * 1024 // len(filler))
    body += b".z { background: url(after.png) }\n"
    parser = CssParser("http://example.com/big.css", None)
    for start in range(0, len(body), 256 * 1024):
        parser.feed(body[start : start + 256 * 1024])
    result = parser.close()
    assert urls(result) == ["http://example.com/first.png"]
    assert result.problems == ["document cut at 2 MB"]


def test_css_unclosed_comment_is_reported() -> None:
    result = parse(
        "http://example.com/a.css", "text/css", b"a { background: url(x.png) } /* url(y.png)"
    )
    assert urls(result) == ["http://example.com/x.png"]
    assert result is not None and "CSS comment not closed" in result.problems[0]


def test_style_attribute_and_element() -> None:
    result = html(
        "<p style=\"background:url('/p.png')\">x</p><style>/* x */ li { list-style: url(dot.gif) }</style>"
    )
    assert links(result) == [
        ("http://example.com/p.png", COMPONENT, True, ""),
        ("http://example.com/dir/dot.gif", COMPONENT, True, ""),
    ]


JAVASCRIPT = b"""// a comment with 'quotes.js'
var cdn = "http://cdn.example.com/lib.js", image = '/img/x.png', rel = "img/y.gif";
var page = "/articles/list", about = 'about.php', json = "data.json", tpl = `tpl.css`;
var skipped = `${base}/t.css`, words = "hello world.js", mime = "text/css", version = "1.5";
var slashes = "//", root = "/", escaped = "\\u002fesc.png", joined = "/joined" + ".html";
document.write("<scr" + "ipt src='/written.js'></scr" + "ipt>");
document.write('<a href="' + url + '">dynamic</a>');
/* "block.css" */
"""


def test_javascript_literals() -> None:
    result = parse("http://example.com/js/app.js", "application/javascript", JAVASCRIPT)
    assert links(result) == [
        ("http://cdn.example.com/lib.js", COMPONENT, True, ""),
        ("http://example.com/img/x.png", COMPONENT, True, ""),
        ("http://example.com/js/img/y.gif", COMPONENT, True, ""),
        ("http://example.com/articles/list", PAGE, False, ""),
        ("http://example.com/js/about.php", PAGE, False, ""),
        ("http://example.com/js/data.json", COMPONENT, True, ""),
        ("http://example.com/js/tpl.css", COMPONENT, True, ""),
        ("http://example.com/esc.png", COMPONENT, True, ""),
        ("http://example.com/joined.html", PAGE, False, ""),
        ("http://example.com/written.js", COMPONENT, True, ""),
    ]


def test_javascript_is_bounded() -> None:
    body = (
        b"var a = '/first.png';\n"
        + b"total = total + count * 2;\n" * (120 * 1024)
        + b"b = '/after.png';"
    )
    parser = JavaScriptParser("http://example.com/big.js", None, lambda markup, sink: None)
    parser.feed(body)
    result = parser.close()
    assert urls(result) == ["http://example.com/first.png"]
    assert result.problems == ["document cut at 2 MB"]


def test_links_past_the_limit_are_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "MAX_LINKS", 3)
    result = html("".join(f'<a href="/p{n}">p</a>' for n in range(10)))
    assert urls(result) == [
        "http://example.com/p0",
        "http://example.com/p1",
        "http://example.com/p2",
    ]
    assert result.problems == ["more than 3 links: the rest left out"]


def test_plain_text_urls() -> None:
    body = (
        b"Release notes\r\n"
        b"See the docs at https://example.com/docs/intro.html, or (http://example.com/wiki/Foo_(bar)).\r\n"
        b"A very long introduction that goes on and on before it finally links http://example.com/x.\n"
        b"broken http://[bad here and http://example.com/last"
    )
    result = parse("http://example.com/notes.txt", "text/plain", body)
    assert links(result) == [
        ("https://example.com/docs/intro.html", PAGE, False, "See the docs at"),
        (
            "http://example.com/wiki/Foo_(bar)",
            PAGE,
            False,
            "See the docs at https://example.com/docs/intro.html, or (",
        ),
        (
            "http://example.com/x",
            PAGE,
            False,
            "introduction that goes on and on before it finally links",
        ),
        ("http://example.com/last", PAGE, False, "broken http://[bad here and"),
    ]
    assert result is not None
    assert result.text == body.decode().replace("\r\n", "\n")
    assert result.problems == ["invalid URL 'http://[bad'"]


SITEMAP = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url><loc>http://example.com/</loc><lastmod>2024-01-01</lastmod></url>
  <url><loc> http://example.com/a?x=1&y=2 </loc>
    <image:image><image:loc>http://example.com/a.jpg</image:loc></image:image></url>
  <url><loc>http://example.com/caf&eacute;</loc></url>
  <url><loc>http://example.com/b?x=1&amp;y=2</loc></url>
  <url><loc>relative.html</loc></url>
</urlset>
"""


def test_sitemap() -> None:
    result = parse("http://example.com/sitemap.xml", "text/xml", SITEMAP)
    assert links(result) == [
        ("http://example.com/", PAGE, False, ""),
        ("http://example.com/a?x=1&y=2", PAGE, False, ""),
        ("http://example.com/a.jpg", COMPONENT, True, ""),
        ("http://example.com/caf\u00e9", PAGE, False, ""),
        ("http://example.com/b?x=1&y=2", PAGE, False, ""),
        ("http://example.com/relative.html", PAGE, False, ""),
    ]
    assert result is not None and result.problems == []


def test_sitemap_index_and_cut_document() -> None:
    index = (
        b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>http://example.com/s1.xml.gz</loc></sitemap>"
        b"<sitemap><loc>http://example.com/s2.xml</loc></sitemap></sitemapindex>"
    )
    assert urls(parse("http://example.com/index.xml", "application/xml", index)) == [
        "http://example.com/s1.xml.gz",
        "http://example.com/s2.xml",
    ]
    cut = parse("http://example.com/s.xml", "application/xml", SITEMAP[:300])
    assert urls(cut) == ["http://example.com/", "http://example.com/a?x=1&y=2"]
    assert cut is not None and cut.problems == ["XML document cut: no end tag for <urlset>"]


def test_sitemap_entities_are_not_expanded() -> None:
    body = b"""<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY a "http://evil.example.org/"><!ENTITY b "&a;&a;&a;&a;">]>
<urlset><url><loc>&b;</loc></url><url><loc>http://example.com/ok</loc></url></urlset>"""
    result = parse("http://example.com/s.xml", "text/xml", body)
    assert urls(result) == ["http://example.com/ok"]


def test_robots_sitemaps() -> None:
    robots = b"User-agent: *\nDisallow: /private\nSitemap: /sitemap.xml\nsitemap:http://cdn.example.org/s.xml # x\n"
    assert robots_sitemaps("http://example.com/robots.txt", robots) == [
        Link("http://example.com/sitemap.xml", PAGE, False),
        Link("http://cdn.example.org/s.xml", PAGE, False),
    ]
    assert robots_sitemaps("http://example.com/robots.txt", b"\xff\xfe garbage\x00") == []


RSS = b"""<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:media="http://search.yahoo.com/mrss/">
<channel><title>News &amp; more</title><link>http://example.com/</link>
<atom:link rel="self" href="http://example.com/feed.xml" type="application/rss+xml"/>
<image><url>http://example.com/logo.png</url></image>
<item><link>http://example.com/a1</link><title>First &nbsp;item</title>
<description>&lt;p&gt;See &lt;a href="/more"&gt;more&lt;/a&gt;&lt;/p&gt;</description>
<enclosure url="http://example.com/ep1.mp3" type="audio/mpeg" length="1"/>
<enclosure url="http://example.com/doc.pdf" type="application/pdf" length="1"/>
<media:content url="http://example.com/clip.mp4" medium="video"/>
<guid isPermaLink="false">tag:example.com,1</guid></item>
<item><title>Second</title><link>http://example.com/a2?x=1&amp;y=2</link>
<description><![CDATA[Plain & <b>bold</b>]]></description></item>
</channel></rss>"""


def test_rss() -> None:
    result = parse("http://example.com/feed.xml", "application/rss+xml", RSS)
    assert links(result) == [
        ("http://example.com/", PAGE, False, ""),
        ("http://example.com/feed.xml", FEED, False, ""),
        ("http://example.com/logo.png", COMPONENT, True, ""),
        ("http://example.com/a1", PAGE, False, "First item"),
        ("http://example.com/more", PAGE, False, "more"),
        ("http://example.com/ep1.mp3", STREAM, False, "First item"),
        ("http://example.com/doc.pdf", PAGE, False, "First item"),
        ("http://example.com/clip.mp4", STREAM, False, "First item"),
        ("http://example.com/a2?x=1&y=2", PAGE, False, "Second"),
    ]
    assert result is not None
    assert result.text == "News & more\nFirst item\nSee more\nSecond\nPlain & bold"
    assert result.problems == []


def test_atom_and_rdf() -> None:
    atom = b"""<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>A</title>
<link href="/"/><link rel="self" href="/atom.xml"/><link rel="next" href="/atom?page=2"/>
<entry><title type="text">E1</title><link href="/e1"/><link rel="enclosure" type="video/mp4" href="/v.mp4"/>
<link rel="enclosure" type="image/png" href="/i.png"/><link rel="edit" href="/edit/e1"/><summary>Sum</summary>
<content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><a href="/x">x</a></div></content></entry></feed>"""
    result = parse("http://example.com/atom.xml", None, atom)
    assert links(result) == [
        ("http://example.com/", PAGE, False, ""),
        ("http://example.com/atom.xml", FEED, False, ""),
        ("http://example.com/atom?page=2", FEED, False, ""),
        ("http://example.com/e1", PAGE, False, "E1"),
        ("http://example.com/v.mp4", STREAM, False, "E1"),
        ("http://example.com/i.png", PAGE, False, "E1"),
        ("http://example.com/x", PAGE, False, "x"),
    ]
    assert result is not None and result.text == "A\nE1\nSum\nx"
    rdf = b"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
<channel rdf:about="http://example.com/"><title>R</title><link>http://example.com/</link></channel>
<item rdf:about="http://example.com/r1"><title>R1</title><link>http://example.com/r1</link></item></rdf:RDF>"""
    assert links(parse("http://example.com/index.rdf", "text/xml", rdf)) == [
        ("http://example.com/", PAGE, False, ""),
        ("http://example.com/r1", PAGE, False, "R1"),
    ]


def test_m3u() -> None:
    body = (
        b"#EXTM3U\n"
        b'#EXTINF:123 tvg-name="A, B",Artist - Song\n'
        b"http://example.com/song.mp3\n\n"
        b"relative/track2.mp3\n"
        b'#EXT-X-KEY:METHOD=AES-128,URI="key.bin"\n'
        b"#EXTINF:-1,Live radio\r\n"
        b"mms://radio.example.com/live\r\n"
        b"C:\\Music\\local.mp3\n"
    )
    result = parse("http://example.com/lists/x.m3u8", "application/vnd.apple.mpegurl", body)
    assert links(result) == [
        ("http://example.com/song.mp3", STREAM, False, "Artist - Song"),
        ("http://example.com/lists/relative/track2.mp3", STREAM, False, ""),
        ("http://example.com/lists/key.bin", STREAM, False, ""),
        ("mms://radio.example.com/live", STREAM, False, "Live radio"),
    ]
    assert result is not None and result.text == "Artist - Song\nLive radio"


def test_pls_and_ram() -> None:
    pls = b"[playlist]\nTitle1=Radio One\nFile1=http://example.com:8000/\nFile2=two.mp3\nTitle2=Two\nNumberOfEntries=2\n"
    assert links(parse("http://example.com/r.pls", "audio/x-scpls", pls)) == [
        ("http://example.com:8000/", STREAM, False, "Radio One"),
        ("http://example.com/two.mp3", STREAM, False, "Two"),
    ]
    ram = b"rtsp://example.com/a.rm\n--stop--\npnm://example.com/b.ra\nhttp://example.com/c.rm\n"
    assert urls(parse("http://example.com/a.ram", "audio/x-pn-realaudio", ram)) == [
        "rtsp://example.com/a.rm",
        "pnm://example.com/b.ra",
        "http://example.com/c.rm",
    ]
    media = parse(
        "http://example.com/a.ram", "audio/x-pn-realaudio", b".RMF\x00\x00\x00\x12\x00\x01binary"
    )
    assert urls(media) == []


def test_asx_read_leniently() -> None:
    body = b"""<ASX version="3.0"><Title>List</Title>
<Entry><Ref HREF="mms://example.com/a.wmv"/><Title>Clip A</Title><MoreInfo href="http://example.com/info?a=1&amp;b=2" /></Entry>
<Entry><ref href=http://example.com/b.asf><banner href="banner.gif"></Entry>
<!-- <ref href="commented.wmv"> --><Entry><EntryRef HREF="more.asx"></ASX"""
    result = parse("http://example.com/v/list.asx", "video/x-ms-asf", body)
    assert links(result) == [
        ("mms://example.com/a.wmv", STREAM, False, "Clip A"),
        ("http://example.com/info?a=1&b=2", PAGE, False, ""),
        ("http://example.com/b.asf", STREAM, False, ""),
        ("http://example.com/v/banner.gif", COMPONENT, True, ""),
        ("http://example.com/v/more.asx", STREAM, False, ""),
    ]
    assert result is not None and result.text == "List\nClip A"


INCREMENTAL_CASES = [
    ("text/html", PAGE_HTML),
    (
        "text/html",
        b"<p>caf\xc3\xa9 <a href=/a>\xe6\x97\xa5\xe6\x9c\xac</a><!-- x --><img src=i.png alt='trun",
    ),
    ("text/css", CSS),
    ("application/javascript", JAVASCRIPT),
    (
        "text/plain",
        b"one http://example.com/a\r\ncaf\xc3\xa9 http://example.com/b.\nlast http://example.com/c",
    ),
    ("text/xml", SITEMAP),
    ("application/rss+xml", RSS),
    ("audio/x-mpegurl", b"#EXTM3U\n#EXTINF:1,T\xc3\xa9\nhttp://example.com/a.mp3\nb.mp3"),
    ("audio/x-scpls", b"[playlist]\r\nFile1=a.mp3\r\nTitle1=A\r\n"),
    ("video/x-ms-asx", b'<asx><entry><title>T</title><ref href="a.wmv"/></entry></asx>'),
]


@pytest.mark.parametrize(("content_type", "body"), INCREMENTAL_CASES)
def test_one_byte_at_a_time_gives_the_same_result(content_type: str, body: bytes) -> None:
    whole = parse(BASE, content_type, body)
    parser = parser_for(BASE, content_type, body[:512])
    assert whole is not None and parser is not None
    for position in range(len(body)):
        parser.feed(body[position : position + 1])
    assert parser.close() == whole
    assert whole.links


def test_long_lines_are_cut_the_same_way_whatever_the_chunking() -> None:
    body = (
        (b"x" * 70_000 + b" http://example.com/a\n") * 2 + b"y" * 140_000 + b" http://example.com/b"
    )
    whole = parse(BASE, "text/plain", body)
    parser = TextParser(BASE, None)
    for start in range(0, len(body), 997):
        parser.feed(body[start : start + 997])
    assert parser.close() == whole
    assert urls(whole) == ["http://example.com/a", "http://example.com/a", "http://example.com/b"]


GARBAGE = [
    random.Random(7).randbytes(50_000),
    b"\x00" * 1000,
    b"<" * 5000,
    b"<a href='" + b"x" * 10_000,
    b"<!-- " * 1000,
    b'<?xml version="1.0" encoding="bogus"?><rss><channel><item><title>x',
    b"\xff\xfe<\x00h\x00t\x00m\x00l\x00>\x00",
    b"<html><body>" + b"<div>" * 5000,
    b"url(" * 2000 + b"'\"`" * 1000,
    b"[playlist]\nFile1=http://[bad\nTitle999999999999999999=x\n",
    b"#EXTM3U\n\x01\x02\x03\n" + b"#EXTINF:" * 100,
    b"",
]
ALL_PARSERS = [
    HtmlParser,
    CssParser,
    TextParser,
    SitemapParser,
    FeedParser,
    M3uParser,
    PlsParser,
    RamParser,
    AsxParser,
    lambda url, charset: JavaScriptParser(url, charset, lambda markup, sink: None),
]


@pytest.mark.parametrize("factory", ALL_PARSERS)
@pytest.mark.parametrize("body", GARBAGE, ids=range(len(GARBAGE)))
def test_bad_input_never_raises(factory: parsers.ParserFactory, body: bytes) -> None:
    for charset in (None, "utf-8", "no-such-charset"):
        parser = factory("http://example.com/x", charset)
        parser.feed(body[:1000])
        parser.feed(body[1000:])
        result = parser.close()
        assert isinstance(result, ParseResult)
        assert all(link.url.startswith(("http://", "https://")) for link in result.links)


def test_garbage_is_reported() -> None:
    assert parse(BASE, "application/rss+xml", b"\x89PNG\x00\x01garbage").problems == [
        "no XML element found"
    ]
    assert "binary data (NUL bytes) in the document" in html(b"\x00\x01\x02<p>x").problems


@pytest.mark.parametrize(
    ("url", "content_type", "head", "expected"),
    [
        ("http://example.com/", "text/html; charset=UTF-8", b"<p>x", HtmlParser),
        ("http://example.com/", "Text/HTML", b"", HtmlParser),
        (
            "http://example.com/",
            "application/xhtml+xml",
            b"<?xml version='1.0'?><html>",
            HtmlParser,
        ),
        ("http://example.com/a", "text/css", b"body{}", CssParser),
        ("http://example.com/a", "text/javascript", b"var a", JavaScriptParser),
        ("http://example.com/a", "text/plain", b"hello", TextParser),
        ("http://example.com/a", "audio/x-scpls", b"", PlsParser),
        ("http://example.com/a", "application/atom+xml", b"", FeedParser),
        # sniffing wins over a plainly wrong type
        ("http://example.com/a.txt", "text/plain", b"<!DOCTYPE html><html>", HtmlParser),
        ("http://example.com/a", "text/plain", b"\xef\xbb\xbf\n <html lang=en>", HtmlParser),
        (
            "http://example.com/a",
            "application/octet-stream",
            b'<?xml version="1.0"?><rss version="2.0">',
            FeedParser,
        ),
        (
            "http://example.com/a",
            "text/xml",
            b"<?xml version='1.0'?><!-- c --><rdf:RDF xmlns:rdf='x'>",
            FeedParser,
        ),
        (
            "http://example.com/a",
            "text/html",
            b'<?xml version="1.0"?>\n<feed xmlns="x">',
            FeedParser,
        ),
        ("http://example.com/a", "application/xml", b"<urlset xmlns='x'>", SitemapParser),
        ("http://example.com/a", "video/x-ms-asf", b'<ASX version="3.0">', AsxParser),
        ("http://example.com/a", "text/plain", b"#EXTM3U\n", M3uParser),
        ("http://example.com/a", "text/html", b"[playlist]\nFile1=x", PlsParser),
        # the suffix chooses when the type says nothing
        ("http://example.com/s.css?v=2", None, b"body{}", CssParser),
        ("http://example.com/LIST.M3U", "application/octet-stream", b"", M3uParser),
        ("http://example.com/page.php", "", b"<p>x", HtmlParser),
        ("http://example.com/a.js", None, b"", JavaScriptParser),
        ("http://example.com/r.pls", None, b"", PlsParser),
        # no parser
        ("http://example.com/a.html", "image/png", b"\x89PNG\r\n", None),
        ("http://example.com/a.asf", "video/x-ms-asf", b"0&\xb2u\x8ef\xcf\x11", None),
        ("http://example.com/a.xml", "text/xml", b"<?xml version='1.0'?><svg>", None),
        ("http://example.com/a", None, b"\x89PNG", None),
    ],
)
def test_parser_choice(
    url: str, content_type: str | None, head: bytes, expected: type | None
) -> None:
    parser = parser_for(url, content_type, head)
    if expected is None:
        assert parser is None
    else:
        assert isinstance(parser, expected)


def test_charset_of_the_content_type_is_used() -> None:
    body = "<p>\u00e9t\u00e9</p>".encode("cp1252")
    assert html(body, content_type='text/html; charset="windows-1252"').text == "\u00e9t\u00e9"
    assert parse(BASE, "image/png", b"\x89PNG") is None


class TinyParser:
    def __init__(self, url: str, charset: str | None) -> None:
        self.url = url
        self.charset = charset

    def feed(self, chunk: bytes) -> None:
        pass

    def close(self) -> ParseResult:
        return ParseResult([Link(self.url + "#tiny", PAGE, False)], base=self.url)


def test_entry_point_plugins(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(parsers, "_registry", dict(parsers._registry))

    def register_tiny() -> None:
        register(
            "tiny",
            TinyParser,
            ["application/x-tiny"],
            lambda head: head.startswith(b"TINY"),
            [".tiny"],
        )

    def broken() -> None:
        raise RuntimeError("broken plug-in")

    def not_importable() -> None:
        raise ImportError("no module named plugin")

    entries = [
        SimpleNamespace(name="bad-load", load=not_importable),
        SimpleNamespace(name="bad-call", load=lambda: broken),
        SimpleNamespace(name="tiny", load=lambda: register_tiny),
    ]
    with caplog.at_level(logging.ERROR, logger="crawler.parsers"):
        parsers._load_entry_points(entries)
    assert "bad-load" in caplog.text and "bad-call" in caplog.text
    by_type = parser_for("http://example.com/x", "application/x-tiny; charset=ascii", b"")
    assert isinstance(by_type, TinyParser) and by_type.charset == "ascii"
    assert isinstance(parser_for("http://example.com/x", "text/plain", b"TINY1"), TinyParser)
    assert isinstance(parser_for("http://example.com/x.TINY", None, b""), TinyParser)
    assert urls(parse("http://example.com/x", "application/x-tiny", b"")) == [
        "http://example.com/x#tiny"
    ]
    register("html", TinyParser, ["text/html"])
    assert isinstance(
        parser_for("http://example.com/", "text/html", b"<!DOCTYPE html>"), TinyParser
    )


def test_entry_points_are_loaded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(parsers, "_plugins_loaded", False)
    monkeypatch.setattr(parsers, "entry_points", lambda group: calls.append(group) or [])
    parser_for(BASE, "text/html", b"")
    parser_for(BASE, "text/css", b"")
    assert calls == ["dlweb.parsers"]
