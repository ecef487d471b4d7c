"""Package names loaded on first use, from where the package imports them for the type checker."""

import importlib

import pytest

LAZY_PACKAGES = [
    "archive.hip",
    "archive.streams",
    "crawler",
    "crawler.stream",
    "exchange",
    "search",
    "storage_node",
]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_public_name_of_a_lazy_package_loads(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    module = importlib.import_module("storage_node")
    with pytest.raises(AttributeError, match="module 'storage_node' has no attribute 'nothing'"):
        module.nothing  # noqa: B018


def test_a_name_comes_from_the_module_the_type_checker_sees() -> None:
    from search import Backlink
    from search.backlinks import Backlink as Imported

    assert Backlink is Imported
