"""Index nodes: the insertion path through real processes (master, storage nodes, index nodes)
and, without processes, the checks of an insert, the placement of uploads and the reference
counts."""

import asyncio
import dataclasses
import hashlib
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from archive.cluster import ClusterClient, ClusterError
from archive.config import ClusterConfig, Replication
from archive.errors import NotFound
from archive.hip import HipError, RemoteError
from archive.insert_calls import UploadOrder
from archive.insert_queue import InsertQueue
from archive.structure import RecordKind
from archive.urlkey import structure_name
from deploy.testing.cluster import Cluster, Service
from deploy.testing.ports import free_port
from master.index.captures import MAX_CAPTURES, parse_captures
from master.index.contents import ContentIndex
from master.index.master_link import Appended
from master.index.options import IndexOptions
from master.index.placement import NodeInfo, place
from master.index.service import IndexNode

from .conftest import make_corpus

SECOND = 1_000_000
GIB = 2**30


def second_index(cluster: Cluster) -> Service:
    port = free_port()
    return Service(
        [
            sys.executable,
            "-m",
            "master.index",
            "--data",
            str(cluster.root / "index2"),
            "--listen",
            f"127.0.0.1:{port}",
            "-c",
            str(cluster.config_path),
        ],
        port,
        cluster.root / "index2.log",
    ).start()


async def test_clients_are_spread_over_several_index_nodes(cluster_factory) -> None:
    cluster = cluster_factory(nodes=2, replicas=1)
    other = second_index(cluster)
    try:
        cluster.wait_for(lambda s: len(s["index_nodes"]) == 2, "two index nodes")
        for seed in range(4):
            corpus = make_corpus(10, urls=10, seed=seed)
            async with ClusterClient(cluster.config) as client:
                summary = await client.insert(corpus.captures, corpus.bodies.__getitem__)
                assert summary.added == 10
        assert cluster.index is not None
        served = [s.log().count("connected from") for s in (cluster.index, other)]
        assert all(count >= 1 for count in served), served
    finally:
        other.stop()


async def test_dedup_survives_an_index_restart(cluster_factory) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    corpus = make_corpus(30, urls=10)
    async with ClusterClient(cluster.config) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)
    assert cluster.index is not None
    cluster.index.stop()
    cluster.wait_for(lambda s: not s["index_nodes"], "the index node to leave")
    cluster.start_index()
    again = [dataclasses.replace(c, url=c.url + "?v=2") for c in corpus.captures]
    async with ClusterClient(cluster.config) as client:
        summary = await client.insert(again, corpus.bodies.__getitem__)
    assert (summary.added, summary.uploaded) == (30, 0)


async def test_a_client_without_the_secret_is_refused(cluster_factory, tmp_path: Path) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    stranger = dataclasses.replace(cluster.config, secret=b"not the cluster secret at all")
    corpus = make_corpus(1, urls=1)
    async with ClusterClient(stranger) as client:
        with pytest.raises(ClusterError, match="insert failed"):
            await client.insert(corpus.captures, corpus.bodies.__getitem__)


