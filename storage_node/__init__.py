"""Storage node: holds content and structure files, serves them over HTTP, answers lookups."""

from typing import TYPE_CHECKING

from archive.lazy import lazy_exports

if TYPE_CHECKING:
    from .node import StorageNode
    from .server import NodeOptions, serve
    from .stores import spans_in_store
    from .volumes import Span

__all__ = ["NodeOptions", "Span", "StorageNode", "serve", "spans_in_store"]

# Loaded on first use: every `dlweb` command imports this package for its subcommand's options,
# and most never run a node.
__getattr__ = lazy_exports(__name__, __file__)
