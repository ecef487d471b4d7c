"""The tree of errors drawn in archive/errors.py's docstring names every error dlweb defines."""

import importlib
import pkgutil

import archive.errors
from archive.errors import DlwebError

PACKAGES = (
    "archive",
    "storage_node",
    "master",
    "exchange",
    "proxy",
    "harbors",
    "crawler",
    "search",
    "deploy",
    "dlweb",
)


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_every_public_dlweb_error_is_in_the_drawn_tree() -> None:
    for package in PACKAGES:
        root = importlib.import_module(package)
        for module in pkgutil.walk_packages(root.__path__, f"{package}."):
            if ".testing" not in module.name and not module.name.endswith("__main__"):
                importlib.import_module(module.name)
    drawn = archive.errors.__doc__ or ""
    missing = sorted(
        f"{cls.__module__}.{cls.__name__}"
        for cls in _subclasses(DlwebError)
        if not cls.__name__.startswith("_")
        and cls.__module__.split(".")[0] in PACKAGES
        and cls.__name__ not in drawn
    )
    assert missing == []
