"""A real storage node's JSON answers, byte for byte: the keys in their order, the values, the
compact encoding and the status codes its readers rely on."""

import hashlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from archive import pack
from archive.config import ClusterConfig
from archive.node_answers import (
    Closest,
    ContentChecked,
    ContentsStored,
    ContentStored,
    DayCounts,
    Deleted,
    Inventory,
    RecordRange,
    StorageStatus,
    StructureAppended,
    StructurePut,
    StructuresAppended,
)
from archive.timestamps import parse_time
from archive.urlkey import structure_name

HEADER = hashlib.sha256(b"HTTP/1.1 200 OK\r\n\r\n").hexdigest()
URL = "http://answers.example/page"
NAME = structure_name(URL)
T1, T2 = parse_time("2019-01-01"), parse_time("2020-06-01T12:00:00")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def encoded(data: object) -> bytes:
    return orjson.dumps(data)


def record(when: int, content: str) -> dict[str, Any]:
    return {"time": when, "content": content, "header": HEADER, "status": 200}


def stored(when: int, content: str, index: int) -> dict[str, Any]:
    return {**record(when, content), "kind": "response", "flags": 0, "offset": 0, "index": index}


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


class Asker:
    """Sends requests to one node and keeps each answer's status and body."""

    def __init__(self, session: aiohttp.ClientSession, base: str, config: ClusterConfig) -> None:
        self.session, self.base = session, base
        self.auth = {"Authorization": f"Bearer {config.write_token}"}

    async def __call__(self, method: str, path: str, **kwargs: Any) -> tuple[int, bytes]:
        url = f"{self.base}{path}"
        async with self.session.request(method, url, headers=self.auth, **kwargs) as r:
            return r.status, await r.read()


def same_as(answer: tuple[int, bytes], status: int, expected: object) -> None:
    assert answer == (status, encoded(expected))


def keys_of(body: bytes) -> list[str]:
    parsed = orjson.loads(body)
    assert encoded(parsed) == body  # compact, as orjson writes it
    return list(parsed)


