"""The canonical URL key: every rule of docs/urlkey.md, idempotence and the errors."""

import hashlib
import random
import re

import pytest

from archive.errors import DlwebError
from archive.urlkey import (
    _ALREADY_CANONICAL,
    MAX_URL_LENGTH,
    BadUrl,
    _canonical_url,
    canonical_url,
    structure_name,
    url_key,
)

HEX32 = "0123456789abcdef0123456789ABCDEF"
HEX40 = "da39a3ee5e6b4b0d3255bfef95601890afd80709"

CANONICAL = [
    # scheme and host case
    ("HTTP://WWW.Example.COM/Path", "http://www.example.com/Path"),
    ("HtTpS://EXAMPLE.com/", "https://example.com/"),
    # IDNA
    ("http://Bücher.example/", "http://xn--bcher-kva.example/"),
    ("http://XN--BCHER-KVA.Example/", "http://xn--bcher-kva.example/"),
    ("http://bücher.xn--p1ai/", "http://xn--bcher-kva.xn--p1ai/"),
    ("http://straße.de/", "http://xn--strae-oqa.de/"),
    ("http://ＥＸＡＭＰＬＥ。com/", "http://example.com/"),
    ("http://r3---sn-abc.googlevideo.com/", "http://r3---sn-abc.googlevideo.com/"),
    ("http://my_host.example/", "http://my_host.example/"),
    ("http://ex%41mple.com/", "http://example.com/"),
    ("http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/"),
    ("http://example.com./", "http://example.com/"),
    ("http://Bücher.example./", "http://xn--bcher-kva.example/"),
    # IPv6 literals
    ("http://[2001:DB8:0:0::1]/", "http://[2001:db8::1]/"),
    ("https://[::1]:443/", "https://[::1]/"),
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    # userinfo
    ("http://user:secret@example.com/", "http://example.com/"),
    ("http://a@b@example.com/", "http://example.com/"),
    # ports
    ("http://example.com:80/", "http://example.com/"),
    ("https://example.com:443/", "https://example.com/"),
    ("http://example.com:443/", "http://example.com:443/"),
    ("https://example.com:80/", "https://example.com:80/"),
    ("http://example.com:8080/", "http://example.com:8080/"),
    ("http://example.com:0080/", "http://example.com/"),
    ("http://example.com:/", "http://example.com/"),
    # empty path, fragment
    ("http://example.com", "http://example.com/"),
    ("http://example.com?q=1", "http://example.com/?q=1"),
    ("http://example.com/page#top", "http://example.com/page"),
    ("http://example.com/page?x=1#a?b=2", "http://example.com/page?x=1"),
    ("http://example.com/#", "http://example.com/"),
    # percent-encoding
    ("http://example.com/%7euser", "http://example.com/~user"),
    ("http://example.com/%7Euser", "http://example.com/~user"),
    ("http://example.com/%41%62%2D%2e%5F", "http://example.com/Ab-._"),
    ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
    ("http://example.com/a%2Fb", "http://example.com/a%2Fb"),
    ("http://example.com/caf%c3%a9", "http://example.com/caf%C3%A9"),
    ("http://example.com/100%", "http://example.com/100%25"),
    ("http://example.com/%zz%4", "http://example.com/%25zz%254"),
    ("http://example.com/%%414", "http://example.com/%25A4"),
    ("http://example.com/a b", "http://example.com/a%20b"),
    ("http://example.com/café", "http://example.com/caf%C3%A9"),
    ("http://example.com/日本", "http://example.com/%E6%97%A5%E6%9C%AC"),
    ("http://example.com/a|b[c]{d}^`\\", "http://example.com/a%7Cb%5Bc%5D%7Bd%7D%5E%60%5C"),
    ('http://example.com/a<b>"c', "http://example.com/a%3Cb%3E%22c"),
    ("http://example.com/!$&'()*+,;=:@", "http://example.com/!$&'()*+,;=:@"),
    ("http://example.com/?q=a b&r=é", "http://example.com/?q=a%20b&r=%C3%A9"),
    ("http://example.com/?q=it's", "http://example.com/?q=it%27s"),
    ("http://example.com/?q=a+b&u=/x?y:z@w", "http://example.com/?q=a+b&u=/x?y:z@w"),
    ("http://example.com/?q=%3d%26%2b", "http://example.com/?q=%3D%26%2B"),
    # controls and surrounding spaces
    (" \t http://example.com/a\n", "http://example.com/a"),
    ("http://example.com/a\tb\x01c\x7f", "http://example.com/a%09b%01c%7F"),
    ("http://example.com/?q=a\rb", "http://example.com/?q=a%0Db"),
    # dot segments
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://example.com/a/b/..", "http://example.com/a/"),
    ("http://example.com/a/b/.", "http://example.com/a/b/"),
    ("http://example.com/../../a", "http://example.com/a"),
    ("http://example.com/..", "http://example.com/"),
    ("http://example.com/a/%2e%2E/b", "http://example.com/b"),
    ("http://example.com/a/.b/..c/", "http://example.com/a/.b/..c/"),
    ("http://example.com/a/..;jsessionid=1/b", "http://example.com/b"),
    # session identifiers in the query
    (f"http://example.com/p?a=1&s={HEX32}&b=2", "http://example.com/p?a=1&b=2"),
    (f"http://example.com/p?a=1&s={HEX40}", "http://example.com/p?a=1"),
    (f"http://example.com/p?s={HEX40.upper()}&a=1", "http://example.com/p?a=1"),
    (f"http://example.com/p?s={HEX32[:31]}", f"http://example.com/p?s={HEX32[:31]}"),
    (f"http://example.com/p?s={HEX32}0", f"http://example.com/p?s={HEX32}0"),
    (f"http://example.com/p?s={HEX40[:39]}", f"http://example.com/p?s={HEX40[:39]}"),
    (f"http://example.com/p?s={HEX40}0", f"http://example.com/p?s={HEX40}0"),
    (f"http://example.com/p?s={HEX32[:31]}g", f"http://example.com/p?s={HEX32[:31]}g"),
    (f"http://example.com/p?s=%30%61{HEX32[2:]}", "http://example.com/p"),
    ("http://example.com/p?JSESSIONID=abc&a=1", "http://example.com/p?a=1"),
    ("http://example.com/p?a=1&PHPSESSID=x7", "http://example.com/p?a=1"),
    ("http://example.com/p?ASPSESSIONIDQQGGQGPD=KLM&a=1", "http://example.com/p?a=1"),
    ("http://example.com/p?phpsessid", "http://example.com/p"),
    ("http://example.com/p?sid=0123456789abcdef", "http://example.com/p"),
    ("http://example.com/p?CFTOKEN=a1b2c3d4-e5f6-7890-abcd-ef0123456789", "http://example.com/p"),
    ("http://example.com/p?sid=12345", "http://example.com/p?sid=12345"),
    ("http://example.com/p?cfid=4021", "http://example.com/p?cfid=4021"),
    ("http://example.com/p?mysid=0123456789abcdef", "http://example.com/p?mysid=0123456789abcdef"),
    # session identifiers as path parameters
    ("http://example.com/cart.jsp;jsessionid=0A1B.node1", "http://example.com/cart.jsp"),
    ("http://example.com/cart.jsp;JSESSIONID=0A1B?x=1", "http://example.com/cart.jsp?x=1"),
    ("http://example.com/a;jsessionid=1/b;v=2", "http://example.com/a/b;v=2"),
    ("http://example.com/a;v=2;jsessionid=1", "http://example.com/a;v=2"),
    ("http://example.com/a;other=1", "http://example.com/a;other=1"),
    # empty query
    ("http://example.com/p?", "http://example.com/p"),
    (f"http://example.com/p?s={HEX32}", "http://example.com/p"),
    (f"http://example.com/p?s={HEX32}&jsessionid=2", "http://example.com/p"),
    ("http://example.com/p?a=1&&b=2", "http://example.com/p?a=1&&b=2"),
]

