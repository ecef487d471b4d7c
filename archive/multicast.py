"""Multicast lookup: ask the local network which storage nodes hold a file.

A reader sends one UDP datagram to the multicast group whose last byte is the file name's first
byte (group base 230.0.0.0 by default, so file "a3..." is asked on 230.0.0.163). Storage nodes
join the groups of the files they hold, or all 256, and a node that holds the file answers the
asker by unicast, to the request's source address and port, with its HTTP address. Every datagram
is signed with HMAC-SHA256 keyed with the cluster secret: nodes ignore requests from strangers (so
they cannot be used as reflectors) and readers ignore answers that are unsigned, wrongly signed or
bound to another request.

Datagram format, integers in network byte order, version 1:

    offset  size  field
    0       4     magic b"DLMC"
    4       1     version (1)
    5       1     type: 1 request, 2 answer
    6       1     kind: 1 content, 2 structure
    7       8     request id, a random 64-bit number chosen by the asker
    15      32    file name as the raw 32 bytes of its SHA-256
    answers only:
    47      1     n, length of the node id in bytes (1 to 255)
    48      n     node id, UTF-8
    48+n    1     m, length of the HTTP address in bytes (1 to 255)
    49+n    m     HTTP address, UTF-8, such as "http://127.0.0.1:8101"
    both:
    end-32  32    HMAC-SHA256 of every preceding byte, keyed with the cluster secret

A node whose copy of a structure file is stale (the master said the active copy on another node
has records this one lacks, and has not refreshed it yet) answers after half the lookup wait
(LATE_SHARE): a reader takes the first answer, so it reads the active copy whenever that node
answers in time, and the stale copy only when no other holder does.

A request is exactly 79 bytes. The type byte is signed, so a request's HMAC never passes for an
answer's, and an answer's HMAC covers the request id, kind and name it answers.

Linux caps multicast memberships per socket (net.ipv4.igmp_max_memberships, usually 20), so a
responder spreads the 256 groups over several sockets bound to the same port, each with
IP_MULTICAST_ALL off so that it receives only the groups it joined: every request reaches exactly
one socket of a node.
"""

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import logging
import math
import secrets
import socket
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from .errors import ConfigError
from .hashing import check_name

log = logging.getLogger(__name__)

KINDS = ("content", "structure")
JOIN_MODES = ("all", "held")
GROUP_COUNT = 256
MAGIC = b"DLMC"
VERSION = 1

_REQUEST = 1
_ANSWER = 2
_HEADER = struct.Struct("!4sBBBQ32s")
_MAC_SIZE = hashlib.sha256().digest_size
REQUEST_SIZE = _HEADER.size + _MAC_SIZE
_MAX_FIELD_BYTES = 255
_MAX_WAIT = 60.0
# The share of the lookup wait after which a stale copy answers.
LATE_SHARE = 0.5
_IP_MULTICAST_ALL = getattr(socket, "IP_MULTICAST_ALL", 49)
_MEMBERSHIP_LIMIT_FILE = "/proc/sys/net/ipv4/igmp_max_memberships"
_DEFAULT_MEMBERSHIP_LIMIT = 20
_RESERVED_CONTROL_BLOCK = ipaddress.IPv4Network("224.0.0.0/24")

_Address = tuple[Any, ...]


@dataclass(frozen=True)
class MulticastSettings:
    """Where lookups are asked and answered, and how long an asker waits."""

    group_base: str = "230.0.0.0"
    port: int = 47800
    interface: str = "127.0.0.1"
    ttl: int = 1
    wait: float = 0.05
    join: str = "all"

    def __post_init__(self) -> None:
        base = _parse_ipv4(self.group_base, "multicast group_base")
        if not base.is_multicast or base.packed[3] != 0:
            raise ConfigError(
                f"multicast group_base {self.group_base!r} must be an IPv4 multicast address"
                " ending in .0, such as 230.0.0.0"
            )
        if base in _RESERVED_CONTROL_BLOCK:
            raise ConfigError(
                f"multicast group_base {self.group_base!r} is the reserved local network control"
                " block 224.0.0.0/24; use another /24 such as 230.0.0.0"
            )
        if _parse_ipv4(self.interface, "multicast interface").is_multicast:
            raise ConfigError(
                f"multicast interface {self.interface!r} must be the address of a local"
                " interface, not a multicast group"
            )
        if not _is_int(self.port) or not 1 <= self.port <= 65535:
            raise ConfigError(f"multicast port {self.port!r} must be an integer from 1 to 65535")
        if not _is_int(self.ttl) or not 0 <= self.ttl <= 255:
            raise ConfigError(f"multicast ttl {self.ttl!r} must be an integer from 0 to 255")
        if not _is_positive_wait(self.wait):
            raise ConfigError(
                f"multicast wait {self.wait!r} must be a number of seconds above 0"
                f" and at most {_MAX_WAIT:g}"
            )
        if self.join not in JOIN_MODES:
            raise ConfigError(f"multicast join {self.join!r} must be 'all' or 'held'")


