"""Codecs and the envelope of the frames exchanged after the handshake, with their validation."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from archive import jsonwire
from archive.hip._errors import HipError
from archive.yaml_safe import SafeDumper, safe_load

FORMATS = ("json", "yaml")
MAX_ID = 2**53 - 1
MAX_METHOD_LEN = 200


class BadFrame(HipError):
    """A frame that breaks the envelope; request_id is set when it can be answered."""

    def __init__(self, reason: str, request_id: int | None = None) -> None:
        super().__init__(reason)
        self.request_id = request_id


class _YamlDumper(SafeDumper):  # type: ignore[misc, valid-type]
    """The safe dumper (libyaml's when present), also writing tuples as lists like JSON does."""


_YamlDumper.add_representer(tuple, yaml.SafeDumper.represent_list)


@dataclass(frozen=True)
class Codec:
    """One serialisation of frames; every frame is sent as a WebSocket text message."""

    name: str
    _dump: Callable[[Any], str]
    _load: Callable[[str], Any]

    def encode(self, obj: Any) -> str:
        try:
            return self._dump(obj)
        except (TypeError, ValueError, yaml.YAMLError) as exc:
            raise HipError(f"cannot encode as {self.name}: {exc}") from None

    def decode(self, text: str) -> Any:
        try:
            return self._load(text)
        except (ValueError, yaml.YAMLError, RecursionError) as exc:
            raise BadFrame(f"frame is not valid {self.name}: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


JSON = Codec("json", jsonwire.dumps, jsonwire.loads)
YAML = Codec(
    "yaml",
    lambda obj: yaml.dump(obj, Dumper=_YamlDumper, allow_unicode=True, sort_keys=False),
    safe_load,
)
CODECS = {codec.name: codec for codec in (JSON, YAML)}


@dataclass(frozen=True)
class Request:
    id: int
    method: str
    params: Any


@dataclass(frozen=True)
class Response:
    id: int
    result: Any


@dataclass(frozen=True)
class Failure:
    id: int
    code: str
    message: str


@dataclass(frozen=True)
class Note:
    method: str
    params: Any


@dataclass(frozen=True)
class Redirect:
    """The master's word to a slave to connect to `url` instead: a frame, or its handshake's
    answer."""

    url: str


Frame = Request | Response | Failure | Note | Redirect


def request(request_id: int, method: str, params: Any) -> dict[str, Any]:
    return {"t": "req", "id": request_id, "m": method, "p": params}


def response(request_id: int, result: Any) -> dict[str, Any]:
    return {"t": "res", "id": request_id, "r": result}


def failure(request_id: int, code: str, message: str) -> dict[str, Any]:
    return {"t": "err", "id": request_id, "c": code, "e": message}


def note(method: str, params: Any) -> dict[str, Any]:
    return {"t": "note", "m": method, "p": params}


def redirect(url: str) -> dict[str, Any]:
    return {"t": "redirect", "url": url}


def is_ws_url(url: str) -> bool:
    """Whether a redirect target is a WebSocket URL a slave may connect to."""
    return url.startswith(("ws://", "wss://")) and len(url) > len("wss://")


def parse(text: str, codec: Codec) -> Frame:
    """Decode and validate one incoming frame; raise BadFrame naming what is wrong."""
    raw = codec.decode(text)
    if not isinstance(raw, dict):
        raise BadFrame(f"frame is a {type(raw).__name__}, not an object")
    kind = raw.get("t")
    if kind == "req":
        request_id = _id(raw)
        return Request(request_id, _method(raw, request_id), raw.get("p"))
    if kind == "res":
        request_id = _id(raw)
        if "r" not in raw:
            raise BadFrame(f"res frame {request_id} has no field 'r'")
        return Response(request_id, raw["r"])
    if kind == "err":
        request_id = _id(raw)
        return Failure(request_id, _text(raw, "c"), _text(raw, "e"))
    if kind == "note":
        return Note(_method(raw, None), raw.get("p"))
    if kind == "redirect":
        url = _text(raw, "url")
        if not is_ws_url(url):
            raise BadFrame(f"redirect url {url!r} is not a ws:// or wss:// URL")
        return Redirect(url)
    raise BadFrame(f"unknown frame type {kind!r}")


def _id(raw: dict[Any, Any]) -> int:
    value = raw.get("id")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ID:
        raise BadFrame(f"{raw['t']} frame has no valid id (an integer from 0 to 2**53-1)")
    return value


def _method(raw: dict[Any, Any], request_id: int | None) -> str:
    value = raw.get("m")
    if not isinstance(value, str) or not 0 < len(value) <= MAX_METHOD_LEN:
        raise BadFrame(
            f"{raw['t']} frame has no valid method 'm' (a string of 1 to {MAX_METHOD_LEN} chars)",
            request_id,
        )
    return value


def _text(raw: dict[Any, Any], key: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str):
        raise BadFrame(f"{raw['t']} frame field {key!r} is missing or not a string")
    return value
