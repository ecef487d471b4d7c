"""Archive harbors: virtual sites under `.dlweb` that the consultation proxy answers itself."""

from collections.abc import Awaitable, Callable

from . import api, captures, cert, date, directory, page, search, site_map, status, streams
from .answer import Answer, HarborContext
from .request import SUFFIX, HarborRequest, is_harbor
from .settings import ClientSetting, ClientSettings

__all__ = [
    "Answer",
    "ClientSetting",
    "ClientSettings",
    "HarborContext",
    "HarborRequest",
    "answer",
    "is_harbor",
]

# Each harbor's answer, by the name its host has before `.dlweb`.
_HARBORS: dict[str, Callable[[HarborContext, HarborRequest], Awaitable[Answer]]] = {
    "date": date.answer,
    "captures": captures.answer,
    "search": search.answer,
    "streams": streams.answer,
    "status": status.answer,
    "cert": cert.answer,
    "api": api.answer,
    "directory": directory.answer,
    "map": site_map.answer,
}


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    """The answer of the harbor the request is for, its header fields checked."""
    found = await _answer(context, request)
    return found.checked(f"{request.method} {request.host}{request.path}")


async def _answer(context: HarborContext, request: HarborRequest) -> Answer:
    if request.path == page.STYLESHEET:
        return page.stylesheet()
    harbor = _HARBORS.get(request.host.lower().rstrip(".").removesuffix(SUFFIX))
    if harbor is not None:
        return await harbor(context, request)
    known = ", ".join(name + SUFFIX for name in _HARBORS)
    return Answer(
        404, f"No harbor {request.host} here; the harbors are {known}.\n".encode(), "text/plain"
    )
