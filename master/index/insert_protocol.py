"""The insert protocol of the index node: `insert` says which contents are new and where to
upload them while their records are appended, and `stored` confirms them once the appends are
done (docs/cluster.md)."""

import asyncio
import contextlib
import itertools
import logging
from collections import Counter
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from archive.errors import DlwebError
from archive.hip import Peer, RemoteError
from archive.index_calls import CONTENT_REFS, Appended, ContentRefs
from archive.insert_calls import MAX_CAPTURES, InsertAnswer, Stored, StoredAnswer
from archive.metadata import cluster_id
from archive.tasks import Background
from archive.urlkey import structure_name
from archive.variants import path_of, variant_record

from .appends import APPEND_DEADLINE, StructureAppends
from .captures import Incoming, parse_captures
from .contents import ContentIndex
from .options import IndexOptions
from .placement import place

log = logging.getLogger(__name__)
T = TypeVar("T")

# References of contents ordered for upload and not yet confirmed by `stored`.
MAX_PENDING = 1_000_000
# Inserts answered and not confirmed by `stored` yet (a client's failed batches are never);
# past this many the oldest are forgotten.
MAX_UNCONFIRMED = 10_000


def _variants(
    groups: dict[str, list[Incoming]], results: dict[str, tuple[int, bool]]
) -> dict[str, list[Incoming]]:
    """The variant records of the structure files just created for URLs with a query, grouped
    by the structure file of their path."""
    variants: dict[str, list[Incoming]] = {}
    for name, (_, created) in results.items():
        path = path_of(groups[name][0].url) if created else None
        if path is None:
            continue
        when = min(item.capture.time for item in groups[name])
        incoming = Incoming(path, structure_name(path), variant_record(name, when), 0, 0)
        variants.setdefault(incoming.structure, []).append(incoming)
    return variants


