"""BatchReader: a real reading thread over WARC files written by warcio."""

import asyncio
import io
from pathlib import Path

import pytest
from warcio.warcwriter import WARCWriter

from archive.warc.reader import SourceRecord, kept_url
from archive.warc.spool import SPOOL_IN_MEMORY
from exchange import batches
from exchange.batches import BatchReader
from tests.archive.warc import sources


async def test_batches_hold_every_record_in_order_and_mark_each_file_end(tmp_path, monkeypatch):
    monkeypatch.setattr(batches, "BATCH_RECORDS", 3)
    first = sources.warcio_file(tmp_path)
    (tmp_path / "second").mkdir()
    second = sources.warcio_file(tmp_path / "second")
    got = []
    async with BatchReader([first.path, second.path]) as reading:
        while (batch := await reading.next()) is not None:
            got.append(batch)
    uris = [i.uri for b in got for i in b.items if isinstance(i, SourceRecord)]
    # A warcinfo is kept too, under its reserved URL (archive/warc/reader.py, `kept_url`).
    expected = [
        kept_url("warcinfo") if e.type == "warcinfo" else e.url
        for e in first.entries + second.entries
    ]
    assert uris == expected
    assert all(len(b.items) <= 3 for b in got)
    ends = [b.end_of for b in got if b.end_of is not None]
    assert ends == [first.path, second.path]
    total = first.path.stat().st_size + second.path.stat().st_size
    assert got[-1].position == total
    assert [b.position for b in got] == sorted(b.position for b in got)


async def test_closing_early_stops_the_thread_and_removes_spooled_bodies(tmp_path, monkeypatch):
    monkeypatch.setattr(batches, "BATCH_RECORDS", 1)
    big = sources.large_record(tmp_path, SPOOL_IN_MEMORY + 1024 * 1024)
    reading = BatchReader([big.path]).start()
    assert reading._spool is not None
    spool_dir = reading._spool.name
    first = await reading.next()
    assert first is not None
    await reading.close()
    assert reading._thread is not None and not reading._thread.is_alive()
    assert not Path(spool_dir).exists()


async def test_a_failure_of_the_thread_is_raised_by_next(tmp_path):
    missing = tmp_path / "gone.warc.gz"
    async with BatchReader([missing]) as reading:
        with pytest.raises(FileNotFoundError):
            await reading.next()


def _many_records(path: Path, count: int) -> Path:
    """A .warc.gz of `count` resource records of 16 KB: a tenth of a second or so to read."""
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for index in range(count):
            body = (b"%08d" % index) * 2048
            record = writer.create_warc_record(
                f"http://many.example/{index}",
                "resource",
                payload=io.BytesIO(body),
                warc_content_type="text/plain",
            )
            writer.write_record(record)
    return path


async def test_a_next_cancelled_while_it_waits_leaves_no_thread_behind(tmp_path, monkeypatch):
    # One batch for the whole file: `next` waits on the reading thread until it is cancelled.
    monkeypatch.setattr(batches, "BATCH_RECORDS", 1_000_000)
    reading = BatchReader([_many_records(tmp_path / "many.warc.gz", 2_000)]).start()
    waiting = asyncio.create_task(reading.next())
    await asyncio.sleep(0)  # the task hands its wait to a worker thread
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await reading.close()
    # The event loop waits for its worker threads when it closes: none may be stuck.
    await asyncio.wait_for(asyncio.get_running_loop().shutdown_default_executor(), 10)
