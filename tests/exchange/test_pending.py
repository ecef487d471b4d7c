"""Revisits imported before their originals: kept pending, resolved when an import brings them."""

import hashlib
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from archive.cluster import ClusterClient
from archive.reading import CaptureReader, PendingRevisit
from archive.structure import PENDING_REGISTRY_URL, RecordFlag, RecordKind
from archive.timestamps import parse_time
from archive.urlkey import structure_name
from tests.archive.warc import sources

from .conftest import dlweb
from .test_import import import_ok

KEPT_TWO = (
    "2 revisits pending, their originals not archived yet (2 kept by this import);"
    " 0 pending revisits resolved"
)
RESOLVED_TWO = "revisits pending, their originals not archived yet ({} kept by this import); 2"


def exported_revisits(cluster_config: Path, out: Path) -> list[tuple[str, ...]]:
    """The revisit records of an export of the whole archive (URI, payload digest, refers-to
    fields and block), checking that no record is of the registry."""
    done = dlweb("export", "-c", str(cluster_config), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    revisits = []
    with open(out, "rb") as fh:
        for record in ArchiveIterator(fh, no_record_parse=True):
            fields = record.rec_headers
            assert not (fields.get_header("WARC-Target-URI") or "").startswith(PENDING_REGISTRY_URL)
            if record.rec_type == "revisit":
                revisits.append(
                    (
                        fields.get_header("WARC-Target-URI"),
                        fields.get_header("WARC-Payload-Digest"),
                        fields.get_header("WARC-Refers-To-Target-URI"),
                        fields.get_header("WARC-Refers-To-Date"),
                        record.raw_stream.read(),
                    )
                )
    return sorted(revisits)


async def test_a_revisit_waits_for_the_import_that_brings_its_original(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    first = sources.warcio_file(tmp_path)
    # A revisit naming its original's URL and date, and one naming only its payload digest.
    later = sources.later_revisit_file(tmp_path, first)
    summary = import_ok(cluster.config_path, later.path)
    assert KEPT_TWO in summary and "revisit 2" in summary
    async with ClusterClient(cluster.config) as client:
        reader = CaptureReader(client)
        for entry in later.entries:
            at = parse_time(entry.date)
            assert (await client.closest(entry.url, at, "exact")).capture.kind is RecordKind.PENDING
            with pytest.raises(PendingRevisit, match="revisit whose original is not archived yet"):
                await reader.read_at(entry.url, at, "exact")
            assert await client.captures(entry.url) == []
        _, registry = await client.read_structure(structure_name(PENDING_REGISTRY_URL))
        assert [(r.kind, r.flags) for r in registry] == [(RecordKind.PENDING, 2)] * 2
    # An export writes them again as the revisits they were, and nothing of the registry.
    written = sorted(
        (e.url, e.payload_digest, e.refers_to_uri, e.refers_to_date, e.header_block)
        for e in later.entries
    )
    assert exported_revisits(cluster.config_path, tmp_path / "pending.warc.gz") == written

    summary = import_ok(cluster.config_path, first.path)
    assert RESOLVED_TWO.format(0) in summary and "0 revisits pending" in summary
    async with ClusterClient(cluster.config) as client:
        reader = CaptureReader(client)
        for entry in later.entries:
            at = parse_time(entry.date)
            # Listed once (the pending capture is not), beside /b's original.
            (capture,) = [c for c in await client.captures(entry.url) if c.time == at]
            assert capture.kind is RecordKind.REVISIT
            assert capture.content == hashlib.sha256(entry.payload).hexdigest()
            # The revisit written beside the pending capture is the one lookups answer with.
            reading = await reader.read_at(entry.url, at, "exact")
            assert reading.capture == capture and reading.block == entry.header_block
            assert await reader.whole_body(reading) == entry.payload
        _, registry = await client.read_structure(structure_name(PENDING_REGISTRY_URL))
        assert sorted(r.flags & RecordFlag.RESOLVED for r in registry) == [0, 0, 16, 16]
    # Exported once each, as revisits of the originals now archived.
    exported = exported_revisits(cluster.config_path, tmp_path / "resolved.warc.gz")
    assert sorted(e[0] for e in exported if e[0] in [e.url for e in later.entries]) == sorted(
        e.url for e in later.entries
    )

    again = import_ok(cluster.config_path, later.path)
    assert "0 new captures" in again and "revisits pending" not in again


async def test_a_revisit_is_resolved_by_a_later_file_of_the_same_import(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    first = sources.warcio_file(tmp_path)
    later = sources.later_revisit_file(tmp_path, first)
    summary = import_ok(cluster.config_path, later.path, first.path)
    assert RESOLVED_TWO.format(2) in summary and "0 revisits pending" in summary
    async with ClusterClient(cluster.config) as client:
        for entry in later.entries:
            found = await client.closest(entry.url, parse_time(entry.date), "exact")
            assert found.capture.kind is RecordKind.REVISIT
            assert await client.get_content(found.capture.content) == entry.payload
