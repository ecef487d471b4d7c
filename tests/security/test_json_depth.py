"""JSON read off the network (RPC frames, request bodies, a harbor's settings) nested however deep
is an error of its reader, never a crash of the process: orjson before 3.10 overflowed its stack
on an array nested a million deep."""

import subprocess
import sys

import pytest

READ = """
import sys
from archive import jsonwire
try:
    jsonwire.loads(sys.stdin.read())
except ValueError as exc:
    print("refused:", str(exc)[:80])
"""


@pytest.mark.parametrize("depth", [1_025, 100_000, 1_000_000])
@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_json_nested_past_1024_levels_is_refused_without_a_crash(depth: int, opening: str) -> None:
    closing = "]" if opening == "[" else "}"
    done = subprocess.run(
        [sys.executable, "-c", READ],
        input=opening * depth + "1" + closing * depth,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.startswith("refused:"), done.stdout
