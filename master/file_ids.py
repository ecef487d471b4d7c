"""How the master keys a file: by the first 8 bytes of its SHA-256 as a 64-bit integer, with the
rest of its name (24 bytes) beside it. The name is stored once, in 32 bytes, and every table that
refers to a file holds that integer; keys sort as the names do.

Two names whose first 8 bytes agree (about one pair in 2^64) cannot share a key: the later one
takes the next free integer and keeps all 32 bytes of its name. The largest distance so taken
(`spread`, kept in the database) bounds where a name is looked for: from its own key to its own
key plus the spread.
"""

from collections.abc import Callable, Iterable
from typing import Any

from archive.cluster import KINDS

FIRST_ID = -(1 << 63)
LAST_ID = (1 << 63) - 1

# A kind's code in the files table is its place in KINDS.
KIND_CODES = {kind: code for code, kind in enumerate(KINDS)}

# Where the spread is kept (the meta table).
SPREAD_KEY = "id_spread"


def natural_id(name: str) -> int:
    """The key of a name no other name shares its first 8 bytes with: those bytes as an
    unsigned integer, moved down by 2^63 into SQL's signed 64 bits, so that keys sort as names."""
    return int(name[:16], 16) + FIRST_ID


def rest_of(name: str) -> bytes:
    """What the files table keeps of a name beside its natural key."""
    return bytes.fromhex(name[16:])


def name_of(file_id: int, rest: bytes) -> str:
    """The name of a file from its key and what is kept beside it (all of it, for a name that
    did not get its natural key)."""
    if len(rest) == 32:
        return rest.hex()
    return f"{file_id - FIRST_ID:016x}{rest.hex()}"


def holders_text(numbers: Iterable[int]) -> str:
    """The files table's holders of a file: each holder's number (node_numbers) and a comma."""
    return "".join(f"{number}," for number in numbers)


def holder_numbers(text: str) -> list[int]:
    return [int(number) for number in text.split(",")[:-1]]


def candidates(names: Iterable[str], spread: int) -> list[int]:
    """Every key a file of one of these names may have, in order."""
    return sorted(
        {
            key
            for name in names
            for key in range(natural_id(name), min(natural_id(name) + spread, LAST_ID) + 1)
        }
    )


def key_taken(db: Any, key: int) -> bool:
    """Whether a file of the files table has this key (`place`'s question, asked of a
    connection of either engine)."""
    return db.execute("SELECT 1 FROM files WHERE id = ?", (key,)).fetchone() is not None


def place(
    missing: Iterable[tuple[str, str]],
    occupied: set[int],
    spread: int,
    is_taken: Callable[[int], bool],
) -> tuple[dict[tuple[str, str], tuple[int, bytes]], int]:
    """Keys for new files (kind, name), with what to keep beside each, and the spread after
    them. `occupied` holds the keys known taken among the candidates looked at (and is added
    to); a key beyond those is asked of `is_taken`."""
    placed: dict[tuple[str, str], tuple[int, bytes]] = {}
    looked_at = spread
    for kind, name in missing:
        natural = key = natural_id(name)
        while key in occupied or (key > natural + looked_at and is_taken(key)):
            if key == LAST_ID:
                raise ValueError(f"no free key after {name[:16]} for {kind} {name}")
            key += 1
        occupied.add(key)
        if key == natural:
            placed[(kind, name)] = (key, rest_of(name))
        else:
            placed[(kind, name)] = (key, bytes.fromhex(name))
            spread = max(spread, key - natural)
    return placed, spread
