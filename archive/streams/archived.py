"""Reading back what was recorded of a stream: its chunk logs, in order."""

from ..cluster import ClusterClient
from ..structure import RecordKind
from ..urlkey import structure_name
from .log import ChunkLog

__all__ = ["stream_logs"]


async def stream_logs(client: ClusterClient, url: str) -> list[ChunkLog]:
    """The log of every chunk recorded of `url`, oldest first (none when it was never
    recorded)."""
    _, records = await client.read_structure(structure_name(url), url)
    named = [r.content for r in records if r.kind is RecordKind.STREAM_LOG]
    bodies = await client.get_small_contents(named)
    for name in named:
        if name not in bodies:
            bodies[name] = await client.get_content(name)
    return [ChunkLog.decode(bodies[name], f"stream log {name}") for name in named]
