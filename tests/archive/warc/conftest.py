"""Fixtures for the WARC tests: the loopback test site."""

from collections.abc import Iterator

import pytest

from .site import TestSite


@pytest.fixture(scope="module")
def site() -> Iterator[TestSite]:
    with TestSite() as running:
        yield running
