"""The CDX API asked as the proxy's api harbor answers it, in this process, over a real cluster:
what the paging tests use to ask and to see which structure files an answer read."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import harbors
from archive.cluster import ClusterClient
from deploy.testing.cluster import Cluster


@dataclass
class _Context:
    """What the api harbor uses of the proxy for /cdx."""

    client: Any
    search_index: Path


class _CountingClient:
    """A cluster client that notes the URLs whose structure file is read."""

    def __init__(self, client: ClusterClient) -> None:
        self.client = client
        self.read: list[str] = []

    async def read_structure(self, name: str, url: str) -> Any:
        self.read.append(url)
        return await self.client.read_structure(name, url)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


@dataclass
class Paged:
    cluster: Cluster
    index: Path

    async def ask(self, query: str, read: list[str] | None = None) -> tuple[int, str, str]:
        """Status, content type and body of GET http://api.dlweb/cdx?query; the URLs whose
        structure file it read added to `read`."""
        request = harbors.HarborRequest(
            "127.0.0.1", "GET", "api.dlweb", "/cdx",
            query_pairs=tuple(parse_qsl(query, keep_blank_values=True)),
        )  # fmt: skip
        async with ClusterClient(self.cluster.config) as client:
            counting = _CountingClient(client)
            context: Any = _Context(counting, self.index)
            answer = await harbors.answer(context, request)
        if read is not None:
            read += counting.read
        return answer.status, answer.content_type, answer.body.decode()

    async def lines(self, query: str) -> list[str]:
        status, _, body = await self.ask(query)
        assert status == 200, (query, body)
        return body.splitlines()

    async def rows(self, query: str) -> list[dict[str, str]]:
        return [json.loads(line) for line in await self.lines(query + "&output=json")]

    async def error(self, query: str) -> str:
        status, kind, body = await self.ask(query)
        assert (status, kind) == (400, "application/json"), (query, body)
        message: str = json.loads(body)["error"]
        return message
