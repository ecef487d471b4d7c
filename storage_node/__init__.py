"""Storage node: holds content and structure files, serves them over HTTP, answers lookups."""

from .node import StorageNode
from .server import NodeOptions, serve
from .stores import spans_in_store
from .volumes import Span

__all__ = ["NodeOptions", "Span", "StorageNode", "serve", "spans_in_store"]
