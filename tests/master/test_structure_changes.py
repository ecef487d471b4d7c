"""How the master follows where a structure file's records are, without processes: which copy is
active when the active one moves or is lost, and what an index node's `structure.changed` says
about the copies it appended to (docs/cluster.md, "merge")."""

import asyncio
import hashlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from archive.config import ClusterConfig, Replication
from master.db import FileRef, MasterDB, NodeRow
from master.service import Master, MasterOptions

NAME = hashlib.sha256(b"http://example.org/page").hexdigest()
NODES = ("n1", "n2", "n3", "n4")
INDEX: Any = SimpleNamespace(role="index", name="index-1", closed=False)


def link(node: str) -> Any:
    return SimpleNamespace(role="storage", name=node, closed=False)


@pytest.fixture
def master(tmp_path: Path) -> Iterator[Master]:
    """A master that knows four nodes in four failure domains, none connected, and a structure
    file held by n1 (its active copy), n2 and n3."""
    db = MasterDB(tmp_path / "master.db")
    for node in NODES:
        db.save_node(NodeRow(node, f"http://{node}", domain=f"rack-{node}"))
    db.close()
    config = ClusterConfig(
        name="t", secret=b"s" * 16, master="http://127.0.0.1:9", replication=Replication(default=2)
    )
    made = Master(MasterOptions(tmp_path, "127.0.0.1", 0, config))
    targets = made.targets
    for node in ("n1", "n2", "n3"):
        entry = {"op": "add", "kind": "structure", "name": NAME, "size": 100}
        made.db.apply_inventory(node, [entry], 1, targets)
        made.members.rows[node].seq = 1
    made.db.set_active([(NAME, "n1")])
    yield made
    made.close()


def diverged(master: Master) -> set[str]:
    return master.db.diverged_on(NAME)


async def test_a_claim_that_moves_the_active_copy_merges_every_other_copy(master: Master) -> None:
    """n1 is lost: n2 becomes active. n1 may hold the last appends, n3 (a replica that took them
    for the write quorum) too, where n2 lacks them: both are merged into n2 before a refresh."""
    for node in ("n2", "n3", "n4"):
        master.members.links[node] = link(node)
    answer = await master._structure_claim(INDEX, {"names": [NAME]})
    assert answer["nodes"] == {NAME: "http://n2"}
    assert master.db.active_node(NAME) == "n2"
    assert diverged(master) == {"n1", "n3"}


async def test_a_new_active_copy_on_a_node_that_held_none_merges_every_old_one(
    master: Master,
) -> None:
    master.members.links["n4"] = link("n4")
    answer = await master._structure_claim(INDEX, {"names": [NAME]})
    assert answer["nodes"] == {NAME: "http://n4"}
    assert diverged(master) == {"n1", "n2", "n3"}


async def test_records_appended_to_a_copy_that_is_no_longer_active_are_merged(
    master: Master,
) -> None:
    """The index node appended to n2 as it had cached it, with a new partial copy on n4, while
    the master had made n1 active: both took records n1 lacks."""
    params = {
        "names": [NAME],
        "copies": {NAME: {"active": ["http://n2"], "others": ["http://n4"]}},
    }
    assert await master._structure_changed(INDEX, params) == {}
    assert diverged(master) == {"n2", "n4"}
    assert sorted(master.db.holders("structure", NAME)) == ["n1", "n2", "n3", "n4"]
    assert master.db.dirty_among([NAME]) == {NAME}


async def test_a_copy_created_for_the_write_quorum_is_refreshed_with_the_others(
    master: Master,
) -> None:
    """Appended to the active copy and to a partial copy the index node started on n4 (n2 did
    not answer): nothing diverged, and n4's copy, unknown until its node's inventory says so, is
    a holder at once, so the refresh this change asks for replaces it too."""
    params = {
        "names": [NAME],
        "copies": {NAME: {"active": ["http://n1"], "others": ["http://n4"]}},
    }
    await master._structure_changed(INDEX, params)
    assert diverged(master) == set()
    assert "n4" in master.db.holders("structure", NAME)
    # Without copies (an older index node, or an insert whose appends failed): only marked.
    await master._structure_changed(INDEX, {"names": [NAME]})
    assert diverged(master) == set()
    assert master.db.dirty_among([NAME]) == {NAME}


async def test_a_lost_active_copy_hands_its_place_to_another_holder(master: Master) -> None:
    """n1's scrub found its copy bad: a readable holder's copy becomes active, and the other
    holder's is merged into it (either may hold records the other lacks)."""
    master.members.links["n3"] = link("n3")
    master.members.links["n1"] = n1 = link("n1")
    await master._node_scrubbed(n1, {"checked": 1, "bad": [{"kind": "structure", "name": NAME}]})
    assert master.db.active_node(NAME) == "n3"
    assert diverged(master) == {"n2"}
    assert master.db.dirty_among([NAME]) == {NAME}


