"""Blacklist patterns: what each form blocks, and patterns refused with a message naming them."""

import pytest

from archive.blocklist import MAX_PATTERN, BadPattern, Blocklist


def test_a_host_pattern_blocks_the_host_and_its_subdomains_only() -> None:
    blocklist = Blocklist(["host:Example.org"])
    assert blocklist.blocks("http://example.org/a")
    assert blocklist.blocks("https://www.example.org:8443/b?c")
    assert not blocklist.blocks("http://notexample.org/")
    assert not blocklist.blocks("http://example.org.evil.net/")


def test_a_prefix_pattern_blocks_the_urls_that_start_so() -> None:
    blocklist = Blocklist(["prefix:http://a.example/print/"])
    assert blocklist.blocks("http://a.example/print/page-1")
    assert not blocklist.blocks("http://a.example/page-1?print/")


def test_an_expression_blocks_the_urls_it_finds_a_match_in() -> None:
    blocklist = Blocklist(["re:[?&]action=(edit|diff)", "re:/wp-login\\.php"])
    assert blocklist.blocks("http://w.example/index.php?title=A&action=edit")
    assert blocklist.blocks("http://b.example/wp-login.php?redirect_to=x")
    assert not blocklist.blocks("http://w.example/index.php?title=A")


def test_no_pattern_blocks_nothing() -> None:
    blocklist = Blocklist()
    assert not blocklist
    assert not blocklist.blocks("http://a.example/")


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("example.org", "must start with host:, prefix: or re:"),
        ("host:", "has nothing after host:"),
        ("re:(unclosed", "is not a regular expression"),
        ("prefix:" + "x" * MAX_PATTERN, f"over {MAX_PATTERN} characters"),
        (42, "must be a string"),
    ],
)
def test_a_bad_pattern_is_refused_with_what_is_wrong(pattern: object, said: str) -> None:
    with pytest.raises(BadPattern, match=said):
        Blocklist([pattern])
