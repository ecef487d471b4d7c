"""A helper for SQLite queries that look up many values at once."""

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

# Values one `IN (...)` query takes, well under SQLite's bound on parameters.
IN_CHUNK = 500


def in_chunks(values: Sequence[T]) -> Iterator[tuple[Sequence[T], str]]:
    """The values in parts of IN_CHUNK, each with its `?,?,...` for an IN clause."""
    for start in range(0, len(values), IN_CHUNK):
        part = values[start : start + IN_CHUNK]
        yield part, ",".join("?" * len(part))
