"""A storage node on a small disk that fills up: it refuses new writes at its reserve, before
writing anything, and a write the disk fails midway leaves nothing behind."""

import errno
import hashlib
import os
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from archive import pack
from archive.config import ClusterConfig
from archive.timestamps import parse_time
from archive.urlkey import structure_name
from deploy.testing.cluster import NodeProcess
from deploy.testing.disk import stored_spans
from storage_node.inventory import InventoryLog
from storage_node.volumes import Volumes
from tests.small_disk import MIB, fill, free_space, small_disk, unfill

HEADER = hashlib.sha256(b"HTTP/1.1 200 OK\r\n\r\n").hexdigest()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def content_url(node: NodeProcess, data: bytes) -> str:
    return f"{node.url}/content/{sha(data)}"


def auth(config: ClusterConfig) -> dict[str, str]:
    return {"Authorization": f"Bearer {config.write_token}"}


def record(second: int) -> dict[str, object]:
    content = sha(str(second).encode())
    return {
        "time": parse_time(f"2020-01-01T00:00:{second:02d}"),
        "content": content,
        "header": HEADER,
        "status": 200,
    }


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_disk(tmp_path / "full") as path:
        yield path


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


async def send(
    session: aiohttp.ClientSession, config: ClusterConfig, method: str, url: str, **body: Any
) -> tuple[int, dict[str, Any]]:
    """A request to a node with the cluster's write token; its status and JSON answer."""
    async with session.request(method, url, headers=auth(config), **body) as r:
        return r.status, await r.json()


def what_is_written(root: Path) -> dict[str, int]:
    """Every file a node keeps its contents in, with its size (temporary files included)."""
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def refusal(status: int, answer: dict[str, str]) -> str:
    """The message of a 507 answer, which must name the free space and the reserve."""
    assert status == 507, answer
    message = answer["error"]
    assert "disk full" in message and "free" in message and "reserve" in message, message
    return message


async def test_a_node_at_its_reserve_refuses_new_files_before_writing_any(
    node_factory: Callable[..., NodeProcess],
    cluster: tuple[Path, ClusterConfig],
    disk: Path,
    session: aiohttp.ClientSession,
) -> None:
    config = cluster[1]
    node = node_factory("full", None, "--reserve", "8M")
    url = "http://full.example/held"
    held = structure_name(url)
    body = {"url": url, "records": [record(1)]}
    status, answer = await send(session, config, "POST", f"{node.url}/structure/{held}", json=body)
    assert status == 200 and answer["created"], answer
    fill(disk, 6 * MIB)
    contents_before = what_is_written(disk / "content")

    small, large = os.urandom(10_000), os.urandom(2 * MIB)
    for data in (small, large):
        message = refusal(*await send(session, config, "PUT", content_url(node, data), data=data))
    assert "6.0 MiB free" in message and "reserve 8.0 MiB" in message
    packed = pack.encode_frame(sha(small), small)
    refusal(*await send(session, config, "POST", f"{node.url}/contents", data=packed))
    new_url = "http://full.example/new"
    new = structure_name(new_url)
    body = {"url": new_url, "records": [record(2)]}
    refusal(*await send(session, config, "POST", f"{node.url}/structure/{new}", json=body))

    # Appends to a file held go on in the lower half of the reserve; a new file in a batch is
    # refused on its own.
    files = [{"name": new, **body}, {"name": held, "url": url, "records": [record(3)]}]
    status, answer = await send(
        session, config, "POST", f"{node.url}/structures", json={"files": files}
    )
    assert status == 200, answer
    created, appended = answer["results"]
    assert created["status"] == 507 and "disk full" in created["error"]
    assert appended == {"name": held, "added": 1, "created": False}

    assert what_is_written(disk / "content") == contents_before
    assert not list((disk / "structure" / ".tmp").iterdir())
    assert set(stored_spans(disk, "structure")) == {held}
    async with session.get(f"{node.url}/status") as r:
        status = await r.json()
    assert status["disk"]["full"] is True and status["disk"]["reserve"] == 8 * MIB
    assert status["files"] == {"content": 0, "structure": 1}

    # Under half the reserve, appends are refused too.
    fill(disk, 3 * MIB)
    body = {"url": url, "records": [record(4)]}
    answer = await send(session, config, "POST", f"{node.url}/structure/{held}", json=body)
    assert "changes of files held" in refusal(*answer)

    unfill(disk)
    status, answer = await send(session, config, "PUT", content_url(node, small), data=small)
    assert status == 201, answer
    async with session.get(f"{node.url}/status") as r:
        assert (await r.json())["disk"]["full"] is False


