"""The scheduler's JSON API answers, byte for byte: each endpoint's body is the JSON of the
store's records as they are (their fields in order), wrapped as the API always wrapped them; and
the `dlweb sites`, `dlweb streams` and `dlweb campaign` commands print them as they are, or as
tables."""

import asyncio
import dataclasses
import gc
import json
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from archive.timestamps import format_iso
from crawler.scheduler import cli
from crawler.scheduler.service import AgentState, Scheduler, SchedulerOptions
from crawler.scheduler.store import SqliteStore
from crawler.scheduler.streams import StreamAgent
from deploy.testing.scheduler_api import scheduler_api

TOKEN = "write-token"
WRITE = {"Authorization": f"Bearer {TOKEN}"}
RADIO = "http://radio.example/live"
REPORT = {
    "start_url": "http://a.example/",
    "started": 100.0,
    "pages": 12,
    "new_contents": 3,
    "known_contents": 9,
    "text": {"words": 1000, "keywords": {"museum": 4}},
}


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[tuple[TestClient[Any, Any], Scheduler]]:
    """A scheduler on a store with two sites (one crawled, linked from the other), a stream
    with a recording, and agents of both kinds, one of each connected."""
    store = SqliteStore(tmp_path / "scheduler.db")
    scheduler = Scheduler(store, b"s" * 32, SchedulerOptions(work=tmp_path))
    a = store.add_site("http://a.example/", "", priority=1.5, seed=True)
    b = store.add_site("http://b.example/", "", priority=0.25)
    store.finish(a.id, REPORT, "sig", "chunks", 200.0, new_chunk_share=0.5)
    store.finish(a.id, REPORT, "", "", 300.0)
    store.add_edges(b.id, {a.id: 3}, 300.0)
    stream = store.record_stream(RADIO, a.id, 1.0)
    progress = {"stream": stream.id, "recording": "aaaa", "started": 10.0, "last": 40.0}
    store.stream_progress("s1", {**progress, "chunks": 3, "errors": {"stalled": 1}}, 41.0)
    peer = cast(Any, SimpleNamespace(closed=False))
    scheduler.agents = {
        "c1": AgentState("c1", peer, site=a.id),
        "c2": AgentState("c2", None),
    }
    scheduler.streams.agents = {
        "s1": StreamAgent("s1", peer, capacity=4),
        "s2": StreamAgent("s2", None),
    }
    async with scheduler_api(scheduler, TOKEN) as client:
        yield client, scheduler


async def _body(response: Any, status: int = 200) -> str:
    assert response.status == status, await response.text()
    return cast(str, await response.text())


def _asdict(record: object) -> dict[str, Any]:
    assert record is not None
    return dataclasses.asdict(cast(Any, record))


def _status(scheduler: Scheduler) -> dict[str, Any]:
    store = scheduler.store
    return {
        "campaign": "running",
        "agents": [
            {"name": "c1", "connected": True, "site": 1},
            {"name": "c2", "connected": False, "site": None},
        ],
        "counts": store.counts(),
        "decisions": 0,
        "stream_agents": [
            {"name": "s1", "connected": True, "capacity": 4, "streams": 0},
            {"name": "s2", "connected": False, "capacity": 0, "streams": 0},
        ],
        "streams": store.stream_counts(),
        "stream_decisions": 0,
    }


async def test_the_status_and_the_campaign(api: tuple[TestClient[Any, Any], Scheduler]) -> None:
    client, scheduler = api
    assert await _body(await client.get("/api/status")) == json.dumps(_status(scheduler))
    paused = await client.post("/api/campaign", json={"state": "paused"}, headers=WRITE)
    assert await _body(paused) == json.dumps({**_status(scheduler), "campaign": "paused"})
    page = await _body(await client.get("/"))
    assert "<h1>Scheduler: campaign paused</h1>" in page
    assert (
        "<tr><td>c1</td><td>yes</td><td>1</td></tr><tr><td>c2</td><td>no</td><td></td></tr>" in page
    )
    assert "<tr><td>s1</td><td>yes</td><td>4</td><td>0</td></tr>" in page


