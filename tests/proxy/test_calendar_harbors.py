"""The calendars of the captures and date harbors: counts per day made by the storage node from
a structure file, then the pages in headless Chromium through the proxy (a histogram per year, a
heat map of a month, a click on a day that sets the client's date and opens that day's capture),
and the messages bad input gets."""

import asyncio
import hashlib
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import date
from pathlib import Path
from urllib.parse import quote, urlencode, urljoin

import lxml.html
import pytest

from archive import structure
from archive.cluster import ClusterClient, NewCapture
from archive.structure import (
    BadRecord,
    Capture,
    DayCount,
    RecordKind,
    StructureFile,
    encode_file,
)
from archive.timestamps import parse_time
from deploy.testing.cluster import Cluster
from harbors.calendar import BadChoice, Choice, choose
from tests.browser import chromium

from .conftest import Proxy, Version, archive, header_block, post_set, setting_of, through

PAGE = "http://calendar.test/page.html"
HTML = ("Content-Type", "text/html; charset=utf-8")
# Each capture of the page, with the text it had then.
TEXTS = {
    "2019-03-10T08:00:00Z": "The page on 10 March 2019.",
    "2021-06-03T09:00:00Z": "The page on the morning of 3 June 2021.",
    "2021-06-03T15:00:00Z": "The page on the afternoon of 3 June 2021.",
    "2021-06-20T10:00:00Z": "The page on 20 June 2021.",
}
VERSIONS = [
    Version(
        PAGE,
        at,
        200,
        header_block(200, "OK", HTML),
        f"<!doctype html><html><body><p>{text}</p></body></html>".encode(),
    )
    for at, text in TEXTS.items()
]
NEVER = "http://never.test/"
HOME = "http://date.dlweb/"


def _micros(text: str) -> int:
    return parse_time(text)


def _record(at: str, kind: RecordKind = RecordKind.RESPONSE) -> Capture:
    return Capture(_micros(at), "a" * 64, "b" * 64, 200, kind)


# -- the counts ----------------------------------------------------------------------------------


def test_the_node_counts_captures_per_day_from_the_structure_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [
        _record("2021-06-02T23:59:59Z"),
        _record("2021-06-03T00:00:00Z", RecordKind.REQUEST),  # WARC side records: not counted
        _record("2021-06-03T00:00:00Z"),
        _record("2021-06-03T00:00:01Z", RecordKind.METADATA),
        _record("2021-06-03T12:00:00Z", RecordKind.REVISIT),
        _record("2021-06-03T23:59:59.5Z", RecordKind.NOT_MODIFIED),
        _record("2021-06-04T00:00:00Z", RecordKind.VARIANT),
        _record("2021-06-05T10:00:00Z"),
        _record("1999-12-31T23:00:00Z"),
    ]
    path = tmp_path / "structure"
    path.write_bytes(encode_file(PAGE, records))
    monkeypatch.setattr(structure, "DAYS_BATCH", 2)  # a day spread over several batches
    everything = (_micros("1000"), _micros("9999"))
    with StructureFile(path) as sfile:
        counted = sfile.reader.count_days(*everything)
        june = sfile.reader.count_days(_micros("2021-06-03T06:00:00Z"), _micros("2021-06-30"))
    assert [day.to_json() for day in counted] == [
        ["1999-12-31", 1, _micros("1999-12-31T23:00:00Z"), _micros("1999-12-31T23:00:00Z")],
        ["2021-06-02", 1, _micros("2021-06-02T23:59:59Z"), _micros("2021-06-02T23:59:59Z")],
        ["2021-06-03", 3, _micros("2021-06-03T00:00:00Z"), _micros("2021-06-03T23:59:59.5Z")],
        ["2021-06-05", 1, _micros("2021-06-05T10:00:00Z"), _micros("2021-06-05T10:00:00Z")],
    ]
    assert [DayCount.from_json(day.to_json()) for day in counted] == counted
    assert [(day.day, day.count) for day in june] == [(date(2021, 6, 3), 2), (date(2021, 6, 5), 1)]


