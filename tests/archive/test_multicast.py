"""Multicast lookup over real UDP multicast on loopback, each responder in a process of its own."""

import asyncio
import hmac
import os
import random
import secrets
import socket
import struct
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from archive.errors import BadName, ConfigError
from archive.multicast import (
    LATE_SHARE,
    Answer,
    LookupClient,
    MulticastSettings,
    Responder,
    group_for,
)
from deploy.testing.ports import free_port

REPO = Path(__file__).resolve().parents[2]
AGENT = Path(__file__).with_name("multicast_agents.py")
SECRET = b"cluster secret of the multicast tests"
WAIT = 0.3
PATIENCE = 20.0
HEADER = struct.Struct("!4sBBBQ32s")
KIND_CODES = {"content": 1, "structure": 2}


def name_in_group(first_byte: int) -> str:
    """A random valid file name whose lookup goes to group `first_byte`."""
    return f"{first_byte:02x}" + secrets.token_hex(31)


def group_listener(settings: MulticastSettings, name: str) -> socket.socket:
    """A plain socket that receives the lookups for `name`, as any host on the LAN could."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("0.0.0.0", settings.port))
    membership = socket.inet_aton(group_for(name, settings)) + socket.inet_aton("127.0.0.1")
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
    sock.setblocking(False)
    return sock


def signed(body: bytes, secret: bytes = SECRET) -> bytes:
    return body + hmac.digest(secret, body, "sha256")


def answer_body(request_id: int, kind: str, name: str, node: str, address: str) -> bytes:
    """An answer datagram without its HMAC, laid out as the module docstring documents."""
    header = HEADER.pack(b"DLMC", 1, 2, KIND_CODES[kind], request_id, bytes.fromhex(name))
    fields = [value.encode() for value in (node, address)]
    return header + b"".join(bytes([len(value)]) + value for value in fields)


def request_body(name: str, **changes: Any) -> bytes:
    """A request datagram without its HMAC, with some header fields changed."""
    values = {"magic": b"DLMC", "version": 1, "type": 1, "kind": 1, "request_id": 42}
    values.update(changes)
    return HEADER.pack(*values.values(), bytes.fromhex(name))


@dataclass
class Agent:
    node: str
    address: str
    process: asyncio.subprocess.Process
    groups: int = 0

    def answer(self, kind: str, name: str) -> Answer:
        return Answer(self.node, self.address, kind, name)

    async def stop(self) -> dict[str, int]:
        """Close the agent's standard input and read the counters it prints as it exits."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        line = await asyncio.wait_for(self.process.stdout.readline(), PATIENCE)
        await self.process.wait()
        pairs = (item.split("=") for item in line.decode().split())
        return {key: int(value) for key, value in pairs}


class SpawnAgent(Protocol):
    async def __call__(
        self,
        node: str,
        held: list[tuple[str, str]],
        join: str = "all",
        secret: bytes = SECRET,
        stale_after: float | None = None,
    ) -> Agent: ...


@pytest.fixture
def settings() -> MulticastSettings:
    base = f"230.{random.randrange(256)}.{random.randrange(256)}.0"
    return MulticastSettings(group_base=base, port=free_port(socket.SOCK_DGRAM), wait=WAIT)


@pytest.fixture
async def client(settings: MulticastSettings) -> AsyncIterator[LookupClient]:
    lookup = LookupClient(settings, SECRET)
    await lookup.start()
    yield lookup
    await lookup.close()


@pytest.fixture
async def spawn(settings: MulticastSettings, tmp_path: Path) -> AsyncIterator[SpawnAgent]:
    agents: list[Agent] = []
    python_path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

    async def start(
        node: str,
        held: list[tuple[str, str]],
        join: str = "all",
        secret: bytes = SECRET,
        stale_after: float | None = None,
    ) -> Agent:
        """An agent holding `held`; with `stale_after`, its copies are stale and answered that
        many seconds late."""
        late = [] if stale_after is None else ["--stale", "--wait", str(stale_after / LATE_SHARE)]
        held_file = tmp_path / f"{node}.held"
        held_file.write_text("".join(f"{kind} {name}\n" for kind, name in held))
        address = f"http://127.0.0.1:{8101 + len(agents)}"
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(AGENT),
            str(settings.port),
            settings.group_base,
            secret.hex(),
            node,
            address,
            str(held_file),
            join,
            *late,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": python_path},
        )
        agent = Agent(node, address, process)
        agents.append(agent)
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), PATIENCE)
        assert line.startswith(b"READY groups="), line
        agent.groups = int(line.split(b"=")[1])
        return agent

    yield start
    for agent in agents:
        if agent.process.returncode is None:
            agent.process.kill()
            await agent.process.wait()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("group_base", "230.0.0.1"),
        ("group_base", "10.0.0.0"),
        ("group_base", "224.0.0.0"),
        ("group_base", "not an address"),
        ("interface", "230.0.0.9"),
        ("interface", "localhost"),
        ("port", 0),
        ("port", 70000),
        ("port", "47800"),
        ("ttl", 256),
        ("ttl", -1),
        ("wait", 0),
        ("wait", float("nan")),
        ("wait", 3600),
        ("join", "some"),
    ],
)
def test_settings_reject_bad_values(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=field):
        MulticastSettings(**{field: value})  # type: ignore[arg-type]


