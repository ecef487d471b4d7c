"""Fuzzing where the bar goes: for any page made of the pieces that decide where a token begins
and ends, the place the proxy picks is where Chromium's own parser starts the body (the bar lands
as the body's first child, the head and the rest of the body parse as without it, nothing of the
bar shows up in a token), and no place in what Chromium makes a frameset; any text is read without
an error; hostile pages of megabytes are read in bounded time and memory."""

import asyncio
import json
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler.browser._chromium import NOWHERE
from proxy.html_tokens import Token, attributes, tokens
from proxy.placement import placement
from tests.accessibility import Browser

# The pieces that steer the tokenizer and the tree builder before the body. No `<noscript>`:
# Chromium's parser below runs with scripting off, where its content is markup, not text (the
# browser tests load a page with one).
PIECES = (
    *("<", ">", "/", "!", "-", "--", "=", '"', "'", " ", "\n", "\t", "\0", "a", "text", "&#32;"),
    *("&#x20", "&amp;", "<!--", "-->", "<!-->", "<!--->", "--!>", "<?", "<![CDATA[", "]]>"),
    *("<!DOCTYPE html>", "<html>", "</html>", "<head>", "</head>", "<body>", "</body>", "<BODY "),
    *("<title>", "</title>", "<textarea>", "</textarea>", "<style>", "</style>", "<xmp>"),
    *("<script>", "</script>", "<script", "</script ", "<!--<script>", "<template>"),
    *("</template>", "<noframes>", "</noframes>", "<iframe>", "<plaintext>", "<meta ", "<link>"),
    *("<base href=x>", "<p>", "</p>", "<div>", "<br>", "</br>", "<img>", "<input>", "<table>"),
    *("<input type=hidden>", "<frameset>", "<frame>", "<svg>", "</svg>", "<math>", "<col>"),
    *("<select>", "<tr>", "<a b='", '<a b="', "'>", '">', " http-equiv=", " content="),
    '<meta http-equiv="Content-Security-Policy" content="a">',
    "<META HTTP-EQUIV=content-security-policy CONTENT='b&amp;c'>",
)
# What a script may hold: the marks of its escapes, and end tags (its own or not).
IN_SCRIPT = ("<!--", "-->", "<script>", "<script ", "</script>", "</script/", "-", ">", "a", "<p>")
# What another raw-text element may hold: end tags, its own or not, and what is markup elsewhere.
IN_RAW = ("</title>", "</style>", "</textarea >", "</TEXTAREA>", "</noframes>", "</xmp>", "<")
IN_RAW += ("/", "a", "<body>", "<!--", "-->")
# Chromium parses the page with and without a mark at the place, and tells what went wrong.
CHECK = """((page, at) => {
  const original = Document.parseHTMLUnsafe(page);
  const frameset = !!original.querySelector(":root > frameset");
  const policies = Array.from(original.head.querySelectorAll(":scope > meta"))
    .filter((m) => (m.getAttribute("http-equiv") || "").toLowerCase() ===
      "content-security-policy").map((m) => m.getAttribute("content") || "");
  if (at === null) { return {policies: null, problem: ""}; }
  if (frameset) { return {policies, problem: "a place in a frameset"}; }
  const marked = Document.parseHTMLUnsafe(
    page.slice(0, at) + "<dlweb-mark></dlweb-mark>" + page.slice(at));
  const marks = marked.querySelectorAll("dlweb-mark");
  if (marks.length !== 1 || marks[0].parentNode !== marked.body) {
    return {policies, problem: "the mark is not a child of the body"};
  }
  if (marked.head.outerHTML !== original.head.outerHTML) {
    return {policies, problem: "the head changed"};
  }
  marks[0].remove();
  marked.body.normalize();
  original.body.normalize();
  if (marked.documentElement.outerHTML.includes("dlweb-mark")) {
    return {policies, problem: "the mark is in a token"};
  }
  if (marked.body.outerHTML !== original.body.outerHTML) {
    return {policies, problem: "the body changed"};
  }
  return {policies, problem: ""};
})"""
MEGABYTES = 1024 * 1024
# Pages made to cost the most: many tokens before the body, one tag of many attributes, escapes
# in a script, references to white space, lone `<`s, a quote never closed.
HOSTILE = {
    "metas": "<head>" + "<meta name=a content='b'>" * (MEGABYTES // 25),
    "metas with http-equiv": "<head>" + "<meta http-equiv=x>" * (MEGABYTES // 19),
    "divs": "<head></head>" + "<div>" * (MEGABYTES // 5),
    "attributes": "<head><meta http-equiv=x " + "a " * (MEGABYTES // 2) + ">",
    "attributes in a body tag": "<body " + "a=b " * (MEGABYTES // 4) + ">",
    "script escapes": "<head><script>" + "<!--<script>-->" * (MEGABYTES // 15),
    "comments": "<head>" + "<!---->" * (MEGABYTES // 7),
    "white space references": "<head>" + "&#32;" * (MEGABYTES // 5) + "x",
    "lone lesser-thans": "<head></head><div>" + "< " * (MEGABYTES // 2),
    "open quote": "<head><meta a='" + "x" * MEGABYTES,
}


@pytest.fixture(scope="module")
def chromium_check() -> Iterator[Callable[[list[tuple[str, int | None]]], list[dict[str, Any]]]]:
    """CHECK run on each page and place of a batch, in a headless Chromium that reaches no
    network."""
    loop = asyncio.new_event_loop()
    browser = Browser(NOWHERE)
    loop.run_until_complete(browser.__aenter__())
    tab = loop.run_until_complete(browser.open("about:blank"))

    def check(batch: list[tuple[str, int | None]]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = loop.run_until_complete(
            tab.evaluate(f"{json.dumps(batch)}.map(([page, at]) => {CHECK}(page, at))")
        )
        return found

    yield check
    loop.run_until_complete(browser.__aexit__(None, None, None))
    loop.close()


# A raw-text element's start and what may end it, or not, or escape in it.
RAW = st.tuples(
    st.sampled_from(("<title>", "<style>", "<textarea>", "<noframes>", "<xmp>")),
    st.lists(st.sampled_from(IN_RAW), max_size=8).map("".join),
).map("".join) | st.lists(st.sampled_from(IN_SCRIPT), max_size=8).map(
    lambda inside: "<script>" + "".join(inside)
)
# Pages in batches of up to 25, each batch checked in one call to the browser.
PAGES = st.lists(st.lists(st.sampled_from(PIECES) | RAW, max_size=16).map("".join), max_size=25)


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(pages=PAGES)
def test_the_bar_goes_where_chromium_starts_the_body_of_any_page(
    chromium_check: Callable[[list[tuple[str, int | None]]], list[dict[str, Any]]],
    pages: list[str],
) -> None:
    places = [placement(page) for page in pages]
    found = chromium_check([(page, place.at) for page, place in zip(pages, places, strict=True)])
    for page, place, seen in zip(pages, places, found, strict=True):
        assert seen["problem"] == "", f"{page!r}, bar at {place.at}: {seen['problem']}"
        if place.at is not None:
            assert list(place.policies) == seen["policies"], page


@settings(max_examples=200, deadline=None, derandomize=True)
@given(page=st.text(st.sampled_from("<>/!-=\"' \n\0ab&#;x?[]") | st.characters(), max_size=300))
def test_any_text_is_read_without_an_error(page: str) -> None:
    place = placement(page)
    assert place.at is None or 0 <= place.at <= len(page)
    assert (place.at is None) == bool(place.why)
    for token in tokens(page):
        assert 0 <= token.start <= token.end <= len(page)
        if token.kind in ("start", "end"):
            assert attributes(page, token) is not None


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_pages_of_megabytes_are_read_in_bounded_time_and_memory(name: str) -> None:
    page = HOSTILE[name]
    began = time.monotonic()
    place = placement(page)
    took = time.monotonic() - began
    # A quadratic reading would take hours; a linear one, a fraction of a second unloaded.
    assert took < 10, f"{name}: {took:.1f} s ({place})"
    # Nothing is kept but the token at hand (traced on a part of the page: tracing is slow).
    tracemalloc.start()
    placement(page[: len(page) // 32])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 256 * 1024, f"{name}: {peak} bytes at most in use"


def test_a_token_is_where_its_text_is() -> None:
    page = "<p a='<b>' c=d>x</p ><!-- y --><br/>"
    found = [(t.kind, t.name, page[t.start : t.end]) for t in tokens(page)]
    assert found == [
        ("start", "p", "<p a='<b>' c=d>"),
        ("text", "", "x"),
        ("end", "p", "</p >"),
        ("comment", "", "<!-- y -->"),
        ("start", "br", "<br/>"),
        ("eof", "", ""),
    ]
    assert attributes(page, Token("start", 0, 15, "p")) == {"a": "<b>", "c": "d"}
