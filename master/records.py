"""Reading a structure file's capture records from a node, and adding them to another copy.

Copies of one structure file can diverge: records appended to the active copy while a replica's
node was unreachable, or appended to a node that was cut off before the master could refresh the
replicas (a new active copy was then chosen). Records only ever accumulate, so two copies are
reconciled by their union: the records of one copy that the other lacks are appended to it (a
storage node's append ignores records it already holds).
"""

from typing import Any

import aiohttp

from archive.answers import parsed
from archive.node_answers import RecordRange, StructureAppended

PAGE = 100_000
APPEND_BATCH = 2_000


async def read_records(
    session: aiohttp.ClientSession, address: str, name: str
) -> tuple[str, list[dict[str, Any]]]:
    """The URL and every capture record of one structure file on one node, a page at a time."""
    records: list[dict[str, Any]] = []
    url = ""
    # The first page from the first record, whatever its date; the next from the last time seen.
    start: str | None = None
    while True:
        query = {"mode": "range", "limit": str(PAGE), **({"from": start} if start else {})}
        async with session.get(f"{address}/structure/{name}", params=query) as r:
            answer = await r.json(content_type=None)
            if r.status != 200:
                raise aiohttp.ClientError(f"{address} answered {r.status}: {answer.get('error')}")
        found = parsed(RecordRange, answer, f"{address}/structure/{name}", ValueError)
        url, page = found.url, found.records
        fresh = [rec for rec in page if not records or rec["index"] > records[-1]["index"]]
        records.extend(fresh)
        # The next page starts at the last time seen (as microseconds: more than 14 digits).
        start = str(page[-1]["time"]) if page else ""
        if len(page) < PAGE or not fresh or not start.isdigit() or len(start) <= 14:
            return url, records


async def merge_copy(
    session: aiohttp.ClientSession, token: str, name: str, source: str, target: str
) -> int:
    """Append to the copy on `target` the records of the copy on `source` it lacks; returns how
    many it added."""
    url, records = await read_records(session, source, name)
    added = 0
    headers = {"Authorization": f"Bearer {token}"}
    for start in range(0, len(records), APPEND_BATCH):
        batch = records[start : start + APPEND_BATCH]
        body = {"url": url, "records": batch}
        async with session.post(f"{target}/structure/{name}", json=body, headers=headers) as r:
            answer = await r.json(content_type=None)
            if r.status != 200:
                raise aiohttp.ClientError(f"{target} answered {r.status}: {answer.get('error')}")
        added += parsed(StructureAppended, answer, f"{target}/structure/{name}", ValueError).added
    return added
