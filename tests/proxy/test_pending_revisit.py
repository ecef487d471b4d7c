"""A revisit imported before its original: a 500 fault through the proxy until the original is."""

import aiohttp

from archive.timestamps import format_http_date, parse_time
from tests.archive.warc import sources
from tests.exchange.conftest import dlweb

from .conftest import Proxy


async def get(proxy: Proxy, url: str, date: str) -> tuple[int, str, bytes]:
    async with (
        aiohttp.ClientSession(auto_decompress=False) as session,
        session.get(
            url,
            proxy=proxy.url,
            headers={"Accept-Datetime": format_http_date(parse_time(date))},
            allow_redirects=False,
        ) as answer,
    ):
        return answer.status, answer.headers.get("Content-Type", ""), await answer.read()


async def test_a_pending_revisit_is_a_500_fault_until_its_original_is_imported(
    cluster_factory, proxy_factory, tmp_path
):
    cluster = cluster_factory(nodes=1, replicas=1)
    first = sources.warcio_file(tmp_path)
    later = sources.later_revisit_file(tmp_path, first)
    config = str(cluster.config_path)
    assert dlweb("import", "-c", config, str(later.path)).returncode == 0
    proxy = proxy_factory(cluster)
    revisit = later.entries[0]  # of /a, at /a-later, naming /a and its date
    status, content_type, body = await get(proxy, revisit.url, revisit.date)
    assert status == 500 and content_type.startswith("text/plain")
    assert b"revisit whose original is not archived yet" in body

    assert dlweb("import", "-c", config, str(first.path)).returncode == 0
    # A second later: a date the proxy has not asked the archive for yet.
    status, _, body = await get(proxy, revisit.url, "2024-03-01T00:00:01Z")
    assert (status, body) == (200, revisit.payload)