SAME = [
    ("HTTP://Example.COM:80/a/./b/../c#x", "http://example.com/a/c"),
    ("http://example.com/%7Euser/", "http://example.com/~user/"),
    ("http://Bücher.example/", "http://xn--bcher-kva.example:80"),
    ("http://example.com/caf%c3%a9", "http://example.com/café"),
    (f"http://example.com/?a=1&sid={HEX32}", "http://example.com/?a=1"),
    ("http://example.com/a%2f", "http://example.com/a%2F"),
]

DIFFERENT = [
    ("http://example.com/?a=1&b=2", "http://example.com/?b=2&a=1"),
    ("http://example.com/Path", "http://example.com/path"),
    ("http://example.com/a%2Fb", "http://example.com/a/b"),
    ("http://example.com/", "https://example.com/"),
    ("http://example.com/", "http://example.com:8080/"),
    ("http://example.com/?q=a%2Bb", "http://example.com/?q=a+b"),
    ("http://example.com/?q=a%26b", "http://example.com/?q=a&b"),
    ("http://straße.de/", "http://strasse.de/"),
    ("http://example.com/a/", "http://example.com/a"),
]

BAD = [
    ("ftp://example.com/", "scheme 'ftp'"),
    ("javascript:alert(1)", "scheme 'javascript'"),
    ("data:text/html,<p>hi</p>", "scheme 'data'"),
    ("file:///etc/passwd", "scheme 'file'"),
    ("example.com/page", "no scheme"),
    ("//example.com/page", "no scheme"),
    ("", "no scheme"),
    ("http:///page", "missing host"),
    ("http:example.com/page", "missing host"),
    ("http://user@/page", "missing host"),
    ("http://./", "missing host"),
    ("http://example.com:99999/", "out of range"),
    ("http://example.com:0/", "out of range"),
    ("http://example.com:" + "9" * 5000 + "/", "out of range"),
    ("http://example.com:8o/", "not a number"),
    ("http://example.com:-80/", "not a number"),
    ("http://example.com:80:81/", "not a number"),
    ("http://example.com:٨٠/", "not a number"),
    ("http://example.com/" + "a" * MAX_URL_LENGTH, "longer than 8192"),
    ("http://example.com/" + "é" * 3000, "canonical form is longer"),
    ("http://exa\tmple.com/", "control character"),
    ("http://exa\x00mple.com/", "control character"),
    ("http://exa\x7fmple.com/", "control character"),
    ("http://exa%0Ample.com/", "control character"),
    ("http://exa mple.com/", "control character"),
    ("http://exa<mple.com/", "invalid character '<' in host"),
    ("http://exa%2Fmple.com/", "invalid character '/'"),
    ("http://a..b.example/", "empty label"),
    ("http://.example.com/", "empty label"),
    ("http://%FF.example/", "not UTF-8"),
    ("http://[::1/", "Invalid IPv6 URL"),
    ("http://[::1]x/", "malformed IPv6"),
    ("http://[1.2.3.4]/", "IPv4 address cannot be in brackets|not an IPv6 address"),
    ("http://[fe80::1%25eth0]/", "zone identifiers"),
    ("http://a\u2100b.example/", "NFKC"),
    ("http://\u200dx.example/", "IDNA"),
    ("http://example.com/\udc80", "lone surrogate"),
]

