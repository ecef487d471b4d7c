"""Storage nodes as real processes: contents, structure files, multicast lookup, refusals."""

import asyncio
import hashlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from archive import pack
from archive.config import ClusterConfig
from archive.multicast import LookupClient
from archive.structure import RECORD_SIZE
from archive.timestamps import parse_time
from archive.urlkey import structure_name
from deploy.testing.cluster import write_cluster_config
from deploy.testing.disk import content_spans, stored_content, stored_spans
from storage_node.stores import SMALL_STRUCTURE

HEADER = hashlib.sha256(b"HTTP/1.1 200 OK\r\n\r\n").hexdigest()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


@pytest.fixture
async def lookup(cluster: tuple[Path, ClusterConfig]) -> AsyncIterator[LookupClient]:
    client = LookupClient(cluster[1].multicast, cluster[1].secret)
    await client.start()
    yield client
    await client.close()


def auth(config: ClusterConfig) -> dict[str, str]:
    return {"Authorization": f"Bearer {config.write_token}"}


async def put(session: aiohttp.ClientSession, base: str, config: ClusterConfig, data: bytes) -> str:
    name = sha(data)
    async with session.put(f"{base}/content/{name}", data=data, headers=auth(config)) as r:
        assert r.status == 201, await r.text()
    return name


async def status(session: aiohttp.ClientSession, base: str) -> dict[str, object]:
    async with session.get(f"{base}/status") as r:
        result: dict[str, object] = await r.json()
        return result


async def test_put_locate_by_multicast_and_get_back(node_factory, cluster, session, lookup):
    config = cluster[1]
    first, second = node_factory("a"), node_factory("b")
    data_a, data_b = os.urandom(70_000), os.urandom(5_000)
    name_a = await put(session, first.url, config, data_a)
    name_b = await put(session, second.url, config, data_b)

    answers_a = await lookup.locate("content", name_a)
    answers_b = await lookup.locate("content", name_b)
    assert [a.address for a in answers_a] == [first.url]
    assert [a.address for a in answers_b] == [second.url]
    assert await lookup.locate("content", sha(b"held by nobody")) == []

    async with session.get(f"{answers_a[0].address}/content/{name_a}") as r:
        assert r.status == 200
        assert await r.read() == data_a
    async with session.head(f"{first.url}/content/{name_a}") as r:
        assert r.status == 200
        assert int(r.headers["Content-Length"]) == len(data_a)


async def test_large_content_streams_in_and_out(node_factory, cluster, session):
    node = node_factory()
    data = os.urandom(3 * 1024 * 1024 + 17)
    name = sha(data)

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(data), 100_000):
            yield data[start : start + 100_000]

    async with session.put(
        f"{node.url}/content/{name}", data=chunks(), headers=auth(cluster[1])
    ) as r:
        assert r.status == 201
    async with session.get(f"{node.url}/content/{name}") as r:
        assert hashlib.sha256(await r.read()).hexdigest() == name


async def test_wrong_hash_is_refused_and_leaves_nothing(node_factory, cluster, session):
    node = node_factory()
    claimed = sha(b"what the client claims")
    async with session.put(
        f"{node.url}/content/{claimed}", data=b"something else", headers=auth(cluster[1])
    ) as r:
        assert r.status == 400
        assert "hash" in (await r.json())["error"]
    assert stored_content(node.root, claimed) is None
    assert list((node.root / "content" / ".tmp").iterdir()) == []
    assert (await status(session, node.url))["files"] == {"content": 0, "structure": 0}
    async with session.get(f"{node.url}/content/{claimed}") as r:
        assert r.status == 404


