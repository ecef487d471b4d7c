"""Package attributes loaded on first use.

Every `dlweb` command imports each package for its subcommands' options; a package whose
public names need heavy imports (servers, parsers) gives them through `lazy_exports` instead.
"""

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` giving each name of `exports` from its submodule of `package`."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f".{module}", package), name)

    return __getattr__
