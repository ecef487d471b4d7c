"""Scrub: re-hash every content and check every structure file; quarantine what is bad."""

import hashlib
import itertools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from archive.errors import ClientFault, DlwebError
from archive.structure import StructureFile
from archive.urlkey import structure_name

from .node import CONTENT, STRUCTURE, StorageNode
from .volumes import Span

log = logging.getLogger(__name__)

CHUNK = 1024 * 1024
NAMES_AT_ONCE = 1000


class ScrubRunning(ClientFault):
    """A scrub was asked for while one is running on the node."""

    status = 409


@dataclass
class ScrubReport:
    """What a scrub found so far: the files it checked, and the bad ones (kind, name, reason)."""

    checked: int = 0
    bad: list[dict[str, str]] = field(default_factory=list)


def content_fault(span: Span) -> str | None:
    """Why a content is bad (its bytes hash to another name), or None. The reason travels to
    the master and to readers, so it names no path of this node: the log does."""
    digest = hashlib.sha256()
    try:
        with open(span.path, "rb") as stream:
            stream.seek(span.offset)
            left = span.size
            while left and (chunk := stream.read(min(CHUNK, left))):
                digest.update(chunk)
                left -= len(chunk)
    except FileNotFoundError:
        raise
    except OSError as exc:
        return _unreadable(span, exc)
    if left:
        log.warning("%s: content %s is cut short", span.path, span.name)
        return f"its file ends {left} bytes before the content's end"
    actual = digest.hexdigest()
    return None if actual == span.name else f"bytes hash to {actual}"


def structure_fault(span: Span) -> str | None:
    """Why a structure file is bad (damaged, or holding another URL), or None; like
    `content_fault`'s, the reason names no path."""
    try:
        with StructureFile(Path(span.path), start=span.offset, length=span.size) as sfile:
            sfile.reader.check_all()
            url = sfile.reader.url
    except FileNotFoundError:
        raise
    except DlwebError as exc:
        log.warning("structure %s: %s", span.name, exc)
        return exc.reason
    except OSError as exc:
        return _unreadable(span, exc)
    return None if span.name == structure_name(url) else f"holds the URL {url[:200]!r}"


def _unreadable(span: Span, exc: OSError) -> str:
    log.warning("%s %s cannot be read: %s", span.path, span.name, exc)
    return f"cannot be read: {exc.strerror or 'I/O error'}"


def _take(names: Iterator[str]) -> list[str]:
    return list(itertools.islice(names, NAMES_AT_ONCE))


async def scrub(node: StorageNode) -> ScrubReport:
    """Check every file; move each bad one to quarantine (the inventory then says it is gone).

    One scrub at a time runs on a node (ScrubRunning otherwise). Names are listed a thousand at
    a time and files are read in 1 MiB chunks, so memory stays flat on a node of any size."""
    if node.scrubbing.locked():
        raise ScrubRunning("a scrub is already running on this node")
    report = ScrubReport()
    checks: tuple[tuple[str, Callable[[Span], str | None]], ...] = (
        (CONTENT, content_fault),
        (STRUCTURE, structure_fault),
    )
    async with node.scrubbing:
        for kind, fault in checks:
            names = node.store_for(kind).names()
            while batch := await node.run_io(_take, names):
                for name in batch:
                    try:
                        problem = await node.check_file(kind, name, fault)
                    except FileNotFoundError:
                        continue  # deleted since it was listed
                    except OSError as exc:
                        log.error("scrub: cannot check or quarantine %s %s: %s", kind, name, exc)
                        continue
                    report.checked += 1
                    if problem is not None:
                        report.bad.append({"kind": kind, "name": name, "reason": problem})
    log.info("scrub checked %d files, %d bad", report.checked, len(report.bad))
    return report
