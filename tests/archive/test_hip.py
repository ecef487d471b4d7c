"""HIP between real processes: calls both ways, ordering, errors, auth, YAML, restart, redirect."""

import asyncio
import hashlib
import hmac
import json
import secrets
import select
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import pytest
from aiohttp import WSMsgType, web

from archive.hip import Handler, HipError, HipSlave, Peer, PeerHook, RemoteError
from deploy.testing.ports import free_port

AGENTS = Path(__file__).with_name("hip_agents.py")
SECRET = b"cluster secret of the hip tests"
MAX_FRAME = 64 * 1024


def hip_url(port: int) -> str:
    return f"ws://127.0.0.1:{port}/hip"


@dataclass
class Agent:
    process: "subprocess.Popen[str]"
    ready: str

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        assert self.process.stdout is not None
        self.process.stdout.close()


def start_agent(*arguments: str) -> Agent:
    """Start hip_agents.py and wait for its READY line."""
    process = subprocess.Popen(
        [sys.executable, str(AGENTS), *arguments, "--secret", SECRET.decode()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], 20)
    line = process.stdout.readline() if readable else ""
    if not line.startswith("READY "):
        process.kill()
        process.wait()
        process.stdout.close()
        raise AssertionError(f"agent {arguments} did not get ready: {line!r}")
    return Agent(process, line.split(" ", 1)[1].strip())


def start_master(port: int, name: str, *options: str) -> Agent:
    return start_agent("master", "--port", str(port), "--name", name, *options)


@pytest.fixture(scope="module")
def beta() -> Iterator[int]:
    port = free_port()
    agent = start_master(port, "beta")
    yield port
    agent.stop()


@pytest.fixture(scope="module")
def alpha(beta: int) -> Iterator[int]:
    """The master most tests talk to; it sends "client" slaves to beta."""
    port = free_port()
    agent = start_master(
        port, "alpha", "--max-frame", str(MAX_FRAME), "--redirect", f"client={hip_url(beta)}"
    )
    yield port
    agent.stop()


class StartSlave(Protocol):
    async def __call__(
        self,
        url: str,
        name: str,
        *,
        secret: bytes = SECRET,
        handlers: dict[str, Handler] | None = None,
        role: str = "storage",
        formats: Sequence[str] = ("json", "yaml"),
        on_connect: PeerHook | None = None,
        max_frame: int = 16 * 1024 * 1024,
        heartbeat: float = 5.0,
        connect: bool = True,
    ) -> HipSlave: ...


@pytest.fixture
async def start_slave() -> AsyncIterator[StartSlave]:
    """Start in-process slaves, connected unless told otherwise; all are stopped afterwards."""
    started: list[HipSlave] = []

    async def start(
        url: str,
        name: str,
        *,
        secret: bytes = SECRET,
        handlers: dict[str, Handler] | None = None,
        role: str = "storage",
        formats: Sequence[str] = ("json", "yaml"),
        on_connect: PeerHook | None = None,
        max_frame: int = 16 * 1024 * 1024,
        heartbeat: float = 5.0,
        connect: bool = True,
    ) -> HipSlave:
        slave = HipSlave(
            url,
            secret,
            name,
            handlers or {},
            role=role,
            formats=formats,
            on_connect=on_connect,
            backoff=(0.02, 0.3),
            max_frame=max_frame,
            heartbeat=heartbeat,
        )
        started.append(slave)
        await slave.start()
        if connect:
            await slave.wait_connected(10)
        return slave

    yield start
    for slave in started:
        await slave.stop()


def mac(secret: bytes, label: str, fields: Sequence[str]) -> str:
    """The documented proof, computed independently of the package."""
    message = b"".join(field.encode() + b"\0" for field in (label, *fields))
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


