"""Lookup that matches what a browser asks for: cache busters and timestamps answered by the
fuzzy fallback (and saying so), requests with a body found by a key that folds it in, CORS
preflights answered, and redirects to the URL itself passed over so that replay never loops."""

import asyncio
from pathlib import Path

from archive.requestkey import lookup_url
from tests.browser import load_error

from .conftest import Version, archive, header_block, run_proxy_to_its_end
from .test_streaming import request

SITE = "http://scripted.example"
AT_2024 = {"Accept-Datetime": "Mon, 01 Jul 2024 00:00:00 GMT"}


def page(body: bytes, content_type: str = "text/plain") -> bytes:
    return header_block(
        200, "OK", ("Content-Type", content_type), ("Content-Length", str(len(body)))
    )


def version(
    url: str, body: bytes, date: str = "2024-06-01", header: bytes | None = None
) -> Version:
    return Version(url, date, 200, header or page(body), body)


def test_a_new_cache_buster_gets_the_archived_script_marked_as_fuzzy(
    cluster_factory, proxy_factory
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    script = b"document.title = 'archived';"
    asyncio.run(archive(cluster, [version(f"{SITE}/app.js?_=1717200000000", script)]))
    proxy = proxy_factory(cluster)
    status, headers, body = request(proxy, f"{SITE}/app.js?_=1732650000123", AT_2024)
    assert (status, body) == (200, script)
    assert headers["x-dlweb-match"].startswith("fuzzy")
    assert f"{SITE}/app.js?_=1717200000000" in headers["x-dlweb-match"]
    status, headers, body = request(proxy, f"{SITE}/app.js?_=1717200000000", AT_2024)
    assert (status, body) == (200, script)
    assert "x-dlweb-match" not in headers
    assert request(proxy, f"{SITE}/other.js?_=1732650000123", AT_2024)[0] == 404


def test_a_timestamp_parameter_finds_the_archived_json(cluster_factory, proxy_factory) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    data = b'{"colour": "teal"}'
    asyncio.run(
        archive(
            cluster,
            [
                version(f"{SITE}/config.json?ts=1717200000&lang=en", data),
                version(f"{SITE}/config.json?ts=1717200000&lang=fr", b'{"colour": "rouge"}'),
            ],
        )
    )
    proxy = proxy_factory(cluster)
    status, headers, body = request(proxy, f"{SITE}/config.json?lang=en&ts=1732650000", AT_2024)
    assert (status, body) == (200, data)
    assert headers["x-dlweb-match"].startswith("fuzzy")


def test_each_post_body_gets_its_own_capture(cluster_factory, proxy_factory) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    url = f"{SITE}/api/items"
    asked = {b'{"query": "museum"}': b'["a.png"]', b'{"query": "harbour"}': b'["b.png"]'}
    versions = [
        version(lookup_url("POST", url, "application/json", question), answer)
        for question, answer in asked.items()
    ]
    asyncio.run(archive(cluster, versions))
    proxy = proxy_factory(cluster)
    for question, answer in asked.items():
        connection_headers = {**AT_2024, "Content-Type": "application/json"}
        status, headers, body = _post(proxy, url, question, connection_headers)
        assert (status, body) == (200, answer)
        assert "x-dlweb-match" not in headers
    status, _, body = request(proxy, url, AT_2024)
    assert status == 404, "a GET was answered with a POST's capture"


def _post(
    proxy, url: str, body: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    try:
        connection.request("POST", url, body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def test_a_cors_preflight_for_an_archived_request_is_allowed(
    cluster_factory, proxy_factory
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    proxy = proxy_factory(cluster)
    preflight = {
        "Origin": "http://other.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    status, headers, _ = request(proxy, f"{SITE}/api/items", preflight, method="OPTIONS")
    assert status == 204
    assert headers["access-control-allow-origin"] == "http://other.example"
    assert headers["access-control-allow-methods"] == "POST"
    assert headers["access-control-allow-headers"] == "content-type"
    assert request(proxy, f"{SITE}/api/items", method="OPTIONS")[0] == 404


def test_a_redirect_to_itself_is_passed_over_for_the_nearest_capture_that_is_not_one(
    cluster_factory, proxy_factory
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    url = f"{SITE}/page"
    to_itself = header_block(301, "Moved", ("Location", "https://scripted.example/page/"))
    asyncio.run(
        archive(
            cluster,
            [
                version(url, b"the page of January", "2024-01-01"),
                Version(url, "2024-07-01", 301, to_itself, b""),
                version(url, b"the page of next year", "2025-06-01"),
            ],
        )
    )
    proxy = proxy_factory(cluster)
    status, headers, body = request(proxy, url, AT_2024)
    assert (status, body) == (200, b"the page of January")
    assert headers["memento-datetime"] == "Mon, 01 Jan 2024 00:00:00 GMT"


def test_a_redirect_loop_between_two_archived_urls_ends_in_the_browsers_loop_error(
    cluster_factory, proxy_factory, tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    one, other = f"{SITE}/one", f"{SITE}/other"
    asyncio.run(
        archive(
            cluster,
            [
                Version(
                    one, "2024-06-01", 302, header_block(302, "Found", ("Location", other)), b""
                ),
                Version(
                    other, "2024-06-01", 302, header_block(302, "Found", ("Location", one)), b""
                ),
            ],
        )
    )
    proxy = proxy_factory(cluster)
    assert load_error(proxy.url, tmp_path / "profile", one) == "net::ERR_TOO_MANY_REDIRECTS"


def test_a_rules_file_with_a_bad_pattern_stops_the_proxy_at_start_naming_its_line(
    cluster_factory, tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    rules = tmp_path / "fuzzy.yaml"
    rules.write_text("rules:\n  - name: broken\n    ignore:\n      - name_pattern: 'utm_(['\n")
    config = tmp_path / "with-rules.yaml"
    config.write_text(cluster.config_path.read_text() + f"consultation:\n  fuzzy_rules: {rules}\n")
    done = run_proxy_to_its_end(config, tmp_path / "p")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert f"{rules}, line 4" in done.stderr
    assert "broken" in done.stderr
