"""The crawl scheduler's JSON API as the directory and map harbors read it: one GET, its answer
read bounded in time and size and checked as its type (archive/scheduler_answers.py), every
failure a SchedulerFailure whose message a page can show and whose status it can answer with.
A proxy started without `--scheduler` has none: NoScheduler."""

import html
import json
from collections.abc import Mapping
from typing import TypeVar
from urllib.parse import urlencode

from archive.answers import Answer, parsed
from archive.errors import DlwebError
from archive.network import NETWORK_ERRORS, failure, peer_timeout

from . import page
from .answer import Answer as Page
from .answer import HarborContext

__all__ = ["NoScheduler", "SchedulerFailure", "ask", "failure_page"]

MAX_ANSWER = 32 * 2**20  # bytes of an answer read, at most
TIMEOUT = 30.0  # seconds for a whole answer
_READ = 64 * 1024
A = TypeVar("A", bound=Answer)


class SchedulerFailure(DlwebError):
    """The scheduler could not be asked, refused, or answered what cannot be read; `status` is
    the status of the harbor page that says so."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class NoScheduler(SchedulerFailure):
    """The proxy was started without a scheduler."""

    def __init__(self) -> None:
        super().__init__(503, "this proxy was started without a scheduler")


async def ask(context: HarborContext, kind: type[A], path: str, query: Mapping[str, str]) -> A:
    """The scheduler's answer to GET `path` with `query`, as a `kind`."""
    if not context.scheduler:
        raise NoScheduler()
    base = context.scheduler.rstrip("/")
    url = f"{base}{path}?{urlencode(query)}" if query else f"{base}{path}"
    try:
        async with context.client.http.get(url, timeout=peer_timeout(total=TIMEOUT)) as answer:
            status = answer.status
            body = bytearray()
            while chunk := await answer.content.read(_READ):
                body += chunk
                if len(body) > MAX_ANSWER:
                    raise SchedulerFailure(
                        502, f"the scheduler's answer is larger than {MAX_ANSWER // 2**20} MiB"
                    )
    except NETWORK_ERRORS as exc:
        raise SchedulerFailure(
            502, f"cannot reach the scheduler at {base}: {failure(exc)}"
        ) from None
    try:
        data = json.loads(body)
    except ValueError:
        raise SchedulerFailure(502, f"the scheduler's answer to {path} is not JSON") from None
    if status != 200:
        said = data.get("error") if isinstance(data, dict) else None
        message = said if isinstance(said, str) else f"status {status}"
        raise SchedulerFailure(status if 400 <= status < 500 else 502, message)
    return parsed(
        kind,
        data,
        path,
        lambda why: SchedulerFailure(502, f"the scheduler's answer cannot be read: {why}"),
    )


def failure_page(heading: str, exc: SchedulerFailure, current: str) -> Page:
    """The page of a harbor that could not get what it shows from the scheduler: why, or that
    the proxy has none."""
    if isinstance(exc, NoScheduler):
        said = (
            '<p class="note">This proxy has no crawl scheduler: it shows the sites a scheduler'
            " knows, and their maps, only when its operator starts it with"
            " <code>--scheduler URL</code>.</p>"
        )
    else:
        said = f'<p class="error" role="alert">{html.escape(str(exc))}</p>'
    body = f"<h1>{html.escape(heading)}</h1>\n{said}"
    return page.page(heading, body, exc.status, current=current)
