"""The consultation proxy: the archived web at any date, through the browser's proxy setting.

The public names load mitmproxy, which is slow to import, so they are loaded on first use: the
`dlweb` command imports this package for every subcommand.
"""

from typing import Any

__all__ = ["ProxyOptions", "archive_addons", "serve"]


def __getattr__(name: str) -> Any:
    if name == "archive_addons":
        from .addon import archive_addons

        return archive_addons
    if name in ("ProxyOptions", "serve"):
        from . import server

        return getattr(server, name)
    raise AttributeError(f"module 'proxy' has no attribute {name!r}")
