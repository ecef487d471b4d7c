"""The cluster client against stand-ins served in this process: an index node's HIP route, a
master's /locate and storage nodes that answer well, badly or not at all; real storage nodes
for stale structure copies. No master process is needed."""

import asyncio
import gc
import hashlib
import os
import socket
import warnings
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from archive.cluster import ClusterClient, ClusterError, InsertSummary, NewCapture
from archive.config import ClusterConfig
from archive.errors import BadName, ConfigError, NotFound
from archive.hip import HipMaster, Peer, RemoteError
from archive.multicast import MulticastSettings
from archive.structure import Capture
from archive.timestamps import parse_time
from archive.urlkey import structure_name
from deploy.testing.ports import free_port
from tests.archive.conftest import Serve

SECRET = b"secret of the cluster client tests"
HEADER = b"HTTP/1.1 200 OK\r\n\r\n"
HEADER_NAME = hashlib.sha256(HEADER).hexdigest()
T0 = 1_700_000_000_000_000


@dataclass
class FakeNode:
    """A storage node: keeps what is PUT, serves contents and structure queries, or misbehaves."""

    contents: dict[str, bytes] = field(default_factory=dict)
    captures: dict[str, list[Capture]] = field(default_factory=dict)
    puts: list[tuple[str, str]] = field(default_factory=list)
    content_status: int = 200
    wrong_bytes: bool = False
    put_status: int = 201

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/content/{name}", self.get_content)
        app.router.add_put("/content/{name}", self.put_content)
        app.router.add_post("/contents", self.post_contents)
        app.router.add_get("/structure/{name}", self.get_structure)
        return app

    async def get_content(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if self.content_status != 200:
            return web.json_response({"error": "trouble"}, status=self.content_status)
        if name not in self.contents:
            return web.json_response({"error": "no such content"}, status=404)
        data = self.contents[name]
        return web.Response(body=b"rotten" + data[6:] if self.wrong_bytes else data)

    async def put_content(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.puts.append((name, request.headers.get("Authorization", "")))
        if self.put_status >= 400:
            return web.json_response({"error": "refused"}, status=self.put_status)
        self.contents[name] = await request.read()
        return web.json_response({"name": name}, status=self.put_status)

    async def post_contents(self, request: web.Request) -> web.Response:
        """A pack of contents: each frame is the SHA-256, the length, the bytes."""
        body = await request.read()
        names = []
        while body:
            name, length = body[:32].hex(), int.from_bytes(body[32:40], "big")
            names.append(name)
            self.puts.append((name, request.headers.get("Authorization", "")))
            if self.put_status < 400:
                self.contents[name] = body[40 : 40 + length]
            body = body[40 + length :]
        if self.put_status >= 400:
            return web.json_response({"error": "refused"}, status=self.put_status)
        return web.json_response({"received": len(names), "created": len(names)})

    async def get_structure(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in self.captures:
            return web.json_response({"error": f"no structure file {name}"}, status=404)
        mode, at = request.query["mode"], request.query["at"]
        chosen = pick(self.captures[name], mode, at)
        records = [] if chosen is None else [chosen.to_json()]
        return web.json_response({"name": name, "records": records}, status=200 if records else 404)


def pick(captures: list[Capture], mode: str, at: str) -> Capture | None:
    when = parse_time(at)
    if mode == "before":
        earlier = [c for c in captures if c.time <= when]
        return max(earlier, key=lambda c: c.time, default=None)
    if mode == "after":
        later = [c for c in captures if c.time >= when]
        return min(later, key=lambda c: c.time, default=None)
    if mode == "exact":
        return next((c for c in captures if c.time == when), None)
    return min(captures, key=lambda c: abs(c.time - when), default=None)


@dataclass
class FakeMaster:
    """The master's /locate and, on the same route, an index node's insert and stored."""

    holders: dict[str, list[str]] = field(default_factory=dict)
    upload_to: str = ""
    spares: list[str] = field(default_factory=list)
    copies: int = 1
    known: set[str] = field(default_factory=set)
    inserts: list[list[dict[str, Any]]] = field(default_factory=list)
    stored: list[str] = field(default_factory=list)
    refuse: RemoteError | None = None
    refuse_stored: RemoteError | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/locate/{kind}/{name}", self.locate)
        hip = HipMaster(SECRET, "index", {"insert": self.insert, "stored": self.store})
        hip.add_routes(app)
        return app

    async def locate(self, request: web.Request) -> web.Response:
        kind, name = request.match_info["kind"], request.match_info["name"]
        nodes = [{"id": f"n{i}", "address": a} for i, a in enumerate(self.holders.get(name, []))]
        return web.json_response({"kind": kind, "name": name, "nodes": nodes})

    async def insert(self, peer: Peer, params: Any) -> dict[str, Any]:
        if self.refuse is not None:
            raise self.refuse
        captures = params["captures"]
        self.inserts.append(captures)
        sizes: dict[str, int] = {}
        for c in captures:
            sizes.setdefault(c["content"], c["size"])
            sizes.setdefault(c["header"], c["header_size"])
        upload = [
            {"name": n, "nodes": [self.upload_to, *self.spares], "size": s}
            for n, s in sizes.items()
            if n not in self.known
        ]
        return {"upload": upload, "insert": len(self.inserts), "copies": self.copies}

    async def store(self, peer: Peer, params: Any) -> dict[str, Any]:
        if self.refuse_stored is not None:
            raise self.refuse_stored
        self.stored += params["names"]
        self.known.update(params["names"])
        return {"added": len(self.inserts[params["insert"] - 1])}


def config_for(master: str) -> ClusterConfig:
    return ClusterConfig(name="test", secret=SECRET, lookup="master", master=master)


def corpus(count: int) -> tuple[list[NewCapture], dict[str, bytes]]:
    bodies = {HEADER_NAME: HEADER}
    captures = []
    for i in range(count):
        data = os.urandom(300)
        name = hashlib.sha256(data).hexdigest()
        bodies[name] = data
        captures.append(
            NewCapture(
                url=f"http://example.com/{i % 7}",
                time=T0 + i,
                content=name,
                header=HEADER_NAME,
                status=200,
                size=len(data),
                header_size=len(HEADER),
            )
        )
    return captures, bodies


async def test_insert_uploads_what_the_index_node_asks_then_confirms(serve: Serve) -> None:
    node = FakeNode()
    master = FakeMaster(upload_to=await serve(node.app()))
    config = config_for(await serve(master.app()))
    captures, bodies = corpus(2_500)

    async def body_of(name: str) -> bytes:
        await asyncio.sleep(0)
        return bodies[name]

    async with ClusterClient(config) as client:
        summary = await client.insert(captures, body_of)
        assert [len(batch) for batch in master.inserts] == [1_000, 1_000, 500]
        assert master.inserts[0][0] == captures[0].to_json()
        assert node.contents == bodies
        assert {auth for _, auth in node.puts} == {f"Bearer {config.write_token}"}
        # The shared header block is asked for by every batch until one confirms it.
        assert sorted(set(master.stored)) == sorted(bodies)
        assert summary.captures == summary.added == 2_500
        assert summary.uploaded == len(node.puts)
        assert summary.bytes == sum(len(bodies[name]) for name, _ in node.puts)

        node.puts.clear()
        again = await client.insert(captures[:10], bodies.__getitem__)
        assert (again.added, again.uploaded, again.bytes, node.puts) == (10, 0, 0, [])


def held_until_second(
    bodies: dict[str, bytes], second_only: set[str]
) -> Callable[[str], Awaitable[bytes]]:
    """Bodies of two overlapping inserts: the others wait until the second insert uploads one
    of its own, so that it has seen the first one's uploads under way."""
    second_uploads = asyncio.Event()

    async def body_of(name: str) -> bytes:
        if name in second_only:
            second_uploads.set()
        else:
            await second_uploads.wait()
        return bodies[name]

    return body_of


async def overlapping_inserts(
    serve: Serve, node: FakeNode, count: int
) -> tuple[FakeMaster, dict[str, bytes], list[object]]:
    """Two inserts of one client sharing captures 5 to 9 of `count`, run at once; their
    outcomes (summaries or errors)."""
    master = FakeMaster(upload_to=await serve(node.app()))
    config = config_for(await serve(master.app()))
    captures, bodies = corpus(count)
    body_of = held_until_second(bodies, {c.content for c in captures[10:]})
    async with ClusterClient(config) as client:
        outcomes = await asyncio.gather(
            client.insert(captures[:10], body_of),
            client.insert(captures[5:], body_of),
            return_exceptions=True,
        )
    return master, bodies, outcomes


async def test_a_content_another_batch_is_uploading_is_sent_once(serve: Serve) -> None:
    node = FakeNode()
    master, bodies, done = await overlapping_inserts(serve, node, 20)
    assert all(isinstance(summary, InsertSummary) for summary in done)
    assert len(master.inserts) == 2
    assert sorted(name for name, _ in node.puts) == sorted(bodies)
    assert node.contents == bodies
    assert sum(summary.uploaded for summary in done) == len(bodies)
    assert sorted(set(master.stored)) == sorted(bodies)


@dataclass
class ConfirmedInBetween(FakeMaster):
    """Answers the second insert as asked before the first batch confirmed its uploads, and
    that confirmation right after the answer, so that the client reads both answers at once."""

    second_came: asyncio.Event = field(default_factory=asyncio.Event)
    stored_came: asyncio.Event = field(default_factory=asyncio.Event)
    answered: asyncio.Event = field(default_factory=asyncio.Event)

    async def insert(self, peer: Peer, params: Any) -> dict[str, Any]:
        answer = await super().insert(peer, params)
        if len(self.inserts) == 2:
            self.second_came.set()
            await self.stored_came.wait()
            self.answered.set()
        return answer

    async def store(self, peer: Peer, params: Any) -> dict[str, Any]:
        if not self.stored_came.is_set():
            await self.second_came.wait()
            self.stored_came.set()
            await self.answered.wait()
        return await super().store(peer, params)


async def test_a_content_a_batch_just_stored_is_not_sent_again(serve: Serve) -> None:
    """The first batch ends (its `stored` answered) right after the answer that asks the
    second batch for the same contents: the second waits for the first's uploads, as while
    they were under way, instead of sending them again."""
    node = FakeNode()
    master = ConfirmedInBetween(upload_to=await serve(node.app()))
    config = config_for(await serve(master.app()))
    captures, bodies = corpus(1_000)
    again = [replace(c, url=c.url + "?again") for c in captures[:10]]
    async with ClusterClient(config) as client:
        summary = await client.insert(captures + again, bodies.__getitem__)
    assert [len(batch) for batch in master.inserts] == [1_000, 10]
    assert sorted(name for name, _ in node.puts) == sorted(bodies)
    assert summary.uploaded == len(bodies)
    assert sorted(set(master.stored)) == sorted(bodies)


async def test_a_cancelled_insert_lets_go_of_the_uploads_it_claimed(serve: Serve) -> None:
    """The next insert of the same contents uploads them, instead of waiting on a batch that
    is gone or failing on its cancelled upload."""
    node = FakeNode()
    master = FakeMaster(upload_to=await serve(node.app()))
    config = config_for(await serve(master.app()))
    captures, bodies = corpus(20)
    uploading = asyncio.Event()

    async def never(name: str) -> bytes:
        uploading.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async with ClusterClient(config) as client:
        first = asyncio.create_task(client.insert(captures, never))
        await uploading.wait()
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        summary = await asyncio.wait_for(client.insert(captures, bodies.__getitem__), 10)
    assert summary.uploaded == len(bodies)
    assert node.contents == bodies


async def test_a_batch_waiting_for_a_failed_upload_fails_and_confirms_nothing(
    serve: Serve,
) -> None:
    node = FakeNode(put_status=507)
    master, _, outcomes = await overlapping_inserts(serve, node, 12)
    assert all(isinstance(outcome, ClusterError) for outcome in outcomes)
    assert master.stored == []
    assert len([name for name, _ in node.puts if name == HEADER_NAME]) == 1


async def test_a_refused_insert_says_why(serve: Serve) -> None:
    master = FakeMaster(refuse=RemoteError("bad_params", "insert: captures[0]: 'size' is bad"))
    config = config_for(await serve(master.app()))
    async with ClusterClient(config) as client:
        with pytest.raises(ClusterError, match=r"captures\[0\]: 'size'"):
            await client.insert(corpus(1)[0], bytes)


async def test_an_insert_whose_records_were_not_appended_says_why(serve: Serve) -> None:
    """The index node answers an insert before it appends the records; a failed append is told
    by the `stored` that confirms the insert, which every batch calls, uploads or not."""
    node = FakeNode()
    refused = RemoteError("bad_params", "insert: a storage node refused files[3]: bad record")
    master = FakeMaster(upload_to=await serve(node.app()), refuse_stored=refused)
    config = config_for(await serve(master.app()))
    captures, bodies = corpus(3)
    master.known.update(bodies)
    async with ClusterClient(config) as client:
        with pytest.raises(ClusterError, match=r"insert refused: .* files\[3\]: bad record"):
            await client.insert(captures, bodies.__getitem__)
    assert node.puts == []


@dataclass
class AnswersAsBefore(FakeMaster):
    """An index node of the version before inserts were numbered: it answered `added` with the
    uploads, and `stored` with nothing."""

    async def insert(self, peer: Peer, params: Any) -> dict[str, Any]:
        answer = await super().insert(peer, params)
        return {"added": len(params["captures"]), "upload": answer["upload"]}


@dataclass
class ConfirmsAsBefore(FakeMaster):
    async def store(self, peer: Peer, params: Any) -> dict[str, Any]:
        await super().store(peer, params)
        return {}


@pytest.mark.parametrize(
    ("fake", "message"),
    [
        (AnswersAsBefore, "answered insert without its number"),
        (ConfirmsAsBefore, "confirmed an insert without the records it added"),
    ],
)
async def test_an_answer_of_another_version_fails_clearly(
    serve: Serve, fake: type[FakeMaster], message: str
) -> None:
    node = FakeNode()
    master = fake(upload_to=await serve(node.app()))
    config = config_for(await serve(master.app()))
    captures, bodies = corpus(3)
    async with ClusterClient(config) as client:
        with pytest.raises(ClusterError, match=message):
            await client.insert(captures, bodies.__getitem__)


async def test_an_upload_the_node_refuses_fails_the_insert(serve: Serve) -> None:
    node = FakeNode(put_status=507)
    master = FakeMaster(upload_to=await serve(node.app()))
    config = config_for(await serve(master.app()))
    captures, bodies = corpus(3)
    async with ClusterClient(config) as client:
        with pytest.raises(ClusterError, match="upload to .* failed: 507"):
            await client.insert(captures, bodies.__getitem__)
    assert master.stored == []


async def test_an_upload_a_node_refuses_goes_to_the_next_node_of_its_order(serve: Serve) -> None:
    full, spare = FakeNode(put_status=507), FakeNode()
    master = FakeMaster(upload_to=await serve(full.app()), spares=[await serve(spare.app())])
    config = config_for(await serve(master.app()))
    captures, bodies = corpus(3)
    async with ClusterClient(config) as client:
        summary = await client.insert(captures, bodies.__getitem__)
    assert summary.added == 3
    assert spare.contents == bodies
    assert sorted(master.stored) == sorted(bodies)


async def test_an_insert_is_not_confirmed_with_fewer_copies_than_it_needs(serve: Serve) -> None:
    first, second = FakeNode(), FakeNode(put_status=500)
    master = FakeMaster(
        upload_to=await serve(first.app()), spares=[await serve(second.app())], copies=2
    )
    config = config_for(await serve(master.app()))
    captures, bodies = corpus(3)
    async with ClusterClient(config) as client:
        with pytest.raises(ClusterError, match="made 1 of the 2 copies it needs"):
            await client.insert(captures, bodies.__getitem__)
    assert master.stored == []


async def test_a_read_falls_back_past_dead_failing_and_lying_holders(serve: Serve) -> None:
    data = os.urandom(1000)
    name = hashlib.sha256(data).hexdigest()
    failing = FakeNode({name: data}, content_status=500)
    lying = FakeNode({name: data}, wrong_bytes=True)
    good = FakeNode({name: data})
    dead = f"http://127.0.0.1:{free_port()}"
    holders = [dead, await serve(failing.app()), await serve(lying.app())]
    master = FakeMaster(holders={name: [*holders, await serve(good.app())]})
    async with ClusterClient(config_for(await serve(master.app()))) as client:
        assert await client.get_content(name) == data
        assert await client.get_header_block(name) == data
        master.holders[name] = holders
        with pytest.raises(ClusterError) as refused:
            await client.get_content(name)
        message = str(refused.value)
        assert dead in message
        assert "answered 500" in message
        assert "served bytes of another hash" in message
        with pytest.raises(NotFound, match="on no node"):
            await client.get_content(hashlib.sha256(b"nothing").hexdigest())


async def test_closest_falls_back_past_a_holder_without_the_file(serve: Serve) -> None:
    url = "http://example.com/page"
    name = structure_name(url)
    times = [T0, T0 + 10_000_000, T0 + 20_000_000]
    captures = [Capture(t, f"{i:064x}", HEADER_NAME, 200) for i, t in enumerate(times)]
    empty, holder = FakeNode(), FakeNode(captures={name: captures})
    first, second = await serve(empty.app()), await serve(holder.app())
    master = FakeMaster(holders={name: [first, second]})
    async with ClusterClient(config_for(await serve(master.app()))) as client:
        found = await client.closest(url, T0 + 12_000_000)
        assert (found.capture, found.node) == (captures[1], second)
        assert (await client.closest(url, T0 + 12_000_000, "before")).capture == captures[1]
        assert (await client.closest(url, T0 + 12_000_000, "after")).capture == captures[2]
        assert (await client.closest(url, T0, "exact")).capture == captures[0]
        with pytest.raises(NotFound, match="no capture"):
            await client.closest(url, T0 - 1, "before")
        with pytest.raises(ClusterError, match="mode must be"):
            await client.closest(url, T0, "sideways")
        master.holders[name] = [first]
        with pytest.raises(NotFound, match="no holder has its structure file"):
            await client.closest(url, T0)


async def test_bad_arguments_and_missing_settings_are_clear(serve: Serve) -> None:
    name = hashlib.sha256(b"x").hexdigest()
    dead = f"http://127.0.0.1:{free_port()}"
    stranger = await serve(web.Application())
    master = FakeMaster()
    async with ClusterClient(config_for(await serve(master.app()))) as client:
        with pytest.raises(ClusterError, match="kind must be"):
            await client.locate("blob", name)
        with pytest.raises(BadName):
            await client.locate("content", "not-a-name")
        assert await client.locate("content", name) == []
    async with ClusterClient(ClusterConfig(name="t", secret=SECRET, lookup="master")) as client:
        with pytest.raises(ClusterError, match="no master URL"):
            await client.locate("content", name)
    async with ClusterClient(config_for(dead)) as client:
        with pytest.raises(ClusterError, match="cannot be reached"):
            await client.locate("content", name)
    async with ClusterClient(config_for(stranger)) as client:
        with pytest.raises(ClusterError, match="answered 404 with no node list"):
            await client.locate("content", name)
    async with ClusterClient(config_for(dead), connect_timeout=0.5) as client:
        with pytest.raises(ClusterError, match=r"insert failed: not connected .* after 0.5 s"):
            await client.insert(corpus(1)[0], bytes)
    async with ClusterClient(config_for(dead), connect_timeout=0.5) as client:
        with pytest.raises(ClusterError, match=r"no index node reached: not connected .* 0.5 s"):
            await client.connect()
    with pytest.raises(ClusterError, match="async with"):
        await ClusterClient(config_for(dead)).get_content(name)


def test_a_new_capture_is_sent_with_every_field() -> None:
    capture = NewCapture("http://a.example/", T0, "a" * 64, "b" * 64, 304, 0, kind="not_modified")
    assert capture.to_json() == {
        "url": "http://a.example/",
        "time": T0,
        "content": "a" * 64,
        "header": "b" * 64,
        "status": 304,
        "size": 0,
        "header_size": 512,
        "kind": "not_modified",
        "flags": 0,
        "offset": 0,
    }
    assert list(capture.to_json()) == [f.name for f in fields(NewCapture)]


# -- stale copies and silent holders ----------------------------------------------------------


async def append_to(node: Any, config: ClusterConfig, url: str, captures: list[Capture]) -> None:
    """Append captures to a structure file on a real storage node, as an index node does."""
    body = {"url": url, "records": [c.to_json() for c in captures]}
    headers = {"Authorization": f"Bearer {config.write_token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{node.url}/structure/{structure_name(url)}", json=body, headers=headers
        ) as r,
    ):
        assert r.status == 200, await r.text()


async def test_an_exact_read_is_not_stopped_by_a_stale_copy(
    serve: Serve, node_factory: Any, cluster: tuple[Path, ClusterConfig]
) -> None:
    url = "http://example.com/stale"
    captures = [Capture(T0 + i * 1_000_000, f"{i:064x}", HEADER_NAME, 200) for i in range(3)]
    stale = await asyncio.to_thread(node_factory, "stale")
    fresh = await asyncio.to_thread(node_factory, "fresh")
    await append_to(stale, cluster[1], url, captures[:2])
    await append_to(fresh, cluster[1], url, captures)
    master = FakeMaster()
    async with ClusterClient(config_for(await serve(master.app()))) as client:
        for order in ([stale.url, fresh.url], [fresh.url, stale.url]):
            master.holders[structure_name(url)] = order
            found = await client.closest(url, captures[2].time, "exact")
            assert (found.capture, found.node) == (captures[2], fresh.url), order
            # No holder has a capture after the newest: asked in turn, that is final.
            with pytest.raises(NotFound, match="no capture"):
                await client.closest(url, captures[2].time + 1, "after")


@pytest.fixture
def silent() -> Iterator[str]:
    """A server that accepts connections (the kernel does) and never answers, as a peer behind
    a cut link looks; its base URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


SILENCE = 0.5


async def test_a_silent_holder_is_given_up_and_the_next_one_read(serve: Serve, silent: str) -> None:
    data = os.urandom(1000)
    name = hashlib.sha256(data).hexdigest()
    url = "http://example.com/silent"
    capture = Capture(T0, name, HEADER_NAME, 200)
    good = FakeNode({name: data}, captures={structure_name(url): [capture]})
    address = await serve(good.app())
    master = FakeMaster(holders={name: [silent, address], structure_name(url): [silent, address]})
    config = config_for(await serve(master.app()))
    async with ClusterClient(config, peer_silence=SILENCE) as client:
        async with asyncio.timeout(10 * SILENCE):
            assert await client.get_content(name) == data
            found = await client.closest(url, T0)
        assert (found.capture, found.node) == (capture, address)
        master.holders[name] = [silent]
        with pytest.raises(ClusterError, match=f"{silent}: no answer for {SILENCE:g} s"):
            await client.get_content(name)


async def test_an_upload_to_a_silent_node_fails_naming_it(serve: Serve, silent: str) -> None:
    master = FakeMaster(upload_to=silent)
    config = config_for(await serve(master.app()))
    captures, bodies = corpus(2)
    async with ClusterClient(config, peer_silence=SILENCE) as client:
        async with asyncio.timeout(10 * SILENCE):
            with pytest.raises(
                ClusterError, match=f"upload to {silent}/.* failed: no answer for {SILENCE:g} s"
            ):
                await client.insert(captures, bodies.__getitem__)
    assert master.stored == []


async def test_a_client_that_cannot_start_leaves_no_session_open() -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this host: the lookup socket cannot bind to it.
    config = ClusterConfig(
        name="t",
        secret=SECRET,
        lookup="multicast",
        multicast=MulticastSettings(interface="192.0.2.1"),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ConfigError, match="cannot send multicast lookups"):
            async with ClusterClient(config):
                pass
        gc.collect()
    assert not [w for w in caught if "Unclosed" in str(w.message)]
