"""Fuzzing the readers of hostile input with hypothesis (derandomized, about 15 s in all): WARC
files mutated from sound ones, gzipped and not; WACZ packages of mutated layouts; stored HTTP
header blocks. Nothing but our own clear errors comes out, no reading hangs, memory stays small,
and nothing read is left spooled."""

import io
import time
import tracemalloc
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from warcio.statusandheaders import StatusAndHeadersParser

from archive.errors import CorruptFile, DlwebError
from archive.header_block import parse_header_block, status_of
from archive.warc.reader import Ignored, Problem, SourceRecord, read_archive
from exchange.wacz import archive_inputs, check_wacz
from tests.security.wacz_packages import DEFLATED, ENCRYPTED, Entry, package_bytes, sound_entries
from tests.security.warc_inputs import inflating_to, member, record

FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
# What one reading of a mutated input may take, far above what any takes, far below a hang.
SECONDS = 10
MEMORY = 64 * 1024 * 1024


def response(url: str, head: bytes, payload: bytes) -> bytes:
    block = head + payload
    return (
        (
            f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\n"
            f"WARC-Date: 2024-05-01T00:00:00Z\r\nContent-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(block)}\r\n\r\n"
        ).encode()
        + block
        + b"\r\n\r\n"
    )


RECORDS = [
    record("http://fuzz.example/resource", b"a resource"),
    response(
        "http://fuzz.example/page", b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n", b"<p>"
    ),
    response(
        "http://fuzz.example/chunked",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"4\r\nabcd\r\n1\r\ne\r\n0\r\n\r\n",
    ),
    response("http://fuzz.example/moved", b"HTTP/1.0 302 \r\nLocation: /x\r\n\r\n", b""),
]
# Runs of bytes the readers once read badly: no line break, line breaks only, gzip magic.
RUNS = [b"\0", b"\n", b"\r\n", b" ", b"\x1f\x8b\x08", b"WARC/1.0\r\n", b"X: y\r\n", b"1\r\nx\r\n"]


@st.composite
def mutated_warc(draw: st.DrawFn) -> bytes:
    """Sound records, gzipped or not, then bytes changed, cut out, added, runs of hostile bytes
    put in, a member inflating to megabytes added, or the file cut short."""
    records = draw(st.lists(st.sampled_from(RECORDS), min_size=1, max_size=4))
    gzipped = draw(st.booleans())
    data = bytearray(b"".join(member(r) for r in records) if gzipped else b"".join(records))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["flip", "cut", "add", "run", "bomb", "end"]))
        if action == "flip" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif action == "cut":
            del data[at : at + draw(st.integers(1, 200))]
        elif action == "add":
            data[at:at] = draw(st.binary(min_size=1, max_size=50))
        elif action == "run":
            data[at:at] = draw(st.sampled_from(RUNS)) * draw(st.integers(1, 300_000))
        elif action == "bomb":
            filler = draw(st.sampled_from(RUNS))
            data[at:at] = inflating_to(draw(st.sampled_from(RECORDS)), filler, 8 * 1024 * 1024)
        elif action == "end":
            del data[at:]
    return bytes(data)


