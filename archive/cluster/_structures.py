"""Reading structure files: the captures of a URL, asked of the holders of its structure file in
turn, the first that answers believed."""

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

from ..errors import DlwebError, NotFound
from ..hashing import check_name
from ..network import NETWORK_ERRORS, failure
from ..node_answers import Closest, DayCounts, RecordRange
from ..structure import REPLAYED_KINDS, Capture, DayCount, Mode, RecordKind
from ..timestamps import format_iso
from ..urlkey import structure_name
from ..variants import path_of
from ._errors import ClusterError
from ._locate import Locator
from ._session import Session
from ._types import FoundCapture

MAX_LISTED = 100_000
MAX_VARIANTS = 100
NEIGHBOURS = ("first", "last", "prev", "next")


class Structures:
    """Answers the questions about captures that the structure files hold."""

    def __init__(self, session: Session, locator: Locator) -> None:
        self._session = session
        self._locator = locator

    async def closest(self, url: str, at: int, mode: str = "closest") -> FoundCapture:
        """The capture of `url` nearest to `at` (UTC microseconds), or before, after, exactly at."""
        return await self.closest_in(structure_name(url), url, at, mode)

    async def closest_in(self, name: str, url: str, at: int, mode: str = "closest") -> FoundCapture:
        """As `closest`, in the structure file `name` (`url` names it in messages)."""
        if mode not in (Mode.CLOSEST, Mode.BEFORE, Mode.AFTER, Mode.EXACT):
            raise ClusterError(f"mode must be closest, before, after or exact, not {mode!r}")
        asked = (name, mode, at)
        cache = self._session.cache
        if cache is not None and (kept := cache.answers.get(asked)) is not None:
            if isinstance(kept, NotFound):
                raise kept
            assert isinstance(kept, FoundCapture)
            return kept
        when = format_iso(at)
        try:
            answer, address = await self._ask_structure(
                name, url, f"mode={mode}&at={quote(when)}", f"no capture of {url} {mode} {when}"
            )
        except NotFound as exc:
            if cache is not None:  # a miss costs a multicast wait: remember it too
                cache.answers.put(asked, exc)
            raise
        try:
            # A node of the version before may not say the URL: the one asked for stands in.
            answer.setdefault("url", url)
            closest = Closest.from_json(answer, f"/structure/{name}")
            neighbours = {
                key: None if (raw := getattr(closest, key)) is None else Capture.from_json(raw)
                for key in NEIGHBOURS
            }
            found = FoundCapture(
                Capture.from_json(closest.records[0]), address, neighbours, closest.url
            )
        except (KeyError, IndexError, TypeError, DlwebError) as exc:
            raise ClusterError(f"{address} answered without a record: {exc}") from None
        if cache is not None:
            cache.answers.put(asked, found)
        return found

    async def variants(self, url: str, at: int, limit: int = MAX_VARIANTS) -> list[str]:
        """The structure file names of the URLs of `url`'s path with other queries, those
        first captured nearest to `at` first, at most `limit` (none when `url` has no query)."""
        path = path_of(url)
        if path is None:
            return []
        name = structure_name(path)
        asked = (name, "variants", 0)
        cache = self._session.cache
        kept = cache.answers.get(asked) if cache is not None else None
        if isinstance(kept, list):
            named: list[Capture] = kept
        else:
            try:
                records = (await self.read_structure(name, path))[1]
            except NotFound:
                records = []
            named = [r for r in records if r.kind is RecordKind.VARIANT]
            if cache is not None:
                cache.answers.put(asked, named)
        nearest = sorted(named, key=lambda record: abs(record.time - at))
        return list(dict.fromkeys(record.content for record in nearest))[:limit]

    async def captures(self, url: str) -> list[Capture]:
        """Every capture of `url` (its WARC request and metadata records aside), oldest first."""
        records = (await self.read_structure(structure_name(url), url))[1]
        return [record for record in records if record.kind in REPLAYED_KINDS]

    async def capture_days(self, url: str) -> list[DayCount]:
        """Every capture of `url` (its WARC request and metadata records aside) counted per UTC
        day, oldest first. The storage node counts them in the structure file: a URL of 100,000
        captures costs one small answer, not a list of every record."""
        name = structure_name(url)
        answer, address = await self._ask_structure(
            name,
            url,
            "mode=days",
            f"no capture of {url}",
        )
        try:
            counted = DayCounts.from_json(answer, f"/structure/{name}")
            return [DayCount.from_json(day) for day in counted.days]
        except DlwebError as exc:
            raise ClusterError(f"{address} answered without day counts: {exc}") from None

    async def captures_between(self, url: str, start: int, stop: int, limit: int) -> list[Capture]:
        """The first captures of `url` from `start` to `stop` (UTC microseconds), oldest first;
        at most `limit` records are read, WARC request and metadata records among them."""
        name = structure_name(url)
        answer, address = await self._ask_structure(
            name,
            url,
            f"mode=range&from={quote(format_iso(start))}&to={quote(format_iso(stop))}"
            f"&limit={limit}",
            f"no capture of {url}",
        )
        try:
            found = RecordRange.from_json(answer, f"/structure/{name}")
            records = [Capture.from_json(record) for record in found.records]
        except (TypeError, DlwebError) as exc:
            raise ClusterError(f"{address} answered without records: {exc}") from None
        return [record for record in records if record.kind in REPLAYED_KINDS]

    async def read_structure(
        self, name: str, what: str | None = None, holders: list[str] | None = None
    ) -> tuple[str, list[Capture]]:
        """The URL a structure file holds and every record in it, oldest first."""
        answer, address = await self._ask_structure(
            name,
            what or f"structure file {name}",
            f"mode=range&limit={MAX_LISTED}",
            "",
            holders,
        )
        try:
            found = RecordRange.from_json(answer, f"/structure/{name}")
            return found.url, [Capture.from_json(record) for record in found.records]
        except (TypeError, DlwebError) as exc:
            raise ClusterError(f"{address} answered without records: {exc}") from None

    async def structure_files(self) -> AsyncIterator[tuple[str, list[str]]]:
        """Every structure file of the cluster and the addresses of its holders, by name."""
        after = ""
        master = await self._session.master_url()
        while True:
            url = f"{master}/structures?after={after}"
            try:
                async with self._session.http.get(url) as r:
                    answer = await r.json(content_type=None)
                    if r.status != 200:
                        raise ClusterError(f"{url} answered {r.status}: {answer.get('error')}")
                page = [
                    (check_name(str(item["name"])), [str(n["address"]) for n in item["nodes"]])
                    for item in answer["structures"]
                ]
            except NETWORK_ERRORS as exc:
                raise ClusterError(f"the master at {master} cannot be reached: {exc}") from None
            except (ValueError, KeyError, TypeError, AttributeError, DlwebError):
                raise ClusterError(f"{url} answered without a list of structure files") from None
            if not page:
                return
            for item in page:
                yield item
            after = page[-1][0]

    async def _ask_structure(
        self, name: str, what: str, query: str, none: str, holders: list[str] | None = None
    ) -> tuple[dict[str, Any], str]:
        """Ask the holders of a structure file in turn; the first answer and its node.

        A 404 with records means this copy has no capture matching; it may be a stale copy (its
        node was away while captures were appended), so the next holder is asked, and only when
        none has one is it final: NotFound(none). A 404 without records means this holder lost
        its copy. The first holder that answers 200 is believed: one request a lookup.
        """
        problems: list[str] = []
        asked = missing = unmatched = 0
        async for address in self._locator.holders("structure", name, holders):
            asked += 1
            try:
                status, answer = await self._session.get_object(
                    f"{address}/structure/{name}?{query}"
                )
            except (*NETWORK_ERRORS, ValueError) as exc:
                problems.append(f"{address}: {failure(exc, self._session.peer_silence)}")
                continue
            if status == 200:
                return answer, address
            if status == 404 and "records" in answer:
                unmatched += 1
                continue
            missing += status == 404
            problems.append(f"{address} answered {status}: {answer.get('error')}")
        if unmatched:
            raise NotFound(none)
        if not asked:
            raise NotFound(f"{what} is not in the archive")
        if missing == asked:
            raise NotFound(f"{what} is not in the archive (no holder has its structure file)")
        raise ClusterError(f"no holder of {what}'s structure file answered: {'; '.join(problems)}")
