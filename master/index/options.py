"""What an index node is started with: its data directory, where it listens, its cluster and its
master."""

from dataclasses import dataclass

from archive.server_options import ServerOptions


@dataclass(frozen=True)
class IndexOptions(ServerOptions):
    master: str
    advertise: str | None = None
    # The content index's metadata URL (archive.metadata); None for the SQLite file in `data`.
    metadata: str | None = None