def _retrieved(task: "asyncio.Task[int]") -> None:
    """Mark a failed append as seen: its failure goes to the `stored` that awaits it, and an
    insert nobody confirms (its client gone) is logged, not reported as never retrieved."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.info("the appends of an insert failed: %s", exc)


class InsertProtocol(StructureAppends):
    """The part of the index node that answers inserting clients, and counts the references
    of their contents."""

    def __init__(self, options: IndexOptions, node_id: str) -> None:
        self.contents = ContentIndex(
            options.metadata or options.data / "contents.db",
            cluster_id(options.config.name, options.config.secret),
        )
        self.popular_refs = options.config.replication.popular_refs
        self._background = Background()
        # The appends of each insert answered and not yet confirmed by `stored`, by the number
        # the answer gave, with the connection they came by.
        self._appends: dict[int, tuple[Peer, asyncio.Task[int]]] = {}
        self._insert_numbers = itertools.count(1)
        self._pending: dict[str, int] = {}
        # The appends of inserts under way, confirmed or not (a client that gave up or left does
        # not stop them), and the telling of those of failed inserts that landed: /status counts
        # them as `appending`, so that one can tell when every copy may have its last records.
        self._working: set[asyncio.Task[Any]] = set()
        super().__init__(options, node_id)

    async def _insert(self, peer: Peer, params: Any) -> dict[str, Any]:
        """Answer which contents to upload and where as soon as they are looked up, while the
        structure records are appended: the client uploads meanwhile, and its `stored` waits for
        the appends. Nothing is awaited between the lookup and the answer, so a content another
        insert confirms is either known to this one or still claimed by its uploader."""
        incoming = parse_captures(params)
        refs: Counter[str] = Counter()
        sizes: dict[str, int] = {}
        groups: dict[str, list[Incoming]] = {}
        for item in incoming:
            capture = item.capture
            sizes.setdefault(capture.content, item.size)
            sizes.setdefault(capture.header, item.header_size)
            refs[capture.content] += 1
            refs[capture.header] += 1
            groups.setdefault(item.structure, []).append(item)
        copies = self.options.config.replication.insert_copies
        if sum(node.state == "alive" for node in self.nodes) < copies:
            # The list may be older than the nodes' return (a master that just restarted).
            await self._reload_nodes()
        known = self.contents.known(sizes)
        # Placed before anything is written, so an insert that cannot be stored changes nothing.
        upload = place(self.nodes, {n: s for n, s in sizes.items() if n not in known}, copies)
        number = next(self._insert_numbers)
        task = self._spawn_work(self._append_batch(groups, refs, known))
        task.add_done_callback(_retrieved)
        if len(self._appends) >= MAX_UNCONFIRMED:
            del self._appends[next(iter(self._appends))]
        self._appends[number] = (peer, task)
        self.stats["uploads_asked"] += len(upload)
        return InsertAnswer(upload, number, copies).to_json()

    async def _stored(self, peer: Peer, params: Any) -> dict[str, Any]:
        """Count the uploaded contents as known once the insert's appends are done; the records
        they added. An insert whose appends failed confirms nothing: their failure is raised."""
        try:
            stored = Stored.from_json(params)
        except DlwebError as exc:
            raise RemoteError("bad_params", str(exc)) from None
        names, number = stored.names, stored.insert
        by, task = self._appends.get(number, (None, None))
        if task is None or by is not peer:
            raise RemoteError(
                "bad_params", f"stored: insert {number} is not one of this connection's to confirm"
            )
        del self._appends[number]
        # Shielded: a confirmation cut short (its connection lost) leaves the appends going on.
        records = await asyncio.shield(task)
        added = {name: self._pending.pop(name, 0) for name in dict.fromkeys(names)}
        self._report_popular(self.contents.add(added), added)
        self.stats["stored"] += len(added)
        return StoredAnswer(records).to_json()

    async def _forget_inserts(self, peer: Peer) -> None:
        """A client gone cannot confirm its inserts: their appends go on, unawaited."""
        for number in [n for n, (by, _) in self._appends.items() if by is peer]:
            del self._appends[number]

    async def _append_batch(
        self, groups: dict[str, list[Incoming]], refs: Mapping[str, int], known: set[str]
    ) -> int:
        """Append an insert's records to their structure files, then the variant records of
        the files it created for URLs with a query; the records added."""
        results = await self._append_groups(groups)
        variants = _variants(groups, results)
        if variants:
            await self._append_groups(variants)
        self._count_refs(refs, known)
        added = sum(added for added, _ in results.values())
        self.stats["captures"] += sum(len(items) for items in groups.values())
        self.stats["records_added"] += added
        return added

    async def _append_groups(
        self, groups: dict[str, list[Incoming]]
    ) -> dict[str, tuple[int, bool]]:
        """Append records to their structure files, claimed first where not known; each file's
        records added and whether it was created."""
        where = {name: self.claims[name] for name in groups if name in self.claims}
        cached = dict(where)
        unclaimed = [name for name in groups if name not in where]
        if unclaimed:
            where.update(await self._claim(unclaimed))
        results: dict[str, tuple[int, bool]] = {}
        sent: dict[str, set[str]] = {}
        try:
            await self._append_all(groups, where, results, sent)
            replicas = await self._append_replicas(groups, results, where)
        except BaseException:
            # The appends that landed, and those whose node failed before it answered (it may
            # have taken them), are told at once with the copies they were sent to, so that
            # their other copies are marked stale and refreshed now, or merged when a lost
            # copy returns, not when the insert's last append can no longer land; one still
            # travelling may land until its deadline: every file is told again after that.
            maybe = {
                name: Appended(frozenset(addresses))
                for name, addresses in sent.items()
                if results.get(name, (1, False))[0]
            }
            if maybe:
                self._spawn_work(self._tell_now(maybe))
            self._spawn(self._tell_later(list(groups)))
            raise
        # A file just created has no replica yet: the master's copies of it will be fresh. One
        # created on the node the cache named is told all the same: the master may have made
        # another copy active since (that node lost its copy).
        changed = [
            name
            for name, (added, created) in results.items()
            if added and (not created or cached.get(name) == where[name])
        ]
        if changed:
            await self._tell_changed(
                {
                    name: Appended(frozenset([where[name]]), frozenset(replicas.get(name, ())))
                    for name in changed
                }
            )
        return results

    async def _tell_now(self, changes: dict[str, Appended]) -> None:
        """Tell the master these files changed, from an insert that fails: nobody waits."""
        with contextlib.suppress(RemoteError):
            await self._tell_changed(changes)

    async def _tell_later(self, names: list[str]) -> None:
        """Tell the master these files changed once no append sent before now can land."""
        await asyncio.sleep(APPEND_DEADLINE)
        with contextlib.suppress(RemoteError):
            await self._tell_changed({name: Appended() for name in names})

    def _count_refs(self, refs: Mapping[str, int], known: set[str]) -> None:
        """Count the references: now for known contents, at `stored` for the others."""
        more = {name: refs[name] for name in known}
        self._report_popular(self.contents.count_refs(more), more)
        if len(self._pending) > MAX_PENDING:
            self._pending.clear()
        for name, count in refs.items():
            if name not in known:
                self._pending[name] = self._pending.get(name, 0) + count

    def _report_popular(self, counts: Mapping[str, int], added: Mapping[str, int]) -> None:
        """Tell the master the counts of popular contents that changed. Each change is sent, not
        only the one reaching the threshold, so a count the master could not apply yet (a file
        not in its inventory yet) is set by the next reference."""
        popular = {
            name: count
            for name, count in counts.items()
            if count >= self.popular_refs and added.get(name, 0) > 0
        }
        if not popular:
            return
        items = list(popular.items())
        for start in range(0, len(items), MAX_CAPTURES):
            part = dict(items[start : start + MAX_CAPTURES])
            self._spawn(self._tell_master(CONTENT_REFS.name, ContentRefs(part).to_json()))

    def _spawn(self, work: Coroutine[Any, Any, T]) -> "asyncio.Task[T]":
        """Run `work` on its own, cancelled when the index node stops."""
        return self._background.spawn(work)

    def _spawn_work(self, work: Coroutine[Any, Any, T]) -> "asyncio.Task[T]":
        """`_spawn` work that /status counts as `appending` until it ends."""
        task = self._spawn(work)
        self._working.add(task)
        task.add_done_callback(self._working.discard)
        return task