async def test_the_sites(api: tuple[TestClient[Any, Any], Scheduler]) -> None:
    client, scheduler = api
    store = scheduler.store
    sites = [dataclasses.asdict(site) for site in store.sites()]
    assert await _body(await client.get("/api/sites")) == json.dumps({"sites": sites})
    shown = await _body(await client.get("/api/sites/1"))
    a, b = store.site(1), store.site(2)
    assert a is not None and b is not None
    assert shown == json.dumps(
        {
            "site": dataclasses.asdict(a),
            "crawls": [dataclasses.asdict(crawl) for crawl in store.crawls(1)],
            "referrers": [{"site": 2, "start_url": b.start_url, "links": 3}],
        }
    )
    assert [crawl["new_chunk_share"] for crawl in json.loads(shown)["crawls"]] == [None, 0.5]


async def test_the_changes_to_sites(api: tuple[TestClient[Any, Any], Scheduler]) -> None:
    client, scheduler = api
    store = scheduler.store
    added = await client.post("/api/sites", json={"start_url": "http://c.example/"}, headers=WRITE)
    body = await _body(added, 201)
    assert body == json.dumps(dataclasses.asdict(store.sites()[-1]))
    for method, path in (
        ("POST", "/api/sites/2/inject"),
        ("POST", "/api/sites/2/blacklist"),
        ("DELETE", "/api/sites/2"),
    ):
        answer = await client.request(method, path, json={"priority": 7}, headers=WRITE)
        assert await _body(answer) == json.dumps(_asdict(store.site(2))), path


async def test_the_streams(api: tuple[TestClient[Any, Any], Scheduler]) -> None:
    client, scheduler = api
    store = scheduler.store
    streams = [dataclasses.asdict(stream) for stream in store.streams()]
    assert await _body(await client.get("/api/streams")) == json.dumps({"streams": streams})
    stream = store.stream(1)
    assert stream is not None
    assert await _body(await client.get("/api/streams/1")) == json.dumps(
        {
            "stream": dataclasses.asdict(stream),
            "recordings": [dataclasses.asdict(r) for r in store.stream_recordings(1)],
            "events": [dataclasses.asdict(e) for e in store.stream_events(1)],
        }
    )
    other = "http://radio.example/other"
    added = await client.post("/api/streams", json={"url": other}, headers=WRITE)
    assert await _body(added) == json.dumps(dataclasses.asdict(store.streams()[-1]))
    assert json.loads(await _body(added))["site"] is None
    stopped = await client.post("/api/streams/stop", json={"url": RADIO}, headers=WRITE)
    assert await _body(stopped) == json.dumps(_asdict(store.stream(1)))


async def _dlweb(
    client: TestClient[Any, Any], capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """`dlweb ARGS` against the scheduler: its exit status, output and errors. The command sets
    the collector's schedule for its process, which is this one: it is put back."""
    from dlweb.cli import main

    url = str(client.make_url("/"))
    schedule = gc.get_threshold()
    try:
        status = await asyncio.to_thread(main, [*args, "--scheduler", url])
    finally:
        gc.set_threshold(*schedule)
    out, err = capsys.readouterr()
    return status, out, err


def _printed(body: str) -> str:
    return json.dumps(json.loads(body), indent=1) + "\n"


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "load_config", lambda path: SimpleNamespace(write_token=TOKEN))


