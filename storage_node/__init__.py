"""Storage node: holds content and structure files, serves them over HTTP, answers lookups."""

from .contents import contents_on_disk
from .node import StorageNode
from .server import NodeOptions, serve
from .volumes import Span

__all__ = ["NodeOptions", "Span", "StorageNode", "contents_on_disk", "serve"]
