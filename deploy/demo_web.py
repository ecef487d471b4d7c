"""The demo's small website, served on loopback from the files in deploy/demo_site/.

Version 1 is deploy/demo_site/v1/; version 2 is the files of deploy/demo_site/v2/ over it (a
new home page and news page, a new logo), so two crawls a few seconds apart differ visibly. An
HTML file there is a page's main part: it is served set in layout.html, with the page's title.
"""

import functools
import mimetypes
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

SITE_FILES = Path(__file__).parent / "demo_site"
HOST_NAME = "demo.dlweb.test"  # .test is reserved for tests (RFC 2606): it never reaches the web
# Each page's title, and whether it runs script.js (which reads the logo by its id).
PAGES = {
    "index.html": ("dlweb demo site", True),
    "news.html": ("News - dlweb demo site", False),
    "about.html": ("About - dlweb demo site", False),
}


@functools.cache
def _layout() -> str:
    """The pages' layout, read at the first page served, not at each."""
    return (SITE_FILES / "layout.html").read_text()


def page(path: Path) -> bytes:
    """The bytes served for a file of the site: a page set in the layout, any other as it is."""
    if path.name not in PAGES:
        return path.read_bytes()
    title, scripted = PAGES[path.name]
    return (
        _layout()
        .format(
            title=title,
            script='<script src="script.js" defer></script>\n' if scripted else "",
            logo=' id="logo"' if scripted else "",
            main=path.read_text(),
        )
        .encode()
    )


class DemoWeb:
    """The demo site on 127.0.0.1 at a free port, serving one version at a time."""

    def __init__(self) -> None:
        self.version = 1
        web = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer(body=True)

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def _answer(self, body: bool) -> None:
                path = web.file_for(urlsplit(self.path).path)
                if path is None:
                    self.send_error(404)
                    return
                data = page(path)
                kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                """Quiet: the demo prints its own progress."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port: int = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://{HOST_NAME}:{self.port}/"

    def file_for(self, url_path: str) -> Path | None:
        """The file a URL path names in the current version, or None."""
        name = unquote(url_path).lstrip("/") or "index.html"
        if any(part in ("", ".", "..") for part in name.split("/")):
            return None
        for version in range(self.version, 0, -1):
            path = SITE_FILES / f"v{version}" / name
            if path.is_file():
                return path
        return None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
