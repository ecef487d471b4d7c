"""One query over several search indexes: sharding by time range.

Each shard is an index folder of its own holding the versions first captured in one period (a
year, say), written by the indexer that owns that period: a rebuild or a merge then touches one
period only, and a new period starts a new shard. A query is run on every shard at once, each on
a thread of its own (tantivy searches without the GIL), and their hits are merged.

BM25 statistics (how many documents hold a word, the average length of a field) are each
shard's own, so a merged score is approximate: a word rare in one period and common in another
weighs more in the first. With shards of similar size and vocabulary the order is close to that
of one index of the same documents.
"""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .index import Answer, open_index, search


def search_shards(folders: list[Path], query: str, limit: int = 10) -> Answer:
    """The best `limit` documents for `query` over the indexes in `folders`, best first (a tie by
    URL, then time), and how many match in all; BadQuery when it does not parse, NoIndex when a
    folder holds no index."""

    def one(folder: Path) -> Answer:
        return search(open_index(folder), query, limit)

    with ThreadPoolExecutor(max_workers=max(1, len(folders))) as pool:
        answers = list(pool.map(one, folders))
    hits = sorted(
        (hit for answer in answers for hit in answer.hits),
        key=lambda hit: (-hit.score, hit.url, hit.time),
    )
    return Answer(sum(answer.total for answer in answers), hits[:limit])
