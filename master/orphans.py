"""Orphans: contents that no capture record of any structure file names (a deep fsck).

The master does not keep capture records, so it reads every structure file's records from a
readable holder (the active copy first) with the nodes' range query, and compares the contents and
header blocks they name with the contents it knows.
"""

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from archive.network import NETWORK_ERRORS

from .db import MasterDB
from .membership import Membership
from .records import read_records

log = logging.getLogger(__name__)

READS_IN_FLIGHT = 16
SHOWN = 100


@dataclass
class OrphanReport:
    structures_read: int = 0
    unreadable: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "structures_read": self.structures_read,
            "structures_unreadable": len(self.unreadable),
            "orphans": len(self.orphans),
            "orphan_names": self.orphans[:SHOWN],
        }


async def find_orphans(db: MasterDB, members: Membership) -> OrphanReport:
    report = OrphanReport()
    readable = set(members.readable())
    referenced: set[str] = set()
    structures = [name for kind, name in db.iter_files() if kind == "structure"]
    gate = asyncio.Semaphore(READS_IN_FLIGHT)

    async def read(session: aiohttp.ClientSession, name: str) -> None:
        holders = [h for h in db.structure_holders([name])[name] if h in readable]
        async with gate:
            for holder in holders:
                try:
                    _, records = await read_records(session, members.address(holder), name)
                except (*NETWORK_ERRORS, ValueError, KeyError) as exc:
                    log.warning("fsck could not read structure %s on %s: %s", name, holder, exc)
                    continue
                for record in records:
                    referenced.add(record["content"])
                    referenced.add(record["header"])
                report.structures_read += 1
                return
        report.unreadable.append(name)

    timeout = aiohttp.ClientTimeout(total=300, sock_connect=10)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        await asyncio.gather(*(read(session, name) for name in structures))
    if report.unreadable:
        # Contents named only by an unreadable file would look orphaned: say nothing of them.
        return report
    report.orphans = sorted(
        name for kind, name in db.iter_files() if kind == "content" and name not in referenced
    )
    return report