async def raw_handshake(
    session: aiohttp.ClientSession, url: str, name: str
) -> aiohttp.ClientWebSocketResponse:
    """Authenticate a bare WebSocket by following the documented handshake by hand."""
    ws = await session.ws_connect(url)
    nonce = secrets.token_hex(32)
    await ws.send_json(
        {"t": "hello", "v": 1, "name": name, "role": "storage", "formats": ["json"], "nonce": nonce}
    )
    challenge = await ws.receive_json(timeout=5)
    assert challenge["t"] == "challenge" and challenge["format"] == "json"
    fields = [nonce, challenge["nonce"], name, "storage", challenge["name"], "json"]
    await ws.send_json({"t": "auth", "proof": mac(SECRET, "hip1 slave", fields)})
    welcome = await ws.receive_json(timeout=5)
    assert welcome == {"t": "welcome", "proof": mac(SECRET, "hip1 master", fields)}
    return ws


async def test_calls_cross_processes_in_both_directions(
    alpha: int, start_slave: StartSlave
) -> None:
    agent = start_agent("slave", "--url", hip_url(alpha), "--name", "slave-process")
    try:
        assert agent.ready == "alpha"  # the slave process called the master's whoami

        async def double(peer: Peer, params: Any) -> Any:
            return {"doubled": params * 2, "asked_by": peer.name}

        slave = await start_slave(hip_url(alpha), "both-ways", handlers={"double": double})
        assert await slave.call("whoami") == {
            "master": "alpha",
            "slave": "both-ways",
            "role": "storage",
            "format": "json",
        }
        to_me = {"slave": "both-ways", "method": "double", "params": 21}
        assert await slave.call("call_slave", to_me) == {"doubled": 42, "asked_by": "alpha"}
        to_process = {"slave": "slave-process", "method": "slave_info", "params": [1, "a"]}
        answer = await slave.call("call_slave", to_process)
        assert answer == {"pid": agent.process.pid, "params": [1, "a"]}
    finally:
        agent.stop()


async def test_master_status_page_shares_the_port(alpha: int) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{alpha}/") as response,
    ):
        assert response.status == 200
        assert "HIP master alpha" in await response.text()


async def test_fast_reply_overtakes_slow_one(alpha: int, start_slave: StartSlave) -> None:
    slave = await start_slave(hip_url(alpha), "ordering")
    finished: list[str] = []

    async def sleep_echo(delay: float, value: str) -> Any:
        result = await slave.call("sleep_echo", {"delay": delay, "value": value})
        finished.append(result)
        return result

    slow, fast = await asyncio.gather(sleep_echo(0.5, "slow"), sleep_echo(0.01, "fast"))
    assert (slow, fast) == ("slow", "fast")
    assert finished == ["fast", "slow"]


async def test_notifications_arrive(alpha: int, start_slave: StartSlave) -> None:
    slave = await start_slave(hip_url(alpha), "notifier")
    for value in range(5):
        await slave.notify("record", {"key": "notes", "value": value})
    assert await slave.call("recorded", "notes") == [0, 1, 2, 3, 4]


async def test_remote_failures_raise_remote_error(alpha: int, start_slave: StartSlave) -> None:
    slave = await start_slave(hip_url(alpha), "failures")
    with pytest.raises(RemoteError) as unknown:
        await slave.call("no_such_method")
    assert unknown.value.code == "unknown_method"
    with pytest.raises(RemoteError) as failed:
        await slave.call("fail", "disk on fire")
    assert failed.value.code == "error"
    assert str(failed.value) == "boom: disk on fire"
    assert "Traceback" not in failed.value.message and ".py" not in failed.value.message
    with pytest.raises(RemoteError) as bad:
        await slave.call("sleep_echo", {"delay": "soon"})
    assert bad.value.code == "bad_params"
    assert await slave.call("echo", "still works") == "still works"


async def test_call_timeout_and_no_connection(alpha: int, start_slave: StartSlave) -> None:
    slave = await start_slave(hip_url(alpha), "impatient")
    with pytest.raises(HipError, match="timed out"):
        await slave.call("sleep_echo", {"delay": 5, "value": None}, timeout=0.2)
    assert await slave.call("echo", 1) == 1
    nowhere = await start_slave(hip_url(free_port()), "lonely", connect=False)
    with pytest.raises(HipError, match="not connected"):
        await nowhere.call("echo", 1, timeout=0.3)


