"""pywb's archival URLs as the direct front reads and writes them."""

import pytest

from archive.archival_urls import (
    ArchivalUrls,
    BadArchivalUrl,
    Cdx,
    Memento,
    NoCollection,
    TimeGate,
    TimeMap,
    check_collection,
    parse,
)
from archive.errors import ConfigError
from archive.timestamps import parse_time

WEB = ("web",)


def test_a_memento_is_a_timestamp_a_modifier_and_the_url_with_its_query() -> None:
    assert parse("/web/2019id_/http://a.org/p?q=1&r=/x", WEB) == (
        "web",
        Memento("http://a.org/p?q=1&r=/x", "2019", "id_"),
    )
    assert parse("/web/20190301000000/https://a.org/", WEB)[1] == Memento(
        "https://a.org/", "20190301000000", ""
    )


def test_a_url_without_a_scheme_or_with_a_slash_lost_is_read_as_pywb_reads_it() -> None:
    assert parse("/web/2019mp_/a.org/p", WEB)[1] == Memento("http://a.org/p", "2019", "mp_")
    assert parse("/web/2019/http:/a.org/", WEB)[1] == Memento("http://a.org/", "2019", "")
    assert parse("/web/2019/HTTPS://a.org:8443/", WEB)[1] == Memento(
        "https://a.org:8443/", "2019", ""
    )
    assert parse("/web/2019/a.org:8080/x", WEB)[1] == Memento("http://a.org:8080/x", "2019", "")
    quoted = "/web/2019id_/http%3A//a.org/p%3Fq%3D1%26r%3D2"
    assert parse(quoted, WEB)[1] == Memento("http://a.org/p?q=1&r=2", "2019", "id_")


def test_timemaps_timegates_and_the_cdx_api() -> None:
    assert parse("/web/timemap/link/http://a.org/", WEB)[1] == TimeMap("http://a.org/", "link")
    assert parse("/web/http://a.org/", WEB)[1] == TimeGate("http://a.org/")
    assert parse("/cdx?url=http://a.org/*", WEB) == ("", Cdx())
    assert parse("/web/cdx?url=http://a.org/", WEB) == ("web", Cdx())


@pytest.mark.parametrize(
    ("path", "error", "said"),
    [
        ("/web/123456789012345/http://a.org/", BadArchivalUrl, "15 digits"),
        ("/web/2019id_/", BadArchivalUrl, "give the archived URL"),
        ("/web/2019/about/page", BadArchivalUrl, "not an absolute URL"),
        ("/web/2019/mailto:x@a.org", BadArchivalUrl, "not an absolute URL"),
        ("/web/2019/ftp://a.org/", BadArchivalUrl, "http and https"),
        ("/web/timemap/atom/http://a.org/", BadArchivalUrl, "TimeMap formats"),
        ("/nope/2019/http://a.org/", NoCollection, "the archive is at /web/"),
        ("/", NoCollection, "no collection ''"),
    ],
)
def test_what_cannot_be_read_is_named(path: str, error: type, said: str) -> None:
    with pytest.raises(error, match=said):
        parse(path, WEB)


def test_the_addresses_written_are_those_read() -> None:
    urls = ArchivalUrls("http://h:8090", "web")
    at = parse_time("20190301101112")
    memento = urls.memento("http://a.org/?q=1", at, "id_")
    assert memento == "http://h:8090/web/20190301101112id_/http://a.org/?q=1"
    assert parse(memento.removeprefix("http://h:8090"), WEB)[1] == Memento(
        "http://a.org/?q=1", "20190301101112", "id_"
    )
    assert urls.timegate("http://a.org/") == "http://h:8090/web/http://a.org/"
    assert urls.timemap("http://a.org/") == "http://h:8090/web/timemap/link/http://a.org/"
    assert ArchivalUrls.at(urls.root) == urls


def test_a_collection_name_is_checked() -> None:
    assert check_collection("web-2019") == "web-2019"
    for bad in ("", "cdx", "timemap", "a/b", "x" * 65, "../x"):
        with pytest.raises(ConfigError):
            check_collection(bad)
