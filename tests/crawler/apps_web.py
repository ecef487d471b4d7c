"""Three sites of known software on loopback (WordPress, phpBB, MediaWiki), each on its own port,
serving the pages of apps_sites/ as their programs would: a URL the site has (its session and
reply parameters left out, as the program ignores them) gets its page, any other page a short
one without links, a style sheet, script or image a 404. Every request is logged."""

import re
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from aiohttp import web

from deploy.testing.web_server import WebServer, answering

FIXTURES = Path(__file__).parent / "apps_sites"
IGNORED = frozenset({"sid", "replytocom"})  # what the programs do not read to pick a page
COMPONENT_SUFFIXES = (".css", ".js", ".png", ".ico", ".svg", ".woff2")
OTHER = (
    "<!doctype html><html><head><title>Other</title></head><body><p>Another page.</p></body></html>"
)

PAGES: dict[str, dict[str, str]] = {
    "wordpress": {
        "/": "wordpress/home.html",
        "/page/2/": "wordpress/page-2.html",
        "/category/news/": "wordpress/category.html",
        "/2026/11/28/hello-archive/": "wordpress/post.html",
        "/2026/11/20/crawling-politely/": "wordpress/post.html",
        "/2026/10/02/first-light/": "wordpress/post.html",
        "/2026/10/01/welcome/": "wordpress/post.html",
    },
    "phpbb": {
        "/": "phpbb/index.html",
        "/index.php": "phpbb/index.html",
        "/viewforum.php?f=2": "phpbb/viewforum.html",
        "/viewforum.php?f=2&start=25": "phpbb/viewforum.html",
        "/viewtopic.php?f=2&t=1": "phpbb/viewtopic.html",
        "/viewtopic.php?f=2&t=2": "phpbb/viewtopic.html",
        "/viewtopic.php?p=3": "phpbb/viewtopic.html",
        "/viewtopic.php?p=1": "phpbb/viewtopic.html",
    },
    "mediawiki": {
        "/": "mediawiki/main.html",
        "/wiki/Main_Page": "mediawiki/main.html",
        "/wiki/Web_archiving": "mediawiki/article.html",
        "/wiki/Crawler": "mediawiki/article.html",
    },
}


# A theme that no longer marks its pager as a <nav>, as home-restyled.html does.
_PAGER = re.compile(r'<nav class="navigation pagination"[^>]*>(.*?)</nav>', re.S)
RESTYLED_PAGER = '<div id="posts-pager" class="navigation pagination wide-pager">'


def restyled(page: str) -> str:
    """A WordPress page as a changed theme writes it."""
    return _PAGER.sub(lambda found: RESTYLED_PAGER + found[1] + "</div>", page)


@dataclass
class AppSite:
    """One site: the pages it has by path and query, and the requests it was sent."""

    name: str
    pages: dict[str, str]
    restyle: bool = False  # its pages as a changed theme writes them
    log: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            self.log.append(request.path_qs)
        if request.path.endswith(COMPONENT_SUFFIXES) or request.path == "/robots.txt":
            return web.Response(status=404, text="none")
        query = urlencode([(k, v) for k, v in parse_qsl(request.query_string) if k not in IGNORED])
        fixture = self.pages.get(request.path + ("?" + query if query else ""))
        text = (FIXTURES / fixture).read_text() if fixture else OTHER
        if self.restyle:
            text = restyled(text)
        return web.Response(text=text, content_type="text/html", charset="utf-8")

    def requested(self) -> list[str]:
        """The pages asked for, robots.txt and components left out."""
        with self._lock:
            return [
                p
                for p in self.log
                if p != "/robots.txt" and not p.split("?")[0].endswith(COMPONENT_SUFFIXES)
            ]


@contextmanager
def serve_app_sites(
    names: tuple[str, ...] = tuple(PAGES), restyle: bool = False
) -> Iterator[dict[str, tuple[AppSite, str]]]:
    """Each site named with its base URL, served until the block ends."""
    with ExitStack() as stack:
        served = {}
        for name in names:
            site = AppSite(name, PAGES[name], restyle)
            server = stack.enter_context(WebServer(answering(site.handle)))
            served[name] = (site, f"http://{server.host}:{server.port}")
        yield served