async def test_an_insert_waits_for_an_index_node_to_return_then_fails_clearly(
    cluster_factory,
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    assert cluster.index is not None
    cluster.index.stop()
    cluster.wait_for(lambda s: not s["index_nodes"], "the index node to leave")
    corpus = make_corpus(2, urls=2)
    first, second = corpus.captures
    async with ClusterClient(cluster.config, connect_timeout=1.0) as client:
        with pytest.raises(ClusterError, match="no index node"):
            await client.insert([first], corpus.bodies.__getitem__)

    async with ClusterClient(cluster.config) as client:
        inserting = asyncio.create_task(client.insert([second], corpus.bodies.__getitem__))
        done, _ = await asyncio.wait({inserting}, timeout=1.5)
        assert not done, "the insert did not wait for an index node"
        cluster.start_index()
        summary = await inserting
    assert summary.added == 1


async def test_captures_are_stored_once_and_read_back(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2)
    corpus = make_corpus(200, urls=20)
    async with ClusterClient(cluster.config) as client:
        summary = await client.insert(corpus.captures, corpus.bodies.__getitem__)
        # 200 contents of their own and the header block they share, each uploaded once.
        assert (summary.captures, summary.added) == (200, 200)
        assert summary.uploaded == len(corpus.bodies) == 201
        assert summary.bytes == sum(len(b) for b in corpus.bodies.values())
        assert cluster.index is not None
        counters = cluster.index.status()["counters"]
        assert counters["uploads_asked"] == counters["stored"] == 201

        for name, data in corpus.bodies.items():
            assert await client.get_content(name) == data
        assert (
            await client.get_header_block(corpus.captures[0].header)
            == corpus.bodies[corpus.captures[0].header]
        )

        # Page 3 was captured at base + 3 s, + 23 s, + 43 s, ...: its 10 captures, 20 s apart.
        page = [c for c in corpus.captures if c.url == corpus.captures[3].url]
        assert len(page) == 10
        first, second, last = page[0], page[1], page[-1]
        for at, mode, expected in [
            (first.time, "exact", first),
            (first.time - 3600 * SECOND, "closest", first),
            (first.time + 9 * SECOND, "closest", first),
            (first.time + 11 * SECOND, "closest", second),
            (first.time + 11 * SECOND, "before", first),
            (first.time + 1 * SECOND, "after", second),
            (last.time + 86_400 * SECOND, "closest", last),
            (last.time + 86_400 * SECOND, "before", last),
        ]:
            found = await client.closest(first.url, at, mode)
            assert found.capture.content == expected.content, (at, mode)
            assert found.capture.time == expected.time
            assert found.node in {n.url for n in cluster.nodes.values()}
        with pytest.raises(NotFound, match="no capture"):
            await client.closest(first.url, last.time + 1, "after")


async def test_a_new_url_with_a_query_is_named_once_in_the_structure_file_of_its_path(
    cluster_factory,
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    corpus = make_corpus(4, urls=1)
    base = corpus.captures[0]
    path = "http://site0.example/app.js"
    captures = [
        dataclasses.replace(base, url=f"{path}?_=1", time=base.time),
        dataclasses.replace(base, url=f"{path}?_=1", time=base.time + SECOND),
        dataclasses.replace(base, url=f"{path}?_=2", time=base.time + 2 * SECOND),
        dataclasses.replace(base, url=path, time=base.time + 3 * SECOND),
    ]
    async with ClusterClient(cluster.config) as client:
        await client.insert(captures[:2], corpus.bodies.__getitem__)
        await client.insert(captures[2:], corpus.bodies.__getitem__)
        await client.insert(captures[:1], corpus.bodies.__getitem__)
        assert await client.variants(f"{path}?_=3", base.time) == [
            structure_name(f"{path}?_=1"),
            structure_name(f"{path}?_=2"),
        ]
        assert await client.variants(f"{path}?_=3", base.time + 2 * SECOND) == [
            structure_name(f"{path}?_=2"),
            structure_name(f"{path}?_=1"),
        ]
        records = (await client.read_structure(structure_name(path)))[1]
        assert [(r.kind, r.time) for r in records] == [
            (RecordKind.VARIANT, base.time),
            (RecordKind.VARIANT, base.time + 2 * SECOND),
            (RecordKind.RESPONSE, base.time + 3 * SECOND),
        ]
        # Lookups and the list of captures pass over variant records.
        assert (await client.closest(path, base.time)).capture.time == base.time + 3 * SECOND
        assert len(await client.captures(path)) == 1
        assert await client.variants(path, base.time) == []


async def test_batches_in_flight_that_share_contents_upload_each_once(cluster_factory) -> None:
    """16 batches inserted three at a time, as an import does, each sharing 70% of its contents
    with the one before: a content is uploaded once, whether the batch that stored it is still
    uploading, waiting for its `stored`, or done when the next one is answered."""
    cluster = cluster_factory(nodes=1, replicas=1)
    corpus = make_corpus(16 * 120 + 280, urls=50)
    header = corpus.captures[0].header
    batches = [
        [
            dataclasses.replace(capture, url=f"{capture.url}/in/{number}")
            for capture in corpus.captures[number * 120 : number * 120 + 400]
        ]
        for number in range(16)
    ]
    async with ClusterClient(cluster.config) as client:
        inserts = InsertQueue(client, ahead=3)
        for batch in batches:
            await inserts.put(batch, corpus.bodies.__getitem__)
        summary = await inserts.join()
    named = {capture.content for batch in batches for capture in batch} | {header}
    assert summary.uploaded == len(named) == len(corpus.bodies)
    assert summary.bytes == sum(len(data) for data in corpus.bodies.values())


async def test_known_contents_under_new_urls_upload_nothing(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2)
    corpus = make_corpus(200, urls=20)
    async with ClusterClient(cluster.config) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)
        again = await client.insert(corpus.captures, corpus.bodies.__getitem__)
        assert (again.added, again.uploaded) == (0, 0), "the same captures add nothing"

        moved = [
            dataclasses.replace(c, url=c.url.replace("/page/", "/moved/"), time=c.time + 7 * SECOND)
            for c in corpus.captures
        ]
        summary = await client.insert(moved, corpus.bodies.__getitem__)
        assert (summary.added, summary.uploaded, summary.bytes) == (200, 0, 0)
        for capture in moved[:20]:
            found = await client.closest(capture.url, capture.time, "exact")
            assert found.capture.content == capture.content
    assert cluster.index is not None
    assert cluster.index.status()["counters"]["stored"] == 201


async def test_bad_captures_are_refused_naming_the_field(cluster_factory) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    corpus = make_corpus(2, urls=2)
    good, other = corpus.captures
    async with ClusterClient(cluster.config) as client:
        for change, message in [
            ({"content": "xyz"}, r"captures\[1\]: capture field 'content' must be 64 lowercase"),
            ({"header": "A" * 64}, r"captures\[1\]: capture field 'header'"),
            ({"url": "no url at all"}, r"captures\[1\]: 'url'"),
            ({"status": 4000}, r"captures\[1\]: HTTP status 4000"),
            ({"size": -1}, r"captures\[1\]: 'size' must be a non-negative integer"),
            ({"kind": "sideways"}, r"captures\[1\]: capture kind 'sideways'"),
            ({"time": 2**63}, r"captures\[1\]: 'time' must be an integer"),
        ]:
            bad = dataclasses.replace(other, **change)
            with pytest.raises(ClusterError, match=message):
                await client.insert([good, bad], corpus.bodies.__getitem__)
        # A refused call wrote nothing, not even its good captures.
        with pytest.raises(NotFound):
            await client.closest(good.url, good.time)
    assert cluster.index is not None
    assert cluster.index.status()["counters"].get("captures", 0) == 0
    assert "Traceback" not in cluster.index.log()


async def test_popular_contents_get_one_more_replica(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2, popular_refs=3)
    corpus = make_corpus(2, urls=2)
    popular = corpus.captures[0]
    async with ClusterClient(cluster.config) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)
        cluster.wait_settled(len(corpus.bodies))
        more = [
            dataclasses.replace(popular, url=f"http://mirror{i}.example/", time=popular.time + i)
            for i in range(2)
        ]
        await client.insert(more, corpus.bodies.__getitem__)
    cluster.wait_for(
        lambda s: len(cluster.get(f"/locate/content/{popular.content}")["nodes"]) == 3,
        "the popular content to reach 3 replicas",
    )
    cluster.wait_settled(len(corpus.bodies))
    rare = corpus.captures[1].content
    assert len(cluster.get(f"/locate/content/{rare}")["nodes"]) == 2


