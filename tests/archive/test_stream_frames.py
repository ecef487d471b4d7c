"""Codec framing of recorded audio: frame boundaries and the stream's own clock, from real
encodings made by ffmpeg."""

import random
import subprocess
from pathlib import Path

import pytest

from archive.streams import scanner_for

SECONDS = 6
ENCODINGS = {
    "mp3": ("audio/mpeg", ["-c:a", "libmp3lame", "-b:a", "128k", "-id3v2_version", "0",
                           "-write_xing", "0", "-f", "mp3"], 44_100),
    "aac": ("audio/aac", ["-c:a", "aac", "-b:a", "128k", "-f", "adts"], 44_100),
    "vorbis": ("application/ogg", ["-c:a", "libvorbis", "-b:a", "96k", "-f", "ogg"], 44_100),
    "opus": ("audio/ogg", ["-c:a", "libopus", "-b:a", "64k", "-f", "ogg"], 48_000),
}  # fmt: skip


@pytest.fixture(scope="module")
def encoded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("audio")
    made = {}
    for name, (_, options, _) in ENCODINGS.items():
        path = folder / name
        subprocess.run(
            ["ffmpeg", "-v", "error", "-f", "lavfi", "-i",
             f"sine=frequency=440:sample_rate=44100:duration={SECONDS}", "-ac", "2",
             *options, str(path)],
            check=True,
        )  # fmt: skip
        made[name] = Path(path).read_bytes()
    return made


def feed_in_pieces(data: bytes, content_type: str, seed: int = 1) -> object:
    scanner = scanner_for(content_type)
    assert scanner is not None
    pieces = random.Random(seed)
    at = 0
    while at < len(data):
        size = pieces.randint(1, 6000)
        scanner.feed(data[at : at + size])
        at += size
    return scanner


@pytest.mark.parametrize("name", list(ENCODINGS))
def test_the_samples_counted_give_the_stream_its_own_clock(
    encoded: dict[str, bytes], name: str
) -> None:
    content_type, _, rate = ENCODINGS[name]
    scanner = feed_in_pieces(encoded[name], content_type)
    assert scanner.sample_rate == rate
    # The last MPEG frame is confirmed only by the next header, and encoders pad a few frames.
    assert SECONDS - 0.1 <= scanner.seconds <= SECONDS + 0.1, scanner.seconds
    assert scanner.junk == 0


@pytest.mark.parametrize("name", list(ENCODINGS))
def test_boundaries_do_not_depend_on_how_the_bytes_arrive(
    encoded: dict[str, bytes], name: str
) -> None:
    content_type = ENCODINGS[name][0]
    whole = scanner_for(content_type)
    assert whole is not None
    whole.feed(encoded[name])
    pieces = feed_in_pieces(encoded[name], content_type, seed=7)
    assert (pieces.boundary, pieces.samples) == (whole.boundary, whole.samples)


@pytest.mark.parametrize("name", ["mp3", "aac"])
def test_a_boundary_is_where_a_frame_header_begins(encoded: dict[str, bytes], name: str) -> None:
    data = encoded[name]
    scanner = scanner_for(ENCODINGS[name][0])
    assert scanner is not None
    boundaries = set()
    for at in range(0, len(data), 997):
        scanner.feed(data[at : at + 997])
        boundaries.add(scanner.boundary)
    for boundary in boundaries - {0}:
        assert data[boundary] == 0xFF and data[boundary + 1] & 0xE0 == 0xE0, boundary


def test_damaged_bytes_are_counted_as_junk_and_the_frames_after_them_found(
    encoded: dict[str, bytes],
) -> None:
    data = encoded["mp3"]
    middle = len(data) // 2
    damaged = data[:middle] + b"\xff\xfb garbage that is no frame " * 20 + data[middle:]
    clean, hurt = scanner_for("audio/mpeg"), scanner_for("audio/mpeg")
    assert clean is not None and hurt is not None
    clean.feed(data)
    hurt.feed(damaged)
    assert hurt.junk > 0
    # At most the frame cut by the damage is lost.
    assert clean.samples - hurt.samples <= 2 * 1152


def test_a_stream_with_no_media_type_is_recognised_by_its_first_bytes(
    encoded: dict[str, bytes],
) -> None:
    assert {
        name: getattr(scanner_for(None, data[:4096]), "codec", None)
        for name, data in encoded.items()
    } == {"mp3": "mpeg-audio", "aac": "aac-adts", "vorbis": "ogg", "opus": "ogg"}
    assert scanner_for("text/html", b"<html>") is None
