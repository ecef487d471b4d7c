"""HIP: the RPC between dlweb agents, over one WebSocket from each slave to its master.

Every agent has at most one master and any number of slaves. A slave (HipSlave) keeps one
connection to its master (HipMaster, a route on the master's aiohttp application); both ends may
call, answer and notify at any time, and answers come back in any order, matched by request id.

Handshake (JSON text frames; nothing else is processed before it succeeds):

1. slave:  {"t": "hello", "v": 1, "name": N, "role": R, "formats": ["json", "yaml"], "nonce": Ns}
2. master: {"t": "challenge", "name": M, "nonce": Nm, "format": F}  (F: the first offered format
   the master supports)
3. slave:  {"t": "auth", "proof": P("hip1 slave")}
4. master: {"t": "welcome", "proof": P("hip1 master")}, or {"t": "redirect", "url": U,
   "proof": P("hip1 redirect", U)} and the slave connects to U instead, with the same secret.

Nonces are 32 random bytes in lowercase hex. P(label, ...) is the lowercase hex HMAC-SHA256, keyed
by the cluster secret, of label, Ns, Nm, N, R, M, F (and U), each followed by a NUL byte: each side
proves it knows the secret over both nonces, so a recorded handshake cannot be replayed. A slave
that fails to prove it is closed with code 4001, a malformed handshake with 4002, and a slave
replaced by a newer connection under the same name with 4003.

Frames after the handshake are text frames in format F (JSON, or YAML through the safe loader
and dumper):

- {"t": "req", "id": 7, "m": "method", "p": params}  a request, answered by exactly one of
- {"t": "res", "id": 7, "r": result}
- {"t": "err", "id": 7, "c": code, "e": message}  codes: unknown_method, bad_params, error,
  bad_frame, or one a handler chose by raising RemoteError(code, message)
- {"t": "note", "m": "method", "p": params}  a notification, never answered
- {"t": "redirect", "url": U}  master to slave: close and connect to U

A malformed request with a usable id is answered with a bad_frame error; any other malformed frame
is logged and dropped, and 20 in a row close the connection (1008). A frame over max_frame bytes
closes the connection (1009); outgoing frames over it are refused locally. WebSocket ping/pong
heartbeats detect a dead peer; the slave reconnects with capped, jittered exponential backoff.

A slave behind a firewall may reach its master through an HTTP proxy (HttpProxy, parse_proxy):
each connection is then a tunnel the proxy opens with CONNECT, over which the WebSocket (and TLS
for a wss:// URL) runs as over a direct connection (_tunnel.py).

The params and results of a call are typed once, in archive/*_calls.py: each a `Message`, which
is a frozen slotted dataclass by its declaration alone (no decorator), its JSON its fields.
"""

from typing import TYPE_CHECKING

from archive.errors import DlwebError
from archive.hip._errors import HipError, RemoteError
from archive.hip._messages import Fields, Message, MessageType, Names, is_number, left_out
from archive.hip._methods import Method, Nothing, Wire, as_object, bad_params, field
from archive.hip._params import name_list
from archive.hip._proxy import HttpProxy, parse_proxy
from archive.lazy import lazy_exports

if TYPE_CHECKING:
    from archive.hip._master import HipMaster
    from archive.hip._peer import Handler, Peer, PeerHook
    from archive.hip._slave import HipSlave

# The ends of a connection load aiohttp, and the master's is a route of an aiohttp server: the
# typed messages (archive/*_calls.py), which a command's arguments may use, load neither.
__getattr__ = lazy_exports(__name__, __file__)

__all__ = [
    "Fields",
    "Handler",
    "Message",
    "MessageType",
    "Method",
    "Names",
    "Nothing",
    "Wire",
    "as_object",
    "bad_params",
    "field",
    "is_number",
    "left_out",
    "HipError",
    "HipMaster",
    "HipSlave",
    "HttpProxy",
    "Peer",
    "PeerHook",
    "RemoteError",
    "hip_url",
    "name_list",
    "parse_proxy",
]


def hip_url(base: str) -> str:
    """The HIP route of an agent from its HTTP base URL (http://host:port -> ws://host:port/hip)."""
    base = base.rstrip("/")
    for http, ws in (("https://", "wss://"), ("http://", "ws://")):
        if base.startswith(http):
            return ws + base.removeprefix(http) + "/hip"
    raise DlwebError(f"{base[:200]!r} is not an http:// or https:// URL")
