"""The grace-period clock of the master's membership, on a real database."""

import time
from pathlib import Path
from typing import Any, cast

import pytest

from archive.hip import Peer
from master import membership
from master.db import MasterDB, NodeRow
from master.membership import Membership


class FakePeer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False


def states(members: Membership) -> dict[str, str]:
    return {node: row.state for node, row in members.rows.items()}


def join(members: Membership, node: str) -> Any:
    peer = FakePeer(node)
    members.join(cast(Peer, peer), NodeRow(node, f"http://{node}"), 0)
    return peer


def test_a_restarted_master_waits_longer_than_a_short_grace_for_the_nodes_it_knows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node retries its connection only every few seconds once the master is gone for a
    while: with a grace period shorter than that, a restarted master marked it down on its way
    back, copied its files elsewhere and trimmed them again when it joined."""
    monkeypatch.setattr(membership, "REJOIN", 1.5)
    db = MasterDB(tmp_path / "m.db")
    for node in "ab":
        db.save_node(NodeRow(node, f"http://{node}"))
    members = Membership(db, 0.1, 3600.0, lambda: None)
    members.start()
    started = time.monotonic()
    time.sleep(0.3)
    members.tick()
    assert states(members) == {"a": "alive", "b": "alive"}
    assert members.in_grace()
    # A node that joined since the start and is lost again has the grace period only.
    peer = join(members, "b")
    peer.closed = True
    members.leave(cast(Peer, peer))
    time.sleep(0.15)
    members.tick()
    assert states(members) == {"a": "alive", "b": "down"}
    time.sleep(max(0.0, started + 1.6 - time.monotonic()))
    members.tick()
    assert states(members) == {"a": "down", "b": "down"}
    db.close()


def test_the_clock_of_the_nodes_return_starts_when_the_master_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(membership, "REJOIN", 1.0)
    db = MasterDB(tmp_path / "m.db")
    db.save_node(NodeRow("a", "http://a"))
    members = Membership(db, 0.1, 3600.0, lambda: None)
    time.sleep(0.3)  # opening the database, say
    members.start()
    members.tick()
    assert states(members) == {"a": "alive"}
    time.sleep(1.1)
    members.tick()
    assert states(members) == {"a": "down"}
    db.close()
