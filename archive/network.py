"""How our processes talk to each other over HTTP: the timeouts every peer call shares, the
errors that mean a peer could not be reached or answered badly, and how such a failure is said.

A peer is another process of the cluster (a storage node, the master, an index node). The
servers import this module, not the cluster client, for what they need to call their peers.
"""

import aiohttp

# A cut link neither answers nor resets, so a request to a peer that sends nothing for this long
# is given up and the next holder asked. Each byte received restarts the clock, so a large
# transfer that is moving is never cut; 15 s leaves a loaded node time to fsync a pack of
# contents or a batch of appends before it answers.
PEER_SILENCE = 15.0
# A cut host drops the SYN: 10 s covers its retransmissions at 1, 3 and 7 s.
CONNECT_TIMEOUT = 10.0
# aiohttp has no timeout on sending a body: an upload larger than the socket buffers, sent to a
# cut node, waits for this bound on the whole request instead of for TCP to give up (minutes).
UPLOAD_TIMEOUT = 300.0

# What a call to a peer raises when the peer is down, cut, silent or closes the connection.
NETWORK_ERRORS = (aiohttp.ClientError, OSError, TimeoutError)

# The error of sock_read (aiohttp before 3.10 raises its parent for a connect timeout too).
_SILENT_PEER = getattr(aiohttp, "SocketTimeoutError", aiohttp.ServerTimeoutError)


def peer_timeout(
    total: float | None = None, silence: float = PEER_SILENCE
) -> aiohttp.ClientTimeout:
    """The timeout of a call to a peer: connected within CONNECT_TIMEOUT, given up after
    `silence` s without a byte, and after `total` s in all when given."""
    return aiohttp.ClientTimeout(total=total, sock_connect=CONNECT_TIMEOUT, sock_read=silence)


def failure(exc: BaseException, silence: float = PEER_SILENCE) -> str:
    """What went wrong with a request to a peer, one silent for `silence` s said as such."""
    if isinstance(exc, _SILENT_PEER):
        return f"no answer for {silence:g} s"
    return str(exc) or type(exc).__name__
