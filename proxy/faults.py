"""Fault contents: what the proxy sends for a URL the archive lacks (404) or cannot read (500).

The body has the type the browser expects where it lands (a page, an image, a script, a style
sheet, JSON, text), so a missing image shows as an image saying it is missing rather than
breaking the page, and every kind says plainly that the resource is missing from the archive.
"""

import html
import json
from urllib.parse import urlsplit

_EXTENSIONS = {
    "image": (".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".ico", ".bmp", ".avif"),
    "script": (".js", ".mjs"),
    "style": (".css",),
    "json": (".json",),
    "text": (".txt",),
}


def kind_of(url: str, accept: str) -> str:
    """What sort of resource the client wants: by the URL's extension, else its Accept."""
    path = urlsplit(url).path.lower()
    for kind, endings in _EXTENSIONS.items():
        if path.endswith(endings):
            return kind
    accept = accept.lower()
    for kind, marks in (
        ("html", ("text/html",)),
        ("image", ("image/",)),
        ("style", ("text/css",)),
        ("script", ("javascript", "ecmascript")),
        ("json", ("application/json",)),
    ):
        if any(mark in accept for mark in marks):
            return kind
    return "text"


def fault(status: int, url: str, accept: str, reason: str) -> tuple[bytes, str]:
    """The body and Content-Type of a fault content."""
    message = f"dlweb: {url} is missing from the archive ({reason})."
    kind = kind_of(url, accept)
    if kind == "html":
        page = (
            f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{status}: missing from'
            f" the archive</title></head><body><h1>Missing from the archive</h1>"
            f"<p>{html.escape(message)}</p><p>Pick another date at "
            f'<a href="http://date.dlweb/">date.dlweb</a>.</p></body></html>\n'
        )
        return page.encode(), "text/html; charset=utf-8"
    if kind == "image":
        svg = (
            '<svg xmlns="http://www.w3.org/2000/svg" width="240" height="40">'
            '<rect width="100%" height="100%" fill="#eee" stroke="#c00"/>'
            '<text x="8" y="25" font-size="13" fill="#c00">missing from the archive</text></svg>'
        )
        return svg.encode(), "image/svg+xml"
    if kind == "script":
        return f"/* {message} */\n".encode(), "application/javascript"
    if kind == "style":
        return f"/* {message} */\n".encode(), "text/css"
    if kind == "json":
        return json.dumps({"error": message, "status": status}).encode(), "application/json"
    return (message + "\n").encode(), "text/plain; charset=utf-8"
