"""ReplayWeb.page as a peer: the viewer that opens WACZ packages in a browser, served on loopback
beside one package.

ReplayWeb.page runs in the browser: `ui.js` draws the viewer and `sw.js`, a service worker, reads
the package by HTTP range requests and replays its pages in a frame. Both are self-contained
bundles in the npm package `replaywebpage`, so `npm pack` fetches the package alone, at a pinned
version whose hash is checked (its dependencies only build those bundles), and `replayweb_site`
keeps the static site that embeds the viewer in a folder of its own, beside the peers'
environments (`deploy.testing.peers`), built once:

- `index.html`: a `<replay-web-page>` element opening the package its query names (`?source=`)
  and showing what its fragment says (`#view=pages`, the list of pages; `#url=...`, a capture
  of that URL replayed);
- `ui.js`;
- `replay/sw.js`: the service worker, its scope `/replay/`, where the viewer's frame is loaded.

A service worker runs only in a secure context, which http://127.0.0.1 is: `serving` serves the
site and one package there, with range requests.
"""

import base64
import hashlib
import shutil
import tarfile
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from deploy.testing.peers import cached_build, run
from deploy.testing.web_server import WebServer

REPLAYWEB_VERSION = "2.5.3"
# The registry's hash of that version's tarball (`npm view replaywebpage@2.5.3 dist.integrity`).
REPLAYWEB_INTEGRITY = "sha512-nCj2PSON3BxeSJKE8AsYPyULv0XPZKJWfy4l9PyQre9SqwLZ+WKZVs/sfLqPOQ4GrH+0YkjbwOhr8cSTH08gsQ=="
SITE_NAME = f"replaywebpage-{REPLAYWEB_VERSION}"
# What the site takes from the package: where in the tarball, where in the site.
BUNDLES = {"package/ui.js": "ui.js", "package/sw.js": "replay/sw.js", "package/LICENSE": "LICENSE"}
# The element reads its attributes when ui.js defines it: the script that makes it runs first.
INDEX_HTML = """\
<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>ReplayWeb.page</title>
    <style>html, body, replay-web-page { height: 100%; margin: 0; }</style>
  </head>
  <body>
    <script>
      const viewer = document.createElement("replay-web-page");
      viewer.setAttribute("source", new URLSearchParams(location.search).get("source"));
      viewer.setAttribute("replaybase", "./replay/");
      viewer.setAttribute("deepLink", "");
      document.body.append(viewer);
    </script>
    <script src="./ui.js"></script>
  </body>
</html>
"""


def _npm_pack(into: Path) -> Path:
    """The package's tarball, fetched by npm into `into` and checked against the pinned hash."""
    spec = f"replaywebpage@{REPLAYWEB_VERSION}"
    if shutil.which("npm") is None:
        raise RuntimeError(f"npm is not installed (apt-get install nodejs npm): {spec} needs it")
    run(["npm", "pack", "--silent", spec, "--pack-destination", str(into)], cwd=into)
    tarball = into / f"replaywebpage-{REPLAYWEB_VERSION}.tgz"
    found = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    if found != REPLAYWEB_INTEGRITY:
        raise RuntimeError(f"{spec}: its tarball's hash is {found}, not {REPLAYWEB_INTEGRITY}")
    return tarball


def _build_site(build: Path) -> None:
    """Write the static site into `build`: the package's bundles and the page embedding them."""
    tarball = _npm_pack(build)
    with tarfile.open(tarball) as package:
        for member, path in BUNDLES.items():
            source = package.extractfile(member)
            if source is None:
                raise RuntimeError(f"{tarball.name} holds no file {member}")
            (build / path).parent.mkdir(parents=True, exist_ok=True)
            (build / path).write_bytes(source.read())
    tarball.unlink()
    (build / "index.html").write_text(INDEX_HTML)


def replayweb_site() -> Path:
    """The folder of ReplayWeb.page's static site, built on first use (`cached_build`)."""
    return cached_build(SITE_NAME, _build_site)


@dataclass(frozen=True)
class Viewer:
    """ReplayWeb.page served on loopback with one WACZ package: the addresses of its views."""

    base: str  # http://127.0.0.1:PORT
    source: str  # the package's path on that server

    def _view(self, **fragment: str) -> str:
        query = urllib.parse.urlencode({"source": self.source})
        return f"{self.base}/index.html?{query}#{urllib.parse.urlencode(fragment)}"

    @property
    def pages(self) -> str:
        """The viewer showing the package's list of pages."""
        return self._view(view="pages")

    def replay(self, url: str) -> str:
        """The viewer replaying the latest capture of `url`."""
        return self._view(url=url)


def _application(site: Path, wacz: Path) -> web.Application:
    """The static site, and the package at `/<its name>`, with range requests (aiohttp's file
    responses answer them, and say `Accept-Ranges: bytes`)."""

    async def package(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(wacz)

    app = web.Application()
    app.router.add_get("/" + urllib.parse.quote(wacz.name), package)
    app.router.add_static("/", site)
    return app


@contextmanager
def serving(wacz: Path) -> Iterator[Viewer]:
    """ReplayWeb.page and the package `wacz` served on a free loopback port, from a thread of
    their own; yields the viewer's addresses."""
    with WebServer(_application(replayweb_site(), wacz)) as server:
        yield Viewer(server.base, "/" + urllib.parse.quote(wacz.name))