# -- without processes ---------------------------------------------------------------------------

GOOD: dict[str, Any] = {
    "url": "http://example.com/",
    "time": 1_700_000_000_000_000,
    "content": "a" * 64,
    "header": "b" * 64,
    "status": 200,
    "size": 10,
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"url": None}, "'url' must be a string"),
        ({"url": "x" * 9000}, "'url' must be a string of 1 to"),
        ({"url": "mailto:someone"}, "'url'"),
        ({"time": "yesterday"}, "'time' must be an integer"),
        ({"time": True}, "'time' must be an integer"),
        ({"time": -(2**64)}, "'time' must be an integer from"),
        ({"content": "A" * 64}, "'content' must be 64 lowercase hex digits"),
        ({"header": None}, "'header' must be 64 lowercase hex digits"),
        ({"status": 1000}, "HTTP status 1000"),
        ({"status": 2.5}, "'status' must be an integer"),
        ({"kind": 3}, "capture kind 3"),
        ({"flags": 256}, "flags 256"),
        ({"offset": -1}, "'offset' must be an integer from 0"),
        ({"size": None}, "'size' must be a non-negative integer"),
        ({"size": False}, "'size' must be a non-negative integer"),
        ({"header_size": -5}, "'header_size' must be a non-negative integer"),
    ],
)
def test_each_bad_field_is_named(change: dict[str, Any], message: str) -> None:
    captures = [GOOD, GOOD, {**GOOD, **change}]
    with pytest.raises(RemoteError) as refused:
        parse_captures({"captures": captures})
    assert refused.value.code == "bad_params"
    assert refused.value.message.startswith("insert: captures[2]: ")
    assert message in refused.value.message


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (None, "params must be {captures"),
        ({"captures": "all"}, "params must be {captures"),
        ({"captures": []}, "give 1 to 5000 captures a call, not 0"),
        ({"captures": [GOOD] * (MAX_CAPTURES + 1)}, "not 5001"),
        ({"captures": [GOOD, "x"]}, "captures[1] must be an object"),
        ({"captures": [{k: v for k, v in GOOD.items() if k != "time"}]}, "lacks the field 'time'"),
    ],
)
def test_a_bad_call_is_refused_clearly(params: object, message: str) -> None:
    with pytest.raises(RemoteError) as refused:
        parse_captures(params)
    assert refused.value.code == "bad_params"
    assert message in refused.value.message


