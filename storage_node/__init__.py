"""Storage node: holds content and structure files, serves them over HTTP, answers lookups."""

from .node import StorageNode
from .server import NodeOptions, serve

__all__ = ["NodeOptions", "StorageNode", "serve"]
