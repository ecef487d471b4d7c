"""The appends of an insert's records to the structure files that hold them: to each file's
active copy, then to as many other copies as an insert waits for, on the storage nodes."""

import asyncio
import logging
import time
from collections import Counter
from typing import Any

import aiohttp

from archive import jsonwire
from archive.answers import parsed
from archive.errors import DlwebError
from archive.hip import RemoteError
from archive.network import failure
from archive.node_answers import StructureAppended, StructuresAppended

from .captures import Incoming
from .master_link import MasterLink
from .options import IndexOptions

log = logging.getLogger(__name__)

APPENDS_IN_FLIGHT = 32
APPEND_BATCH = 1_000
# A bound on a whole append request, for a body stalled on its way to a cut node (aiohttp has no
# send timeout); a silent node is given up after PEER_SILENCE without an answer.
APPEND_TIMEOUT = 120.0
# No append is waited for longer, so a node refuses one that arrives after this (one a cut link
# delivered late); the clocks of index and storage nodes may differ by less than this.
APPEND_DEADLINE = APPEND_TIMEOUT
# Errors of a storage node's HTTP answer; the append is then retried, and re-claimed.
NODE_ERRORS = (
    aiohttp.ClientError,
    OSError,
    TimeoutError,
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
)
# Errors of a node that did not answer at all (refused, cut, silent).
NODE_GONE = (aiohttp.ClientConnectionError, OSError, TimeoutError)


class AppendFailed(DlwebError):
    """A storage node did not take an append."""


def _records(items: list[Incoming]) -> list[dict[str, object]]:
    return [item.capture.to_json() for item in items]


def _deadline() -> float:
    """The time after which a storage node refuses an append sent now."""
    return time.time() + APPEND_DEADLINE