def test_good_captures_are_grouped_by_structure_name() -> None:
    parsed = parse_captures(
        {"captures": [GOOD, {**GOOD, "url": "HTTP://EXAMPLE.COM:80/", "kind": "revisit"}]}
    )
    assert parsed[0].structure == parsed[1].structure
    assert parsed[1].capture.kind.name == "REVISIT"
    assert parsed[0].header_size == 512


def test_uploads_go_to_the_alive_nodes_with_the_most_room() -> None:
    total = 100 * GIB
    nodes = [
        NodeInfo("a", "http://a", "alive", 50 * GIB, total, frozenset({0xAB})),
        NodeInfo("b", "http://b", "alive", 90 * GIB, total),
        NodeInfo("c", "http://c", "draining", 99 * GIB, total),
        NodeInfo("d", "http://d", "alive", 60 * 2**20, total, frozenset({0xCD})),
    ]
    in_group, other, full = "ab" + "0" * 62, "12" + "0" * 62, "cd" + "0" * 62
    orders = place(nodes, {in_group: 1000, other: 1000, full: 8 * 2**20})
    assert [o.nodes[0] for o in orders] == ["http://b", "http://b", "http://b"]
    # A node without room above its headroom (d) is not even a spare.
    assert orders[0] == UploadOrder(in_group, 1000, ("http://b", "http://a"))

    # Bytes planned in the same call count against a node's free space.
    two = [dataclasses.replace(nodes[0], free=55 * GIB), nodes[1]]
    spread = place(two, {f"{i:02x}" + "0" * 62: 20 * GIB for i in range(1, 4)})
    assert Counter(o.nodes[0] for o in spread) == {"http://b": 2, "http://a": 1}

    with pytest.raises(RemoteError, match="only 0 of the 3 nodes taking writes"):
        place(nodes, {other: 95 * GIB})
    with pytest.raises(RemoteError, match="only 0 of the 0 nodes taking writes"):
        place(nodes[2:3], {other: 1})
    assert place([], {}) == []


def test_nodes_with_about_as_much_room_share_the_uploads() -> None:
    nodes = [
        NodeInfo(n, f"http://{n}", "alive", 90 * GIB + i, 100 * GIB) for i, n in enumerate("abc")
    ]
    names = {hashlib.sha256(bytes([i])).hexdigest(): 1000 for i in range(60)}
    first = Counter(order.nodes[0] for order in place(nodes, names, copies=2))
    assert set(first) == {"http://a", "http://b", "http://c"} and min(first.values()) >= 10