@dataclass(frozen=True)
class Answer:
    """One node's signed statement that it holds a file, and where to fetch it."""

    node: str
    address: str
    kind: str
    name: str


def group_for(name: str, settings: MulticastSettings) -> str:
    """The multicast group on which the holders of file `name` are asked."""
    return _group_address(settings, int(check_name(name)[:2], 16))


class LookupClient:
    """Asks who holds a file, over one socket that concurrent lookups share.

    Answers are matched to their lookup by request id; the `answers` and `rejected` counters
    count accepted answers and ignored datagrams (malformed, badly signed, or for no pending
    lookup).
    """

    def __init__(self, settings: MulticastSettings, secret: bytes) -> None:
        self._settings = settings
        self._secret = _check_secret(secret)
        self._transport: asyncio.DatagramTransport | None = None
        self._pending: dict[int, _Pending] = {}
        self.answers = 0
        self.rejected = 0

    async def start(self) -> None:
        if self._transport is not None:
            raise RuntimeError("lookup client is already started")
        sock = _client_socket(self._settings)
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.create_datagram_endpoint(
            lambda: _Endpoint(self._on_datagram), sock=sock
        )

    async def close(self) -> None:
        """Stop listening; lookups still waiting return the answers they already have."""
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        for pending in self._pending.values():
            pending.done.set()

    async def locate(
        self, kind: str, name: str, *, wait: float | None = None, first: bool = False
    ) -> list[Answer]:
        """Every valid answer received within `wait` seconds (or the first one when `first`).

        An empty list means nobody answered: the caller decides whether that means unknown
        (structure) or an archive fault (content).
        """
        check_name(name)
        kind_code = _kind_code(kind)
        delay = self._settings.wait if wait is None else wait
        if not _is_positive_wait(delay):
            raise ValueError(f"lookup wait {wait!r} must be above 0 and at most {_MAX_WAIT:g}")
        if self._transport is None:
            raise RuntimeError("lookup client is not started")
        request_id = secrets.randbits(64)
        while request_id in self._pending:
            request_id = secrets.randbits(64)
        pending = _Pending(kind, name, first)
        self._pending[request_id] = pending
        try:
            request = _sign(
                self._secret,
                _HEADER.pack(MAGIC, VERSION, _REQUEST, kind_code, request_id, bytes.fromhex(name)),
            )
            self._transport.sendto(request, (group_for(name, self._settings), self._settings.port))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await pending.done.wait()
        finally:
            del self._pending[request_id]
        return pending.answers

    def _on_datagram(self, data: bytes, addr: _Address, _: asyncio.DatagramTransport) -> None:
        try:
            frame = _decode(data, self._secret)
        except _BadDatagram as exc:
            self._reject(addr, str(exc))
            return
        pending = self._pending.get(frame.request_id) if frame.type == _ANSWER else None
        if pending is None or (frame.kind, frame.name) != (pending.kind, pending.name):
            self._reject(addr, "not an answer to a pending lookup")
            return
        if any(answer.node == frame.node for answer in pending.answers):
            return
        pending.answers.append(Answer(frame.node, frame.address, frame.kind, frame.name))
        self.answers += 1
        if pending.first:
            pending.done.set()

    def _reject(self, addr: _Address, reason: str) -> None:
        self.rejected += 1
        log.debug("ignored lookup answer from %s: %s", _show(addr), reason)