@pytest.mark.parametrize(
    "sent",
    [
        None,
        ["2021-06-03", 1, 2],
        ["2021-06-31", 1, 2, 3],
        [20210603, 1, 2, 3],
        ["2021-06-03", "1", 2, 3],
    ],
    ids=["not a list", "three fields", "no such day", "day not text", "count as text"],
)
def test_a_day_count_a_node_sends_is_checked(sent: object) -> None:
    with pytest.raises(BadRecord):
        DayCount.from_json(sent)


def test_the_month_and_day_asked_for_are_read_or_refused() -> None:
    days = [
        DayCount(date(2019, 3, 10), 1, 0, 0),
        DayCount(date(2021, 6, 3), 2, 0, 0),
        DayCount(date(2021, 6, 20), 1, 0, 0),
    ]
    assert choose({}, days) == Choice(2021, 6)  # the latest month with captures
    assert choose({}, days, _micros("2019-03-01")) == Choice(2019, 3)  # the client's date's
    assert choose({}, days, _micros("2020-01-01")) == Choice(2021, 6)  # which has none
    assert choose({"year": "2019"}, days) == Choice(2019, 3)
    assert choose({"year": "2021", "month": "6", "day": "03"}, days) == Choice(2021, 6, 3)
    refused = {
        "year=21": {"year": "21"},
        "year=2021x": {"year": "2021x"},
        "month=13": {"year": "2021", "month": "13"},
        "month=june": {"year": "2021", "month": "june"},
        "day=30 of February": {"year": "2021", "month": "02", "day": "30"},
        "a month without its year": {"month": "06"},
        "a day without its month": {"year": "2021", "day": "03"},
    }
    for why, query in refused.items():
        with pytest.raises(BadChoice):
            choose(query, days)
            pytest.fail(f"{why} was accepted")


# -- the pages in Chromium -----------------------------------------------------------------------


def _opener(proxy: Proxy) -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url}))


def _get(proxy: Proxy, url: str, **headers: str) -> tuple[int, str]:
    """The status and text of a GET through the proxy."""
    request = urllib.request.Request(url, headers=headers)
    try:
        with _opener(proxy).open(request, timeout=30) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def _date(proxy: Proxy) -> str | None:
    at: str | None = setting_of(proxy)["date"]
    return at


