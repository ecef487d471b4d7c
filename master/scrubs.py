"""Scrubs of the storage nodes (each re-hashes every file it holds): started by an admin or on
each node's schedule, their last reports kept for the status."""

import time

from archive.master_answers import NodeScrub, Scrubbing, ScrubDone
from archive.node_calls import SCRUB, ScrubOrder

from .db import MasterDB
from .membership import Membership


class Scrubs:
    def __init__(self, db: MasterDB, members: Membership, every: float) -> None:
        self.db = db
        self.members = members
        self.every = every
        # The last finished scrub of each node, as it reported it.
        self.reports: dict[str, ScrubDone] = {}

    async def start(self, nodes: list[str]) -> Scrubbing:
        """Ask each node to start a scrub; what each answered."""
        started = {}
        for node in nodes:
            peer = self.members.links.get(node)
            if peer is None:
                started[node] = NodeScrub(False, error="not connected")
                continue
            row = self.members.rows[node]
            row.last_scrub = time.time()
            self.db.save_node(row)
            try:
                answer = await SCRUB.call(peer, ScrubOrder(), timeout=30)
                started[node] = NodeScrub(answer.started, answer.running)
            except Exception as exc:
                started[node] = NodeScrub(False, error=str(exc))
        return Scrubbing(started)

    async def start_due(self) -> None:
        """Start the scrub of each connected node whose last one is `every` seconds old."""
        now = time.time()
        for node, row in self.members.rows.items():
            if self.members.connected(node) and now - row.last_scrub >= self.every:
                if row.last_scrub == 0:
                    # A new node starts its schedule now instead of scrubbing at once.
                    row.last_scrub = now
                    self.db.save_node(row)
                    continue
                await self.start([node])
