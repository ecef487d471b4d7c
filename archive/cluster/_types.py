"""The values the cluster client takes and answers with."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..counts import Counts
from ..structure import Capture

# The bytes of a content to upload by name: in memory, in a file, or still to be fetched.
BodySource = Callable[[str], bytes | Path | Awaitable[bytes]]


class InsertSummary(Counts):
    """What an insert did: the captures it sent, the records added, the contents uploaded."""

    captures: int = 0
    added: int = 0
    uploaded: int = 0
    bytes: int = 0


@dataclass(frozen=True, slots=True)
class FoundCapture:
    """A capture found in a structure file, and the node that answered."""

    capture: Capture
    node: str
    # The first, last, previous and next captures of the URL, when the node sent them.
    neighbours: dict[str, Capture | None] = field(default_factory=dict)
    url: str = ""  # the URL the structure file holds


@dataclass(frozen=True, slots=True)
class LargeContent:
    """A content too large to read whole: a holder that serves it, and its size."""

    name: str
    address: str
    size: int