class Node(SimpleNamespace):
    """A storage node's end of its HIP link, as the master's handlers use it."""

    async def notify(self, method: str, params: Any) -> None:
        self.told.append((method, params))


async def test_a_copy_a_node_made_while_the_master_could_not_hear_is_merged(
    master: Master,
) -> None:
    """n3 created a copy of OTHER (an insert's active copy, say) and was lost before its
    inventory said so; the master made n2's copy active meanwhile. Back, n3 reports it among
    the entries from before its join: it may hold records n2 lacks, and lacks those appended
    since, so it is merged into n2, then refreshed. A copy made after the join is not."""
    other, later = (hashlib.sha256(url).hexdigest() for url in (b"other", b"later"))
    entry = {"op": "add", "kind": "structure", "size": 100, "time": 0}
    master.db.apply_inventory("n2", [{**entry, "name": other}], 2, master.targets)
    master.db.set_active([(other, "n2"), (later, "n2")])
    n3: Any = Node(role="storage", name="n3", closed=False, told=[])
    joined = await master._node_join(n3, {"id": "n3", "address": "http://n3", "seq": 7})
    assert joined["since"] == 1
    batch = [{**entry, "name": other, "seq": 7}, {**entry, "name": later, "seq": 8}]
    await master._node_inventory(n3, {"id": "n3", "entries": batch, "seq": 8})
    assert master.db.diverged_on(other) == {"n3"}
    assert master.db.diverged_on(later) == set()


async def test_a_refresh_clears_its_mark_only_once_its_copies_are_made(master: Master) -> None:
    """Until the copies over n2 and n3 are made, the file stays marked: a master that dies
    meanwhile refreshes them when it is back. A change told while they are made keeps the mark
    too, for the copies to be made again with its records."""
    for node in ("n1", "n2", "n3"):
        master.members.links[node] = link(node)
    seen: list[bool] = []
    outcome = {"n2": (1, 0), "n3": (0, 1)}

    async def fetch(dst: str, files: list[Any]) -> tuple[int, int]:
        seen.append(master.db.dirty_among([NAME]) == {NAME})
        return outcome[dst]

    master.copier.fetch = fetch  # type: ignore[method-assign]
    master.db.mark_dirty([NAME])
    assert not await master.repairer.refresh_structures()  # n3 refused its copy
    assert seen == [True, True]
    assert master.db.dirty_among([NAME]) == {NAME}

    outcome["n3"] = (1, 0)

    async def fetch_while_changed(dst: str, files: list[Any]) -> tuple[int, int]:
        master.db.mark_dirty([NAME])  # an insert's change, told while the copies are made
        return outcome[dst]

    master.copier.fetch = fetch_while_changed  # type: ignore[method-assign]
    assert await master.repairer.refresh_structures()  # copied, and to be copied again at once
    assert master.db.dirty_among([NAME]) == {NAME}

    master.copier.fetch = fetch  # type: ignore[method-assign]
    assert await master.repairer.refresh_structures()
    assert master.db.dirty_among([NAME]) == set()


class Fetcher:
    """A storage node's end of its HIP link that takes `fetch` orders: each is recorded, and
    the first waits for `hold` when one is set (a copy on its way)."""

    role = "storage"
    closed = False

    def __init__(self, name: str, hold: asyncio.Event | None = None) -> None:
        self.name = name
        self.hold = hold
        self.orders: list[list[str]] = []

    async def call(self, method: str, params: Any, timeout: float | None = None) -> Any:
        names = [item["name"] for item in params["files"]]
        self.orders.append([item["source"] for item in params["files"]])
        hold, self.hold = self.hold, None
        if hold is not None:
            await hold.wait()
        return {"fetched": names, "failed": []}


async def test_a_refresh_reaches_a_copy_on_its_way(master: Master) -> None:
    """A copy to n4 is being made when an insert changes the file: the refresh it asks for
    copies the active copy to n4 as well, which keeps the records of both."""
    hold = asyncio.Event()
    for node in ("n1", "n2", "n3"):
        master.members.links[node] = Fetcher(node)  # type: ignore[assignment]
    master.members.links["n4"] = n4 = Fetcher("n4", hold)  # type: ignore[assignment]
    copying = asyncio.ensure_future(
        master.copier.fetch("n4", [(FileRef("structure", NAME, 0), "n1")])
    )
    await asyncio.sleep(0)
    master.db.mark_dirty([NAME])
    assert await master.repairer.refresh_structures()
    assert n4.orders == [["http://n1"], ["http://n1"]]
    hold.set()
    assert await copying == (1, 0)
    assert master.copier.arriving == {}
