"""Storage node: holds content and structure files, serves them over HTTP, answers lookups."""

from typing import TYPE_CHECKING

from archive.lazy import lazy_exports

if TYPE_CHECKING:
    from .node import StorageNode
    from .server import NodeOptions, serve
    from .stores import spans_in_store
    from .volumes import Span

# Loaded on first use: every `dlweb` command imports this package for its subcommand's options,
# and most never run a node.
_EXPORTS = {
    "NodeOptions": "server",
    "Span": "volumes",
    "StorageNode": "node",
    "serve": "server",
    "spans_in_store": "stores",
}
__all__ = ["NodeOptions", "Span", "StorageNode", "serve", "spans_in_store"]


__getattr__ = lazy_exports(__name__, _EXPORTS)
