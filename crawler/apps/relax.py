"""Relaxed forms of a rule's XPath, for a site whose theme changed under its application.

When an expression that should match on a kind of page no longer does, looser ones are made from
it: @class and @id swapped, an equality relaxed to contains(), a step's tag name replaced by one
the page holds or one the rules of applications of the same category use. Single changes come
first, then pairs; the caller keeps the first that matches and checks it on the next pages.
"""

import itertools
import re
from collections.abc import Callable, Iterator

from lxml import etree

from .rules import compiled

MAX_CANDIDATES = 80
# Tag names a step may take; others (a, img, script...) do not hold the regions rules select.
STRUCTURAL = frozenset(
    {
        "article",
        "aside",
        "div",
        "footer",
        "header",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "section",
        "span",
        "table",
        "td",
        "ul",
    }
)
_EQUALITY = re.compile(r"""(@[\w-]+)\s*=\s*(['"])(.*?)\2""")
_CLASS_ID = re.compile(r"@(class|id)\b")
# A step's tag name: after / or //, before a predicate, another step or the end.
_STEP = re.compile(r"(?<=/)([a-zA-Z][\w-]*)(?=\[|/|$)")

Change = Callable[[str], Iterator[str]]


def tag_names(xpath: str) -> set[str]:
    """The structural tag names the steps of an XPath use."""
    return {m.group(1) for m in _STEP.finditer(xpath)} & STRUCTURAL


def relaxed(xpath: str, page_tags: set[str], lent_tags: set[str]) -> Iterator[str]:
    """Relaxed forms of `xpath`, single changes first, each once, at most MAX_CANDIDATES."""
    tags = sorted((page_tags & STRUCTURAL) | (lent_tags & STRUCTURAL))
    changes: list[Change] = [_swapped, _contained, lambda x: _retagged(x, tags)]
    singles = (candidate for change in changes for candidate in change(xpath))
    doubles = (
        candidate
        for first, second in itertools.permutations(changes, 2)
        for step in first(xpath)
        for candidate in second(step)
    )
    seen = {xpath}
    for candidate in itertools.chain(singles, doubles):
        if candidate not in seen:
            seen.add(candidate)
            yield candidate
            if len(seen) > MAX_CANDIDATES:
                return


def compiles(xpath: str) -> etree.XPath | None:
    """The compiled XPath, or None when a relaxation made one that does not compile."""
    try:
        return compiled(xpath, "a relaxed rule")
    except ValueError:
        return None


def _swapped(xpath: str) -> Iterator[str]:
    """@class where there was @id and the other way round, one place at a time."""
    for match in _CLASS_ID.finditer(xpath):
        other = "id" if match.group(1) == "class" else "class"
        yield xpath[: match.start()] + "@" + other + xpath[match.end() :]


def _contained(xpath: str) -> Iterator[str]:
    """An equality on an attribute made a contains(), one place at a time."""
    for match in _EQUALITY.finditer(xpath):
        attribute, quote, value = match.groups()
        relaxed_test = f"contains({attribute}, {quote}{value}{quote})"
        yield xpath[: match.start()] + relaxed_test + xpath[match.end() :]


def _retagged(xpath: str, tags: list[str]) -> Iterator[str]:
    """A structural step's tag name replaced by each candidate, one step at a time (an `a` step
    names what a rule of links selects, and stays)."""
    for match in _STEP.finditer(xpath):
        if match.group(1) not in STRUCTURAL:
            continue
        for tag in [*tags, "*"]:
            if tag != match.group(1):
                yield xpath[: match.start()] + tag + xpath[match.end() :]
