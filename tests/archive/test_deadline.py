"""A Deadline stops work that checks it between its steps, with its caller's own error."""

import time

import pytest

from archive.deadline import CHECK_EVERY, Deadline


class Late(Exception):
    pass


def late(seconds: float) -> Late:
    return Late(f"past {seconds:g} s")


def test_a_deadline_not_past_lets_the_work_go_on() -> None:
    deadline = Deadline(60.0, late)
    deadline.check()
    assert list(deadline.watch(range(3 * CHECK_EVERY))) == list(range(3 * CHECK_EVERY))


def test_a_passed_deadline_raises_its_callers_error_naming_the_seconds() -> None:
    deadline = Deadline(0.0, late)
    time.sleep(0.001)
    with pytest.raises(Late, match=r"^past 0 s$"):
        deadline.check("a callback's", "arguments")


def test_watch_looks_at_the_clock_every_check_every_items() -> None:
    """A deadline that passes during a long loop stops it at its next look, not at its end."""
    deadline = Deadline(0.0, late)
    time.sleep(0.001)
    seen: list[int] = []
    with pytest.raises(Late):
        for item in deadline.watch(range(10 * CHECK_EVERY)):
            seen.append(item)
    assert seen == []