def test_an_upload_is_placed_on_as_many_nodes_as_the_insert_waits_for_in_distinct_domains() -> None:
    nodes = [
        NodeInfo("a", "http://a", "alive", 90 * GIB, 100 * GIB, domain="rack1"),
        NodeInfo("b", "http://b", "alive", 80 * GIB, 100 * GIB, domain="rack1"),
        NodeInfo("c", "http://c", "alive", 10 * GIB, 100 * GIB, domain="rack2"),
    ]
    (order,) = place(nodes, {"12" + "0" * 62: 1000}, copies=2)
    # The second copy goes to the other rack, though its node has the least room.
    assert order.nodes == ("http://a", "http://c", "http://b")
    with pytest.raises(RemoteError, match="needs 4 copies on distinct nodes, and only 3"):
        place(nodes, {"12" + "0" * 62: 1000}, copies=4)
    with pytest.raises(RemoteError, match=r"only 1 of the 1 nodes taking writes \(in 1 failure"):
        place(nodes[:1], {"12" + "0" * 62: 1000}, copies=2)


def test_the_content_database_counts_references(metadata: Path | str) -> None:
    index = ContentIndex(metadata)
    a, b, c = (hashlib.sha256(bytes([i])).hexdigest() for i in range(3))
    assert index.known([a, b]) == set()
    assert index.count_refs({a: 2}) == {}
    assert index.add({a: 3, b: 0}) == {a: 3, b: 1}
    assert index.known([a, b, c]) == {a, b}
    assert index.count_refs({a: 2, c: 1}) == {a: 5}
    assert index.add({a: 0}) == {a: 5}
    index.close()
    reopened = ContentIndex(metadata)
    assert (len(reopened), reopened.refs(a), reopened.refs(c)) == (2, 5, None)
    # More names than one query looks up: counted in parts, each count its own.
    many = {hashlib.sha256(str(i).encode()).hexdigest(): i % 3 for i in range(1_200)}
    assert reopened.add(many) == {name: max(refs, 1) for name, refs in many.items()}
    assert reopened.count_refs({**many, c: 4}) == {
        name: max(refs, 1) + refs for name, refs in many.items()
    }
    assert reopened.known([*many, c]) == set(many)
    reopened.close()


async def test_popular_counts_are_reported_as_they_change(tmp_path: Path) -> None:
    config = ClusterConfig(
        name="t", secret=b"s" * 16, master="http://127.0.0.1:9", replication=Replication()
    )
    node = IndexNode(IndexOptions(tmp_path, "127.0.0.1", 0, config, "http://127.0.0.1:9"))
    node.popular_refs = 3
    told: list[dict[str, Any]] = []

    async def tell(method: str, params: dict[str, Any]) -> None:
        told.append({method: params})

    node._tell_master = tell  # type: ignore[method-assign]
    a, b = (hashlib.sha256(bytes([i])).hexdigest() for i in range(2))
    client = object()
    node._appends[1] = (client, asyncio.ensure_future(asyncio.sleep(0, 0)))  # type: ignore[assignment]
    try:
        node._count_refs({a: 2, b: 1}, known=set())
        await node._stored(client, {"names": [a, b, a], "insert": 1})  # type: ignore[arg-type]
        assert (node.contents.refs(a), node.contents.refs(b)) == (2, 1)
        node._count_refs({a: 1, b: 1}, known={a, b})
        node._count_refs({a: 5}, known={a})
        await node._background.wait()
        assert told == [{"content.refs": {"refs": {a: 3}}}, {"content.refs": {"refs": {a: 8}}}]
        with pytest.raises(RemoteError, match=r"names\[1\] is not 64 lowercase"):
            await node._stored(client, {"names": [a, "b"], "insert": 2})  # type: ignore[arg-type]
    finally:
        node.contents.close()


AppendAll = Callable[
    [dict[str, Any], dict[str, str], dict[str, Any], dict[str, set[str]]], Awaitable[None]
]


async def append_every_record(
    groups: dict[str, Any], where: dict[str, str], results: dict[str, Any], sent: dict[str, Any]
) -> None:
    sent.update((name, {where[name]}) for name in groups)
    results.update((name, (len(items), False)) for name, items in groups.items())


