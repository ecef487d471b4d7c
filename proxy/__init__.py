"""The consultation proxy: the archived web at any date, through the browser's proxy setting.

The public names load mitmproxy, which is slow to import, so they are loaded on first use: the
`dlweb` command imports this package for every subcommand.
"""

from typing import Any

__all__ = ["ArchiveAddon", "ProxyOptions", "serve"]


def __getattr__(name: str) -> Any:
    if name == "ArchiveAddon":
        from .addon import ArchiveAddon

        return ArchiveAddon
    if name in ("ProxyOptions", "serve"):
        from . import server

        return getattr(server, name)
    raise AttributeError(f"module 'proxy' has no attribute {name!r}")
