"""cdx-toolkit as a real client of the CDX API: its own virtual environment (deploy.testing.peers),
and its paging iterator run there against a CDX endpoint, through an HTTP proxy or straight to the
direct front, fetching each capture's content from the front's archival URLs (`wb=`) if asked.

`CDXFetcher.iter` asks `page=0`, `1`, `2`... of the endpoint until an answer is a 400 or empty
(`get_for_iter`), so it ends only against a server that pages as pywb's does.
"""

import hashlib
import os
import subprocess

from deploy.testing.peers import peer_venv

CDX_TOOLKIT_VERSION = "0.9.39"
REQUIREMENTS = (f"cdx_toolkit=={CDX_TOOLKIT_VERSION}",)
VENV_NAME = f"cdx-toolkit-{hashlib.sha256(' '.join(REQUIREMENTS).encode()).hexdigest()[:8]}"
ITER_TIMEOUT = 120.0
# Each capture as a JSON line, and the pages asked for (its log) on standard error.
_ITER_SCRIPT = """
import hashlib, json, logging, sys
import cdx_toolkit

source, url, page_size, wb = sys.argv[1:5]
logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
fetcher = cdx_toolkit.CDXFetcher(source=source, wb=wb or None)
for capture in fetcher.iter(url, pageSize=int(page_size)):
    line = dict(capture.data)
    if wb:
        line["content_sha256"] = hashlib.sha256(capture.content).hexdigest()
    print(json.dumps(line), flush=True)
"""


def cdx_toolkit_python() -> str:
    """The interpreter of a virtual environment with cdx-toolkit, built on first use."""
    return str(peer_venv(VENV_NAME, REQUIREMENTS) / "python")


def iterate(
    endpoint: str, url: str, page_size: int, proxy: str | None, wb: str = ""
) -> subprocess.CompletedProcess[str]:
    """`CDXFetcher(source=endpoint, wb=wb).iter(url, pageSize=page_size)` run to its end with
    HTTP_PROXY set to `proxy` (None: no proxy): each capture a JSON line on standard output, with
    the SHA-256 of its content fetched from `wb` when given. cdx-toolkit's three seconds between
    two requests to a host are made a twentieth, and a connection error ends it at once (not
    after a minute's wait)."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name.lower() not in ("no_proxy", "http_proxy", "https_proxy", "all_proxy", "pythonpath")
    }
    environment.update(CDXT_DEFAULT_MIN_RETRY_INTERVAL="0.05", CDXT_MAX_ERRORS="0")
    if proxy is not None:
        environment.update(HTTP_PROXY=proxy, http_proxy=proxy)
    return subprocess.run(
        [cdx_toolkit_python(), "-c", _ITER_SCRIPT, endpoint, url, str(page_size), wb],
        capture_output=True,
        text=True,
        timeout=ITER_TIMEOUT,
        env=environment,
    )