async def test_malformed_frames_are_answered_or_ignored(alpha: int) -> None:
    async with aiohttp.ClientSession() as session:
        ws = await raw_handshake(session, hip_url(alpha), "garbage")
        for text in [
            "not json {",
            "[1, 2]",
            '"a string"',
            '{"t": "zzz", "id": 1}',
            '{"t": "req", "id": "x", "m": "echo"}',
            '{"t": "req", "id": true, "m": "echo"}',
            '{"t": "res", "id": 999, "r": 1}',
            '{"t": "err", "id": 3, "c": 7}',
            '{"t": "note"}',
            '{"t": "redirect", "url": "ws://127.0.0.1:1/hip"}',
            '{"t": "req", "id": 4, "m": "echo", "p": NaN}',
        ]:
            await ws.send_str(text)
        await ws.send_bytes(b'{"t": "req", "id": 1, "m": "echo"}')
        await ws.send_str('{"t": "req", "id": 5, "m": 12}')
        await ws.send_str(json.dumps({"t": "req", "id": 6, "m": "echo", "p": [1, "two"]}))
        error = await ws.receive_json(timeout=5)
        assert error["t"] == "err" and error["id"] == 5 and error["c"] == "bad_frame"
        assert "'m'" in error["e"]
        assert await ws.receive_json(timeout=5) == {"t": "res", "id": 6, "r": [1, "two"]}
        for _ in range(20):
            await ws.send_str("garbage again")
        closing = await ws.receive(timeout=5)
        assert closing.type == WSMsgType.CLOSE and closing.data == 1008


async def test_nothing_is_processed_before_authentication(
    alpha: int, start_slave: StartSlave
) -> None:
    async with aiohttp.ClientSession() as session:
        ws = await session.ws_connect(hip_url(alpha))
        request = {"t": "req", "id": 1, "m": "record", "p": {"key": "early", "value": 1}}
        await ws.send_json(request)
        closing = await ws.receive(timeout=5)
        assert closing.type == WSMsgType.CLOSE and closing.data == 4002
        assert "expected hello" in str(closing.extra)
        ws = await session.ws_connect(hip_url(alpha))
        await ws.send_str("\x00 not a hello")
        closing = await ws.receive(timeout=5)
        assert closing.type == WSMsgType.CLOSE and closing.data == 4002
        assert "malformed handshake" in str(closing.extra)
    slave = await start_slave(hip_url(alpha), "after-early")
    assert await slave.call("recorded", "early") == []


async def test_oversized_frames_are_refused(alpha: int, start_slave: StartSlave) -> None:
    async with aiohttp.ClientSession() as session:
        ws = await raw_handshake(session, hip_url(alpha), "oversized")
        await ws.send_str(json.dumps({"t": "req", "id": 1, "m": "echo", "p": "x" * MAX_FRAME}))
        closing = await ws.receive(timeout=5)
        assert closing.type == WSMsgType.CLOSE and closing.data == 1009
    slave = await start_slave(hip_url(alpha), "small-frames", max_frame=MAX_FRAME)
    with pytest.raises(HipError, match="frame limit"):
        await slave.call("echo", "x" * MAX_FRAME)
    with pytest.raises(RemoteError, match="frame limit") as too_big:
        await slave.call("repeat", MAX_FRAME)
    assert too_big.value.code == "error"
    assert await slave.call("echo", "x" * 1000) == "x" * 1000


async def test_wrong_secret_is_refused(alpha: int, start_slave: StartSlave) -> None:
    intruder = await start_slave(hip_url(alpha), "intruder", secret=b"guessed", connect=False)
    with pytest.raises(HipError, match="authentication refused by ws://"):
        await intruder.wait_connected(10)
    with pytest.raises(HipError, match="authentication refused"):
        await intruder.call("record", {"key": "intruder", "value": 1}, timeout=5)
    assert intruder.peer is None
    witness = await start_slave(hip_url(alpha), "witness")
    stats = await witness.call("stats")
    assert "intruder" not in stats["connected"] and "intruder" not in stats["handled_for"]
    assert "witness" in stats["handled_for"]


