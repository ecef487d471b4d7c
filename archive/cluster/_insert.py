"""Insertion: the conversation with an index node, reached through the master's redirect.

The index node answers a batch of captures with the contents to upload and where; they go up
(`Uploader`) while it appends the batch's structure records, and `stored` confirms the batch.
"""

import asyncio
import functools
from collections.abc import Sequence
from typing import Any

from ..errors import DlwebError
from ..hip import HipError, HipSlave, RemoteError, hip_url
from ..insert_calls import InsertAnswer, NewCapture, Stored, StoredAnswer, UploadOrder
from ._errors import ClusterError, NoIndexNode
from ._session import Session
from ._types import BodySource, InsertSummary
from ._upload import Uploader

INSERT_BATCH = 1_000
UPLOADS_IN_FLIGHT = 48
UPLOAD_BATCHES_AT_ONCE = 3
# An insert or its confirmation waits on a loaded index node (lookups, then appends) this long.
INDEX_CALL_TIMEOUT = 300.0
# While the master has no index node (one restarting), an insert asks again this often, for as
# long as the client waits for a connection.
NO_INDEX_RETRY = 0.5
# A batch's upload claims: the names it uploads, each with the future telling its outcome, and
# the names another batch is uploading, with theirs.
_Claims = tuple[dict[str, asyncio.Future[bool]], dict[str, asyncio.Future[bool]]]