def _submit(proxy: Proxy, form: lxml.html.HtmlElement) -> tuple[int, dict[str, str]]:
    """POST a form of the date harbor's page as a browser sends it, its hidden fields (the
    client's token among them) with it: the status and headers answered."""
    fields = {field.get("name"): field.get("value") or "" for field in form.xpath(".//input")}
    status, headers, _ = through(
        proxy,
        "POST",
        urljoin(HOME, form.get("action")),
        urlencode(fields).encode(),
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    return status, headers


def _years(page: lxml.html.HtmlElement) -> dict[str, int]:
    """The histogram's bars: each year's count, checked against the bar's label."""
    bars = {}
    for bar in page.xpath('//*[local-name()="svg"][@class="histogram"]//*[local-name()="a"]'):
        year, count = bar.get("data-year"), int(bar.get("data-count"))
        assert bar.get("aria-label") == f"{count:,} capture{'s' if count > 1 else ''} in {year}"
        bars[year] = count
    return bars


def _days(page: lxml.html.HtmlElement) -> dict[str, int]:
    """The heat map's days with captures: each one's count, checked against its link's label."""
    days = {}
    for cell in page.xpath('//table[@class="calendar"]//td[@data-count]'):
        day, count = cell.get("data-day"), int(cell.get("data-count"))
        link = cell.xpath("./a")[0]
        assert link.get("aria-label") == f"{count} capture{'s' if count > 1 else ''} on {day}"
        days[day] = count
    return days


def _day_link(page: lxml.html.HtmlElement, day: str) -> str:
    return str(page.xpath(f'//table[@class="calendar"]//td[@data-day="{day}"]/a')[0].get("href"))


@pytest.fixture
def cluster_and_proxy(
    cluster_factory: Callable[..., Cluster], proxy_factory: Callable[..., Proxy]
) -> tuple[Cluster, Proxy]:
    """A cluster holding the page's four captures (and a WARC request record beside one of
    them), and a proxy on it."""
    cluster = cluster_factory(nodes=1, replicas=1)
    asyncio.run(archive(cluster, VERSIONS))
    first = VERSIONS[1]
    bodies = {hashlib.sha256(data).hexdigest(): data for data in (first.body, first.header)}
    content, header = bodies
    request = NewCapture(
        PAGE, _micros(first.date), content, header, 0, len(first.body), kind="request"
    )

    async def side_record() -> None:
        async with ClusterClient(cluster.config) as client:
            await client.insert([request], bodies.__getitem__)

    asyncio.run(side_record())
    return cluster, proxy_factory(cluster)


def test_chromium_browses_the_captures_calendar_and_opens_a_day(
    cluster_and_proxy: tuple[Cluster, Proxy], tmp_path: Path
) -> None:
    cluster, proxy = cluster_and_proxy

    async def counted() -> list[DayCount]:
        async with ClusterClient(cluster.config) as client:
            return await client.capture_days(PAGE)

    assert [(d.day.isoformat(), d.count) for d in asyncio.run(counted())] == [
        ("2019-03-10", 1),
        ("2021-06-03", 2),
        ("2021-06-20", 1),
    ]
    profile = tmp_path / "profile"

    def load(url: str) -> lxml.html.HtmlElement:
        return lxml.html.fromstring(chromium(proxy.url, profile, url, "--dump-dom"))

    # The latest month with captures, June 2021, under the captures per year.
    listed = f"http://captures.dlweb/?url={quote(PAGE, safe='')}"
    page = load(listed)
    assert _years(page) == {"2019": 1, "2021": 3}
    assert page.xpath('//table[@class="calendar"]/thead//th/abbr/@title') == [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ]
    assert _days(page) == {"2021-06-03": 2, "2021-06-20": 1}
    assert len(page.xpath('//table[@class="calendar"]//td[contains(@class, "day")]')) == 30
    empty = page.xpath('//table[@class="calendar"]//td[contains(@class, "heat0")]/@aria-label')
    assert "no capture on 2021-06-04" in empty and len(empty) == 28
    rows = page.xpath('//table[@class="captures"]/tbody/tr/td[1]')
    assert [row.text_content() for row in rows] == list(TEXTS)[1:]
    assert all(label.xpath("./input | ./select") for label in page.xpath("//label"))

    # A year's bar opens its latest month with captures.
    bar = page.xpath('//*[local-name()="a"][@data-year="2019"]')[0].get("href")
    march = load(urljoin(listed, bar))
    assert _days(march) == {"2019-03-10": 1}
    assert "March 2019" in march.xpath('//h2[@id="month"]')[0].text_content()

    # A click on a day sets this client's date to that day's first capture and opens the page.
    assert _date(proxy) is None
    opened = load(_day_link(page, "2021-06-03")).text_content()
    assert TEXTS["2021-06-03T09:00:00Z"] in opened
    assert _date(proxy) == "2021-06-03T09:00:00Z"
    assert TEXTS["2021-06-03T09:00:00Z"] in load(PAGE).text_content()  # and the next load
    assert TEXTS["2021-06-20T10:00:00Z"] in load(_day_link(page, "2021-06-20")).text_content()
    assert _date(proxy) == "2021-06-20T10:00:00Z"
    assert TEXTS["2021-06-20T10:00:00Z"] in load(PAGE).text_content()

    # One day's captures, each a link that opens it.
    day = load(f"{listed}&year=2021&month=06&day=03")
    links = day.xpath('//table[@class="captures"]/tbody/tr/td[1]/a')
    assert [link.text_content() for link in links] == list(TEXTS)[1:3]
    assert TEXTS["2021-06-03T15:00:00Z"] in load(links[1].get("href")).text_content()
    assert _date(proxy) == "2021-06-03T15:00:00Z"

    # The date harbor, come from the page: the same calendar at the client's month, its day
    # marked, the dates it set lately, the latest captures and the banner's switch.
    harbor = load(f"http://date.dlweb/?back={quote(PAGE, safe='')}")
    assert _years(harbor) == {"2019": 1, "2021": 3}
    assert _days(harbor) == {"2021-06-03": 2, "2021-06-20": 1}
    assert harbor.xpath('//td[@data-day="2021-06-03"]/a/@aria-current') == ["date"]
    recent = [item.text_content() for item in harbor.xpath('//ul[@class="recent"]/li')]
    assert recent == ["2021-06-03T15:00:00Z", "2021-06-20T10:00:00Z", "2021-06-03T09:00:00Z"]
    [latest] = harbor.xpath('//form[button="Browse the latest captures"]')
    [banner] = harbor.xpath('//form[button="Turn it on"]')
    assert banner.get("method") == "post" and banner.xpath('.//input[@name="banner"]/@value') == [
        "on"
    ]
    status, headers = _submit(proxy, banner)
    assert (status, headers["location"]) == (303, PAGE)
    assert TEXTS["2021-06-03T15:00:00Z"] in load(PAGE).text_content()
    assert "Date banner atop archived pages: on" in load(HOME).text_content()
    assert _submit(proxy, latest)[1]["location"] == PAGE
    assert TEXTS["2021-06-20T10:00:00Z"] in load(PAGE).text_content()
    assert _date(proxy) is None
    # The page's Referer serves as `back`.
    status, text = _get(proxy, "http://date.dlweb/", Referer=PAGE)
    assert status == 200 and 'data-day="2021-06-20"' in text


def test_bad_input_gets_a_message_and_its_status(
    cluster_and_proxy: tuple[Cluster, Proxy], tmp_path: Path
) -> None:
    _, proxy = cluster_and_proxy
    listed = f"http://captures.dlweb/?url={quote(PAGE, safe='')}"
    dated = f"http://date.dlweb/?back={quote(PAGE, safe='')}"
    asked = {
        f"{listed}&year=21x1": (400, "year='21x1': give a year of four digits"),
        f"{listed}&year=2021&month=13": (400, "month='13': give a month from 01 to 12"),
        f"{listed}&year=2021&month=02&day=30": (400, "February 2021 has days from 01 to 28"),
        f"{listed}&year=2015": (404, f"No capture of {PAGE} in 2015"),
        f"{listed}&year=2021&month=07": (404, f"No capture of {PAGE} in July 2021"),
        f"http://captures.dlweb/?url={NEVER}": (404, f"{NEVER} is not in the archive"),
        "http://captures.dlweb/?url=javascript:alert(1)": (400, "is not http or https"),
        "http://date.dlweb/?back=javascript:alert(1)": (400, "back='javascript:alert(1)'"),
        "http://date.dlweb/set?at=2020&back=ftp://files.test/": (400, "is not http or https"),
        f"http://date.dlweb/?back={NEVER}": (404, f"{NEVER} is not in the archive"),
        f"{dated}&year=2021&month=6x": (400, "give a month from 01 to 12"),
        f"{dated}&year=1990": (404, f"No capture of {PAGE} in 1990"),
        "http://date.dlweb/set?banner=maybe": (400, "banner='maybe': give on or off"),
    }
    for url, (status, message) in asked.items():
        got, text = _get(proxy, url)
        said = lxml.html.fromstring(text).xpath('//p[@class="error"]')[0].text_content()
        assert (got, message in said) == (status, True), (url, got, said)
        assert "Traceback" not in text
    assert _date(proxy) is None  # the refused `back` changed nothing
    # A date outside the page's captures: the calendar says which capture is seen instead.
    assert post_set(proxy, at="1990", back=PAGE)[0] == 303
    status, text = _get(proxy, dated)
    said = lxml.html.fromstring(text).xpath('//p[@class="note"]')[0].text_content()
    assert status == 200 and said == (
        f"Your date, 1990-01-01T00:00:00Z, is before the first capture of {PAGE}"
        " (2019-03-10T08:00:00Z): you see that one."
    )
    # As a browser shows it: the message, and the calendar to pick another month from.
    page = lxml.html.fromstring(
        chromium(proxy.url, tmp_path / "profile", f"{listed}&year=2015", "--dump-dom")
    )
    assert "No capture of" in page.xpath('//p[@role="alert"]')[0].text_content()
    assert _years(page) == {"2019": 1, "2021": 3}