class Upstream:
    """The index node's link to the master, as `_tell_changed` uses it: each call is recorded,
    then answered, or failed with `lost` when it is set (a master that died before answering)."""

    peer = None

    def __init__(self) -> None:
        self.told: list[tuple[str, list[str], dict[str, Any]]] = []
        self.lost: str | None = None

    async def call(self, method: str, params: Any, timeout: float | None = None) -> Any:
        if self.lost is not None:
            raise HipError(self.lost)
        self.told.append((method, sorted(params["names"]), params.get("copies", {})))
        return {}


async def told(upstream: Upstream) -> None:
    """Return once the master was told something."""
    while not upstream.told:
        await asyncio.sleep(0)


def unit_index(tmp_path: Path, append_all: AppendAll = append_every_record) -> IndexNode:
    """An index node without processes, with one alive storage node (an insert waits for one
    copy), whose appends to the structure files are `append_all`, and a master that answers."""
    config = ClusterConfig(
        name="t",
        secret=b"s" * 16,
        master="http://127.0.0.1:9",
        replication=Replication(default=1),
    )
    node = IndexNode(IndexOptions(tmp_path, "127.0.0.1", 0, config, "http://127.0.0.1:9"))
    node.nodes = [NodeInfo("n", "http://n", "alive", GIB, GIB)]
    node.claims = {parse_captures({"captures": [GOOD]})[0].structure: "http://n"}
    node._append_all = append_all  # type: ignore[method-assign]
    node.upstream = Upstream()  # type: ignore[assignment]
    return node


async def test_an_insert_is_answered_before_its_records_are_appended(tmp_path: Path) -> None:
    """The uploads are named at once; `stored` answers once the appends are done, with the
    records they added, and only then are the contents known."""
    appending, appended = asyncio.Event(), asyncio.Event()

    async def append_all(
        groups: dict[str, Any],
        where: dict[str, str],
        results: dict[str, Any],
        sent: dict[str, Any],
    ) -> None:
        appending.set()
        await appended.wait()
        await append_every_record(groups, where, results, sent)

    node = unit_index(tmp_path, append_all)
    client = object()
    try:
        answer = await node._insert(client, {"captures": [GOOD, {**GOOD, "time": 5}]})  # type: ignore[arg-type]
        assert [order["name"] for order in answer["upload"]] == ["a" * 64, "b" * 64]
        assert answer["copies"] == 1
        await appending.wait()
        confirming = asyncio.ensure_future(
            node._stored(client, {"names": ["a" * 64, "b" * 64], "insert": answer["insert"]})  # type: ignore[arg-type]
        )
        await asyncio.sleep(0.01)
        assert not confirming.done() and node.contents.known(["a" * 64]) == set()
        appended.set()
        assert await confirming == {"added": 2}
        assert node.contents.known(["a" * 64, "b" * 64]) == {"a" * 64, "b" * 64}
        assert node.contents.refs("a" * 64) == 2
    finally:
        node.contents.close()


async def test_an_insert_whose_appends_failed_confirms_nothing(tmp_path: Path) -> None:
    async def append_all(
        groups: dict[str, Any],
        where: dict[str, str],
        results: dict[str, Any],
        sent: dict[str, Any],
    ) -> None:
        raise RemoteError("bad_params", "insert: a storage node refused files[0]: bad record")

    node = unit_index(tmp_path, append_all)
    client = object()
    try:
        answer = await node._insert(client, {"captures": [GOOD]})  # type: ignore[arg-type]
        with pytest.raises(RemoteError, match="a storage node refused files"):
            await node._stored(client, {"names": ["a" * 64], "insert": answer["insert"]})  # type: ignore[arg-type]
        assert node.contents.known(["a" * 64]) == set()
        # Confirmed once: asked again, the number is no longer this connection's.
        with pytest.raises(RemoteError, match="insert 1 is not one of this connection's"):
            await node._stored(client, {"names": ["a" * 64], "insert": answer["insert"]})  # type: ignore[arg-type]
    finally:
        node.contents.close()