async def test_slave_refuses_a_master_without_the_secret(start_slave: StartSlave) -> None:
    requests: list[str] = []

    async def impostor(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        hello = await ws.receive_json()
        challenge = {"t": "challenge", "name": "impostor", "nonce": "0" * 64, "format": "json"}
        await ws.send_json(challenge)
        await ws.receive_json()
        await ws.send_json({"t": "welcome", "proof": "0" * 64})
        async for msg in ws:
            requests.append(msg.data)
        assert hello["name"] == "trusting"
        return ws

    app = web.Application()
    app.router.add_get("/hip", impostor)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        slave = await start_slave(hip_url(port), "trusting", connect=False)
        with pytest.raises(HipError, match="did not prove the cluster secret"):
            await slave.wait_connected(10)
        assert slave.peer is None and requests == []
    finally:
        await runner.cleanup()


async def test_yaml_is_negotiated(alpha: int, start_slave: StartSlave) -> None:
    slave = await start_slave(hip_url(alpha), "yaml-speaker", formats=("yaml",))
    assert slave.peer is not None and slave.peer.format == "yaml"
    assert (await slave.call("whoami"))["format"] == "yaml"
    data = {"list": [1, 2.5, "three: 3"], "none": None, "yes": True, "nested": {"k": ["v"]}}
    assert await slave.call("echo", data) == data


async def test_slave_reconnects_after_master_restart(start_slave: StartSlave) -> None:
    port = free_port()
    master = await asyncio.to_thread(start_master, port, "phoenix")
    try:
        slave = await start_slave(hip_url(port), "survivor")
        pending = asyncio.create_task(slave.call("sleep_echo", {"delay": 30, "value": "never"}))
        assert await slave.call("echo", "sent after the slow call") == "sent after the slow call"
        master.process.kill()
        with pytest.raises(HipError, match="lost"):
            await asyncio.wait_for(pending, 5)
    finally:
        master.stop()
    master = await asyncio.to_thread(start_master, port, "phoenix-reborn")
    try:
        peer = await slave.wait_connected(10)
        assert peer.name == "phoenix-reborn"
        assert (await slave.call("whoami"))["master"] == "phoenix-reborn"
    finally:
        master.stop()


async def test_heartbeat_detects_a_frozen_master(start_slave: StartSlave) -> None:
    port = free_port()
    master = await asyncio.to_thread(start_master, port, "frozen")
    try:
        slave = await start_slave(hip_url(port), "watcher", heartbeat=0.5)
        pending = asyncio.create_task(slave.call("sleep_echo", {"delay": 3, "value": "late"}))
        assert await slave.call("echo", 1) == 1
        master.process.send_signal(signal.SIGSTOP)
        with pytest.raises(HipError, match="lost"):
            await asyncio.wait_for(pending, 5)
    finally:
        master.process.send_signal(signal.SIGCONT)
        master.stop()


async def test_master_redirects_clients_at_handshake(
    alpha: int, beta: int, start_slave: StartSlave
) -> None:
    slave = await start_slave(hip_url(alpha), "inserter", role="client")
    assert slave.url == hip_url(beta)
    assert slave.peer is not None and slave.peer.name == "beta"
    assert await slave.call("whoami") == {
        "master": "beta",
        "slave": "inserter",
        "role": "client",
        "format": "json",
    }


async def test_master_redirects_a_connected_slave(
    alpha: int, beta: int, start_slave: StartSlave
) -> None:
    masters: asyncio.Queue[str] = asyncio.Queue()

    async def connected(peer: Peer) -> None:
        masters.put_nowait(peer.name)

    slave = await start_slave(hip_url(alpha), "mover", on_connect=connected)
    assert await asyncio.wait_for(masters.get(), 5) == "alpha"
    await slave.notify("redirect_me", {"url": hip_url(beta)})
    assert await asyncio.wait_for(masters.get(), 5) == "beta"
    assert slave.url == hip_url(beta)
    assert (await slave.call("whoami"))["master"] == "beta"
