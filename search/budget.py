"""Time budgets of the search layer's answers, so that one costly query never keeps its asker
(and, in the proxy, the clients waiting behind it) waiting without end.

A CDX answer is our own Python: it checks its Deadline between the steps of its work (reading
files, filtering and writing rows) and stops there. A tantivy search cannot be stopped once it
has begun: it runs on the few threads of a Budgeted, its asker is answered OverBudget when the
budget runs out, and the search goes on to its end on its thread, which takes no other search
meanwhile; so costly queries sent again and again hold those threads, and nothing else.
"""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as Late
from typing import ParamSpec, TypeVar

from archive.deadline import Deadline

from .errors import OverBudget

P = ParamSpec("P")
T = TypeVar("T")


def answer_deadline(seconds: float, what: str, advice: str) -> Deadline:
    """A deadline whose overrun tells the asker that `what` ran out of time, and what to do."""

    def overrun(budget: float) -> OverBudget:
        return OverBudget(f"{what} took longer than {budget:g} s: {advice}")

    return Deadline(seconds, overrun)


class Budgeted:
    """Calls that cannot be stopped, run on `threads` threads of their own, each answered within
    `seconds` (counted from the call, its wait for a free thread included)."""

    def __init__(self, threads: int, seconds: float, what: str, advice: str) -> None:
        self.seconds = seconds
        self.what = what
        self.advice = advice
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="dlweb-budgeted")

    def run(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`call`'s result; OverBudget when it is not there within the budget (a call not begun
        by then is dropped, one begun runs on to its end)."""
        deadline = answer_deadline(self.seconds, self.what, self.advice)
        future = self._pool.submit(call, *args, **kwargs)
        try:
            return future.result(timeout=deadline.seconds)
        except Late:
            future.cancel()
            raise deadline.overrun() from None
