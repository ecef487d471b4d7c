"""Uploads of contents to the storage nodes an index node names, each sent once down a chain of
them: small ones in packs, large ones alone."""

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .. import pack
from ..errors import DlwebError
from ..insert_calls import UploadOrder, UploadReceipt, chain_header
from ..network import NETWORK_ERRORS, UPLOAD_TIMEOUT, failure, peer_timeout
from ..node_answers import ContentsStored, ContentStored
from ._errors import ClusterError
from ._session import Session
from ._types import BodySource, InsertSummary

# Contents of a pack at most: an insert's new contents are split among the chains of nodes that
# take them (three with two copies on three nodes), and each pack costs every node of its chain
# a request, a group commit and a forward, so a chain's share of a batch goes in one pack.
PACK_FRAMES = 500
PACK_BYTES = 8 * 1024 * 1024

# How an upload is sent to a node: its URL and the nodes it passes the upload on to.
_Send = Callable[[str, list[str]], Awaitable[UploadReceipt]]


class Uploader:
    """Sends the contents of an insert's upload orders to the nodes that are to hold them."""

    def __init__(self, session: Session) -> None:
        self._session = session

    async def upload(
        self,
        orders: list[UploadOrder],
        copies: int,
        body_of: BodySource,
        summary: InsertSummary,
        gate: asyncio.Semaphore,
    ) -> None:
        """Send each content to `copies` nodes of its order, once: small ones in packs, one
        request for many, large ones or those in files alone, each to the first node of its
        chain, which passes it on down the chain as it writes."""
        packs: dict[frozenset[str], list[tuple[str, bytes]]] = {}
        # Contents whose chains name the same nodes travel in one pack, whichever node heads
        # it: fewer, larger packs (each a group commit on every node of its chain).
        nodes_of: dict[frozenset[str], tuple[str, ...]] = {}
        alone: list[tuple[UploadOrder, bytes | Path | Awaitable[bytes]]] = []
        for order in orders:
            body = body_of(order.name)
            if isinstance(body, bytes) and len(body) <= pack.MAX_PACKED:
                chain = frozenset(order.nodes[:copies])
                nodes_of.setdefault(chain, order.nodes)
                packs.setdefault(chain, []).append((order.name, body))
            else:
                alone.append((order, body))
        await asyncio.gather(
            *(self._alone(order, body, copies, summary, gate) for order, body in alone),
            *(
                self._packed(nodes_of[chain], part, copies, summary, gate)
                for chain, items in packs.items()
                for part in _pack_parts(items)
            ),
        )

    async def _alone(
        self,
        order: UploadOrder,
        body: bytes | Path | Awaitable[bytes],
        copies: int,
        summary: InsertSummary,
        gate: asyncio.Semaphore,
    ) -> None:
        """Upload one content in a request of its own, from a file or from its bytes."""
        async with gate:
            if isinstance(body, Path):
                size = body.stat().st_size

                async def send_file(url: str, forward: list[str]) -> UploadReceipt:
                    with open(body, "rb") as stream:
                        return await self._send(url, "PUT", stream, forward, ContentStored)

                await self._copies(order.nodes, copies, f"/content/{order.name}", send_file)
            else:
                data = body if isinstance(body, bytes) else await body
                size = len(data)

                async def send_bytes(url: str, forward: list[str]) -> UploadReceipt:
                    return await self._send(url, "PUT", data, forward, ContentStored)

                await self._copies(order.nodes, copies, f"/content/{order.name}", send_bytes)
        summary.uploaded += 1
        summary.bytes += size

    async def _packed(
        self,
        nodes: tuple[str, ...],
        items: list[tuple[str, bytes]],
        copies: int,
        summary: InsertSummary,
        gate: asyncio.Semaphore,
    ) -> None:
        """Upload small contents in one pack."""

        async def send(url: str, forward: list[str]) -> UploadReceipt:
            return await self._send(url, "POST", pack.Upload(items), forward, ContentsStored)

        async with gate:
            await self._copies(nodes, copies, "/contents", send)
        summary.uploaded += len(items)
        summary.bytes += sum(len(body) for _, body in items)

    async def _copies(self, nodes: Sequence[str], copies: int, path: str, send: _Send) -> None:
        """Have `copies` of `nodes` hold an upload, sent once down a chain of them: a node that
        fails (refuses, answers wrong, falls silent, or fails to pass it on) is replaced by the
        next node of the list; ClusterError when the list runs out first, so an insert is never
        confirmed with fewer copies."""
        held: list[str] = []
        failed: dict[str, str] = {}
        while len(held) < copies:
            left = [node for node in nodes if node not in held and node not in failed]
            if not left:
                why = "; ".join(f"{node}: {problem}" for node, problem in failed.items())
                raise ClusterError(
                    f"upload of {path.rsplit('/', 1)[-1]} made {len(held)} of the {copies} copies"
                    f" it needs: {why}"
                )
            chain = left[: copies - len(held)]
            try:
                receipt = await send(f"{chain[0]}{path}", chain[1:])
            except ClusterError as exc:
                failed[chain[0]] = str(exc)
                continue
            held.append(chain[0])
            held.extend(node for node in receipt.forwarded if node in chain and node not in held)
            failed.update(receipt.failed)

    async def _send(
        self,
        url: str,
        method: str,
        data: Any,
        forward: Sequence[str],
        answer: type[ContentStored] | type[ContentsStored],
    ) -> UploadReceipt:
        """Upload bytes or an open file, to be passed on to `forward`; the receipt of the node's
        `answer`, or ClusterError unless it stored them. Each node of the chain may wait for the next one's
        silence to end, so the silence allowed grows with the chain."""
        silence = self._session.peer_silence
        timeout = peer_timeout(UPLOAD_TIMEOUT, silence * (1 + len(forward)))
        headers = {**self._session.auth, **chain_header(forward)}
        try:
            async with self._session.http.request(
                method, url, data=data, headers=headers, timeout=timeout
            ) as r:
                text = await r.text()
                if r.status not in (200, 201):
                    raise ClusterError(f"upload to {url} failed: {r.status} {text[:300]}")
        except NETWORK_ERRORS as exc:
            raise ClusterError(f"upload to {url} failed: {failure(exc, silence)}") from None
        try:
            return answer.from_json(json.loads(text), method).receipt
        except (ValueError, DlwebError) as exc:
            raise ClusterError(f"upload to {url} answered without a receipt: {exc}") from None


def _pack_parts(items: list[tuple[str, bytes]]) -> Iterator[list[tuple[str, bytes]]]:
    """Packs of at most PACK_FRAMES contents and about PACK_BYTES bytes."""
    part: list[tuple[str, bytes]] = []
    size = 0
    for item in items:
        if part and (len(part) >= PACK_FRAMES or size + len(item[1]) > PACK_BYTES):
            yield part
            part, size = [], 0
        part.append(item)
        size += len(item[1])
    if part:
        yield part
