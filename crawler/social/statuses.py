"""Reading a Mastodon status (hostile JSON): its own page, the URLs it links to (its preview
card's and the links of its HTML content, mentions and hashtags left out) and its counts."""

from html.parser import HTMLParser
from typing import Any

from archive.url_parts import MAX_URL_LENGTH

from .popularity import popularity
from .sources import Post

__all__ = ["MAX_LINKS", "content_links", "post_of"]

MAX_LINKS = 100  # of one post
_NOT_LINKS = ("mention", "hashtag")  # classes of Mastodon's links to accounts and tags


def _url(value: object) -> str:
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        return value if len(value) <= MAX_URL_LENGTH else ""
    return ""


def _count(value: object) -> int:
    return value if type(value) is int and value > 0 else 0


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "a" or len(self.links) >= MAX_LINKS:
            return
        named = dict(attrs)
        classes = (named.get("class") or "").split()
        if "tag" in (named.get("rel") or "").split() or any(c in _NOT_LINKS for c in classes):
            return
        url = _url(named.get("href"))
        if url:
            self.links.append(url)


def content_links(html: str) -> list[str]:
    """The http(s) links of a status's HTML content, mentions and hashtags left out."""
    anchors = _Anchors()
    anchors.feed(html)
    anchors.close()
    return anchors.links


def post_of(status: Any) -> Post | None:
    """The post a status is (a boost's original), None when it is not a status."""
    if not isinstance(status, dict):
        return None
    if isinstance(status.get("reblog"), dict):
        status = status["reblog"]
    links: list[str] = []
    card = status.get("card")
    if isinstance(card, dict) and _url(card.get("url")):
        links.append(card["url"])
    content = status.get("content")
    if isinstance(content, str):
        links.extend(content_links(content))
    page = _url(status.get("url")) or _url(status.get("uri"))
    score = popularity(
        _count(status.get("reblogs_count")),
        _count(status.get("favourites_count")),
        _count(status.get("replies_count")),
    )
    return Post(page, tuple(dict.fromkeys(u for u in links if u != page))[:MAX_LINKS], score)


def status_id(status: Any) -> str:
    """A status's id ('' when it has none): Mastodon's ids are strings of digits."""
    value = status.get("id") if isinstance(status, dict) else None
    return value if isinstance(value, str) and value.isdigit() and len(value) <= 30 else ""
