"""Robot traps: URL spaces with no end, which a crawl must leave before it drowns in them.

Recursive relative links grow paths that repeat a segment (`/a/b/b/b/...`), scripts answer every
query string, directories list files without end, and calendars link to the next month forever.
Each such space is allowed a bounded number of URLs; session ids are already gone from canonical
URLs (archive.urlkey), so they cannot make one page into many.

The counters are keyed by the 64-bit xxhash of the directory, script or calendar pattern, so that
a crawl of millions of URLs keeps a few ints per key rather than the URLs themselves.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import xxhash

from .delimitation import split_url

DATE_MASK = "{date}"
NUMBER_MASK = "{n}"

# YYYY-MM, YYYY/MM, optionally with a day, and YYYYMMDD, for years 1900 to 2099.
_DATE = re.compile(
    r"(?<![0-9])(?:19|20)[0-9]{2}"
    r"(?:([-/])(?:0?[1-9]|1[0-2])(?:\1(?:0?[1-9]|[12][0-9]|3[01]))?"
    r"|(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01]))"
    r"(?![0-9])"
)
# A number given as a date part in a query: ?year=2024&month=5.
_DATE_PARAMETER = re.compile(
    r"(?i)(?<![^?&;])(year|month|day|week|date|yyyy|yy|mm|dd|yr|mon|y|m|d)=[0-9]+(?=[&;]|$)"
)


@dataclass(frozen=True)
class TrapLimits:
    max_repeats: int = 3  # times one path segment may occur in a path
    max_path_segments: int = 32
    max_variants: int = 1000  # files of one directory, or query strings of one script
    max_calendar: int = 24  # URLs of one calendar pattern: the URL with its dates masked
    max_url_length: int = 2048


def calendar_pattern(url: str) -> str | None:
    """`url` with its date-like values masked, or None when it holds none."""
    origin = split_url(url)[0]
    rest, dates = _DATE.subn(DATE_MASK, url[len(origin) :])
    if "?" in rest:
        rest, parameters = _DATE_PARAMETER.subn(rf"\1={NUMBER_MASK}", rest)
        dates += parameters
    return origin + rest if dates else None


def space_of(url: str) -> str:
    """The URL space a URL is one of: its script when it has a query, else its directory."""
    origin, path, query = split_url(url)
    return origin + (path if query else path[: path.rfind("/") + 1])


class TrapGuard:
    """Counts the URLs of a crawl by directory, script and calendar pattern, and stops each at its
    limit; also refuses overlong URLs and paths that are too deep or repeat themselves."""

    def __init__(self, limits: TrapLimits = TrapLimits()) -> None:
        self.limits = limits
        self._variants: dict[int, int] = {}
        self._calendars: dict[int, int] = {}

    def check(self, url: str) -> str | None:
        """None when the canonical `url` may be queued, which counts it; else why it is a trap.

        Call it once per URL not seen before, so that each counts once.
        """
        limits = self.limits
        if len(url) > limits.max_url_length:
            return f"URL longer than {limits.max_url_length}"
        origin, path, query = split_url(url)
        segments = path.split("/")[1:]
        if len(segments) > limits.max_path_segments:
            return f"more than {limits.max_path_segments} path segments"
        if len(set(segments)) < len(segments):
            segment, count = Counter(segments).most_common(1)[0]
            if count > limits.max_repeats:
                return f"repeated path segment {segment!r}"
        pattern = calendar_pattern(url)
        if pattern is not None:
            calendar_key = xxhash.xxh64_intdigest(pattern.encode())
            if self._calendars.get(calendar_key, 0) >= limits.max_calendar:
                return f"calendar-like space capped at {limits.max_calendar}: {pattern}"
        space = space_of(url)
        variant_key = xxhash.xxh64_intdigest(space.encode())
        variants = self._variants.get(variant_key, 0)
        if variants >= limits.max_variants:
            return f"more than {limits.max_variants} variants of {space}"
        self._variants[variant_key] = variants + 1
        if pattern is not None:
            self._calendars[calendar_key] = self._calendars.get(calendar_key, 0) + 1
        return None


@dataclass(frozen=True)
class NearLimits:
    max_near: int = 30  # pages of one space nearly the same before their links are not followed
    max_distance: int = 3  # simhash bits two near-duplicates differ by, at most (archive/simhash)
    max_shapes: int = 8  # distinct texts followed per space
    max_spaces: int = 100_000  # spaces followed per crawl; beyond, new ones are not checked


class NearDuplicates:
    """Content traps: one page under ever-new URLs of a directory or script (a catalogue that
    answers any id with the same page, a page that links to itself with a counter), which the
    URL rules let through up to their variant limit. Each space keeps the simhashes of a few
    texts and how many of its pages came near each; past `max_near`, a page's links are no
    longer followed: the branch stops there."""

    def __init__(self, limits: NearLimits = NearLimits()) -> None:
        self.limits = limits
        self._spaces: dict[int, list[list[int]]] = {}
        self._stopped: set[int] = set()

    def stopped(self, url: str) -> bool:
        """Whether a URL is of a space found to be a trap: not fetched, though queued before."""
        return bool(self._stopped) and _key(space_of(url)) in self._stopped

    def check(self, url: str, text: str) -> str | None:
        """None while a page's links may be followed; else why not."""
        if not text.strip():
            return None
        space = space_of(url)
        key = _key(space)
        shapes = self._spaces.get(key)
        if shapes is None:
            if len(self._spaces) >= self.limits.max_spaces:
                return None
            shapes = self._spaces[key] = []
        from archive.simhash import distance, simhash  # numpy: loaded by the first page's text

        signature = simhash(text)
        for shape in shapes:
            if distance(shape[0], signature) <= self.limits.max_distance:
                shape[1] += 1
                if shape[1] > self.limits.max_near:
                    self._stopped.add(key)
                    return f"more than {self.limits.max_near} nearly identical pages under {space}"
                return None
        if len(shapes) < self.limits.max_shapes:
            shapes.append([signature, 1])
        return None


def _key(space: str) -> int:
    return xxhash.xxh64_intdigest(space.encode())
