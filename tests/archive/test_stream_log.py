"""The log of a recorded stream chunk: its JSON round trip, its validation, and the drift."""

import pytest

from archive.streams import BadLog, ChunkLog, Fit, Gap, Point, Segment, Title, drift_of

NAME = "ab" * 32


def chunk_log(rate: float, seconds: int = 60, connected: int = 1_000_000, **kw: object) -> ChunkLog:
    """A chunk whose stream clock runs `rate` stream seconds per collection second."""
    points = tuple(
        Point(connected + t * 1_000_000, 3.5 + t * rate, t * 16_000) for t in range(0, seconds, 10)
    )
    end = Point(connected + seconds * 1_000_000, 3.5 + seconds * rate, seconds * 16_000)
    fit = Fit()
    for point in (*points, end):
        fit = fit.add((point.time - connected) / 1e6, point.stream)
    fields: dict[str, object] = {
        "url": "http://radio.example/live",
        "recording": "r1",
        "protocol": "icy",
        "content_type": "audio/mpeg",
        "connected": connected,
        "points": points,
        "end": end,
        "codec": "mpeg-audio",
        "sample_rate": 44_100,
        "chunk": NAME,
        "size": seconds * 16_000,
        "fit": fit,
    }
    fields.update(kw)
    return ChunkLog(**fields)  # type: ignore[arg-type]


def test_a_log_reads_back_as_it_was_written() -> None:
    log = chunk_log(
        1.0,
        titles=(Title(2_000_000, 4.5, 1_000, "Artist - Song ';' quoted"),),
        gap=Gap(1, 2, "dropped", "connection lost"),
        segments=(Segment("http://x/s1.ts", NAME, 2.0, 7, 5, 4, True, 10),),
        protocol="hls",
    )
    assert ChunkLog.decode(log.encode(), "log") == log


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"format": "other"}, "not a dlweb-stream-log/1"),
        ({"protocol": "rtmp"}, "unknown protocol"),
        ({"chunk": "not-a-name"}, "'chunk' must be a SHA-256 name"),
        ({"points": [[1, 2.0]]}, "points[0]: must be a list of 3 values"),
        ({"connected": "yesterday"}, "'connected' must be an integer"),
        ({"gap": []}, "'gap' must be an object or null"),
    ],
)
def test_a_bad_log_is_refused_naming_its_field(change: dict[str, object], says: str) -> None:
    raw = chunk_log(1.0).to_json() | change
    with pytest.raises(BadLog, match=f"chunk-log: .*{__import__('re').escape(says)}"):
        ChunkLog.from_json(raw, "chunk-log")


def test_drift_is_the_slope_of_the_stream_clock_against_the_collection_clock() -> None:
    drift = drift_of([chunk_log(1.01), chunk_log(1.01, connected=1_000_000 + 60_000_000)])
    assert drift.ratio == pytest.approx(0.01, abs=1e-9)
    assert drift.seconds == pytest.approx(120)  # two connections of a minute each
    assert drift.describe() == "the stream runs 1.00% fast: +36 s an hour"
    slow = drift_of([chunk_log(0.995)])
    assert slow.describe() == "the stream runs 0.50% slow: -18 s an hour"


def test_each_connection_has_its_own_clock_origin() -> None:
    """A reconnection starts the stream clock again: its offset is no drift."""
    first = chunk_log(1.0, connected=0)
    second = chunk_log(1.0, connected=120_000_000)
    assert drift_of([first, second]).ratio == pytest.approx(0.0, abs=1e-9)
