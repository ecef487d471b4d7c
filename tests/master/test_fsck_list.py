"""`dlweb admin fsck --all` lists every file below target after the summary, as the master finds
them a page at a time (`GET /admin/fsck/problems`, one JSON object a line), and a list that was
stopped resumes after the last file it gave."""

import hashlib
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from archive.cluster import ClusterClient
from deploy.testing.cluster import Cluster
from master.db import MasterDB, Problem
from tests.deploy.run_dlweb import dlweb
from tests.master.conftest import make_corpus


def names(count: int) -> list[str]:
    return [hashlib.sha256(str(i).encode()).hexdigest() for i in range(count)]


def test_pages_of_files_below_target_resume_after_their_last_file(tmp_path: Path) -> None:
    db = MasterDB(tmp_path / "m.db")
    files = names(50)
    entries = [{"op": "add", "kind": "content", "name": name, "size": 10} for name in files]
    db.apply_inventory("a", entries, 50, lambda kind, size, refs: 2)
    db.record_review([Problem("content", n, 1, 2, 10, "repairing") for n in files[20:]], [], [], [])
    walked: list[str] = []
    after = ("", "")
    while page := db.short_after(after, 7):
        walked += [problem.name for problem in page]
        after = (page[-1].kind, page[-1].name)
    assert walked == sorted(files[20:])
    db.close()


def problems(cluster: Cluster, query: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{cluster.master.url}/admin/fsck/problems{query}") as answer:
        assert answer.headers["Content-Type"] == "application/x-ndjson"
        return [json.loads(line) for line in answer]


async def test_the_list_streams_every_file_below_target_and_resumes(
    cluster_factory, metadata: Path | str
) -> None:
    # Three copies wanted, but node3 takes no new files: every file stays at two, and no copy
    # can be placed.
    cluster = cluster_factory(nodes=3, replicas=3, metadata=metadata)
    cluster.post("/admin/nodes/node3/state", {"state": "read-only"})
    corpus = make_corpus(30, urls=30)
    async with ClusterClient(cluster.config) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)
    contents = set(corpus.bodies)
    status = cluster.wait_for(
        lambda s: (
            s["files"]["content"] >= len(contents)
            and s["below_target_causes"]["cannot_place"]
            == s["files"]["content"] + s["files"]["structure"]
            and s["repairs"]["to_check"] == 0
        ),
        "every file to be found below target",
    )
    total = status["below_target"]

    first = problems(cluster, "?limit=7")
    assert len(first) == 8 and first[-1]["next"] == f"{first[-2]['kind']}/{first[-2]['name']}"
    rest = problems(cluster, f"?after={first[-1]['next']}")
    assert rest[-1] == {"next": None}
    listed = first[:-1] + rest[:-1]
    assert len(listed) == total
    assert [p["name"] for p in listed] == sorted(p["name"] for p in listed)
    assert contents <= {p["name"] for p in listed if p["kind"] == "content"}
    assert {(p["replicas"], p["target"], p["cause"]) for p in listed} == {(2, 3, "cannot_place")}

    config = str(cluster.config_path)
    shown = dlweb("admin", "fsck", "-c", config, "--all", "--json", check=False)
    assert shown.returncode == 1, shown.stderr
    summary, *each = (json.loads(line) for line in shown.stdout.splitlines())
    assert summary["below_target"] == total and each == listed
    resumed = dlweb("admin", "fsck", "-c", config, "--after", first[-1]["next"], check=False)
    _, heading, listed_after = resumed.stdout.partition(
        f"files below target after {first[-1]['next']}:"
    )
    assert heading and listed_after.count(" of 3 replicas (cannot be placed)") == len(rest) - 1


@pytest.mark.parametrize(
    "query", ["?after=content", "?after=blob/" + "0" * 64, "?after=content/xyz", "?limit=0"]
)
def test_a_bad_cursor_or_limit_gets_a_clear_400(cluster_factory, query: str) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{cluster.master.url}/admin/fsck/problems{query}")
    assert refused.value.code == 400
    assert "must be" in json.loads(refused.value.read())["error"]
