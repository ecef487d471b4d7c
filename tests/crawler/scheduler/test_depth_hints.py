"""Depth hints: a site's next crawl goes only as deep as its last crawls found change, and back to
its full depth on every M-th crawl, whose change at a cut level puts that level back.

The policy is tested on reports; the assignment on a scheduler over a real store, its crawls
recorded as the agents' reports would record them."""

from pathlib import Path
from typing import Any

import pytest

from crawler.scheduler.policy import depth_hint
from crawler.scheduler.service import Scheduler, SchedulerOptions
from crawler.scheduler.status_page import status_page
from crawler.scheduler.store import Site, SqliteStore

FULL = 5


def crawl_report(changed: dict[int, int], depth: int = FULL, **extra: Any) -> dict[str, Any]:
    """A report of a crawl to `depth` of a site of FULL levels: new contents at the levels of
    `changed`, known ones elsewhere."""
    levels = {
        str(level): {"pages": 4, "new_contents": changed.get(level, 0), "known_contents": 4}
        for level in range(min(depth, FULL) + 1)
    }
    new = sum(changed.values())
    return {"pages": 4 * len(levels), "new_contents": new, "known_contents": 10, "levels": levels}


SHALLOW_CHANGE = [crawl_report({0: 2, 1: 1}), crawl_report({0: 1}), crawl_report({1: 3})]


def test_levels_unchanged_in_three_crawls_are_cut() -> None:
    hint = depth_hint(FULL, SHALLOW_CHANGE, crawls=3)
    assert (hint.depth, hint.full, hint.cut) == (1, FULL, True)
    assert hint.reason == "no change below level 1 in 3 crawls"


def test_a_site_goes_to_its_full_depth_until_it_has_had_three_crawls() -> None:
    hint = depth_hint(FULL, SHALLOW_CHANGE[:2], crawls=2)
    assert (hint.depth, hint.cut) == (FULL, False)


def test_the_number_of_quiet_crawls_is_a_setting() -> None:
    assert depth_hint(FULL, SHALLOW_CHANGE[:2], crawls=2, quiet=2).depth == 1
    assert depth_hint(FULL, SHALLOW_CHANGE, crawls=3, quiet=0).depth == FULL


def test_a_change_at_any_level_in_the_last_crawls_keeps_that_level() -> None:
    reports = [crawl_report({0: 1}), crawl_report({3: 1}), crawl_report({})]
    assert depth_hint(FULL, reports, crawls=3).depth == 3


def test_a_site_that_changes_nowhere_is_crawled_to_its_first_page() -> None:
    assert depth_hint(FULL, [crawl_report({})] * 3, crawls=3).depth == 0


def test_every_mth_crawl_goes_to_the_full_depth_and_its_change_puts_the_levels_back() -> None:
    cut = [crawl_report({0: 1}, depth=1)] * 3
    assert depth_hint(FULL, cut, crawls=8, every=10).depth == 0
    full = depth_hint(FULL, cut, crawls=9, every=10)
    assert (full.depth, full.cut) == (FULL, False)
    assert full.reason == "every 10th crawl goes to the full depth"
    after = [crawl_report({0: 1, 4: 2}), *cut[:2]]
    assert depth_hint(FULL, after, crawls=10, every=10).depth == 4


@pytest.mark.parametrize(
    "report",
    [
        {"pages": 3},
        {"pages": 3, "levels": {}},
        {"pages": 3, "levels": ["0", "1"]},
        {"failed": "no answer"},
    ],
)
def test_a_crawl_that_tells_no_levels_keeps_the_full_depth(report: dict[str, Any]) -> None:
    hint = depth_hint(FULL, [report, *SHALLOW_CHANGE[:2]], crawls=3)
    assert (hint.depth, hint.reason) == (FULL, "a recent crawl tells no levels")


def test_levels_from_the_network_that_are_no_levels_are_left_out() -> None:
    odd = {
        "levels": {
            "-1": {"new_contents": 9},
            "two": {"new_contents": 9},
            "3": {"new_contents": "many"},
            "4": "new",
            "1": {"new_contents": 2},
        }
    }
    assert depth_hint(FULL, [odd, *SHALLOW_CHANGE[:2]], crawls=3).depth == 1


# -- the assignment -----------------------------------------------------------------------------


@pytest.fixture
def scheduler(tmp_path: Path) -> Any:
    store = SqliteStore(tmp_path / "campaign.sqlite")
    yield Scheduler(
        store, b"secret", SchedulerOptions(work=tmp_path, quiet_crawls=3, full_crawl_every=5)
    )
    store.close()


def finish(scheduler: Scheduler, site: Site, tmp_path: Path, report: dict[str, Any]) -> Site:
    """Record a crawl of `site` as its agent's report would, with signature and chunk files."""
    number = site.crawls + 1
    files = {}
    for kind in ("signature_file", "chunk_file"):
        path = tmp_path / f"crawl-{number}.{kind}"
        path.write_bytes(b"")
        files[kind] = str(path)
    report = {**report, **files, "start_url": site.start_url}
    scheduler.store.finish(site.id, report, files["signature_file"], files["chunk_file"], number)
    crawled = scheduler.store.site(site.id)
    assert crawled is not None
    return crawled


def test_the_order_carries_the_cut_depth_and_the_mth_crawl_puts_changed_levels_back(
    scheduler: Scheduler, tmp_path: Path
) -> None:
    site = scheduler.register("http://www.deep.test/", "", max_depth=FULL)
    assert scheduler.order(site).max_depth == FULL
    for report in SHALLOW_CHANGE:
        site = finish(scheduler, site, tmp_path, {**report, "max_depth": FULL})
    order = scheduler.order(site)
    assert order.max_depth == 1
    assert order.previous == str(tmp_path / "crawl-3.signature_file")
    page = status_page(scheduler)
    assert "next depth" in page and "1 of 5: no change below level 1 in 3 crawls" in page

    site = finish(scheduler, site, tmp_path, {**crawl_report({0: 1}, depth=1), "max_depth": 1})
    full = scheduler.order(site)  # the fifth crawl
    assert full.max_depth == FULL
    # Compared with the last crawl that went as deep: the cut one knows nothing below level 1.
    assert full.previous == str(tmp_path / "crawl-3.signature_file")

    site = finish(scheduler, site, tmp_path, {**crawl_report({0: 1, 3: 2}), "max_depth": FULL})
    back = scheduler.order(site)
    assert back.max_depth == 3
    assert back.previous == str(tmp_path / "crawl-5.signature_file")
