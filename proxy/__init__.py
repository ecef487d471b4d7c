"""The consultation proxy: the archived web at any date, through the browser's proxy setting."""

from .addon import ArchiveAddon
from .server import ProxyOptions, serve

__all__ = ["ArchiveAddon", "ProxyOptions", "serve"]
