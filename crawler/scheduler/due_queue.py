"""The due queue: the queued and idle sites whose next crawl has come, a heap by priority, which
an SQL index cannot give since being due depends on the time asked about. The store keeps it in
memory, up to date with every write, and next_sites reads it."""

import math
from heapq import heapify, heappop, heappush

__all__ = ["SCHEDULED", "DueQueue"]

SCHEDULED = ("queued", "idle")  # the states next_sites picks from


class DueQueue:
    """The scheduled sites due by `until`, highest priority first, then longest due. The heap
    may hold stale entries (a site since claimed, or with another priority): they are skipped."""

    def __init__(self) -> None:
        self._due: dict[int, tuple[float, float]] = {}  # site -> (priority, next_crawl)
        self._heap: list[tuple[float, float, int]] = []  # (-priority, next_crawl, site)
        self.until = -math.inf  # every scheduled site with next_crawl <= it is in _due

    def note(self, site_id: int, state: str, priority: float, next_crawl: float) -> None:
        """Brings a site just read or written up to date: in the queue if due by `until`."""
        if state in SCHEDULED and next_crawl <= self.until:
            due = (priority, next_crawl)
            if self._due.get(site_id) != due:
                self._due[site_id] = due
                heappush(self._heap, (-priority, next_crawl, site_id))
        else:
            self._due.pop(site_id, None)

    def drop(self, site_id: int) -> None:
        """Takes out a site just claimed."""
        self._due.pop(site_id, None)

    def rewind(self, now: float) -> None:
        """Asked about an earlier time: what is not due then goes back to the database's side."""
        self._due = {site: due for site, due in self._due.items() if due[1] <= now}
        self._rebuild_heap()
        self.until = now

    def first(self, limit: int) -> list[int]:
        """The first `limit` sites of the queue, which stay in it."""
        chosen: list[int] = []
        taken: list[tuple[float, float, int]] = []
        heap = self._heap
        while heap and len(chosen) < limit:
            entry = heappop(heap)
            negative_priority, next_crawl, site_id = entry
            if self._due.get(site_id) == (-negative_priority, next_crawl):
                taken.append(entry)
                chosen.append(site_id)
        for entry in taken:
            heappush(heap, entry)
        if len(heap) > 2 * len(self._due) + 1024:
            self._rebuild_heap()
        return chosen

    def _rebuild_heap(self) -> None:
        self._heap = [(-due[0], due[1], site) for site, due in self._due.items()]
        heapify(self._heap)
