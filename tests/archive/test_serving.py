"""One mapping of errors to HTTP statuses for every service: a client's fault is a 4xx naming what
to change, a server's a logged 5xx, a bug a 500 that hides its details."""

import logging

import aiohttp
import pytest
from aiohttp import web

from archive.errors import (
    BadName,
    ConfigError,
    CorruptFile,
    DlwebError,
    HashMismatch,
    InsufficientStorage,
    NotFound,
)
from archive.pack import BadPack
from archive.ranges import RangeNotSatisfiable
from archive.reading import ArchiveFault
from archive.serving import status_of, token_guard
from archive.structure import BadRecord
from archive.timestamps import BadTime
from archive.urlkey import BadUrl
from crawler.delimitation import BadOrder
from harbors.document import NotADocument
from storage_node.http import Late
from storage_node.node import UrlMismatch
from storage_node.scrub import ScrubRunning

from .conftest import Serve

TOKEN = "t" * 64
MESSAGE = "what was wrong, and where"


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (BadName(MESSAGE), 400),
        (HashMismatch(MESSAGE), 400),
        (BadRecord(MESSAGE), 400),
        (BadTime(MESSAGE), 400),
        (BadUrl(MESSAGE), 400),
        (BadPack(MESSAGE), 400),
        (BadOrder(MESSAGE), 400),
        (UrlMismatch(MESSAGE), 400),
        (NotFound(MESSAGE), 404),
        (Late(MESSAGE), 409),
        (ScrubRunning(MESSAGE), 409),
        (RangeNotSatisfiable("bytes=9-", 5), 416),
        (NotADocument(MESSAGE), 422),
        (CorruptFile(MESSAGE), 500),
        (ConfigError(MESSAGE), 500),
        (ArchiveFault(MESSAGE), 500),
        (InsufficientStorage(MESSAGE), 507),
        (DlwebError(MESSAGE), 500),
        (KeyError(MESSAGE), 500),
        (web.HTTPRequestEntityTooLarge(max_size=1, actual_size=2), 413),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
def test_each_error_has_its_status(error: Exception, status: int) -> None:
    assert status_of(error) == status


async def _answer(serve: Serve, error: Exception, method: str = "GET") -> tuple[int, str]:
    async def fail(request: web.Request) -> web.Response:
        raise error

    app = web.Application(middlewares=[token_guard(lambda request: TOKEN, "test service")])
    app.router.add_route("*", "/", fail)
    url = await serve(app)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, headers=headers) as r,
    ):
        return r.status, (await r.json())["error"]


async def test_a_client_fault_is_told_what_to_change(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    assert await _answer(serve, NotFound(MESSAGE)) == (404, MESSAGE)
    assert await _answer(serve, Late(MESSAGE), "POST") == (409, MESSAGE)
    assert not caplog.records


async def test_a_server_fault_is_logged_and_names_the_service(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    status, error = await _answer(serve, InsufficientStorage(MESSAGE), "PUT")
    assert (status, error) == (507, f"on the test service: {MESSAGE}")
    [logged] = caplog.records
    assert logged.levelno == logging.ERROR and MESSAGE in logged.getMessage()
    assert logged.exc_info is None


async def test_a_bug_is_a_500_whose_details_stay_in_the_log(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    status, error = await _answer(serve, KeyError("private detail"))
    assert (status, error) == (500, "internal error on the test service")
    [logged] = caplog.records
    assert logged.exc_info is not None and "private detail" not in error


async def test_an_http_error_keeps_its_status_and_reason(serve: Serve) -> None:
    assert await _answer(serve, web.HTTPBadRequest(reason="no such field")) == (
        400,
        "no such field",
    )