class Inserter:
    """Inserts batches of captures through an index node, a few batches uploading at once."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._uploader = Uploader(session)
        self._slave: HipSlave | None = None
        self._joining_index = asyncio.Lock()
        # Uploads under way, by name: a batch asked for a content that an earlier batch is still
        # uploading (the index node learns of it only once stored) waits for that upload.
        self._uploading: dict[str, asyncio.Future[bool]] = {}

    async def stop(self) -> None:
        """Close the connection to the index node, if one was made."""
        if self._slave is not None:
            await self._slave.stop()

    async def connect(self) -> None:
        """Reach an index node now (an importer does while its first batch is read), not at the
        first insert."""
        slave = await self._index()
        try:
            await slave.wait_connected(self._session.connect_timeout)
        except HipError as exc:
            raise ClusterError(f"no index node reached: {exc}") from None

    async def _index(self) -> HipSlave:
        """The connection to an index node, made through the master's redirect (once, however
        many batches are inserting)."""
        async with self._joining_index:
            if self._slave is None:
                slave = HipSlave(
                    hip_url(await self._session.master_url()),
                    self._session.config.secret,
                    self._session.name,
                    {},
                    role="client",
                )
                await slave.start()
                self._slave = slave
            return self._slave

    async def insert(self, captures: Sequence[NewCapture], body_of: BodySource) -> InsertSummary:
        """Insert captures, uploading each content and header block the index node asks for.

        Uploads of a few batches run at once, sharing one bound on requests in flight, while the
        index node works on the next batch.
        """
        summary = InsertSummary()
        if not captures:
            return summary
        gate = asyncio.Semaphore(UPLOADS_IN_FLIGHT)
        uploading: list[asyncio.Task[None]] = []
        try:
            for start in range(0, len(captures), INSERT_BATCH):
                batch = captures[start : start + INSERT_BATCH]
                slave, answer = await self._ask_insert({"captures": [c.to_json() for c in batch]})
                try:
                    answered = InsertAnswer.from_json(answer)
                except DlwebError as exc:
                    raise ClusterError(str(exc)) from None
                summary.captures += len(batch)
                # Claimed as the answer comes, not when the batch's task begins: a batch that
                # ended in between (its `stored` answered right after this answer) would no
                # longer be seen uploading a content both were asked for, which went twice.
                claims = self._claim(answered.orders)
                task = asyncio.create_task(
                    self._upload_and_confirm(slave, answered, claims, body_of, summary, gate)
                )
                # Its claims end with it, however it ends (cancelled before it began, too).
                task.add_done_callback(functools.partial(self._release, claims[0]))
                uploading.append(task)
                while len(uploading) > UPLOAD_BATCHES_AT_ONCE:
                    await uploading.pop(0)
            for task in uploading:
                await task
        finally:
            for task in uploading:
                task.cancel()
            await asyncio.gather(*uploading, return_exceptions=True)
        return summary

    async def _ask_insert(self, params: dict[str, Any]) -> tuple[HipSlave, Any]:
        """Call insert on an index node, and the connection it came by (its `stored` goes there
        too). While the master has none (one restarting), ask again for connect_timeout."""
        connect_timeout = self._session.connect_timeout
        deadline = asyncio.get_running_loop().time() + connect_timeout
        while True:
            slave = await self._index()
            try:
                return slave, await self._call_index(slave, "insert", params)
            except NoIndexNode as exc:
                if asyncio.get_running_loop().time() + NO_INDEX_RETRY > deadline:
                    raise NoIndexNode(f"{exc} (waited {connect_timeout:g} s)") from None
                await asyncio.sleep(NO_INDEX_RETRY)

    async def _call_index(self, slave: HipSlave, method: str, params: dict[str, Any]) -> Any:
        """Call `method` (insert or stored) on the index node, connected within connect_timeout;
        a refusal or a failure is a ClusterError."""
        try:
            await slave.wait_connected(self._session.connect_timeout)
            return await slave.call(method, params, timeout=INDEX_CALL_TIMEOUT)
        except RemoteError as exc:
            if exc.code == "no_index":
                # Connect anew next time: the master redirects once an index node joins.
                await slave.stop()
                self._slave = None
                raise NoIndexNode(f"insert refused: {exc.message}") from None
            raise ClusterError(f"insert refused: {exc.message}") from None
        except HipError as exc:
            raise ClusterError(f"insert failed: {exc}") from None

    def _claim(self, orders: list[UploadOrder]) -> _Claims:
        """The names of a batch's upload orders it uploads itself, each with the future its
        outcome is told by, and those another batch is uploading, to wait for."""
        loop = asyncio.get_running_loop()
        mine: dict[str, asyncio.Future[bool]] = {}
        others: dict[str, asyncio.Future[bool]] = {}
        for name in (order.name for order in orders):
            if name in mine or name in others:
                continue
            if (theirs := self._uploading.get(name)) is not None:
                others[name] = theirs
            else:
                mine[name] = self._uploading[name] = loop.create_future()
        return mine, others

    def _release(self, mine: dict[str, asyncio.Future[bool]], _ended: object = None) -> None:
        """Let go of a batch's claims as its task ends (`_ended`, as a done callback): one not
        decided yet (its upload failed, or was cancelled before it ended) is told to the batches
        waiting on it as a failure."""
        for name, future in mine.items():
            if not future.done():
                future.set_result(False)
            if self._uploading.get(name) is future:
                del self._uploading[name]

    async def _upload_and_confirm(
        self,
        slave: HipSlave,
        answered: InsertAnswer,
        claims: _Claims,
        body_of: BodySource,
        summary: InsertSummary,
        gate: asyncio.Semaphore,
    ) -> None:
        """Upload what the index node asked for, except what another batch is uploading (that
        upload is waited for instead), then confirm the insert: `stored` answers once the index
        node has appended the batch's records, which it did while the contents went up."""
        mine, others = claims
        mine_orders = [order for order in answered.orders if order.name in mine]
        await self._uploader.upload(mine_orders, answered.copies, body_of, summary, gate)
        # Told at once, not when the task ends after `stored`; a failure is told by `_release`.
        for future in mine.values():
            future.set_result(True)
        for name, future in others.items():
            if not await asyncio.shield(future):
                raise ClusterError(f"the upload of content {name} by another batch failed")
        params = Stored([*mine, *others], answered.number).to_json()
        confirmed = await self._call_index(slave, "stored", params)
        try:
            summary.added += StoredAnswer.from_json(confirmed).added
        except DlwebError as exc:
            raise ClusterError(str(exc)) from None