async def test_every_json_answer_is_as_it_was(node_factory, cluster, session):
    node = node_factory("n1")
    ask = Asker(session, node.url, cluster[1])
    one, two, three = b"one content", b"two content", b"three content"

    answer = await ask("PUT", f"/content/{sha(one)}", data=one)
    same_as(answer, 201, {"name": sha(one), "created": 1, "forwarded": [], "failed": {}})
    assert ContentStored.from_json(orjson.loads(answer[1]), "PUT").to_json() == {
        "name": sha(one),
        "created": 1,
        "forwarded": [],
        "failed": {},
    }
    answer = await ask("PUT", f"/content/{sha(one)}", data=one)
    same_as(answer, 200, {"name": sha(one), "created": 0, "forwarded": [], "failed": {}})

    upload = pack.Upload([(sha(two), two), (sha(three), three), (sha(one), one)])
    answer = await ask("POST", "/contents", data=upload)
    expected: dict[str, Any] = {"received": 3, "created": 2, "forwarded": [], "failed": {}}
    same_as(answer, 200, expected)
    assert ContentsStored.from_json(orjson.loads(answer[1]), "POST").to_json() == expected

    answer = await ask("POST", f"/content/{sha(one)}/check")
    same_as(answer, 200, {"name": sha(one), "bad": False, "reason": None})
    assert ContentChecked.from_json(orjson.loads(answer[1]), "check").bad is False

    answer = await ask("DELETE", f"/content/{sha(three)}")
    same_as(answer, 200, {"name": sha(three), "deleted": True})
    assert Deleted.from_json(orjson.loads(answer[1]), "DELETE").deleted is True

    body = {"url": URL, "records": [record(T1, sha(one)), record(T2, sha(two))]}
    answer = await ask("POST", f"/structure/{NAME}", json=body)
    same_as(answer, 200, {"name": NAME, "added": 2, "created": True})
    assert StructureAppended.from_json(orjson.loads(answer[1]), "POST").added == 2

    other = "http://answers.example/other"
    files = [
        {"name": NAME, "url": URL, "records": [record(T2, sha(two))]},
        {"name": structure_name(other), "url": other, "records": [record(T1, sha(one))]},
        {"name": "../etc", "url": other, "records": [record(T1, sha(one))]},
    ]
    status, raw = await ask("POST", "/structures", json={"files": files})
    results = orjson.loads(raw)["results"]
    assert results[:2] == [
        {"name": NAME, "added": 0, "created": False},
        {"name": structure_name(other), "added": 1, "created": True},
    ]
    assert list(results[2]) == ["name", "error", "status"] and results[2]["status"] == 400
    same_as((status, raw), 200, {"results": results})
    assert StructuresAppended.from_json(orjson.loads(raw), "POST").results == results

    status, day_counts = await ask("GET", f"/structure/{NAME}?mode=days")
    days = [["2019-01-01", 1, T1, T1], ["2020-06-01", 1, T2, T2]]
    same_as((status, day_counts), 200, {"name": NAME, "url": URL, "days": days})
    assert DayCounts.from_json(orjson.loads(day_counts), "days").days == tuple(days)

    first, second = stored(T1, sha(one), 0), stored(T2, sha(two), 1)
    answer = await ask("GET", f"/structure/{NAME}?mode=range")
    expected = {"name": NAME, "url": URL, "count": 2, "records": [first, second]}
    same_as(answer, 200, expected)
    assert RecordRange.from_json(orjson.loads(answer[1]), "range").to_json() == expected

    answer = await ask("GET", f"/structure/{NAME}?mode=closest&at=2019-02-01")
    expected = {
        "name": NAME,
        "url": URL,
        "count": 2,
        "records": [first],
        "first": first,
        "last": second,
        "prev": None,
        "next": second,
    }
    same_as(answer, 200, expected)
    assert Closest.from_json(orjson.loads(answer[1]), "closest").to_json() == expected

    answer = await ask("GET", f"/structure/{NAME}?mode=exact&at=2019-02-01")
    same_as(answer, 404, {"name": NAME, "url": URL, "count": 2, "records": []})

    status, raw_file = await ask("GET", f"/structure/{NAME}")
    assert status == 200
    answer = await ask("PUT", f"/structure/{NAME}", data=raw_file)
    same_as(answer, 200, {"name": NAME, "created": False})
    assert StructurePut.from_json(orjson.loads(answer[1]), "PUT").created is False

    status, raw = await ask("GET", "/status")
    assert status == 200
    assert keys_of(raw) == [
        "node",
        "uptime",
        "disk",
        "files",
        "bytes",
        "groups_held",
        "inventory_seq",
        "filter",
        "address",
        "domain",
        "reliability",
        "master",
        "groups_joined",
        "multicast",
        "stale_structures",
        "start",
    ]
    told = orjson.loads(raw)
    assert list(told["disk"]) == ["free", "total", "reserve", "full", "refused"]
    assert told["files"] == {"content": 2, "structure": 2}
    assert list(told["filter"]) == ["names", "capacity", "deleted"]
    assert (told["address"], told["master"]) == (node.url, None)
    assert list(told["multicast"]) == ["requests", "answers", "late", "rejected"]
    assert list(told["stale_structures"]) == ["now", "marked"]
    assert list(told["start"]) == ["how", "seconds", "replayed", "corrected", "log_bytes_read"]
    assert StorageStatus.from_json(told, "/status").to_json() == told

    status, raw = await ask("GET", "/inventory?since=2&limit=2")
    assert status == 200
    assert keys_of(raw) == ["node", "seq", "entries"]
    told = orjson.loads(raw)
    assert len(told["entries"]) == 2
    assert [list(entry) for entry in told["entries"]] == [
        ["seq", "op", "kind", "name", "size", "time"]
    ] * 2
    assert [entry["seq"] for entry in told["entries"]] == [3, 4]
    assert Inventory.from_json(told, "/inventory").to_json() == told

    answer = await ask("POST", "/scrub")
    same_as(answer, 200, {"checked": 4, "bad": []})
