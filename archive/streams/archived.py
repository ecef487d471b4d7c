"""Reading back what was recorded of a stream: its chunk logs, in order."""

from collections.abc import Sequence

from ..cluster import ClusterClient
from ..errors import NotFound
from ..structure import RecordKind
from ..urlkey import structure_name
from .log import REGISTRY_URL, ChunkLog

__all__ = ["recorded_streams", "stream_logs"]


async def stream_logs(client: ClusterClient, url: str) -> list[ChunkLog]:
    """The log of every chunk recorded of `url`, oldest first (none when it was never
    recorded)."""
    try:
        _, records = await client.read_structure(structure_name(url), url)
    except NotFound:
        return []
    return await _read_logs(client, [r.content for r in records if r.kind is RecordKind.STREAM_LOG])


async def recorded_streams(client: ClusterClient) -> list[str]:
    """The URL of every stream recorded, oldest recording first, from the registry."""
    return list(dict.fromkeys(log.url for log in await stream_logs(client, REGISTRY_URL)))


async def _read_logs(client: ClusterClient, named: Sequence[str]) -> list[ChunkLog]:
    bodies = await client.get_small_contents(named)
    for name in named:
        if name not in bodies:
            bodies[name] = await client.get_content(name)
    return [ChunkLog.decode(bodies[name], f"stream log {name}") for name in named]