class Responder:
    """Answers lookups for the files a node holds, on the multicast groups it joined.

    `holds(kind, name)` is called on the event loop for every signed request; it should be quick
    (bloom filter, deletion set, then one stat). `stale(kind, name)`, asked of a file held, says
    its copy lacks what another holder has: it is answered late. Counters: `requests` (signed
    requests received), `answers` (answers sent, `late` of them late) and `rejected` (datagrams
    dropped as malformed or badly signed).
    """

    def __init__(
        self,
        settings: MulticastSettings,
        secret: bytes,
        node_id: str,
        http_address: str,
        holds: Callable[[str, str], bool],
        stale: Callable[[str, str], bool] | None = None,
    ) -> None:
        self._settings = settings
        self._secret = _check_secret(secret)
        self._node_field = _length_prefixed(node_id, "node id")
        self._address_field = _length_prefixed(http_address, "HTTP address")
        self._holds = holds
        self._stale = stale
        self._groups: set[int] = set()
        self._sockets: list[socket.socket] = []
        self._transports: list[asyncio.DatagramTransport] = []
        self._per_socket = _memberships_per_socket()
        self.requests = 0
        self.answers = 0
        self.late = 0
        self.rejected = 0

    @property
    def groups(self) -> frozenset[int]:
        """First bytes of the groups joined (or to be joined by start)."""
        return frozenset(self._groups)

    async def start(self) -> None:
        """Bind the sockets and join the groups (all 256 when join is "all")."""
        if self._sockets:
            raise RuntimeError("responder is already started")
        wanted = range(GROUP_COUNT) if self._settings.join == "all" else sorted(self._groups)
        self._sockets = _responder_sockets(
            self._settings, math.ceil(GROUP_COUNT / self._per_socket)
        )
        try:
            for byte in wanted:
                self._join(byte)
        except ConfigError:
            for sock in self._sockets:
                sock.close()
            self._sockets = []
            raise
        self._groups.update(wanted)
        loop = asyncio.get_running_loop()
        for sock in self._sockets:
            transport, _ = await loop.create_datagram_endpoint(
                lambda: _Endpoint(self._on_datagram), sock=sock
            )
            self._transports.append(transport)

    async def close(self) -> None:
        for transport in self._transports:
            transport.close()
        self._transports = []
        self._sockets = []

    def join_groups(self, first_bytes: Iterable[int]) -> None:
        """Join the groups of these file-name first bytes, as the node gains files."""
        for byte in first_bytes:
            if not _is_int(byte) or not 0 <= byte < GROUP_COUNT:
                raise ValueError(f"group {byte!r} is not a byte from 0 to 255")
            if byte in self._groups:
                continue
            if self._sockets:
                self._join(byte)
            self._groups.add(byte)

    def _join(self, byte: int) -> None:
        group = _group_address(self._settings, byte)
        membership = socket.inet_aton(group) + socket.inet_aton(self._settings.interface)
        sock = self._sockets[byte // self._per_socket]
        try:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
        except OSError as exc:
            raise ConfigError(
                f"cannot join multicast group {group} on interface"
                f" {self._settings.interface}: {exc}"
            ) from exc

    def _on_datagram(
        self, data: bytes, addr: _Address, transport: asyncio.DatagramTransport
    ) -> None:
        try:
            frame = _decode(data, self._secret)
            if frame.type != _REQUEST:
                raise _BadDatagram("an answer sent to a lookup group")
        except _BadDatagram as exc:
            self.rejected += 1
            log.debug("rejected lookup request from %s: %s", _show(addr), exc)
            return
        self.requests += 1
        try:
            held = self._holds(frame.kind, frame.name)
            late = held and self._stale is not None and self._stale(frame.kind, frame.name)
        except Exception:
            log.exception("checking %s %s failed; lookup left unanswered", frame.kind, frame.name)
            return
        if not held:
            return
        answer = self._answer(frame)
        if late:
            delay = self._settings.wait * LATE_SHARE
            asyncio.get_running_loop().call_later(delay, self._send, transport, answer, addr, True)
        else:
            self._send(transport, answer, addr, False)

    def _send(
        self, transport: asyncio.DatagramTransport, answer: bytes, addr: _Address, late: bool
    ) -> None:
        """Send an answer, unless the responder closed meanwhile (a late one)."""
        if not transport.is_closing():
            transport.sendto(answer, addr)
            self.answers += 1
            self.late += late

    def _answer(self, request: "_Frame") -> bytes:
        header = _HEADER.pack(
            MAGIC,
            VERSION,
            _ANSWER,
            _kind_code(request.kind),
            request.request_id,
            bytes.fromhex(request.name),
        )
        return _sign(self._secret, header + self._node_field + self._address_field)


@dataclass
class _Pending:
    kind: str
    name: str
    first: bool
    answers: list[Answer] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True)
class _Frame:
    type: int
    kind: str
    request_id: int
    name: str
    node: str
    address: str


class _BadDatagram(Exception):
    """A datagram that is not a well-formed, correctly signed lookup frame."""


class _Endpoint(asyncio.DatagramProtocol):
    """Hands each datagram of one socket to a callback, with the transport to answer through."""

    def __init__(
        self, on_datagram: Callable[[bytes, _Address, asyncio.DatagramTransport], None]
    ) -> None:
        self._on_datagram = on_datagram
        self._transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: _Address) -> None:
        if self._transport is not None:
            self._on_datagram(data, addr, self._transport)

    def error_received(self, exc: Exception) -> None:
        log.warning("multicast lookup socket error: %s", exc)