def test_group_is_base_plus_first_byte_of_name() -> None:
    assert group_for("a3" + "0" * 62, MulticastSettings()) == "230.0.0.163"
    other = MulticastSettings(group_base="239.5.6.0")
    assert group_for("00" + "f" * 62, other) == "239.5.6.0"
    assert group_for("ff" + "0" * 62, other) == "239.5.6.255"
    with pytest.raises(BadName):
        group_for("A3" + "0" * 62, other)


def test_secrets_and_identities_are_checked() -> None:
    with pytest.raises(ConfigError, match="secret"):
        LookupClient(MulticastSettings(), b"")
    with pytest.raises(ConfigError, match="node id"):
        Responder(MulticastSettings(), SECRET, "", "http://127.0.0.1:8101", lambda k, n: True)
    with pytest.raises(ConfigError, match="HTTP address"):
        Responder(MulticastSettings(), SECRET, "n", "h" * 256, lambda k, n: True)
    responder = Responder(MulticastSettings(), SECRET, "n", "http://x", lambda k, n: True)
    with pytest.raises(ValueError, match="256"):
        responder.join_groups([256])


async def test_each_file_is_located_on_its_holders(spawn: SpawnAgent, client: LookupClient) -> None:
    only_a, only_b, both, nobody = (name_in_group(byte) for byte in (0x11, 0x22, 0x33, 0x44))
    structure = name_in_group(0x11)
    a = await spawn("node-a", [("content", only_a), ("content", both), ("structure", structure)])
    b = await spawn("node-b", [("content", only_b), ("content", both)])

    results = await asyncio.gather(
        client.locate("content", only_a),
        client.locate("content", only_b),
        client.locate("content", both),
        client.locate("content", nobody),
        client.locate("structure", structure),
        client.locate("content", structure),
    )

    assert results[0] == [a.answer("content", only_a)]
    assert results[1] == [b.answer("content", only_b)]
    assert sorted(results[2], key=lambda answer: answer.node) == [
        a.answer("content", both),
        b.answer("content", both),
    ]
    assert results[3] == []
    assert results[4] == [a.answer("structure", structure)]
    assert results[5] == []


async def test_concurrent_lookups_get_their_own_answers(
    spawn: SpawnAgent, client: LookupClient
) -> None:
    names_a = [name_in_group(random.randrange(256)) for _ in range(40)]
    names_b = [name_in_group(random.randrange(256)) for _ in range(40)]
    a = await spawn("node-a", [("content", name) for name in names_a])
    b = await spawn("node-b", [("content", name) for name in names_b])

    results = await asyncio.gather(*(client.locate("content", name) for name in names_a + names_b))

    expected = [[a.answer("content", name)] for name in names_a]
    expected += [[b.answer("content", name)] for name in names_b]
    assert results == expected
    assert client.answers == 80


async def test_first_returns_on_the_first_answer(spawn: SpawnAgent, client: LookupClient) -> None:
    name = name_in_group(0x42)
    agent = await spawn("node", [("content", name)])

    lookup = client.locate("content", name, wait=30, first=True)
    answers = await asyncio.wait_for(lookup, PATIENCE / 2)

    assert answers == [agent.answer("content", name)]


async def test_a_stale_copy_answers_after_the_fresh_one(
    spawn: SpawnAgent, client: LookupClient
) -> None:
    name = name_in_group(0x44)
    stale = await spawn("stale", [("structure", name)], stale_after=1.0)
    fresh = await spawn("fresh", [("structure", name)])

    first = await client.locate("structure", name, wait=30, first=True)
    assert first == [fresh.answer("structure", name)]
    # A reader that waits long enough gets the stale copy too, after the fresh one.
    every = await client.locate("structure", name, wait=2.0)
    assert every == [fresh.answer("structure", name), stale.answer("structure", name)]
    assert (await stale.stop())["late"] == 2
    assert (await fresh.stop())["late"] == 0


async def test_held_join_mode_receives_only_its_groups(
    spawn: SpawnAgent, client: LookupClient
) -> None:
    mine, elsewhere = name_in_group(0x10), name_in_group(0x20)
    held = await spawn("held", [("content", mine)], join="held")
    other = await spawn("other", [("content", elsewhere)])
    assert held.groups == 1

    assert await client.locate("content", elsewhere) == [other.answer("content", elsewhere)]
    assert await client.locate("content", mine) == [held.answer("content", mine)]

    counters = await held.stop()
    assert counters["requests"] == 1


