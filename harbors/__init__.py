"""Archive harbors: virtual sites under `.dlweb` that the consultation proxy answers itself."""

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


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    """The answer of the harbor the request is for, its header fields checked."""
    found = await _answer(context, request)
    return found.checked(f"{request.method} {request.host}{request.path}")


async def _answer(context: HarborContext, request: HarborRequest) -> Answer:
    name = request.host.lower().rstrip(".").removesuffix(SUFFIX)
    if request.path == page.STYLESHEET:
        return page.stylesheet()
    if name == "date":
        return await date.answer(context, request)
    if name == "api":
        return await api.answer(context, request)
    if name == "cert":
        return cert.answer(context, request)
    if name == "captures":
        return await captures.answer(context, request)
    if name == "status":
        return await status.answer(context, request)
    if name == "streams":
        return await streams.answer(context, request)
    if name == "search":
        return await search.answer(context, request)
    if name == "directory":
        return await directory.answer(context, request)
    if name == "map":
        return await site_map.answer(context, request)
    known = (
        "date.dlweb, captures.dlweb, search.dlweb, streams.dlweb, status.dlweb, cert.dlweb,"
        " api.dlweb, directory.dlweb, map.dlweb"
    )
    return Answer(
        404, f"No harbor {request.host} here; the harbors are {known}.\n".encode(), "text/plain"
    )