EVERY_URL = [url for url, _ in CANONICAL] + [url for pair in SAME + DIFFERENT for url in pair]


@pytest.mark.parametrize(("url", "expected"), CANONICAL)
def test_canonical_form(url: str, expected: str) -> None:
    assert canonical_url(url) == expected


@pytest.mark.parametrize("url", EVERY_URL)
def test_idempotent(url: str) -> None:
    once = canonical_url(url)
    assert canonical_url(once) == once


@pytest.mark.parametrize(("first", "second"), SAME)
def test_two_spellings_share_one_key(first: str, second: str) -> None:
    assert url_key(first) == url_key(second)
    assert structure_name(first) == structure_name(second)


@pytest.mark.parametrize(("first", "second"), DIFFERENT)
def test_different_urls_keep_different_keys(first: str, second: str) -> None:
    assert url_key(first) != url_key(second)


@pytest.mark.parametrize(("url", "reason"), BAD)
def test_bad_url_is_rejected_with_reason(url: str, reason: str) -> None:
    with pytest.raises(BadUrl) as caught:
        canonical_url(url)
    message = str(caught.value)
    assert re.search(reason, message)
    assert message.startswith("bad URL ")
    assert len(message) < 300


def test_bad_url_is_a_dlweb_error_naming_the_url() -> None:
    with pytest.raises(DlwebError, match=r"bad URL 'ftp://files\.example/pub'"):
        structure_name("ftp://files.example/pub")