async def test_the_commands_print_the_answers(
    api: tuple[TestClient[Any, Any], Scheduler], capsys: pytest.CaptureFixture[str], token: None
) -> None:
    client, scheduler = api
    for args, path in (
        (("sites", "list", "--json"), "/api/sites"),
        (("sites", "show", "1"), "/api/sites/1"),
        (("streams", "list", "--json"), "/api/streams"),
        (("streams", "show", "1"), "/api/streams/1"),
    ):
        body = await _body(await client.get(path))
        assert await _dlweb(client, capsys, *args) == (0, _printed(body), ""), args
    changes: tuple[tuple[tuple[str, ...], str], ...] = (
        (("sites", "inject", "2", "--priority", "3"), "/api/sites/2"),
        (("sites", "blacklist", "2"), "/api/sites/2"),
        (("sites", "remove", "2"), "/api/sites/2"),
        (("streams", "stop", RADIO), "/api/streams/1"),
        (("campaign", "pause"), "/api/status"),
    )
    for change, path in changes:
        status, out, err = await _dlweb(client, capsys, *change)
        body = await _body(await client.get(path))
        shown = json.loads(body)
        printed = shown.get("site", shown.get("stream", shown))
        assert (status, out, err) == (0, json.dumps(printed, indent=1) + "\n", ""), change
    status, out, err = await _dlweb(client, capsys, "sites", "add", "http://c.example/")
    added = scheduler.store.sites()[-1]
    assert (status, out, err) == (0, json.dumps(dataclasses.asdict(added), indent=1) + "\n", "")
    status, out, err = await _dlweb(client, capsys, "streams", "add", "http://radio.example/b")
    added_stream = scheduler.store.streams()[-1]
    printed_stream = json.dumps(dataclasses.asdict(added_stream), indent=1) + "\n"
    assert (status, out, err) == (0, printed_stream, "")


async def test_the_commands_print_tables(
    api: tuple[TestClient[Any, Any], Scheduler], capsys: pytest.CaptureFixture[str]
) -> None:
    client, _ = api
    assert await _dlweb(client, capsys, "sites", "list") == (
        0,
        "    id  state        priority  relev. crawls  start URL\n"
        "     1  idle            1.500    0.00      2  http://a.example/\n"
        "     2  queued          0.250    0.00      0  http://b.example/\n",
        "",
    )
    status, out, err = await _dlweb(client, capsys, "streams", "list", "--state", "waiting")
    first, last = format_iso(10_000_000), format_iso(40_000_000)
    assert (status, err) == (0, "")
    assert out == (
        "   id  state     agent           recorded from         recorded until         gaps"
        "  site  URL\n"
        f"    1  waiting   -               {first:<22}{last:<22}    0     1  {RADIO}\n"
    )


def _serving(**handlers: Any) -> TestClient[Any, Any]:
    """A client of a loopback server answering GET /api/NAME with handlers[NAME]: a scheduler
    that answers what the test makes it answer."""
    app = web.Application()
    for name, handler in handlers.items():
        app.router.add_get(f"/api/{name}", handler)
    return TestClient(TestServer(app))


async def test_a_bad_answer_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    async def sites(request: web.Request) -> web.Response:
        return web.json_response({"sites": [{"id": 1, "state": "idle"}]})

    async def streams(request: web.Request) -> web.Response:
        return web.Response(text="<html>a proxy's page</html>")

    async with _serving(sites=sites, streams=streams) as client:
        assert await _dlweb(client, capsys, "sites", "list") == (
            2,
            "",
            "dlweb: error: the scheduler's answer is not understood: GET /api/sites: sites[0] has"
            " no 'start_url'\n",
        )
        status, out, err = await _dlweb(client, capsys, "streams", "list", "--json")
        assert (status, out) == (2, "")
        assert err.startswith("dlweb: error: the scheduler's answer is not JSON: ")


async def test_an_answer_too_large_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    """The command reads at most MAX_ANSWER bytes of an answer: one a byte larger (JSON, sent
    without a length) is refused, not read to its end."""
    head = b'{"sites": []}'
    padding = b" " * 2**20

    async def sites(request: web.Request) -> web.StreamResponse:
        answer = web.StreamResponse(headers={"Content-Type": "application/json"})
        await answer.prepare(request)
        await answer.write(head)
        left = cli.MAX_ANSWER + 1 - len(head)
        while left:
            await answer.write(padding[:left])
            left -= min(left, len(padding))
        return answer

    async with _serving(sites=sites) as client:
        assert await _dlweb(client, capsys, "sites", "list") == (
            2,
            "",
            "dlweb: error: the scheduler's answer is larger than 256 MiB\n",
        )


async def test_a_refusal_without_an_error_object_is_one_clear_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def sites(request: web.Request) -> web.Response:
        return web.json_response(["busy"], status=503)

    async with _serving(sites=sites) as client:
        assert await _dlweb(client, capsys, "sites", "list") == (
            2,
            "",
            "dlweb: error: the scheduler refused: Service Unavailable\n",
        )
