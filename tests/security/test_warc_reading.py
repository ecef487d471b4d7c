"""Reading hostile WARC files, header blocks and chunked payloads costs time linear in their
size, whatever their bytes, and memory that does not grow with them; a gzip member inflates no
further than its record.

Each reading runs in a process of its own (tests/security/warc_inputs.py) and is measured in CPU
seconds, which other processes on a loaded machine inflate less than wall time (a shared
core's caches still do, by half seen here); linear is checked as input eight times as large
costing at most twelve times as much (quadratic costs sixty-four times).
"""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from archive.errors import CorruptFile
from archive.header_block import parse_header_block
from tests.security.warc_inputs import folded_block

# A reading that takes longer has hung; the quadratic readings of these inputs took minutes.
READING_TIMEOUT = 60
SLACK = 0.1  # CPU seconds that a process's fixed costs may add to a small reading
MIB = 1024 * 1024


def cost(kind: str, size: int, tmp_path: Path, *memory: str) -> dict[str, Any]:
    """What reading the input `kind` of `size` bytes cost: CPU seconds and the items read, and
    its peak of memory when asked ("memory")."""
    path = str(tmp_path / kind)
    done = subprocess.run(
        [sys.executable, "-m", "tests.security.warc_inputs", kind, str(size), path, *memory],
        capture_output=True,
        text=True,
        timeout=READING_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def assert_linear(kind: str, size: int, tmp_path: Path) -> dict[str, Any]:
    small, large = cost(kind, size, tmp_path), cost(kind, 8 * size, tmp_path)
    assert large["cpu"] <= 12 * small["cpu"] + SLACK, (small["cpu"], large["cpu"])
    return large


@pytest.mark.parametrize(
    ("kind", "size"),
    [("nul-run", 8 * MIB), ("nested-records", 128 * 1024)],
    ids=[
        "a run of NUL bytes and no line break",
        "records nested in records that run past the end of the file",
    ],
)
def test_reading_a_hostile_file_takes_time_linear_in_its_size(
    kind: str, size: int, tmp_path: Path
) -> None:
    read = assert_linear(kind, size, tmp_path)
    # The good record before the damage is read.
    assert "record http://first.example/" in read["items"]


def test_looking_for_the_next_gzip_member_among_a_run_of_gzip_magic_bytes_costs_little(
    tmp_path: Path,
) -> None:
    # Each place that looked like a member was read on with warcio: 16 s for 64 KiB.
    read = cost("gzip-magic-run", MIB, tmp_path)
    assert read["cpu"] < 3
    assert read["items"][0] == "record http://first.example/"
    assert read["items"][-1] == "record http://last.example/"


def test_a_line_of_16_mib_is_not_held_in_memory(tmp_path: Path) -> None:
    read = cost("nul-run", 16 * MIB, tmp_path, "memory")
    assert read["peak"] < 4 * MIB
    assert read["items"][0] == "record http://first.example/"
    assert any("problem" in item for item in read["items"][1:])


def test_a_member_inflating_to_gigabytes_of_blank_lines_is_read_no_further_than_its_record(
    tmp_path: Path,
) -> None:
    # 512 MiB of blank lines from about 500 KB of file: reading them all took 15 s of CPU.
    read = cost("blank-member", 512 * MIB, tmp_path)
    assert read["cpu"] < 2
    assert read["items"] == [
        "record http://first.example/",
        "record http://first.example/",
        "record http://last.example/",
    ]


def test_nul_bytes_a_member_inflates_to_after_its_record_are_a_damaged_record(
    tmp_path: Path,
) -> None:
    read = cost("nul-member", 256 * MIB, tmp_path)
    assert read["cpu"] < 2
    bomb = (tmp_path / "nul-member").read_bytes().index(b"\x1f\x8b", 10)
    first, whole, damaged, last = read["items"]
    assert first == whole == "record http://first.example/"
    assert damaged.startswith(f"problem {bomb} malformed record header: ") and len(damaged) < 300
    assert last == "record http://last.example/"


def test_a_header_block_of_folded_lines_parses_in_one_pass_and_a_larger_one_is_refused(
    tmp_path: Path,
) -> None:
    # Folded lines were joined one by one: 0.7 s for 256 KiB, 20 s for 1 MiB, 3 min for 4 MiB.
    assert cost("folded-block", 256 * 1024, tmp_path)["cpu"] < 0.2
    with pytest.raises(CorruptFile, match="more than the 256 KiB a response's headers may take"):
        parse_header_block(folded_block(1024 * 1024))


def test_dechunking_a_payload_of_one_byte_chunks_takes_time_linear_in_its_size(
    tmp_path: Path,
) -> None:
    # In one piece, as the import decodes a request's body to fold it into its lookup URL.
    assert_linear("tiny-chunks", 256 * 1024, tmp_path)
