"""Scrub: re-hash every content file and check every structure file; quarantine what is bad."""

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any

from archive.errors import DlwebError
from archive.structure import StructureFile
from archive.urlkey import structure_name

from .node import CONTENT, STRUCTURE, StorageNode

log = logging.getLogger(__name__)

CHUNK = 1024 * 1024


@dataclass
class ScrubReport:
    checked: int = 0
    bad: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"checked": self.checked, "bad": self.bad}


def content_fault(node: StorageNode, name: str) -> str | None:
    """Why a content file is bad (its bytes hash to another name), or None."""
    digest = hashlib.sha256()
    with open(node.contents.path_for(name), "rb") as stream:
        while chunk := stream.read(CHUNK):
            digest.update(chunk)
    actual = digest.hexdigest()
    return None if actual == name else f"bytes hash to {actual}"


def structure_fault(node: StorageNode, name: str) -> str | None:
    """Why a structure file is bad (damaged, or holding another URL), or None."""
    try:
        with StructureFile(node.structures.path_for(name)) as sfile:
            sfile.reader.check_all()
            url = sfile.reader.url
    except DlwebError as exc:
        return str(exc)
    return None if structure_name(url) == name else f"holds the URL {url[:200]!r}"


async def scrub(node: StorageNode) -> ScrubReport:
    """Check every file; move each bad one to quarantine (the inventory then says it is gone)."""
    report = ScrubReport()
    for kind, store, check in (
        (CONTENT, node.contents, content_fault),
        (STRUCTURE, node.structures, structure_fault),
    ):
        for name in await node.run_io(lambda s=store: list(s.names())):
            try:
                fault = await node.run_io(check, node, name)
            except FileNotFoundError:
                continue
            report.checked += 1
            if fault is not None and await node.quarantine(kind, name):
                report.bad.append({"kind": kind, "name": name, "reason": fault})
    log.info("scrub checked %d files, %d bad", report.checked, len(report.bad))
    return report
