"""Packs read as their bytes arrive: frames cut out of pieces of any size, over real HTTP."""

import hashlib
import random
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from aiohttp import web

from archive import pack
from archive.pack import BadPack, _Frames
from tests.archive.conftest import Serve


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


DATAS = [b"", b"x", b"y" * 39, b"z" * 40, b"w" * 41, bytes(range(256)) * 20, b"m" * pack.MAX_PACKED]
BODY = b"".join(pack.encode_frame(sha(d), d) for d in DATAS)
EXPECTED = [(bytes.fromhex(sha(d)), len(d), d) for d in DATAS]


def pieces(data: bytes, sizes: Iterator[int]) -> Iterator[bytes]:
    at = 0
    while at < len(data):
        size = next(sizes)
        yield data[at : at + size]
        at += size


def cut(stream: Iterator[bytes], frames: _Frames) -> list[tuple[bytes, int, bytes | None]]:
    got = [frame for piece in stream for frame in frames.feed(piece)]
    frames.finish()
    return got


@pytest.mark.parametrize("seed", range(6))
def test_frames_come_whole_however_the_bytes_are_cut(seed: int) -> None:
    rng = random.Random(seed)
    largest = rng.choice([3, 41, 1_000, 70_000, len(BODY)])
    assert cut(pieces(BODY, iter(lambda: rng.randint(1, largest), None)), _Frames()) == EXPECTED


def test_frames_come_whole_from_pieces_of_one_byte() -> None:
    small = BODY[: -(pack.MAX_PACKED + 40)]
    assert cut(pieces(small, iter(lambda: 1, None)), _Frames()) == EXPECTED[:-1]


def test_a_frame_inside_one_piece_is_a_view_of_it_not_a_copy() -> None:
    first, second = b"a" * 5_000, b"b" * 7_000
    piece = pack.encode_frame(sha(first), first) + pack.encode_frame(sha(second), second)
    frames = _Frames().feed(piece)
    assert [bytes(data or b"") for _, _, data in frames] == [first, second]
    assert all(data is not None and data.obj is piece for _, _, data in frames)


def test_a_frame_of_a_content_not_sent_has_no_bytes() -> None:
    missing = pack.unsent_frame(sha(b"gone"), pack.MISSING)
    body = missing + pack.encode_frame(sha(b"kept"), b"kept")
    frames = _Frames(bodiless=(pack.MISSING, pack.TOO_LARGE))
    assert cut(pieces(body, iter(lambda: 7, None)), frames) == [
        (bytes.fromhex(sha(b"gone")), pack.MISSING, None),
        (bytes.fromhex(sha(b"kept")), 4, b"kept"),
    ]


@pytest.mark.parametrize("keep", [1, 39, 40, 41, 42])
def test_a_pack_ending_inside_a_frame_names_the_frame(keep: int) -> None:
    first = pack.encode_frame(sha(b"one"), b"one")
    second = pack.encode_frame(sha(b"two"), b"two")
    frames = _Frames()
    with pytest.raises(BadPack, match="pack ends inside frame 1"):
        cut(iter([first + second[:keep]]), frames)
    assert frames.given == 1


def test_a_frame_announcing_too_many_bytes_is_refused_before_they_come() -> None:
    head = pack.unsent_frame(sha(b"huge"), pack.MAX_PACKED + 1)
    frames = _Frames()
    assert frames.feed(pack.encode_frame(sha(b"ok"), b"ok")) != []
    with pytest.raises(BadPack, match=f"frame 1 announces {pack.MAX_PACKED + 1} bytes"):
        frames.feed(head)


async def sent_in_pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    for piece in pieces(data, iter(lambda: size, None)):
        yield piece


async def uploads(request: web.Request) -> web.Response:
    """What read_upload gives of the request's body, or its error."""
    frames = int(request.query.get("max_frames", pack.MAX_NAMES))
    size = int(request.query.get("max_bytes", pack.MAX_UPLOAD))
    try:
        got = [
            (name, len(data))
            async for name, data in pack.read_upload(request.content, frames, size)
        ]
    except BadPack as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return web.json_response(got)