async def test_the_appends_of_a_failed_insert_that_landed_or_may_have_are_told_at_once(
    tmp_path: Path,
) -> None:
    """An insert whose appends failed still changed the files whose appends landed, and may
    have changed those whose node failed before it answered (each with every copy it was sent
    to): the master hears of those at once, so their other copies are refreshed now, or merged
    once a lost copy returns. A file whose append added nothing, or was never sent, is not told
    (the master hears of every file again once no append of the insert can land any more)."""
    captures = [{**GOOD, "url": f"http://example.com/{i}"} for i in range(4)]
    landed, unanswered, nothing_new, unsent = (
        parse_captures({"captures": [c]})[0].structure for c in captures
    )

    async def append_all(
        groups: dict[str, Any],
        where: dict[str, str],
        results: dict[str, Any],
        sent: dict[str, Any],
    ) -> None:
        sent.update({landed: {"http://n"}, unanswered: {"http://n", "http://m"}})
        sent[nothing_new] = {"http://n"}
        results.update({landed: (1, False), nothing_new: (0, False)})
        raise RemoteError("error", f"cannot append to structure {unanswered}: no answer")

    node = unit_index(tmp_path, append_all)
    node.claims.update((name, "http://n") for name in (landed, unanswered, nothing_new, unsent))
    upstream: Upstream = node.upstream  # type: ignore[assignment]
    client = object()
    try:
        answer = await node._insert(client, {"captures": captures})  # type: ignore[arg-type]
        with pytest.raises(RemoteError, match="cannot append to structure"):
            await node._stored(client, {"names": [], "insert": answer["insert"]})  # type: ignore[arg-type]
        await asyncio.wait_for(told(upstream), 5)
        assert upstream.told == [
            (
                "structure.changed",
                sorted([landed, unanswered]),
                {
                    landed: {"active": ["http://n"], "others": []},
                    unanswered: {"active": ["http://m", "http://n"], "others": []},
                },
            )
        ]
    finally:
        node._background.cancel()
        node.contents.close()


