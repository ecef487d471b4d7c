"""Storage node: holds content and structure files, serves them over HTTP, answers lookups."""

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
