"""Both sides of the HIP handshake; its frames are JSON text, whatever format is negotiated."""

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import WSMsgType

from archive.hip._auth import (
    MASTER_LABEL,
    REDIRECT_LABEL,
    SLAVE_LABEL,
    check_proof,
    new_nonce,
    proof,
)
from archive.hip._errors import HipError
from archive.hip._frames import CODECS, Codec, Redirect, is_ws_url
from archive.hip._socket import Socket

VERSION = 1
TIMEOUT = 10.0
CLOSE_AUTH_FAILED = 4001
CLOSE_BAD_HANDSHAKE = 4002
MAX_NAME_LEN = 200
MAX_FORMATS = 8
_HEX = re.compile(r"[0-9a-f]{64}")


class HandshakeFailed(HipError):
    """The handshake could not complete; close_code is what to close the connection with."""

    def __init__(self, reason: str, close_code: int = CLOSE_BAD_HANDSHAKE) -> None:
        super().__init__(reason)
        self.close_code = close_code


class AuthRefused(HandshakeFailed):
    """One side did not prove it knows the cluster secret."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, CLOSE_AUTH_FAILED)


@dataclass(frozen=True)
class Accepted:
    """What the master learnt from a slave that proved the secret."""

    name: str
    role: str
    codec: Codec
    redirected_to: str | None


@dataclass(frozen=True)
class Welcomed:
    """What the slave learnt from a master that proved the secret and accepted it."""

    master_name: str
    codec: Codec


async def accept(
    ws: Socket,
    secret: bytes,
    master_name: str,
    redirect: Callable[[str, str], str | None] | None,
) -> Accepted:
    """Run the master's side of the handshake."""
    hello = await _receive(ws, "hello")
    if hello.get("v") != VERSION:
        raise HandshakeFailed(f"unsupported HIP version {hello.get('v')!r}, expected {VERSION}")
    name = _name(hello, "name")
    role = _name(hello, "role")
    offered = hello.get("formats")
    if not isinstance(offered, list) or not 0 < len(offered) <= MAX_FORMATS:
        raise HandshakeFailed(f"hello field 'formats' must be a list of 1 to {MAX_FORMATS} names")
    common = [fmt for fmt in offered if isinstance(fmt, str) and fmt in CODECS]
    if not common:
        raise HandshakeFailed(f"no common format: offered {offered!r}, supported {sorted(CODECS)}")
    fmt = common[0]
    slave_nonce = _nonce(hello)
    master_nonce = new_nonce()
    await _send(ws, {"t": "challenge", "name": master_name, "nonce": master_nonce, "format": fmt})
    auth = await _receive(ws, "auth")
    fields = (slave_nonce, master_nonce, name, role, master_name, fmt)
    if not check_proof(secret, _proof(auth), SLAVE_LABEL, *fields):
        raise AuthRefused(f"slave {name!r} did not prove the cluster secret")
    target = redirect(name, role) if redirect is not None else None
    if target is not None:
        await _send(
            ws,
            {
                "t": "redirect",
                "url": target,
                "proof": proof(secret, REDIRECT_LABEL, *fields, target),
            },
        )
    else:
        await _send(ws, {"t": "welcome", "proof": proof(secret, MASTER_LABEL, *fields)})
    return Accepted(name, role, CODECS[fmt], target)


async def connect(
    ws: Socket, secret: bytes, name: str, role: str, formats: Sequence[str], url: str
) -> Welcomed | Redirect:
    """Run the slave's side of the handshake against the master at url."""
    slave_nonce = new_nonce()
    hello = {"t": "hello", "v": VERSION, "name": name, "role": role, "formats": list(formats)}
    await _send(ws, {**hello, "nonce": slave_nonce})
    challenge = await _receive(ws, "challenge")
    master_name = _name(challenge, "name")
    fmt = challenge.get("format")
    if fmt not in formats or fmt not in CODECS:
        raise HandshakeFailed(f"master at {url} chose format {fmt!r}, not one of {list(formats)}")
    fields = (slave_nonce, _nonce(challenge), name, role, master_name, fmt)
    await _send(ws, {"t": "auth", "proof": proof(secret, SLAVE_LABEL, *fields)})
    answer = await _receive(ws, "welcome", "redirect", refused_by=url)
    if answer["t"] == "redirect":
        target = answer.get("url")
        if not isinstance(target, str) or not is_ws_url(target):
            raise HandshakeFailed(f"master at {url} redirected to {target!r}, not a ws:// URL")
        if not check_proof(secret, _proof(answer), REDIRECT_LABEL, *fields, target):
            raise AuthRefused(f"master at {url} sent a redirect without proving the cluster secret")
        return Redirect(target)
    if not check_proof(secret, _proof(answer), MASTER_LABEL, *fields):
        raise AuthRefused(f"master at {url} did not prove the cluster secret")
    return Welcomed(master_name, CODECS[fmt])


async def _send(ws: Socket, frame: dict[str, Any]) -> None:
    try:
        await ws.send_str(json.dumps(frame))
    except ConnectionError as exc:
        raise HandshakeFailed(f"connection lost during handshake: {exc}") from None


async def _receive(ws: Socket, *kinds: str, refused_by: str | None = None) -> dict[str, Any]:
    """The next handshake frame, which must be one of the given kinds."""
    expected = " or ".join(kinds)
    msg = await ws.receive(timeout=TIMEOUT)
    if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
        if refused_by is not None and msg.type == WSMsgType.CLOSE and msg.data == CLOSE_AUTH_FAILED:
            raise AuthRefused(f"authentication refused by {refused_by}")
        detail = f" ({msg.data}: {msg.extra})" if msg.type == WSMsgType.CLOSE else ""
        raise HandshakeFailed(f"connection closed while waiting for {expected}{detail}")
    if msg.type != WSMsgType.TEXT:
        raise HandshakeFailed(f"{msg.type.name.lower()} frame while waiting for {expected}")
    try:
        frame = json.loads(msg.data)
    except (ValueError, RecursionError):
        raise HandshakeFailed(f"malformed handshake: {expected} frame is not JSON") from None
    if not isinstance(frame, dict) or frame.get("t") not in kinds:
        kind = frame.get("t") if isinstance(frame, dict) else type(frame).__name__
        raise HandshakeFailed(f"malformed handshake: expected {expected} frame, got {kind!r}")
    return frame


def _name(frame: dict[str, Any], key: str) -> str:
    value = frame.get(key)
    if not isinstance(value, str) or not 0 < len(value) <= MAX_NAME_LEN or not value.isprintable():
        raise HandshakeFailed(
            f"{frame['t']} field {key!r} must be a printable string of 1 to {MAX_NAME_LEN} chars"
        )
    return value


def _nonce(frame: dict[str, Any]) -> str:
    value = frame.get("nonce")
    if not isinstance(value, str) or not _HEX.fullmatch(value):
        raise HandshakeFailed(f"{frame['t']} field 'nonce' must be 64 lowercase hex digits")
    return value


def _proof(frame: dict[str, Any]) -> str:
    value = frame.get("proof")
    if not isinstance(value, str):
        raise HandshakeFailed(f"{frame['t']} field 'proof' is missing or not a string")
    return value
