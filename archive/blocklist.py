"""URL blacklists a campaign keeps its crawls away from, as patterns: `host:example.org` (the
host and its subdomains), `prefix:https://example.org/print/` (URLs that start so) and
`re:REGEX` (URLs the expression finds a match in, matched by RE2 in linear time). The
scheduler checks the patterns it is given; the crawler never requests a URL they block."""

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import re2

__all__ = [
    "MAX_PATTERN",
    "MAX_PATTERNS",
    "PATTERN_KINDS",
    "RE2_OPTIONS",
    "BadPattern",
    "Blocklist",
    "linear_regex",
]

MAX_PATTERNS = 10_000
MAX_PATTERN = 2_000  # characters
PATTERN_KINDS = ("host", "prefix", "re")
# RE2 matches in time linear in the text, whatever the expression, as Python's re does not
# (`(.|.)*Q` takes it hours on a long URL); it reads no backreference or lookaround. Its errors
# are ours to tell, not its to print.
RE2_OPTIONS = re2.Options()
RE2_OPTIONS.log_errors = False


class BadPattern(ValueError):
    """A blacklist pattern that cannot be used; the message says which and why."""


def linear_regex(pattern: str) -> Any:
    """`pattern` compiled by RE2; BadPattern names it when RE2 cannot read it."""
    try:
        return re2.compile(pattern, RE2_OPTIONS)
    except (re2.error, TypeError) as exc:
        raise BadPattern(f"{str(pattern)[:80]!r} is not a regular expression: {exc}") from None


def _checked(pattern: object) -> tuple[str, str]:
    if not isinstance(pattern, str):
        raise BadPattern(f"a pattern must be a string, not {type(pattern).__name__}")
    shown = repr(pattern[:80])
    if len(pattern) > MAX_PATTERN:
        raise BadPattern(f"pattern {shown}... is over {MAX_PATTERN} characters")
    kind, colon, value = pattern.partition(":")
    if not colon or kind not in PATTERN_KINDS:
        raise BadPattern(f"pattern {shown} must start with host:, prefix: or re:")
    if not value:
        raise BadPattern(f"pattern {shown} has nothing after {kind}:")
    return kind, value


class Blocklist:
    """Patterns, parsed once; `blocks(url)` tells whether a URL is kept away from."""

    def __init__(self, patterns: Iterable[object] = ()) -> None:
        self.patterns: tuple[str, ...] = ()
        hosts: set[str] = set()
        prefixes: list[str] = []
        expressions: list[str] = []
        kept: list[str] = []
        for pattern in patterns:
            if len(kept) >= MAX_PATTERNS:
                raise BadPattern(f"more than {MAX_PATTERNS} patterns")
            kind, value = _checked(pattern)
            if kind == "host":
                hosts.add(value.lower().strip(".").removeprefix("*."))
            elif kind == "prefix":
                prefixes.append(value)
            else:
                linear_regex(value)
                expressions.append(value)
            kept.append(f"{kind}:{value}")
        self.patterns = tuple(kept)
        self._hosts = frozenset(hosts)
        self._prefixes = tuple(prefixes)
        self._expression = (
            linear_regex("|".join(f"(?:{e})" for e in expressions)) if expressions else None
        )

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def blocks(self, url: str) -> bool:
        if self._prefixes and url.startswith(self._prefixes):
            return True
        if self._hosts:
            try:
                host = (urlsplit(url).hostname or "").rstrip(".")
            except ValueError:
                host = ""
            while host:
                if host in self._hosts:
                    return True
                host = host.partition(".")[2]
        return self._expression is not None and self._expression.search(url) is not None
