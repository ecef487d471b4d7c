"""TrapGuard: endless calendars, looping paths, huge directories and scripts stay bounded, while
an ordinary site, however deep, passes untouched."""

from __future__ import annotations

import random

import pytest

from crawler.traps import NearDuplicates, NearLimits, TrapGuard, TrapLimits, calendar_pattern


def accepted(guard: TrapGuard, urls: list[str]) -> list[str]:
    return [url for url in urls if guard.check(url) is None]


def test_query_calendar_following_next_month_forever_stays_at_the_cap() -> None:
    guard = TrapGuard()
    months = [
        f"http://site.fr/agenda.php?year={year}&month={month}"
        for year in range(1990, 2090)
        for month in range(1, 13)
    ]
    assert len(accepted(guard, months)) == 24
    reason = guard.check("http://site.fr/agenda.php?year=2200&month=1")
    assert reason is not None
    assert reason.startswith("calendar-like space capped at 24")
    assert "agenda.php?year={n}&month={n}" in reason
    assert guard.check("http://site.fr/agenda.php?view=list") is None


def test_path_calendar_stays_at_the_cap() -> None:
    guard = TrapGuard(TrapLimits(max_calendar=10))
    months = [f"http://site.fr/events/{1900 + n // 12}-{n % 12 + 1:02d}/" for n in range(2400)]
    assert len(accepted(guard, months)) == 10
    assert guard.check("http://site.fr/news/2024-05/") is None


def test_dated_posts_with_their_own_names_pass() -> None:
    guard = TrapGuard()
    posts = [f"http://blog.fr/{2000 + n % 20}/{n % 12 + 1:02d}/14/post-{n}/" for n in range(900)]
    assert accepted(guard, posts) == posts


@pytest.mark.parametrize(
    ("url", "pattern"),
    [
        ("http://a.fr/cal?year=2024&month=5", "http://a.fr/cal?year={n}&month={n}"),
        ("http://a.fr/cal?y=2024&m=5&view=grid", "http://a.fr/cal?y={n}&m={n}&view=grid"),
        ("http://a.fr/ev/2024-05/", "http://a.fr/ev/{date}/"),
        ("http://a.fr/2019/03/14/post", "http://a.fr/{date}/post"),
        ("http://a.fr/n/20190314.html", "http://a.fr/n/{date}.html"),
        ("http://a.fr/list?from=2019-03-01", "http://a.fr/list?from={date}"),
        ("http://a.fr/2019/", None),
        ("http://a.fr/page/12345678", None),
        ("http://a.fr/item/201903141", None),
        ("http://a.fr/x?page=3&id=2024", None),
        ("http://a.fr/x?yearly=2024", None),
        ("http://2024-05.a.fr/x", None),
    ],
)
def test_calendar_pattern(url: str, pattern: str | None) -> None:
    assert calendar_pattern(url) == pattern


def test_repeated_segment_is_a_trap() -> None:
    guard = TrapGuard()
    assert guard.check("http://a.fr/loop/again/again/again/") is None
    assert (
        guard.check("http://a.fr/loop/again/again/again/again/") == "repeated path segment 'again'"
    )


def test_repeated_cycle_of_segments_is_a_trap() -> None:
    guard = TrapGuard()
    assert guard.check("http://a.fr/a/b/a/b/a/b/a/b/x.html") == "repeated path segment 'a'"


def test_doubled_slashes_are_a_trap() -> None:
    assert TrapGuard().check("http://a.fr/x//////y") == "repeated path segment ''"


def test_deep_site_without_repetition_passes() -> None:
    guard = TrapGuard()
    urls = [
        "http://a.fr/" + "/".join(f"level{depth}-{branch}" for depth in range(depth_max)) + "/"
        for depth_max in range(1, 32)
        for branch in range(20)
    ]
    urls += [f"http://a.fr/docs/v{n}/api/index.html" for n in range(200)]
    urls += ["http://a.fr/en/guide/en/intro/en/page.html"]
    assert accepted(guard, urls) == urls


def test_too_many_segments() -> None:
    guard = TrapGuard(TrapLimits(max_path_segments=4))
    assert guard.check("http://a.fr/1/2/3/4") is None
    assert guard.check("http://a.fr/1/2/3/4/") == "more than 4 path segments"


def test_overlong_url() -> None:
    guard = TrapGuard()
    assert guard.check("http://a.fr/?q=" + "x" * 2000) is None
    assert guard.check("http://a.fr/?q=" + "x" * 2048) == "URL longer than 2048"


def test_directory_of_5000_files_is_capped() -> None:
    guard = TrapGuard()
    files = [f"http://a.fr/files/doc{n}.html" for n in range(5000)]
    assert accepted(guard, files) == files[:1000]
    assert guard.check("http://a.fr/files/more.html") == (
        "more than 1000 variants of http://a.fr/files/"
    )
    assert guard.check("http://a.fr/files/sub/doc.html") is None
    assert guard.check("http://b.fr/files/doc1.html") is None


def test_script_with_5000_query_strings_is_capped() -> None:
    guard = TrapGuard(TrapLimits(max_variants=100))
    queries = [f"http://a.fr/cgi-bin/x.php?id={n}" for n in range(5000)]
    assert accepted(guard, queries) == queries[:100]
    reason = guard.check("http://a.fr/cgi-bin/x.php?id=x")
    assert reason == "more than 100 variants of http://a.fr/cgi-bin/x.php"
    assert guard.check("http://a.fr/cgi-bin/y.php?id=1") is None
    assert guard.check("http://a.fr/cgi-bin/other.html") is None


def test_refused_urls_are_not_counted() -> None:
    guard = TrapGuard(TrapLimits(max_variants=2, max_repeats=1))
    assert guard.check("http://a.fr/d/x/x") is not None
    assert guard.check("http://a.fr/d/x/1") is None
    assert guard.check("http://a.fr/d/x/2") is None
    assert guard.check("http://a.fr/d/x/3") is not None


def test_calendar_urls_refused_do_not_use_their_directory() -> None:
    guard = TrapGuard(TrapLimits(max_variants=30, max_calendar=5))
    days = [f"http://a.fr/day/{n:04d}0101.html" for n in range(1900, 2000)]
    assert len(accepted(guard, days)) == 5
    others = [f"http://a.fr/day/page{n}.html" for n in range(25)]
    assert accepted(guard, others) == others


BOILERPLATE = " ".join(
    f"The catalogue lists every product we sell, section {n}, with its price and its photo."
    for n in range(12)
)


def item_page(number: int) -> str:
    return f"{BOILERPLATE} This is item {number}."


def test_one_page_under_ever_new_urls_stops_its_space_past_the_limit() -> None:
    near = NearDuplicates(NearLimits(max_near=5))
    verdicts = [near.check(f"http://shop.test/item?id={n}", item_page(n)) for n in range(1, 8)]
    assert verdicts[:5] == [None] * 5
    assert verdicts[5] == "more than 5 nearly identical pages under http://shop.test/item"
    assert near.stopped("http://shop.test/item?id=99")
    assert not near.stopped("http://shop.test/other?id=1")


def test_pages_whose_texts_differ_are_never_a_content_trap() -> None:
    near = NearDuplicates(NearLimits(max_near=5))
    vocabulary = [f"word{n}" for n in range(1000)]
    for n in range(40):
        text = " ".join(random.Random(n).choices(vocabulary, k=120))  # each page its own text
        assert near.check(f"http://site.test/docs/page{n}.html", text) is None
    assert near.check("http://site.test/empty?id=1", "   ") is None  # no text: no verdict
    assert not near.stopped("http://site.test/docs/page1.html")
