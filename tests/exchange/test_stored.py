"""The capture of what an import stores, at a record's URL and time."""

from archive.cluster import NewCapture
from archive.structure import RecordFlag
from exchange.pending import Revisit, Stored


def test_a_capture_takes_the_record_s_place_and_the_stored_names():
    revisit = Revisit("http://a/", 1_000, 304, (), None)
    stored = Stored("c" * 64, "h" * 64, 200, 1234)
    assert stored.capture(revisit, "revisit", header_size=56) == NewCapture(
        "http://a/", 1_000, "c" * 64, "h" * 64, 200, 1234, 56, "revisit", int(RecordFlag.IMPORTED)
    )
    bundled = stored.capture(revisit, "metadata", RecordFlag.IMPORTED | RecordFlag.BUNDLED, 0, 7)
    assert (bundled.header_size, bundled.flags, bundled.offset) == (
        0,
        int(RecordFlag.IMPORTED | RecordFlag.BUNDLED),
        7,
    )
