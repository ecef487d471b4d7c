"""Package attributes loaded on first use.

Every `dlweb` command imports each package for its subcommands' options; a package whose
public names need heavy imports (servers, parsers) imports them under `if TYPE_CHECKING:` only,
for the type checker, and gives them through `lazy_exports` from where that block imports them:

    if TYPE_CHECKING:
        from .node import StorageNode

    __getattr__ = lazy_exports(__name__, __file__)
"""

import ast
import functools
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any


def lazy_exports(package: str, init_file: str) -> Callable[[str], Any]:
    """A module `__getattr__` giving each name that the package's `__init__.py` (`init_file`)
    imports under `if TYPE_CHECKING:`, from the module it imports it from."""

    def __getattr__(name: str) -> Any:
        module = _type_checking_imports(init_file).get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module, package), name)

    return __getattr__


@functools.cache
def _type_checking_imports(init_file: str) -> dict[str, str]:
    """Each name imported under `if TYPE_CHECKING:` at the top level of a module, and its module
    (`.node` for a relative import)."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"), init_file)
    imports: dict[str, str] = {}
    for statement in tree.body:
        if not (isinstance(statement, ast.If) and isinstance(statement.test, ast.Name)):
            continue
        if statement.test.id != "TYPE_CHECKING":
            continue
        for imported in statement.body:
            if isinstance(imported, ast.ImportFrom):
                module = "." * imported.level + (imported.module or "")
                imports.update((alias.asname or alias.name, module) for alias in imported.names)
    return imports