async def test_writes_and_deletes_need_the_token(node_factory, cluster, session):
    node = node_factory()
    data = b"guarded"
    name = sha(data)
    async with session.put(f"{node.url}/content/{name}", data=data) as r:
        assert r.status == 401
    bad = {"Authorization": "Bearer " + "0" * 64}
    async with session.put(f"{node.url}/content/{name}", data=data, headers=bad) as r:
        assert r.status == 403
    async with session.get(f"{node.url}/content/{name}") as r:
        assert r.status == 404
    await put(session, node.url, cluster[1], data)
    async with session.delete(f"{node.url}/content/{name}") as r:
        assert r.status == 401
    async with session.delete(f"{node.url}/content/{name}", headers=bad) as r:
        assert r.status == 403
    async with session.get(f"{node.url}/content/{name}") as r:
        assert r.status == 200


async def raw_request(port: int, target: str, method: str = "GET") -> tuple[int, bytes]:
    """Send a request line exactly as given, bypassing any client-side path normalisation."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    response = await reader.read()
    writer.close()
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


@pytest.mark.parametrize(
    "target",
    [
        "/content/../../../../etc/passwd",
        "/content/..%2F..%2F..%2Fetc%2Fpasswd",
        "/content/%2e%2e%2fnode.json",
        "/content/" + "A" * 64,
        "/content/" + "a" * 63,
        "/content/" + "a" * 65,
        "/content/" + "g" * 64,
        "/structure/../node.json",
        "/structure/" + "a" * 64 + "%00",
    ],
)
async def test_traversal_and_bad_names_are_refused(node_factory, target):
    node = node_factory()
    code, body = await raw_request(node.port, target)
    assert code in (400, 404)
    assert b"root:" not in body and b'"id"' not in body


async def test_bad_name_gets_a_clear_message(node_factory, session):
    node = node_factory()
    async with session.get(f"{node.url}/content/{'A' * 64}") as r:
        assert r.status == 400
        assert "64 lowercase hex" in (await r.json())["error"]


async def append(session, node, config, url: str, records: list[dict[str, object]]):
    name = structure_name(url)
    body = {"url": url, "records": records}
    async with session.post(f"{node.url}/structure/{name}", json=body, headers=auth(config)) as r:
        return r.status, await r.json()


def record(when: str, content: str, status: int = 200) -> dict[str, object]:
    return {"time": parse_time(when), "content": content, "header": HEADER, "status": status}


async def test_structure_locate_and_closest_capture(node_factory, cluster, session, lookup):
    config = cluster[1]
    node_factory("a")
    second = node_factory("b")
    url = "http://www.example.com/news/index.html"
    dates = ["2019-01-01", "2019-03-01", "2019-06-15", "2020-01-01"]
    contents = [sha(d.encode()) for d in dates]
    code, answer = await append(
        session, second, config, url, [record(d, c) for d, c in zip(dates, contents, strict=True)]
    )
    assert (code, answer["added"]) == (200, 4)

    name = structure_name("HTTP://WWW.EXAMPLE.COM:80/news/index.html#top")
    holders = await lookup.locate("structure", name)
    assert [h.address for h in holders] == [second.url]
    assert await lookup.locate("structure", structure_name("http://unknown.example/")) == []

    expectations = {
        "2018-05-05": 0,
        "2019-02-10": 1,
        "2019-02-20": 1,
        "2019-04-01": 1,
        "2019-05-01": 2,
        "2019-12-31": 3,
        "2030-01-01": 3,
    }
    for when, index in expectations.items():
        query = f"{holders[0].address}/structure/{name}?mode=closest&at={when}"
        async with session.get(query) as r:
            assert r.status == 200
            found = (await r.json())["records"][0]
        assert (when, found["content"]) == (when, contents[index])
        assert found["time"] == parse_time(dates[index])

    async with session.get(f"{second.url}/structure/{name}?mode=before&at=2018") as r:
        assert r.status == 404
    async with session.get(f"{second.url}/structure/{name}?mode=after&at=2019-03-02") as r:
        assert (await r.json())["records"][0]["content"] == contents[2]
    query = f"{second.url}/structure/{name}?mode=range&from=2019-02-01&to=2019-12-31"
    async with session.get(query) as r:
        assert [rec["content"] for rec in (await r.json())["records"]] == contents[1:3]


async def test_lookups_pass_over_request_and_metadata_records(node_factory, cluster, session):
    config = cluster[1]
    node = node_factory()
    url = "http://example.org/exchange"
    kept = [
        ("2019-01-01", "request"),
        ("2019-01-01", "response"),
        ("2019-02-01", "metadata"),
        ("2019-03-01", "request"),
        ("2019-03-01", "revisit"),
        ("2019-04-01", "metadata"),
    ]
    records = [{**record(d, sha(f"{d} {k}".encode())), "kind": k} for d, k in kept]
    assert (await append(session, node, config, url, records))[1]["added"] == len(kept)
    base = f"{node.url}/structure/{structure_name(url)}"

    async def ask(query: str) -> tuple[int, dict[str, object]]:
        async with session.get(f"{base}?{query}") as r:
            return r.status, await r.json()

    expectations = {  # (mode, at): the kind and date found
        ("exact", "2019-01-01"): ("response", "2019-01-01"),
        ("after", "2019-01-15"): ("revisit", "2019-03-01"),
        ("before", "2019-02-15"): ("response", "2019-01-01"),
        ("closest", "2019-01-20"): ("response", "2019-01-01"),
        ("closest", "2019-02-01"): ("revisit", "2019-03-01"),
        ("closest", "2019-05-01"): ("revisit", "2019-03-01"),
        ("before", "2019-12-31"): ("revisit", "2019-03-01"),
    }
    for (mode, at), (kind, date) in expectations.items():
        status, answer = await ask(f"mode={mode}&at={at}")
        found = answer["records"][0]  # type: ignore[index]
        assert (status, found["kind"], found["time"]) == (200, kind, parse_time(date)), (mode, at)
    for mode, at in (("exact", "2019-02-01"), ("after", "2019-03-02")):
        status, answer = await ask(f"mode={mode}&at={at}")
        assert (status, answer["records"]) == (404, []), (mode, at)
    _, answer = await ask("mode=closest&at=2019-01-01")
    neighbours = {
        key: answer[key] and answer[key]["kind"] for key in ("first", "last", "prev", "next")
    }  # type: ignore[index]
    assert neighbours == {"first": "response", "last": "revisit", "prev": None, "next": "revisit"}
    # A range lists every record, for an export.
    _, answer = await ask("mode=range&from=2000&to=2030")
    assert [r["kind"] for r in answer["records"]] == [k for _, k in kept]  # type: ignore[union-attr]


async def test_belated_and_repeated_captures_keep_order(node_factory, cluster, session):
    config = cluster[1]
    node = node_factory()
    url = "http://example.org/page"
    late, early = record("2021-01-01", sha(b"late")), record("2020-01-01", sha(b"early"))
    assert (await append(session, node, config, url, [late]))[1]["added"] == 1
    assert (await append(session, node, config, url, [early]))[1]["added"] == 1
    assert (await append(session, node, config, url, [early, late]))[1]["added"] == 0
    name = structure_name(url)
    query = f"{node.url}/structure/{name}?mode=range&from=2000&to=2030"
    async with session.get(query) as r:
        body = await r.json()
    assert [rec["content"] for rec in body["records"]] == [sha(b"early"), sha(b"late")]
    assert body["url"] == url


async def test_structure_write_for_another_url_is_refused(node_factory, cluster, session):
    node = node_factory()
    body = {"url": "http://a.example/", "records": [record("2020", sha(b"x"))]}
    target = f"{node.url}/structure/{structure_name('http://b.example/')}"
    async with session.post(target, json=body, headers=auth(cluster[1])) as r:
        assert r.status == 400
        assert "does not belong" in (await r.json())["error"]


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([{"time": 1}], "lacks the field"),
        ([{**record("2020", "0" * 64), "status": "200"}], "must be an integer"),
        ([{**record("2020", "0" * 64), "content": "../x"}], "64 lowercase hex"),
        ([{**record("2020", "0" * 64), "kind": "bogus"}], "is not one of"),
        ([], "non-empty list"),
    ],
)
async def test_bad_capture_records_are_refused(node_factory, cluster, session, records, message):
    node = node_factory()
    code, answer = await append(session, node, cluster[1], "http://example.org/", records)
    assert code == 400
    assert message in answer["error"]


async def test_truncated_structure_file_gives_a_clear_error(node_factory, cluster, session):
    node = node_factory()
    url = "http://example.net/"
    # Enough records that the file is kept as a file, not in a volume (SMALL_STRUCTURE).
    start = parse_time("2015")
    records = [
        {**record("2015", sha(str(i).encode())), "time": start + i * 1_000_000}
        for i in range(SMALL_STRUCTURE // RECORD_SIZE + 10)
    ]
    await append(session, node, cluster[1], url, records)
    name = structure_name(url)
    path = node.root / "structure" / name[:2] / name[2:4] / name
    assert stored_spans(node.root, "structure")[name].path == str(path)
    os.truncate(path, path.stat().st_size - RECORD_SIZE // 2)
    async with session.get(f"{node.url}/structure/{name}?mode=closest&at=2015") as r:
        assert r.status == 500
        error = (await r.json())["error"]
    assert "truncated structure file" in error
    assert "Traceback" not in node.log()


async def test_deleted_file_is_no_longer_located(node_factory, cluster, session, lookup):
    node = node_factory()
    name = await put(session, node.url, cluster[1], b"to be removed")
    assert len(await lookup.locate("content", name)) == 1
    async with session.delete(f"{node.url}/content/{name}", headers=auth(cluster[1])) as r:
        assert r.status == 200
    assert await lookup.locate("content", name) == []
    async with session.get(f"{node.url}/inventory?since=0") as r:
        ops = [(e["op"], e["name"]) for e in (await r.json())["entries"]]
    assert ops == [("add", name), ("remove", name)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
async def test_restart_keeps_files_filter_and_counts(node_factory, cluster, session, lookup, sig):
    node = node_factory()
    names = [await put(session, node.url, cluster[1], os.urandom(100)) for _ in range(20)]
    node.stop(sig)
    node.start()
    for name in names:
        assert [a.address for a in await lookup.locate("content", name)] == [node.url]
    assert (await status(session, node.url))["files"] == {"content": 20, "structure": 0}
    assert node.log().count("scanning the disk") == 1


async def test_held_groups_mode_joins_groups_as_files_arrive(tmp_path, node_factory, session):
    path = tmp_path / "held.yaml"
    config = write_cluster_config(path, join="held")
    node = node_factory("held", path)
    assert (await status(session, node.url))["groups_joined"] == 0
    client = LookupClient(config.multicast, config.secret)
    await client.start()
    try:
        name = await put(session, node.url, config, b"first file")
        assert (await status(session, node.url))["groups_held"] == [int(name[:2], 16)]
        assert [a.address for a in await client.locate("content", name)] == [node.url]
        assert (await status(session, node.url))["groups_joined"] == 1
    finally:
        await client.close()


async def test_node_refuses_a_bad_config(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster:\n  secret: short\n")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "storage_node",
        "--root",
        str(tmp_path / "n"),
        "-c",
        str(bad),
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await process.communicate()
    assert process.returncode == 2
    assert "cluster.secret: must be at least 16 characters" in err.decode()
    assert "Traceback" not in err.decode()


async def test_node_on_a_busy_port_says_so(tmp_path, cluster):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "storage_node",
            "--root",
            str(tmp_path / "n"),
            "--listen",
            f"127.0.0.1:{port}",
            "-c",
            str(cluster[0]),
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await process.communicate()
    assert process.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in err.decode()
    assert "Traceback" not in err.decode()


async def test_kill_during_writes_loses_nothing_acknowledged(node_factory, cluster, session):
    node = node_factory()
    payloads = [os.urandom(random_size) for random_size in range(3000, 3000 + 300)]
    acknowledged: list[bytes] = []
    enough = asyncio.Event()

    async def upload(data: bytes) -> None:
        name = sha(data)
        try:
            url = f"{node.url}/content/{name}"
            async with session.put(url, data=data, headers=auth(cluster[1])) as r:
                if r.status == 201:
                    acknowledged.append(data)
                    if len(acknowledged) >= 50:
                        enough.set()
        except aiohttp.ClientError:
            pass

    tasks = [asyncio.create_task(upload(data)) for data in payloads]
    await enough.wait()
    node.stop(signal.SIGKILL)
    await asyncio.gather(*tasks)
    assert 50 <= len(acknowledged) < len(payloads)

    node.start()
    for data in acknowledged:
        async with session.get(f"{node.url}/content/{sha(data)}") as r:
            assert r.status == 200
            assert await r.read() == data
    stored = content_spans(node.root)
    for name, span in stored.items():
        assert hashlib.sha256(span.read()).hexdigest() == name
    assert list((node.root / "content" / ".tmp").iterdir()) == []
    counted = (await status(session, node.url))["files"]
    assert counted == {"content": len(stored), "structure": 0}


async def test_state_saved_during_writes_holds_every_change_after_a_kill(
    node_factory, cluster, session, lookup
):
    """The filter and counts are saved many times while packs are being placed; whatever moment
    the node is killed, the next start counts and finds every file it holds."""
    node = node_factory("n1", None, "--save-every", "0.01")
    packs = [[os.urandom(2000 + i) for i in range(25 * p, 25 * p + 25)] for p in range(72)]

    async def upload(datas: list[bytes]) -> None:
        body = b"".join(pack.encode_frame(sha(d), d) for d in datas)
        async with session.post(f"{node.url}/contents", data=body, headers=auth(cluster[1])) as r:
            assert r.status == 200, await r.text()

    for round_end in (24, 48, 72):
        for start in range(round_end - 24, round_end, 8):
            await asyncio.gather(*(upload(datas) for datas in packs[start : start + 8]))
        node.stop(signal.SIGKILL)
        node.start()
        names = [sha(d) for datas in packs[:round_end] for d in datas]
        counted = (await status(session, node.url))["files"]
        assert counted == {"content": len(names), "structure": 0}
        missing = [name for name in names if not await lookup.locate("content", name, first=True)]
        assert missing == []


async def test_restart_corrects_entries_a_crash_left_untrue(node_factory, cluster, session, lookup):
    node = node_factory()
    kept = await put(session, node.url, cluster[1], b"kept")
    node.stop(signal.SIGKILL)
    ghost = sha(b"logged but never placed")
    with open(node.root / "inventory.log", "a") as log:
        entry = {"seq": 2, "op": "add", "kind": "content", "name": ghost, "size": 9, "time": 1}
        log.write(json.dumps(entry) + "\n")
    node.start()
    assert (await status(session, node.url))["files"] == {"content": 1, "structure": 0}
    assert "corrected 1 inventory entries" in node.log()
    assert await lookup.locate("content", ghost) == []
    assert len(await lookup.locate("content", kept)) == 1
    async with session.get(f"{node.url}/inventory?since=2") as r:
        assert [(e["op"], e["name"]) for e in (await r.json())["entries"]] == [("remove", ghost)]


async def test_large_reads_serve_ranges_heads_and_survive_a_client_leaving(
    node_factory, cluster, session
):
    node = node_factory()
    data = os.urandom(8 * 1024 * 1024)
    name = await put(session, node.url, cluster[1], data)
    url = f"{node.url}/content/{name}"
    async with session.get(url, headers={"Range": "bytes=1000-1999"}) as r:
        assert r.status == 206
        assert await r.read() == data[1000:2000]
    async with session.head(url) as r:
        assert (r.status, r.headers["Content-Length"]) == (200, str(len(data)))
        assert await r.read() == b""

    reader, writer = await asyncio.open_connection("127.0.0.1", node.port)
    writer.write(f"GET /content/{name} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await reader.readexactly(4096)
    writer.transport.abort()

    async with session.get(url) as r:
        assert await r.read() == data
    assert "Traceback" not in node.log()


async def test_many_structure_files_in_one_append(node_factory, cluster, session):
    node = node_factory()
    urls = [f"http://batch.example/{i}" for i in range(3)]
    files = [
        {"name": structure_name(url), "url": url, "records": [record("2020-01-01", sha(b"x"))]}
        for url in urls
    ]
    files.append({"name": structure_name(urls[0]), "url": urls[1], "records": files[1]["records"]})
    files.append({"name": "../etc", "url": urls[2], "records": files[2]["records"]})
    body = {"files": files}
    headers = auth(cluster[1])
    async with session.post(f"{node.url}/structures", json=body, headers=headers) as r:
        results = (await r.json())["results"]
    assert [(x.get("added"), x.get("created")) for x in results[:3]] == [(1, True)] * 3
    assert results[3]["status"] == 400 and "does not belong" in results[3]["error"]
    assert results[4]["status"] == 400 and "files[4]" in results[4]["error"]
    async with session.post(f"{node.url}/structures", json=body, headers=headers) as r:
        again = (await r.json())["results"]
    assert [(x.get("added"), x.get("created")) for x in again[:3]] == [(0, False)] * 3
    async with session.post(f"{node.url}/structures", json={"files": []}, headers=headers) as r:
        assert r.status == 400
    async with session.post(f"{node.url}/structures", json=body) as r:
        assert r.status == 401


async def test_one_append_adds_to_existing_files_in_volumes_and_of_their_own(
    node_factory, cluster, session
):
    node = node_factory()
    headers = auth(cluster[1])
    small_url, large_url = "http://again.example/small", "http://again.example/large"
    start = parse_time("2015")
    many = [
        {**record("2015", sha(str(i).encode())), "time": start + i * 1_000_000}
        for i in range(SMALL_STRUCTURE // RECORD_SIZE + 10)
    ]
    first = {
        "files": [
            {
                "name": structure_name(small_url),
                "url": small_url,
                "records": [record("2019", sha(b"a"))],
            },
            {"name": structure_name(large_url), "url": large_url, "records": many},
        ]
    }
    async with session.post(f"{node.url}/structures", json=first, headers=headers) as r:
        assert [x["created"] for x in (await r.json())["results"]] == [True, True]
    spans = stored_spans(node.root, "structure")
    assert spans[structure_name(small_url)].path != spans[structure_name(large_url)].path

    later, belated = record("2021", sha(b"b")), record("2017", sha(b"c"))
    files = [
        {"name": structure_name(small_url), "url": small_url, "records": [later, belated]},
        {
            "name": structure_name(large_url),
            "url": large_url,
            "records": [record("2030", sha(b"d"))],
        },
        {"name": structure_name(small_url), "url": small_url, "records": [later]},
    ]
    async with session.post(f"{node.url}/structures", json={"files": files}, headers=headers) as r:
        results = (await r.json())["results"]
    assert [(x["added"], x["created"]) for x in results] == [(2, False), (1, False), (0, False)]
    query = f"{node.url}/structure/{structure_name(small_url)}?mode=range&from=2000&to=2030"
    async with session.get(query) as r:
        records = (await r.json())["records"]
    assert [x["content"] for x in records] == [sha(b"c"), sha(b"a"), sha(b"b")]
    async with session.get(
        f"{node.url}/structure/{structure_name(large_url)}?mode=before&at=2040"
    ) as r:
        assert (await r.json())["records"][0]["content"] == sha(b"d")

    async with session.post(f"{node.url}/structures", json={"files": files}, headers=headers) as r:
        again = (await r.json())["results"]
    assert [(x["added"], x["created"]) for x in again] == [(0, False)] * 3
    structure_bytes = (await status(session, node.url))["bytes"]["structure"]
    assert structure_bytes == sum(
        span.size for span in stored_spans(node.root, "structure").values()
    )


async def test_a_pack_of_contents_in_one_request(node_factory, cluster, session):
    node = node_factory()
    headers = auth(cluster[1])
    datas = [b"first packed", b"second packed", b""]
    already = await put(session, node.url, cluster[1], datas[0])
    body = b"".join(pack.encode_frame(sha(d), d) for d in datas)
    async with session.post(f"{node.url}/contents", data=body, headers=headers) as r:
        assert r.status == 200, await r.text()
        assert await r.json() == {"received": 3, "created": 2, "forwarded": [], "failed": {}}
    for data in datas:
        async with session.get(f"{node.url}/content/{sha(data)}") as r:
            assert await r.read() == data
    assert (await status(session, node.url))["files"]["content"] == 3
    assert already == sha(datas[0])

    lying = pack.encode_frame(sha(b"fresh"), b"fresh") + pack.encode_frame(sha(b"claimed"), b"x")
    async with session.post(f"{node.url}/contents", data=lying, headers=headers) as r:
        assert r.status == 400 and "hash" in (await r.json())["error"]
    cut = pack.encode_frame(sha(b"whole"), b"whole")[:-2]
    async with session.post(f"{node.url}/contents", data=cut, headers=headers) as r:
        assert r.status == 400 and "frame 0" in (await r.json())["error"]
    async with session.post(f"{node.url}/contents", data=body) as r:
        assert r.status == 401
    # Nothing of a refused pack was kept, not even its good contents.
    for data in (b"fresh", b"whole"):
        async with session.get(f"{node.url}/content/{sha(data)}") as r:
            assert r.status == 404
    assert list((node.root / "content" / ".tmp").iterdir()) == []


async def test_a_pack_written_as_it_is_framed_arrives_whole(node_factory, cluster, session):
    """The client's pack payload sends its frames in several writes, never as one joined copy."""
    node = node_factory()
    datas = [bytes([i]) * (pack.FLUSH_AT // 3 + i) for i in range(10)] + [b""]
    items = [(sha(d), d) for d in datas]
    writes = list(pack.writes(pack.encode_frame(name, d) for name, d in items))
    assert len(writes) > 1 and all(len(w) < pack.FLUSH_AT + len(datas[-2]) + 40 for w in writes)
    upload = pack.Upload(items)
    assert upload.size == len(b"".join(pack.encode_frame(n, d) for n, d in items))
    async with session.post(f"{node.url}/contents", data=upload, headers=auth(cluster[1])) as r:
        assert r.status == 200, await r.text()
        answer = await r.json()
        assert (answer["received"], answer["created"]) == (len(datas), len(datas))
    for data in datas:
        async with session.get(f"{node.url}/content/{sha(data)}") as r:
            assert await r.read() == data


async def test_an_append_arriving_after_its_deadline_is_refused(node_factory, cluster, session):
    """A request a cut link delivers late must not add records its sender reported as failed."""
    node = node_factory()
    url = "http://late.example/"
    name = structure_name(url)
    headers = auth(cluster[1])
    records = [record("2020-01-01", sha(b"late"))]
    for path, body in (
        (f"/structure/{name}", {"url": url, "records": records}),
        ("/structures", {"files": [{"name": name, "url": url, "records": records}]}),
    ):
        late = {**body, "deadline": time.time() - 5}
        async with session.post(f"{node.url}{path}", json=late, headers=headers) as r:
            assert r.status == 409
            assert "after its deadline" in (await r.json())["error"]
        bad = {**body, "deadline": "soon"}
        async with session.post(f"{node.url}{path}", json=bad, headers=headers) as r:
            assert r.status == 400
            assert '"deadline" must be' in (await r.json())["error"]
    async with session.get(f"{node.url}/structure/{name}") as r:
        assert r.status == 404  # nothing was written
    in_time = {"url": url, "records": records, "deadline": time.time() + 60}
    async with session.post(f"{node.url}/structure/{name}", json=in_time, headers=headers) as r:
        assert r.status == 200 and (await r.json())["added"] == 1
