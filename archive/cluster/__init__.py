"""The cluster client: one API for inserting captures and reading the archive back.

Insertion goes through the master, which redirects the client to an index node; the index node
names the contents to upload and where, and appends the structure records while they go up.
Reads locate a file (by multicast, by asking the master, or both, as the configuration says),
fetch it from one of its holders and verify its SHA-256, falling back to the next holder when one
fails.

`ClusterClient` is the `Session` its parts share (the settings, the HTTP session, the multicast
lookup, the master's URL) and a facade over one part for each concern:

- `Inserter` (_insert): the index node's connection and the batches of an insert, a few at once;
  its `Uploader` (_upload) sends the contents down chains of storage nodes, small ones in packs;
- `Locator` (_locate): the holders of a file, the storage nodes, the members of the cluster;
- `Contents` (_contents): contents and header blocks, verified, through the client's cache;
- `Structures` (_structures): the captures of a URL, from the holders of its structure file.

A client loads aiohttp's client, never its server (aiohttp.web): a command that only reads or
inserts does not pay for it.
"""

from ..insert_calls import NewCapture
from ._client import ClusterClient
from ._errors import ClusterError, NoIndexNode
from ._insert import INSERT_BATCH, UPLOADS_IN_FLIGHT
from ._locate import KINDS
from ._types import BodySource, FoundCapture, InsertSummary, LargeContent

__all__ = [
    "INSERT_BATCH",
    "KINDS",
    "UPLOADS_IN_FLIGHT",
    "BodySource",
    "ClusterClient",
    "ClusterError",
    "FoundCapture",
    "LargeContent",
    "InsertSummary",
    "NewCapture",
    "NoIndexNode",
]