async def test_an_upload_sent_in_pieces_is_read_frame_by_frame(serve: Serve) -> None:
    app = web.Application(client_max_size=2 * len(BODY))
    app.router.add_post("/upload", uploads)
    base = await serve(app)
    async with aiohttp.ClientSession() as session:
        for size in (5, 4_096, 1 << 20):
            async with session.post(f"{base}/upload", data=sent_in_pieces(BODY, size)) as r:
                assert r.status == 200
                assert await r.json() == [[sha(d), len(d)] for d in DATAS]
        refusals = [
            ({"max_frames": 3}, BODY, "at most 3 contents"),
            ({"max_bytes": 100}, BODY, "at most 100 bytes of contents"),
            ({}, BODY[:-1], f"pack ends inside frame {len(DATAS) - 1}"),
        ]
        for limits, body, message in refusals:
            url = f"{base}/upload"
            async with session.post(url, params=limits, data=sent_in_pieces(body, 999)) as r:
                assert r.status == 400
                assert message in (await r.json())["error"]


async def test_a_pack_is_relayed_in_the_pieces_it_arrived_in(serve: Serve) -> None:
    """What read_upload keeps of a body, sent on as a Relay, is that body byte for byte."""
    received: list[bytes] = []

    async def last(request: web.Request) -> web.Response:
        received.append(await request.read())
        return web.json_response({})

    end = web.Application(client_max_size=2 * len(BODY))
    end.router.add_post("/last", last)
    following = await serve(end)

    async def relaying(request: web.Request) -> web.Response:
        kept: list[bytes] = []
        names = [name async for name, _ in pack.read_upload(request.content, pieces=kept)]
        relay = pack.Relay(kept)
        assert relay.size == len(BODY)
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{following}/last", data=relay) as r,
        ):
            assert r.status == 200
        return web.json_response({"names": names, "pieces": len(kept)})

    middle = web.Application(client_max_size=2 * len(BODY))
    middle.router.add_post("/relay", relaying)
    base = await serve(middle)
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{base}/relay", data=sent_in_pieces(BODY, 4_096)) as r,
    ):
        assert r.status == 200
        answer = await r.json()
    assert answer["names"] == [sha(d) for d in DATAS] and answer["pieces"] > 1
    assert received == [BODY]


async def test_a_pack_read_back_checks_the_order_and_the_count(serve: Serve) -> None:
    names = [sha(b"a"), sha(b"b"), sha(b"c")]
    answers = {
        "whole": pack.encode_frame(names[0], b"a")
        + pack.unsent_frame(names[1], pack.MISSING)
        + pack.unsent_frame(names[2], pack.TOO_LARGE),
        "swapped": pack.encode_frame(names[1], b"b") + pack.encode_frame(names[0], b"a"),
        "short": pack.encode_frame(names[0], b"a"),
        "more": b"".join(pack.encode_frame(sha(d), d) for d in (b"a", b"b", b"c", b"d")),
    }

    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        body = answers[request.match_info["case"]]
        # A node sending more than asked is caught when the extra frame comes with the last one.
        async for piece in sent_in_pieces(
            body, len(body) if request.match_info["case"] == "more" else 3
        ):
            await response.write(piece)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/{case}", answer)
    base = await serve(app)

    async def read(case: str) -> list[tuple[str, bytes | None, str | None]]:
        async with aiohttp.ClientSession() as session, session.post(f"{base}/{case}") as r:
            return [frame async for frame in pack.read_frames(r.content, names)]

    assert await read("whole") == [
        (names[0], b"a", None),
        (names[1], None, "not held by the source"),
        (names[2], None, "too large to pack"),
    ]
    with pytest.raises(BadPack, match=f"sent {names[1]} where {names[0]} was due"):
        await read("swapped")
    with pytest.raises(BadPack, match="ended early: 1 of 3 contents came"):
        await read("short")
    with pytest.raises(BadPack, match=f"sent {sha(b'd')} after the 3 asked for"):
        await read("more")