def read_all(path: Path, opened: object = None) -> list[SourceRecord | Problem | Ignored]:
    """Every item read, bodies freed, checking that reading took neither long nor much memory,
    and that no message quotes much of the file."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        items = list(read_archive(path, 1 << 20, path.parent, None, opened))  # type: ignore[arg-type]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < SECONDS
    assert peak < MEMORY
    for item in items:
        assert isinstance(item, SourceRecord | Problem | Ignored)
        if isinstance(item, SourceRecord):
            item.body.discard()
        else:
            assert len(item.reason) < 500
    return items


@settings(FUZZ, max_examples=300)
@given(data=mutated_warc())
def test_the_warc_reader_gives_records_or_problems_for_any_mutation(
    data: bytes, tmp_path: Path
) -> None:
    path = tmp_path / "fuzzed.warc"
    path.write_bytes(data)
    read_all(path)
    assert [p.name for p in tmp_path.iterdir()] == ["fuzzed.warc"]


def _entries(url: str) -> list[Entry]:
    return [*sound_entries(url), Entry("pages/extra.jsonl", b"{}\n" * 50, DEFLATED)]


@st.composite
def mutated_package(draw: st.DrawFn) -> bytes:
    """A sound package whose entries were changed (duplicated, renamed, encrypted, lying about
    their method or size) and whose bytes were then changed, cut or added to."""
    entries = _entries("http://fuzz.example/package")
    for _ in range(draw(st.integers(0, 3))):
        index = draw(st.integers(0, len(entries) - 1))
        entry = entries[index]
        change = draw(st.sampled_from(["twice", "rename", "encrypt", "method", "size", "zip"]))
        if change == "twice":
            entries.insert(index, entry)
        elif change == "rename":
            name = draw(st.sampled_from(["../x", "/abs", "archive/x.warc", "a\\b", "", "é"]))
            entries[index] = Entry(name, entry.content, entry.method)
        elif change == "encrypt":
            entries[index] = Entry(entry.name, entry.content, entry.method, ENCRYPTED)
        elif change == "method":
            entries[index] = Entry(entry.name, entry.content, entry.method, local_method=12)
        elif change == "size":
            size = draw(st.integers(0, 0xFFFFFFFF))
            entries[index] = Entry(entry.name, entry.content, entry.method, declared_size=size)
        else:
            entries[index] = Entry(entry.name, package_bytes(_entries("http://fuzz.example/in")))
    data = bytearray(package_bytes(entries, draw(st.sampled_from(["", '"x": [[[]]], ']))))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["flip", "cut", "add"]))
        if action == "flip" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif action == "cut":
            del data[at : at + draw(st.integers(1, 64))]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=32))
    return bytes(data)


@settings(FUZZ, max_examples=600)
@given(data=mutated_package())
def test_the_wacz_reader_refuses_or_reads_any_package_layout(data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "fuzzed.wacz"
    path.write_bytes(data)
    started = time.monotonic()
    try:
        check_wacz(path)
    except DlwebError as refused:
        message = str(refused)
        assert message.startswith(f"{path}: ") and len(message) < len(str(path)) + 500
        assert time.monotonic() - started < SECONDS
        return
    for name, opened, _ in archive_inputs(path):
        assert str(name).startswith(f"{path}/archive/")
        read_all(name, opened)


HEAD = b"HTTP/1.1 200 OK\r\n"
LINES = [b"a: b\r\n", b" c\r\n", b"\td\n", b"e\r\n", b"\r\n", b"\r\r\n", b"f:\xe9\n"]
# warcio's reading of header fields, which the header block parser gives the same as.
_WARCIO = StatusAndHeadersParser(["HTTP/"], verify=False)


def large_block(line: bytes, size: int) -> bytes:
    return HEAD + b"X: a\r\n" + line * (size // len(line))


@settings(FUZZ, max_examples=800)
@given(
    data=st.one_of(
        st.binary(max_size=300),
        st.builds(
            lambda lines: HEAD + b"".join(lines),
            st.lists(st.sampled_from(LINES) | st.binary(max_size=12), max_size=30),
        ),
        st.builds(
            large_block,
            st.sampled_from([b" b\r\n", b"a:\n", b"x\n", b"\xff: \xfe\r\n", b"\0"]),
            st.integers(64 * 1024, 1024 * 1024),
        ),
    )
)
def test_the_header_block_parser_reads_any_block_as_warcio_or_calls_it_corrupt_quickly(
    data: bytes,
) -> None:
    """Small blocks are read as warcio reads them; any block, up to 1 MiB, in little time."""
    started = time.process_time()
    try:
        block = parse_header_block(data, "a stored block")
    except CorruptFile as exc:
        assert str(exc).startswith("a stored block: ") and len(str(exc)) < 200
        return
    finally:
        assert time.process_time() - started < 0.5
    assert status_of(data) == block.status
    if len(data) < 4096:
        assert block.headers == list(_WARCIO.parse(io.BytesIO(data)).headers)
