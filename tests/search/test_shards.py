"""One query over two indexes of different years (search/shards.py), made in this process."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

import search
from search.index import Page, create, mark_built, new_writer, open_index
from search.shards import search_shards

# (year, path, title, text): the lighthouse pages of each year, and one page without it.
PAGES = {
    2019: [
        ("keeper", "The keeper", "The lighthouse keeper climbs the lighthouse stairs at dusk."),
        ("lamp", "The lamp", "An oil lamp burned in the lighthouse until the war."),
        ("harbour", "The harbour", "Fishing boats come back to the harbour at dawn."),
    ],
    2021: [
        ("roof", "Lighthouse roof", "The copper roof of the lighthouse was restored in June."),
        ("visit", "A visit", "Visitors walk along the cliffs to the lighthouse."),
        ("shop", "The shop", "Postcards and maps are sold in the shop."),
    ],
}


def write_shard(folder: Path, year: int) -> None:
    """An index of PAGES[year], each captured on 1 March of that year."""
    index = create(folder)
    writer = new_writer(index)
    when = int(datetime(year, 3, 1, tzinfo=UTC).timestamp() * 1_000_000)
    for name, title, text in PAGES[year]:
        page = Page(
            url=f"http://museum.dlweb.test/{year}/{name}",
            host="museum.dlweb.test",
            domain="dlweb.test",
            time=when,
            content_type="text/html",
            status=200,
            digest=f"{year}{name}",
            title=title,
            text=text,
            lang="en",
            outlinks=[],
            simhash=0,
        )
        writer.add_document(page.document())
    writer.commit()
    writer.wait_merging_threads()
    mark_built(folder, {"documents": len(PAGES[year])})


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("shards")
    for year in PAGES:
        write_shard(root / str(year), year)
    return [root / str(year) for year in PAGES]


def test_the_fan_out_finds_the_pages_of_every_shard_best_first(shards: list[Path]) -> None:
    answer = search_shards(shards, "lighthouse")
    assert answer.total == 4
    assert {(hit.url.split("/")[3], hit.time[:4]) for hit in answer.hits} == {
        ("2019", "2019"),
        ("2021", "2021"),
    }
    assert len(answer.hits) == 4
    scores = [hit.score for hit in answer.hits]
    assert scores == sorted(scores, reverse=True)
    # The merge keeps each shard's own scores and order.
    alone = [h for folder in shards for h in search.search(open_index(folder), "lighthouse").hits]
    assert sorted(answer.hits, key=lambda hit: hit.url) == sorted(alone, key=lambda hit: hit.url)


def test_the_totals_of_the_shards_add_up_and_the_limit_holds(shards: list[Path]) -> None:
    for query, total in (("lighthouse", 4), ("the", 6), ("harbour", 1), ("roof OR lamp", 2)):
        each = [search.search(open_index(folder), query).total for folder in shards]
        assert search_shards(shards, query).total == sum(each) == total, query
    best = search_shards(shards, "lighthouse", limit=2)
    assert best.total == 4
    assert best.hits == search_shards(shards, "lighthouse").hits[:2]
    assert search_shards(shards, "year:2021 AND lighthouse").total == 2
    assert search_shards(shards, "zeppelin") == search.Answer(0, [])


def test_a_query_that_does_not_parse_is_a_bad_query(shards: list[Path]) -> None:
    with pytest.raises(search.BadQuery, match="cannot read the query"):
        search_shards(shards, '"lighthouse keeper')
    with pytest.raises(search.BadQuery):
        search_shards(shards, "year:soon")
