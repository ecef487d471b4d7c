"""Progress bars for commands that run long, shown only to a person at a terminal."""

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdm import tqdm


def terminal_bar(**options: Any) -> "tqdm[Any] | None":
    """A progress bar when stderr is a terminal, else None (tqdm not even loaded)."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(**options)
