"""Handing scored URLs to the scheduler: `POST {scheduler}/api/urls/inject` with
`{"urls": [{"url", "score", "campaign"}]}` (archive/crawl_calls.py ScoredUrl), the cluster's
write token as its bearer, in batches of BATCH."""

import json
from collections.abc import Sequence

import aiohttp

from archive.crawl_calls import ScoredUrl
from archive.errors import DlwebError
from archive.network import NETWORK_ERRORS

__all__ = ["BATCH", "InjectionRefused", "inject"]

BATCH = 500
MAX_REFUSAL = 4096  # bytes of a refusal read for its message


class InjectionRefused(DlwebError):
    """The scheduler could not be reached or refused the URLs; says why."""


async def inject(
    session: aiohttp.ClientSession, scheduler: str, token: str, urls: Sequence[ScoredUrl]
) -> int:
    """Inject `urls` into the scheduler at `scheduler` (http://host:port); the count sent."""
    endpoint = scheduler.rstrip("/") + "/api/urls/inject"
    for start in range(0, len(urls), BATCH):
        body = {"urls": [scored.to_json() for scored in urls[start : start + BATCH]]}
        try:
            async with session.post(
                endpoint,
                data=json.dumps(body),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            ) as answer:
                if answer.status >= 300:
                    raise InjectionRefused(
                        f"the scheduler at {scheduler} refused the URLs: HTTP {answer.status}"
                        f" {_reason(await answer.content.read(MAX_REFUSAL)) or answer.reason}"
                    )
        except NETWORK_ERRORS as exc:
            raise InjectionRefused(f"cannot reach the scheduler at {scheduler}: {exc}") from None
    return len(urls)


def _reason(body: bytes) -> str:
    """The `error` of a JSON refusal, '' when it has none."""
    try:
        refusal = json.loads(body)
    except ValueError:
        return ""
    error = refusal.get("error") if isinstance(refusal, dict) else None
    return error if isinstance(error, str) else ""