def _decode(data: bytes, secret: bytes) -> _Frame:
    if len(data) < REQUEST_SIZE:
        raise _BadDatagram(f"truncated: {len(data)} bytes, a request is {REQUEST_SIZE}")
    magic, version, frame_type, kind_code, request_id, raw_name = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise _BadDatagram(f"wrong magic {magic!r}")
    if version != VERSION:
        raise _BadDatagram(f"unsupported version {version}")
    if not 1 <= kind_code <= len(KINDS):
        raise _BadDatagram(f"unknown kind {kind_code}")
    node = address = ""
    if frame_type == _REQUEST:
        if len(data) != REQUEST_SIZE:
            raise _BadDatagram(f"request of {len(data)} bytes, expected {REQUEST_SIZE}")
    elif frame_type == _ANSWER:
        node, offset = _read_field(data, _HEADER.size, "node id")
        address, offset = _read_field(data, offset, "address")
        if offset + _MAC_SIZE != len(data):
            raise _BadDatagram(f"answer of {len(data)} bytes does not match its fields")
    else:
        raise _BadDatagram(f"unknown type {frame_type}")
    if not hmac.compare_digest(data[-_MAC_SIZE:], _mac(secret, data[:-_MAC_SIZE])):
        raise _BadDatagram("bad HMAC")
    return _Frame(frame_type, KINDS[kind_code - 1], request_id, raw_name.hex(), node, address)


def _read_field(data: bytes, offset: int, what: str) -> tuple[str, int]:
    """Decode one length-prefixed UTF-8 field of an answer; return it and the next offset."""
    end_of_fields = len(data) - _MAC_SIZE
    if offset >= end_of_fields:
        raise _BadDatagram(f"truncated before the {what}")
    length = data[offset]
    end = offset + 1 + length
    if length == 0 or end > end_of_fields:
        raise _BadDatagram(f"{what} length {length} does not fit the datagram")
    try:
        return data[offset + 1 : end].decode("utf-8"), end
    except UnicodeDecodeError as exc:
        raise _BadDatagram(f"{what} is not UTF-8") from exc


def _length_prefixed(value: str, what: str) -> bytes:
    encoded = value.encode("utf-8")
    if not 1 <= len(encoded) <= _MAX_FIELD_BYTES:
        raise ConfigError(
            f"multicast {what} {value!r} must be 1 to {_MAX_FIELD_BYTES} bytes of UTF-8"
        )
    return bytes([len(encoded)]) + encoded


def _mac(secret: bytes, body: bytes) -> bytes:
    return hmac.digest(secret, body, "sha256")


def _sign(secret: bytes, body: bytes) -> bytes:
    return body + _mac(secret, body)


def _kind_code(kind: str) -> int:
    if kind not in KINDS:
        raise ValueError(f"lookup kind {kind!r} must be 'content' or 'structure'")
    return KINDS.index(kind) + 1


def _check_secret(secret: bytes) -> bytes:
    if not isinstance(secret, bytes) or not secret:
        raise ConfigError("the cluster secret used to sign multicast lookups is empty")
    return secret


def _group_address(settings: MulticastSettings, byte: int) -> str:
    return str(ipaddress.IPv4Address(settings.group_base) + byte)


def _client_socket(settings: MulticastSettings) -> socket.socket:
    """The unicast socket a client sends requests from and receives answers on."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        interface = socket.inet_aton(settings.interface)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, interface)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, settings.ttl)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        sock.bind((settings.interface, 0))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot send multicast lookups from interface {settings.interface}: {exc}"
        ) from exc
    return sock


def _responder_sockets(settings: MulticastSettings, count: int) -> list[socket.socket]:
    """Sockets sharing the lookup port, each receiving only the groups it joins."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sockets.append(sock)
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.setsockopt(socket.IPPROTO_IP, _IP_MULTICAST_ALL, 0)
            sock.bind(("0.0.0.0", settings.port))
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise ConfigError(
            f"cannot listen for multicast lookups on port {settings.port}: {exc}"
        ) from exc
    return sockets


def _memberships_per_socket() -> int:
    """How many groups the kernel lets one socket join."""
    try:
        with open(_MEMBERSHIP_LIMIT_FILE, encoding="ascii") as limit_file:
            limit = int(limit_file.read())
    except (OSError, ValueError):
        return _DEFAULT_MEMBERSHIP_LIMIT
    return min(max(limit, 1), GROUP_COUNT)


def _parse_ipv4(value: str, what: str) -> ipaddress.IPv4Address:
    try:
        return ipaddress.IPv4Address(value)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{what} {value!r} is not an IPv4 address") from exc


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_positive_wait(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 < value <= _MAX_WAIT
    )


def _show(addr: _Address) -> str:
    return f"{addr[0]}:{addr[1]}"
