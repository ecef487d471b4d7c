"""Stream assignments as the scheduler sends them and a streaming agent checks them, and the
argument errors of `dlweb stream-agent` and `dlweb streams`: one clear line, exit 2."""

import re
import subprocess
import sys
from typing import Any

import pytest

from crawler.stream.assignment import Assignment, BadAssignment
from crawler.stream.settings import StreamSettings

RADIO = "http://radio.example:8000/live.mp3"


def test_an_assignment_goes_through_json_unchanged() -> None:
    assignment = Assignment(
        7,
        RADIO,
        StreamSettings(chunk_seconds=2.0, chunk_bytes=65536, point_seconds=0.5, rendition="lowest"),
        {"radio.example": ["127.0.0.9"]},
        resumes=1_795_751_198_000_000,
    )
    assert Assignment.from_json(assignment.to_json()) == assignment


def test_an_assignment_without_settings_takes_the_recorder_defaults() -> None:
    assignment = Assignment.from_json({"stream": 1, "url": RADIO})
    assert assignment.settings == StreamSettings()
    assert assignment.resolve == {}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, RADIO], "must be a JSON object"),
        ({"url": RADIO}, "stream must be a stream id"),
        ({"stream": 0, "url": RADIO}, "stream must be a stream id"),
        ({"stream": True, "url": RADIO}, "stream must be a stream id"),
        ({"stream": 1}, "url must be a non-empty string"),
        ({"stream": 1, "url": "ftp://radio.example/live"}, "scheme 'ftp' is not http or https"),
        ({"stream": 1, "url": RADIO, "station": "x"}, "field station is unknown"),
        ({"stream": 1, "url": RADIO, "resumes": -5}, "resumes must be a time in microseconds"),
        ({"stream": 1, "url": RADIO, "resumes": "now"}, "resumes must be a time in microseconds"),
        ({"stream": 1, "url": RADIO, "settings": []}, "settings must be an object"),
        ({"stream": 1, "url": RADIO, "settings": {"speed": 2}}, "settings.speed is unknown"),
        (
            {"stream": 1, "url": RADIO, "settings": {"chunk_seconds": 0}},
            "settings.chunk_seconds must be a number > 0",
        ),
        (
            {"stream": 1, "url": RADIO, "settings": {"point_seconds": "5"}},
            "settings.point_seconds must be a number > 0",
        ),
        (
            {"stream": 1, "url": RADIO, "settings": {"timeout": float("inf")}},
            "settings.timeout must be a number > 0",
        ),
        (
            {"stream": 1, "url": RADIO, "settings": {"chunk_bytes": 1.5}},
            "settings.chunk_bytes must be a whole number > 0",
        ),
        (
            {"stream": 1, "url": RADIO, "settings": {"rendition": "best"}},
            "settings.rendition: 'best' is not highest, lowest or a number of bits/s",
        ),
        (
            {"stream": 1, "url": RADIO, "resolve": {"radio.example": "127.0.0.9"}},
            "resolve must map host names to address lists",
        ),
    ],
)
def test_a_bad_assignment_is_refused_naming_the_field(data: Any, message: str) -> None:
    with pytest.raises(BadAssignment, match=re.escape(message)):
        Assignment.from_json(data)


def dlweb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlweb", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stream-agent", "--capacity", "0"], "--capacity: '0' is not a whole number >= 1"),
        (["stream-agent", "--report-every", "-1"], "--report-every: '-1' must be a positive"),
        (["streams"], "the following arguments are required: action"),
        (["streams", "add"], "the following arguments are required: url"),
        (["streams", "add", "ftp://radio.example/live"], "scheme 'ftp' is not http or https"),
        (["streams", "stop", "not a url"], "bad URL"),
        (["streams", "list", "--state", "playing"], "invalid choice: 'playing'"),
        (["streams", "add", RADIO, "--site", "first"], "--site: 'first' is not a whole number"),
        (["scheduler", "--stream-chunk-seconds", "0"], "--stream-chunk-seconds: '0' must be a"),
    ],
)
def test_argument_errors_are_one_clear_line_and_exit_2(args: list[str], message: str) -> None:
    done = dlweb(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_the_stream_agent_runs_from_the_crawler_package() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "crawler.stream.agent", "--capacity", "none"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "usage: python -m crawler.stream.agent" in done.stderr
