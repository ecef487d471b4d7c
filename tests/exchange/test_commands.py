"""`dlweb import`'s command line: sizes such as 5000, 64K or 2G."""

import argparse

import pytest

from exchange.commands import byte_size


def test_sizes_on_the_command_line():
    assert byte_size("5000") == 5000 and byte_size("64K") == 65536
    assert byte_size("100M") == 100 * 2**20 and byte_size("2gib") == 2 * 2**30
    for bad in ("0", "lots", "-5", "1.5G"):
        with pytest.raises(argparse.ArgumentTypeError):
            byte_size(bad)