async def test_all_256_groups_joined_in_one_process(
    spawn: SpawnAgent, client: LookupClient
) -> None:
    low, high = name_in_group(0), name_in_group(255)
    agent = await spawn("all", [("content", low), ("content", high)])
    assert agent.groups == 256

    results = await asyncio.gather(client.locate("content", low), client.locate("content", high))

    assert list(results) == [[agent.answer("content", low)], [agent.answer("content", high)]]
    counters = await agent.stop()
    assert counters["requests"] == 2


async def test_spoofed_answers_are_ignored(
    settings: MulticastSettings, spawn: SpawnAgent, client: LookupClient
) -> None:
    name = name_in_group(0x5A)
    agent = await spawn("genuine", [("content", name)])
    spy = group_listener(settings, name)
    try:
        lookup = asyncio.create_task(client.locate("content", name, wait=0.5))
        request, asker = await asyncio.wait_for(
            asyncio.get_running_loop().sock_recvfrom(spy, 2048), PATIENCE
        )
        request_id = HEADER.unpack_from(request)[4]
        evil = "http://203.0.113.9:80"
        forgeries = [
            answer_body(request_id, "content", name, "mallory", evil) + os.urandom(32),
            signed(answer_body(request_id, "content", name, "mallory", evil), b"guessed secret"),
            answer_body(request_id, "content", name, "mallory", evil),
            signed(answer_body(request_id ^ 1, "content", name, "mallory", evil)),
            signed(answer_body(request_id, "content", name_in_group(0x5A), "mallory", evil)),
            signed(answer_body(request_id, "structure", name, "mallory", evil)),
        ]
        insider = signed(answer_body(request_id, "content", name, "insider", "http://10.0.0.7"))
        for datagram in [*forgeries, insider]:
            spy.sendto(datagram, asker)
        answers = await lookup
    finally:
        spy.close()

    assert sorted(answers, key=lambda answer: answer.node) == [
        agent.answer("content", name),
        Answer("insider", "http://10.0.0.7", "content", name),
    ]
    assert client.rejected == len(forgeries)


async def test_request_signed_with_a_wrong_secret_gets_no_answer(
    settings: MulticastSettings, spawn: SpawnAgent, client: LookupClient
) -> None:
    name = name_in_group(0x99)
    agent = await spawn("node", [("content", name)])
    stranger = LookupClient(settings, b"not the cluster secret")
    await stranger.start()
    try:
        assert await stranger.locate("content", name) == []
    finally:
        await stranger.close()

    assert await client.locate("content", name) == [agent.answer("content", name)]
    counters = await agent.stop()
    assert counters == {"requests": 1, "answers": 1, "late": 0, "rejected": 1}


async def test_garbage_datagrams_do_not_kill_the_responder(
    settings: MulticastSettings, spawn: SpawnAgent, client: LookupClient
) -> None:
    name = name_in_group(0x77)
    agent = await spawn("node", [("content", name)])
    garbage = [
        b"",
        b"\x00",
        os.urandom(79),
        os.urandom(60000),
        signed(request_body(name, magic=b"XXXX")),
        signed(request_body(name, version=2)),
        signed(request_body(name, type=9)),
        signed(request_body(name, kind=0)),
        signed(request_body(name, kind=3)),
        signed(request_body(name))[:-1],
        signed(request_body(name)) + bytes(1000),
        signed(answer_body(42, "content", name, "node", "http://127.0.0.1:1")),
    ]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        for datagram in garbage:
            sender.sendto(datagram, (group_for(name, settings), settings.port))

    assert await client.locate("content", name) == [agent.answer("content", name)]
    counters = await agent.stop()
    assert counters == {"requests": 1, "answers": 1, "late": 0, "rejected": len(garbage)}


async def test_bad_names_raise_before_anything_is_sent(
    settings: MulticastSettings, client: LookupClient
) -> None:
    valid = "ab" * 32
    bad_names = [
        "",
        "ab",
        "AB" * 32,
        "ab" * 31 + "a",
        "ab" * 32 + "a",
        "ab" * 31 + "ag",
        "ab" * 31 + "a ",
        "ab" * 31 + "a\n",
        "ab" * 31 + "a\u0661",
    ]
    spy = group_listener(settings, valid)
    try:
        for name in bad_names:
            with pytest.raises(BadName):
                await client.locate("content", name)
        with pytest.raises(ValueError, match="kind"):
            await client.locate("index", valid)
        assert await client.locate("content", valid, wait=0.05) == []
        received = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(spy, 2048), 5)
        with pytest.raises(BlockingIOError):
            spy.recv(2048)
    finally:
        spy.close()

    assert HEADER.unpack_from(received)[5] == bytes.fromhex(valid)