async def test_a_write_the_disk_fails_midway_is_refused_and_leaves_nothing(
    node_factory: Callable[..., NodeProcess],
    cluster: tuple[Path, ClusterConfig],
    disk: Path,
    session: aiohttp.ClientSession,
) -> None:
    config = cluster[1]
    # No reserve: only the disk itself stops the write.
    node = node_factory("full", None, "--reserve", "0")
    fill(disk, 10 * MIB)
    data = os.urandom(16 * MIB)

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(data), 256 * 1024):
            yield data[start : start + 256 * 1024]

    # Streamed without a length, so nothing tells the node beforehand that it will not fit.
    message = refusal(*await send(session, config, "PUT", content_url(node, data), data=chunks()))
    assert "nothing of it was kept" in message
    assert not list((disk / "content" / ".tmp").iterdir())
    assert stored_spans(disk) == {}
    assert free_space(disk) >= 10 * MIB - 64 * 1024

    # A pack says its size: refused before it is written.
    big = [os.urandom(900_000) for _ in range(12)]
    packed = b"".join(pack.encode_frame(sha(d), d) for d in big)
    answer = await send(session, config, "POST", f"{node.url}/contents", data=packed)
    assert "new files (10.3 MiB more)" in refusal(*answer)
    assert stored_spans(disk) == {}

    small = os.urandom(MIB)
    status, answer = await send(session, config, "PUT", content_url(node, small), data=small)
    assert status == 201, answer
    assert set(stored_spans(disk)) == {sha(small)}


def test_a_volume_write_cut_short_by_a_full_disk_is_undone(disk: Path) -> None:
    volumes = Volumes(disk / "volumes")
    kept = os.urandom(100_000)
    volumes.stage_many([(sha(kept), kept)])[0].place()
    (volume,) = (disk / "volumes").glob("*.vol")
    length = volume.stat().st_size
    fill(disk, MIB)
    files = [os.urandom(400_000) for _ in range(4)]
    with pytest.raises(OSError) as failure:
        volumes.stage_many([(sha(d), d) for d in files])
    assert failure.value.errno == errno.ENOSPC
    assert volume.stat().st_size == length
    unfill(disk)
    more = os.urandom(1000)
    volumes.stage_many([(sha(more), more)])[0].place()
    volumes.close()
    reopened = Volumes(disk / "volumes")
    assert sorted(reopened.names()) == sorted([sha(kept), sha(more)])
    assert all(reopened.span(sha(d)).read() == d for d in (kept, more))  # type: ignore[union-attr]
    reopened.close()


def test_an_inventory_line_cut_short_by_a_full_disk_is_undone(disk: Path) -> None:
    names = [f"{i:064x}" for i in range(400)]
    with ThreadPoolExecutor(1) as executor:
        log = InventoryLog(disk / "inventory.log", executor)
        log.append("add", "content", names[0], 1)
        length = (disk / "inventory.log").stat().st_size
        fill(disk, 0)
        with pytest.raises(OSError) as failure:
            log.append_many("add", "content", [(name, 1) for name in names[1:]])
        assert failure.value.errno == errno.ENOSPC
        assert (disk / "inventory.log").stat().st_size == length and log.seq == 1
        unfill(disk)
        log.append("add", "content", names[1], 1)
        log.close()
        reopened = InventoryLog(disk / "inventory.log", executor)
        assert [(e.seq, e.name) for e in reopened.read_since(0, 10)] == [
            (1, names[0]),
            (2, names[1]),
        ]
        reopened.close()
