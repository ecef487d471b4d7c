"""Records of counters: dataclasses from their fields alone, with their JSON and their sum."""

from archive.counts import Counts


class Done(Counts):
    pages: int = 0
    bytes: int = 0


def test_counters_start_at_zero_and_keep_their_field_order_in_json() -> None:
    done = Done()
    done.bytes += 5
    assert done.to_json() == {"pages": 0, "bytes": 5}
    assert list(done.to_json()) == ["pages", "bytes"]


def test_adding_a_record_adds_each_counter() -> None:
    done = Done(1, 10)
    done.add(Done(pages=2, bytes=30))
    assert done == Done(3, 40)
