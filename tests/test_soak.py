"""A minute of the fault soak (deploy/testing/nemesis.py, docs/soak.md) with a fixed seed: faults
that replica 2 tolerates, one at a time, must cost no acknowledged capture."""

from pathlib import Path

import pytest

from deploy.testing.nemesis import soak

# Its minute makes every kind of fault: storage nodes killed, paused and filled, bytes flipped,
# the index node and the master killed.
SEED = 297


@pytest.mark.timeout(300)  # 60 s of faults, then healing, repairs and reading everything back
async def test_no_acknowledged_capture_is_lost_to_faults_replica_2_tolerates(
    tmp_path: Path,
) -> None:
    report = await soak(60, SEED, tmp_path, settle=45)
    assert report.acknowledged > 0, report.line
    assert not report.lost, report.line
    assert not report.unreadable, report.line
    assert report.at_target, "some files did not get back to their replica target"
    assert not report.crashed, f"processes crashed: {report.crashed}"
