"""The master's HTTP answers typed in archive/master_answers.py: their JSON in field order, read
back whole, and a bad one refused naming the field."""

import json

import pytest

from archive.hip import RemoteError
from archive.master_answers import (
    BelowTarget,
    FileBelowTarget,
    FileCounts,
    FsckReport,
    IndexStatus,
    MoveProgress,
    MoveSummary,
    NodeScrub,
    NodeStatus,
    Placing,
    Rebalance,
    RebalancePlan,
    Scrubbing,
    ToCheck,
)

NODE = NodeStatus(
    "node1", "http://n1", "default", "normal", "draining", "draining", None,
    10, 20, 1, False, (3, 4), True, 0, 0, None, drained=True,
)  # fmt: skip


def test_a_node_goes_as_its_fields_in_order_and_comes_back() -> None:
    data = NODE.to_json()
    assert list(data) == [
        "id", "address", "domain", "reliability", "state", "admin_state", "reason", "free",
        "total", "reserve", "full", "groups", "connected", "files", "bytes", "scrub", "drained",
    ]  # fmt: skip
    assert data["groups"] == [3, 4] and data["drained"] is True
    assert NodeStatus.from_json(json.loads(json.dumps(data)), "/status") == NODE


def test_fields_with_their_default_are_left_out() -> None:
    data = {**NODE.to_json()}
    del data["drained"]
    assert NodeStatus.from_json(data, "/status").to_json() == data
    assert Rebalance("idle", plan=RebalancePlan(0, 0, ())).to_json() == {
        "state": "idle",
        "plan": {"files": 0, "bytes": 0, "moves": []},
    }
    scrub = Scrubbing({"n": NodeScrub(False, error="not connected"), "m": NodeScrub(True)})
    assert scrub.to_json() == {
        "scrub": {"n": {"started": False, "error": "not connected"}, "m": {"started": True}}
    }


def test_nested_answers_round_trip() -> None:
    report = FsckReport(
        FileCounts(1, 2), 1, 0, BelowTarget(1, 0, 0), Placing(2, 1), None, 0, 0,
        ToCheck(0, 0, None), False, (FileBelowTarget("content", "a" * 64, 1, 2, "repairing"),),
        {"kinds": {"content": [1, 2]}}, structures_read=3, orphan_names=("b",),
    )  # fmt: skip
    text = json.dumps(report.to_json())
    assert text.index('"totals_drift"') < text.index('"structures_read"')
    assert '"structures_unreadable"' not in text
    assert FsckReport.from_json(json.loads(text), "/admin/fsck") == report
    moving = Rebalance(
        "running", 1.0, 2.0, MoveProgress(1, 0, 0, 5, 0), (MoveSummary("a", "b", 1, 5),)
    )
    assert Rebalance.from_json(moving.to_json(), "/admin/rebalance") == moving


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"files": "1"}, "/status: files must be int"),
        ({"groups": [1, True]}, "/status: groups[1] must be int"),
        ({"scrub": {"finished": 1, "checked": None}}, "/status: scrub has no 'bad'"),
        ({"id": None}, "/status: id must be str"),
    ],
)
def test_a_bad_answer_names_the_field(change: dict[str, object], message: str) -> None:
    with pytest.raises(RemoteError) as caught:
        NodeStatus.from_json({**NODE.to_json(), **change}, "/status")
    assert (caught.value.code, caught.value.message) == ("bad_params", message)


def test_an_answer_that_is_no_object_or_lacks_a_field_is_refused() -> None:
    with pytest.raises(RemoteError, match=r"^/status: the answer must be an object$"):
        IndexStatus.from_json([], "/status")
    with pytest.raises(RemoteError, match=r"^/status: master has no 'connected'$"):
        IndexStatus.from_json({"id": "i", "address": "a", "master": {"url": "u"}}, "/status")