class GatedUpstream(Upstream):
    """An Upstream that answers once `gate` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def call(self, method: str, params: Any, timeout: float | None = None) -> Any:
        await self.gate.wait()
        return await super().call(method, params, timeout)


async def idle(node: IndexNode) -> None:
    while node.status()["appending"]:
        await asyncio.sleep(0)


@pytest.mark.parametrize("fails", [False, True])
async def test_appends_count_as_under_way_until_the_master_heard_of_them(
    tmp_path: Path, fails: bool
) -> None:
    """An insert's appends go on when its client gave up or left, and a failed insert's that
    landed are told at once, unawaited: /status counts both as `appending` until the master has
    recorded the change, so that a copy lacking the records it may get is known to be behind
    (the master's own status cannot know of them before)."""
    other = {**GOOD, "url": "http://example.com/other"}
    name = parse_captures({"captures": [GOOD]})[0].structure

    async def append_all(
        groups: dict[str, Any],
        where: dict[str, str],
        results: dict[str, Any],
        sent: dict[str, Any],
    ) -> None:
        sent[name] = {"http://n"}
        results[name] = (1, False)
        if fails:
            raise RemoteError("error", "cannot append to structure: no answer")

    node = unit_index(tmp_path, append_all)
    node.claims[parse_captures({"captures": [other]})[0].structure] = "http://n"
    upstream = GatedUpstream()
    node.upstream = upstream  # type: ignore[assignment]
    client = object()
    try:
        assert node.status()["appending"] == 0
        await node._insert(client, {"captures": [GOOD, other]})  # type: ignore[arg-type]
        await node._forget_inserts(client)  # type: ignore[arg-type]
        for _ in range(10):
            await asyncio.sleep(0)
        assert node.status()["appending"] == 1 and upstream.told == []
        upstream.gate.set()
        await asyncio.wait_for(idle(node), 5)
        appended = {"active": ["http://n"], "others": []}
        assert upstream.told == [("structure.changed", [name], {name: appended})]
    finally:
        node._background.cancel()
        node.contents.close()


@pytest.mark.parametrize(
    ("insert", "message"),
    [
        (None, "insert must be the number an insert answered"),
        ("1", "insert must be the number an insert answered"),
        (True, "insert must be the number an insert answered"),
        (7, "insert 7 is not one of this connection's to confirm"),
    ],
)
async def test_a_confirmation_of_no_insert_of_its_own_is_refused(
    tmp_path: Path, insert: object, message: str
) -> None:
    """Only the connection that inserted confirms, each insert once; one whose connection
    closed is forgotten, and its appends go on."""
    node = unit_index(tmp_path)
    mine, other = object(), object()
    try:
        answer = await node._insert(mine, {"captures": [GOOD]})  # type: ignore[arg-type]
        with pytest.raises(RemoteError, match=message) as refused:
            await node._stored(mine, {"names": [], "insert": insert})  # type: ignore[arg-type]
        assert refused.value.code == "bad_params"
        with pytest.raises(RemoteError, match="not one of this connection's"):
            await node._stored(other, {"names": [], "insert": answer["insert"]})  # type: ignore[arg-type]
        await node._forget_inserts(mine)  # type: ignore[arg-type]
        assert node._appends == {}
        with pytest.raises(RemoteError, match="not one of this connection's"):
            await node._stored(mine, {"names": [], "insert": answer["insert"]})  # type: ignore[arg-type]
    finally:
        node.contents.close()


async def test_an_insert_is_acknowledged_only_once_the_master_recorded_its_changes(
    tmp_path: Path,
) -> None:
    """A change the master did not answer (it died with the notice unread) fails the insert
    and is told again, with the next change or on the next connection: until the master has
    recorded it, the other copies of the file lacking its records are neither marked stale nor
    refreshed."""
    node = unit_index(tmp_path)
    other = {**GOOD, "url": "http://example.com/other"}
    name, other_name = (parse_captures({"captures": [c]})[0].structure for c in (GOOD, other))
    node.claims[other_name] = "http://n"
    upstream: Upstream = node.upstream  # type: ignore[assignment]
    client = object()
    try:
        upstream.lost = "connection to master lost"
        answer = await node._insert(client, {"captures": [GOOD]})  # type: ignore[arg-type]
        with pytest.raises(RemoteError, match="the master did not record") as failed:
            await node._stored(client, {"names": [], "insert": answer["insert"]})  # type: ignore[arg-type]
        assert failed.value.code == "unavailable"
        assert node.status()["unsent_changes"] == 1
        upstream.lost = None
        answer = await node._insert(client, {"captures": [other]})  # type: ignore[arg-type]
        confirmed = await node._stored(client, {"names": [], "insert": answer["insert"]})  # type: ignore[arg-type]
        assert confirmed == {"added": 1}
        # Each with the copy it was appended to as active (the replication here wants no other).
        appended = {"active": ["http://n"], "others": []}
        assert upstream.told == [
            (
                "structure.changed",
                sorted([name, other_name]),
                {name: appended, other_name: appended},
            )
        ]
        assert node.status()["unsent_changes"] == 0
    finally:
        node.contents.close()


async def test_changes_the_master_missed_are_told_on_reconnection(tmp_path: Path) -> None:
    config = ClusterConfig(name="t", secret=b"s" * 16, master="http://127.0.0.1:9")
    node = IndexNode(IndexOptions(tmp_path, "127.0.0.1", 0, config, "http://127.0.0.1:9"))
    names = [hashlib.sha256(bytes([i])).hexdigest() for i in range(3)]
    upstream = Upstream()
    upstream.lost = "not connected"
    node.upstream = upstream  # type: ignore[assignment]
    master = Upstream()
    told = [
        {names[0]: Appended(frozenset(["http://a"])), names[1]: Appended(frozenset(["http://a"]))},
        {
            names[1]: Appended(frozenset(["http://b"]), frozenset(["http://c"])),
            names[2]: Appended(),  # an insert that failed: where its records went is not known
        },
    ]
    try:
        for changes in told:
            with pytest.raises(RemoteError, match="not connected"):
                await node._tell_changed(changes)
        assert node.status()["unsent_changes"] == 3
        await node._send_unsent(master)  # type: ignore[arg-type]
        copies = {
            names[0]: {"active": ["http://a"], "others": []},
            names[1]: {"active": ["http://a", "http://b"], "others": ["http://c"]},
        }
        assert master.told == [("structure.changed", sorted(names), copies)]
        assert node.status()["unsent_changes"] == 0
    finally:
        node.contents.close()