def test_long_bad_url_is_truncated_in_the_message() -> None:
    url = "gopher://example.com/" + "x" * 1000
    with pytest.raises(BadUrl) as caught:
        canonical_url(url)
    assert "'gopher://example.com/xxx" in str(caught.value)
    assert "x" * 200 not in str(caught.value)


def test_url_at_the_length_limit_is_accepted() -> None:
    url = "http://example.com/" + "a" * (MAX_URL_LENGTH - len("http://example.com/"))
    assert canonical_url(url) == url


def test_url_key_is_the_ascii_canonical_form() -> None:
    key = url_key("http://Bücher.example/café?q=é")
    assert key == b"http://xn--bcher-kva.example/caf%C3%A9?q=%C3%A9"
    assert key.isascii()


def test_structure_name_is_sha256_of_the_key() -> None:
    name = structure_name("HTTP://Example.com")
    assert name == hashlib.sha256(b"http://example.com/").hexdigest()
    assert name == "2a1b402420ef46577471cdc7409b0fa2c6a204db316e59ade2d805435489a067"


# Pieces of URLs, canonical and not, for the differential test of the fast path below.
_SCHEMES = ["http://", "https://", "HTTP://", "ftp://", "http:/", ""]
_HOSTS = [
    "a.example",
    "b-c.example",
    "1.2.3.4",
    "127.1",
    "0x7f.1",
    "x",
    "A.example",
    "a..b",
    "a.example.",
    ".a",
    "-a-.b-",
    "xn--bcher-kva.example",
    "u@a.example",
    "a.example:80",
    "a.example:8080",
    "a.example:443",
    "a.example:0",
    "a.example:080",
    "a.example:65535",
    "a.example:65536",
    "a.example:99999",
    "a.example:123456",
    "a.example:",
    "[::1]",
    "a%41.example",
    "bücher.example",
    "",
]
_PATH_PIECES = [
    "/",
    "a",
    "b.html",
    ".",
    "..",
    "/.",
    "/..",
    ";jsessionid=1",
    ";x=1",
    "%41",
    "%7e",
    "%",
    "~",
    "'",
    "!$&()*+,=:@",
    " ",
    "é",
    "//",
    ".well-known",
    "a..b",
]
_QUERIES = [
    "",
    "?",
    "?a=1",
    "?a=1&b=2",
    "?x=" + "ab" * 16,
    "?sid=0123456789abcdef0",
    "?PHPSESSID=x",
    "?a='",
    "?a=%41",
    "?a=/?:@;",
    "?a b",
    "?é",
]
_FRAGMENTS = ["", "#", "#top"]


def _random_urls(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    urls = []
    for _ in range(count):
        path = "".join(rng.choice(_PATH_PIECES) for _ in range(rng.randint(0, 5)))
        if rng.random() < 0.8:
            path = "/" + path
        urls.append(
            rng.choice(_SCHEMES)
            + rng.choice(_HOSTS)
            + path
            + rng.choice(_QUERIES)
            + rng.choice(_FRAGMENTS)
        )
    return urls


def _by_the_rules(url: str) -> str:
    try:
        return _canonical_url(url)
    except BadUrl as exc:
        return f"BadUrl: {exc}"


def _as_keyed(url: str) -> str:
    try:
        return canonical_url(url)
    except BadUrl as exc:
        return f"BadUrl: {exc}"


def test_the_fast_path_for_urls_already_canonical_changes_no_key() -> None:
    urls = _random_urls(50_000, seed=7)
    for url in urls:
        assert _as_keyed(url) == _by_the_rules(url), url
    taken = [url for url in urls if _ALREADY_CANONICAL.fullmatch(url)]
    assert len(taken) > 200  # the fast path is met, so this test sees it


def test_common_urls_take_the_fast_path() -> None:
    for url in (
        "http://example.com/",
        "https://www.example.org/news/2024/05/page.html",
        "http://cdn.example.net/img/logo-2x.png?v=3&w=200",
        "http://site7.example/p/123.html",
        "http://intranet.example:8080/wiki/page?id=7",
    ):
        assert _ALREADY_CANONICAL.fullmatch(url), url
        assert canonical_url(url) == url == _canonical_url(url)