class StructureAppends(MasterLink):
    """The part of the index node that appends records to the copies of structure files, on
    the nodes the master names for them."""

    def __init__(self, options: IndexOptions, node_id: str) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._appending = asyncio.Semaphore(APPENDS_IN_FLIGHT)
        self._token = options.config.write_token
        super().__init__(options, node_id)

    async def _append_all(
        self,
        groups: dict[str, list[Incoming]],
        where: dict[str, str],
        results: dict[str, tuple[int, bool]],
        sent: dict[str, set[str]],
    ) -> None:
        """Append to every structure file, one request per node for many files; a file the batch
        did not take is appended alone, and claimed again if its node fails. Each file's records
        added and whether it was created go into `results` as they land, and the addresses each
        file's records were sent to as its active copy into `sent`, so that a caller whose
        appends fail knows those that landed and those that may have (a node that took an
        append can die before it answers)."""
        by_node: dict[str, list[str]] = {}
        for name in groups:
            by_node.setdefault(where[name], []).append(name)
        refused: list[str] = []
        gone: set[str] = set()

        async def to_node(address: str, names: list[str]) -> None:
            for start in range(0, len(names), APPEND_BATCH):
                part = names[start : start + APPEND_BATCH]
                files = [
                    {"name": n, "url": groups[n][0].url, "records": _records(groups[n])}
                    for n in part
                ]
                for n in part:
                    sent.setdefault(n, set()).add(address)
                try:
                    results.update(await self._post_many(address, files, refused))
                except (*NODE_ERRORS, AppendFailed) as exc:
                    if isinstance(exc, NODE_GONE):
                        gone.add(address)
                    log.warning(
                        "batch append of %d files to %s failed: %s",
                        len(part),
                        address,
                        failure(exc),
                    )

        await asyncio.gather(*(to_node(address, names) for address, names in by_node.items()))
        if refused:
            raise RemoteError("bad_params", f"insert: a storage node refused {refused[0]}")
        left = [name for name in groups if name not in results]
        alone = await asyncio.gather(
            *(self._append(name, groups[name], where, gone, sent) for name in left),
            return_exceptions=True,
        )
        failed: BaseException | None = None
        for name, result in zip(left, alone, strict=True):
            if isinstance(result, BaseException):
                failed = failed or result
            else:
                results[name] = result
        if failed is not None:
            raise failed

    async def _append_replicas(
        self,
        groups: dict[str, list[Incoming]],
        results: dict[str, tuple[int, bool]],
        where: dict[str, str],
    ) -> dict[str, list[str]]:
        """Append the records just appended to each active copy to as many other copies as an
        insert waits for, before it is acknowledged: the copies the master named, then, for
        those that fail, copies on other nodes. A copy created by an append to a file that is
        not new is partial, so stale until refreshed from the active one. RemoteError when too
        few copies took them; otherwise the addresses of the copies that took them, by file."""
        wanted = self.options.config.replication.insert_copies - 1
        names = [name for name, (added, _) in results.items() if added]
        took_by: dict[str, list[str]] = {}
        if wanted <= 0 or not names:
            return took_by
        unknown = [name for name in names if name not in self.replicas]
        if unknown:
            await self._claim(unknown)
        alive = [node.address for node in self.nodes if node.state == "alive"]
        tried: dict[str, set[str]] = {name: {where[name]} for name in names}
        made: Counter[str] = Counter()
        problems: dict[str, str] = {}
        while True:
            short = [name for name in names if made[name] < wanted]
            rounds = self._next_copies(short, groups, results, tried, alive)
            if not rounds:
                break
            taken = await asyncio.gather(
                *(self._post_replica(address, files) for address, files in rounds.items())
            )
            for (address, _), (took, failed) in zip(rounds.items(), taken, strict=True):
                made.update(took)
                for name in took:
                    took_by.setdefault(name, []).append(address)
                problems.update((name, f"{address}: {why}") for name, why in failed.items())
        if short:
            name = short[0]
            raise RemoteError(
                "error",
                f"cannot append to {wanted + 1} copies of structure {name} ({len(short)} files"
                f" short): only {made[name] + 1} took the records; {problems.get(name, '')}",
            )
        self.stats["replica_appends"] += sum(made.values())
        return took_by

    def _next_copies(
        self,
        names: list[str],
        groups: dict[str, list[Incoming]],
        results: dict[str, tuple[int, bool]],
        tried: dict[str, set[str]],
        alive: list[str],
    ) -> dict[str, list[dict[str, Any]]]:
        """The next copy each file's records go to, not `tried` yet (added to it), by node: a
        copy the master named, else one on another alive node; none for a file with neither."""
        rounds: dict[str, list[dict[str, Any]]] = {}
        for name in names:
            created = results[name][1]
            named = [a for a in self.replicas.get(name, ()) if a not in tried[name]]
            spare = [a for a in alive if a not in tried[name]]
            if not named and not spare:
                continue
            address = (named or spare)[0]
            tried[name].add(address)
            # Created wherever it is missing, a named copy included: another insert's
            # append may still be creating it there.
            item: dict[str, Any] = {
                "name": name,
                "url": groups[name][0].url,
                "records": _records(groups[name]),
                "create": True,
                "partial": not created,
            }
            rounds.setdefault(address, []).append(item)
        return rounds

    async def _post_replica(
        self, address: str, files: list[dict[str, Any]]
    ) -> tuple[list[str], dict[str, str]]:
        """POST /structures to copies that are not active; the files taken and why the others
        were not (a node that fails takes none)."""
        taken: list[str] = []
        failed: dict[str, str] = {}
        for start in range(0, len(files), APPEND_BATCH):
            part = files[start : start + APPEND_BATCH]
            try:
                for result in await self._post_structures(address, part, replica=True):
                    if "error" in result:
                        failed[str(result["name"])] = str(result["error"])
                    else:
                        taken.append(str(result["name"]))
            except (*NODE_ERRORS, AppendFailed) as exc:
                failed.update((str(item["name"]), failure(exc)) for item in part)
        return taken, failed

    async def _post_structures(
        self, address: str, files: list[dict[str, Any]], replica: bool = False
    ) -> list[dict[str, Any]]:
        """POST /structures (to copies other than the active one with `replica`); each file's
        result, or AppendFailed when the node refused the request as a whole."""
        assert self._session is not None
        body: dict[str, Any] = {"files": files, "deadline": _deadline()}
        if replica:
            body["replica"] = True
        async with (
            self._appending,
            self._session.post(f"{address}/structures", json=body, headers=self._headers()) as r,
        ):
            answer = await r.json(content_type=None, loads=jsonwire.loads)
            if r.status != 200:
                raise AppendFailed(f"{address} answered {r.status}: {answer.get('error')}")
        results: list[dict[str, Any]] = parsed(
            StructuresAppended, answer, f"{address}/structures", AppendFailed
        ).results
        return results

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    async def _post_many(
        self, address: str, files: list[dict[str, Any]], refused: list[str]
    ) -> dict[str, tuple[int, bool]]:
        """POST /structures; the files the node took. A refused record is the client's fault."""
        taken: dict[str, tuple[int, bool]] = {}
        for result in await self._post_structures(address, files):
            if "error" not in result:
                taken[result["name"]] = (int(result["added"]), bool(result["created"]))
            elif result.get("status") == 400:
                refused.append(str(result["error"]))
        self.stats["appends"] += len(taken)
        return taken

    async def _append(
        self,
        name: str,
        items: list[Incoming],
        where: dict[str, str],
        gone: set[str],
        sent: dict[str, set[str]],
    ) -> tuple[int, bool]:
        """Append captures to the active copy; claim it again once if its node fails, at once
        if its node is `gone` (it just failed a batch without answering). Each address tried
        goes into `sent`."""
        body = {"url": items[0].url, "records": _records(items)}
        first = 1
        if (lost := where[name]) in gone:
            first = 2
            self.claims.pop(name, None)
            where[name] = (await self._claim([name]))[name]
            if where[name] == lost:
                raise RemoteError(
                    "error",
                    f"cannot append to structure {name}: {lost} did not answer and the master"
                    " still names it for the active copy",
                )
        for attempt in range(first, 3):
            address = where[name]
            sent.setdefault(name, set()).add(address)
            try:
                return await self._post(address, name, body)
            except (*NODE_ERRORS, AppendFailed) as exc:
                log.warning(
                    "append to %s on %s failed (%s); attempt %d",
                    name,
                    address,
                    failure(exc),
                    attempt,
                )
                self.claims.pop(name, None)
                if attempt == 2:
                    raise RemoteError(
                        "error", f"cannot append to structure {name} on {address}: {failure(exc)}"
                    ) from None
                where[name] = (await self._claim([name]))[name]
        raise AssertionError("unreachable")

    async def _post(self, address: str, name: str, body: dict[str, Any]) -> tuple[int, bool]:
        assert self._session is not None
        async with (
            self._appending,
            self._session.post(
                f"{address}/structure/{name}",
                json={**body, "deadline": _deadline()},
                headers=self._headers(),
            ) as r,
        ):
            answer = await r.json(content_type=None, loads=jsonwire.loads)
            if r.status == 400:
                raise RemoteError("bad_params", f"insert: {address} refused: {answer.get('error')}")
            if r.status != 200:
                raise AppendFailed(f"{address} answered {r.status}: {answer.get('error')}")
        appended = parsed(StructureAppended, answer, f"{address}/structure/{name}", AppendFailed)
        self.stats["appends"] += 1
        return appended.added, appended.created
