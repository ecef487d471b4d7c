"""The CDX server API, as pywb answers it: the captures of a URL, or of every URL under a prefix,
a host or a domain, filtered, sorted and limited, as CDXJ, JSON lines, plain text or a Memento
link list (docs/search.md).

`parse_query` reads the parameters; `lines_of`, `clamp`, `apply_filters`, `order` and `render`
are pure functions over capture rows, in the order pywb applies them (filter, from/to, then
closest, reverse or limit); `answer` reads the captures from the cluster and the URLs of a range
from the URL-key index (archive/url_index.py).

The fields of a line are pywb's: `urlkey` (the SURT key), `timestamp` (14 digits, UTC),
`url`, `mime` (the archived Content-Type without its parameters; `warc/revisit` for a revisit,
which has no status, as pywb indexes revisits), `status` and `digest` (the payload's SHA-256,
as `sha256:` and base32, the spelling of `dlweb export`'s WARC-Payload-Digest). `length`,
`offset` and `filename` locate a record in a WARC file: the archive keeps no WARC files, so a
line has none (`-` in text, absent in JSON).

Paging, as pywb's zipnum index pages (`showNumPages`, `page`, `pageSize`, `showPagedIndex`):
pywb cuts its sorted CDX file into blocks of some 3,000 lines and a page is `pageSize` blocks.
The archive keeps no such file: a range query reads the URLs of the range from the URL-key index,
then each URL's structure file from the cluster. A block here is BLOCK_KEYS consecutive SURT keys
of the range, each with every URL of that key and every capture of those URLs. Counting blocks
then reads the URL-key index alone (no cluster read), a key is never split between two pages (so
a page's lines are in pywb's order and the pages, in turn, list each capture once), and a page
costs its keys' structure file reads, which bound its time. Blocks of capture lines would need
every structure file of the range read to count them, the whole answer's cost for a page count.
An exact query has one block when the URL has a listed capture, none otherwise.
"""

import asyncio
import contextlib
import itertools
import json
import re
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

import re2
from warcio.timeutils import PAD_14_DOWN, PAD_14_UP, pad_timestamp, timestamp_to_sec

from archive.blocklist import RE2_OPTIONS
from archive.cluster import ClusterClient
from archive.deadline import Deadline
from archive.errors import DlwebError, NotFound
from archive.header_block import parse_header_block
from archive.link_format import escape_uri
from archive.structure import PENDING_REGISTRY_URL, REPLAYED_KINDS, Capture, RecordKind
from archive.timestamps import format_digits, format_http_date
from archive.url_index import URLKEYS_FILE, UrlKeys, surt_key
from archive.urlkey import canonical_url, structure_name
from archive.warc.digests import sha256_digest

from .budget import answer_deadline
from .errors import BadCdxQuery

MATCH_TYPES = ("exact", "prefix", "host", "domain")
# The outputs and their content types, as pywb's CDX server sends them; cdxj is its default.
OUTPUTS = {
    "cdxj": "text/x-cdxj",
    "json": "text/x-ndjson",
    "text": "text/plain",
    "link": "application/link-format",
}
DEFAULT_OUTPUT = "cdxj"
SORTS = ("reverse", "closest")
DEFAULT_LIMIT = 100_000  # pywb's
LINE_FIELDS = ("urlkey", "timestamp", "url", "mime", "status", "digest")
# The other fields of pywb's CDX formats, which a line of this archive does not have.
ABSENT_FIELDS = ("length", "offset", "filename", "redirect", "robotflags")
# pywb's short and old names of fields, in filters (`s` is the status here; pywb's table maps it
# to the length by a duplicate key).
ALIASES = {
    "u": "url",
    "original": "url",
    "statuscode": "status",
    "s": "status",
    "mimetype": "mime",
    "m": "mime",
    "l": "length",
    "o": "offset",
    "d": "digest",
    "t": "timestamp",
    "k": "urlkey",
    "f": "filename",
}
REVISIT_MIME = "warc/revisit"
UNKNOWN_MIME = "unk"  # pywb's, for a response without Content-Type
_MIME_END = re.compile("[; ]")
_DIGITS = re.compile(r"[0-9]{1,14}")
_NUMBER = re.compile(r"[0-9]{1,12}")  # a page or page size, compared with its bounds
READS_IN_FLIGHT = 16  # structure files read at once for a range
MAX_FILTERS = 32
MAX_FILTER_CHARS = 1_000  # of one filter, its field and value
# An answer's time: reading the captures, filtering, ordering and writing them, the work done
# off the event loop (a proxy's other clients are answered meanwhile).
CDX_BUDGET = 20.0
# Paging: a block is BLOCK_KEYS SURT keys of the range, a page `pageSize` blocks (pywb's default
# 10, at most MAX_PAGE_SIZE: a page of MAX_PAGE_SIZE blocks reads 5,000 keys' structure files,
# some 6 s on a one-node test cluster, well within CDX_BUDGET).
BLOCK_KEYS = 100
DEFAULT_PAGE_SIZE = 10
MAX_PAGE_SIZE = 50
MAX_PAGE = 10**9
INDEX_PART = "urlkeys"  # where a block is, in a paged index line: the URL-key index
PAGE_INFO_TYPE = "application/json"
PAGED_INDEX_TYPE = "text/plain"
_ADVICE = "narrow it (a longer prefix, a from and to, a lower limit, fewer filters)"


T = TypeVar("T")


class Pattern(Protocol):
    """A compiled regular expression, as RE2's are matched here."""

    def match(self, text: str) -> object | None: ...


@dataclass(slots=True)
class Row:
    """One capture as a CDX line; `mime` is None until its header block is read."""

    urlkey: str
    timestamp: str
    url: str
    status: str | None  # None for a revisit, as pywb indexes them (no status: `-` in text)
    digest: str
    time: int  # microseconds, for ties
    header: str  # the header block's name, where the mime is read
    mime: str | None = None

    def get(self, name: str) -> str:
        """A field's value, empty for one this archive has not (as pywb's filters read it)."""
        if name in LINE_FIELDS:
            value = getattr(self, name)
            return "" if value is None else str(value)
        return ""

    def fields(self) -> dict[str, str]:
        """The fields the row has, in pywb's order."""
        return {name: value for name in LINE_FIELDS if (value := getattr(self, name)) is not None}


@dataclass(frozen=True, slots=True)
class CdxFilter:
    """`[!][=|~]field:value`: `=` the whole value, `~` a regex matched at its start, neither a
    substring; `!` inverts; without `field:` the whole CDXJ line is matched."""

    text: str
    field: str
    invert: bool
    how: str  # "=", "~" or "" (contains)
    value: str
    regex: Pattern | None = None

    def __call__(self, row: Row) -> bool:
        got = self.get(row)
        if self.how == "=":
            matched = got == self.value
        elif self.how == "~":
            assert self.regex is not None
            matched = self.regex.match(got) is not None
        else:
            matched = self.value in got
        return matched != self.invert

    def get(self, row: Row) -> str:
        return row.get(self.field) if self.field else cdxj_line(row, None)


def parse_filter(text: str) -> CdxFilter:
    """A filter of the `filter` parameter; BadCdxQuery for one too long, or whose regular
    expression RE2 does not read."""
    if len(text) > MAX_FILTER_CHARS:
        raise BadCdxQuery(
            f"filter={text[:40]!r}…: {len(text):,} characters long, at most"
            f" {MAX_FILTER_CHARS:,} are read"
        )
    rest = text
    invert = rest.startswith("!")
    if invert:
        rest = rest[1:]
    how = rest[0] if rest[:1] in ("=", "~") else ""
    rest = rest[len(how) :]
    name, colon, value = rest.partition(":")
    if not colon:
        name, value = "", rest
    name = ALIASES.get(name, name)
    regex = None
    if how == "~":
        try:
            regex = re2.compile(value, RE2_OPTIONS)
        except re2.error as exc:
            why = exc.args[0].decode(errors="replace") if exc.args else ""
            raise BadCdxQuery(
                f"filter={text!r}: bad regular expression: {why[:200]} (RE2's syntax is read:"
                " no backreference, no lookaround)"
            ) from None
    return CdxFilter(text, name, invert, how, value, regex)


@dataclass(frozen=True)
class CdxQuery:
    url: str
    match_type: str = "exact"
    key: str = ""  # the range of SURT keys matched: key <= urlkey < end_key
    end_key: str = ""
    from_ts: str | None = None  # padded to 14 digits
    to_ts: str | None = None
    limit: int = DEFAULT_LIMIT
    reverse: bool = False
    closest: str | None = None
    filters: tuple[CdxFilter, ...] = ()
    fields: tuple[str, ...] | None = None
    output: str = DEFAULT_OUTPUT
    page: int | None = None  # None: the whole range, unpaged
    page_size: int = DEFAULT_PAGE_SIZE  # blocks a page
    show_num_pages: bool = False
    show_paged_index: bool = False

    @property
    def content_type(self) -> str:
        if self.show_num_pages:
            return PAGE_INFO_TYPE
        if self.show_paged_index:
            return OUTPUTS["json"] if self.output == "json" else PAGED_INDEX_TYPE
        return OUTPUTS[self.output]

    @property
    def paged(self) -> bool:
        """Whether the answer is a page's lines or blocks, not the whole range's."""
        return self.page is not None or self.show_paged_index

    def wants(self, name: str) -> bool:
        """Whether the answer shows field `name`."""
        if self.output == "link":
            return False
        return self.fields is None or name in self.fields

    def filters_need(self, name: str) -> bool:
        return any(f.field in ("", name) for f in self.filters)


def _bool(value: str) -> bool:
    return value.lower() in ("1", "true", "yes", "on")


def _timestamp(name: str, value: str) -> str:
    if _DIGITS.fullmatch(value) is None:
        raise BadCdxQuery(f"{name}={value!r}: give a timestamp of 1 to 14 digits, YYYYMMDDhhmmss")
    return value


def _split_params(params: Iterable[tuple[str, str]]) -> tuple[dict[str, str], list[str]]:
    """The single parameters (the first of a name given twice) and the repeated filters."""
    single: dict[str, str] = {}
    filters: list[str] = []
    for name, value in params:
        if name == "filter":
            filters.append(value)
        else:
            single.setdefault(name, value)
    if len(filters) > MAX_FILTERS:
        raise BadCdxQuery(f"{len(filters)} filters: give at most {MAX_FILTERS}")
    return single, filters


def _url_and_match_type(single: dict[str, str]) -> tuple[str, str]:
    """The URL without its wildcard and the match type it asks for."""
    url = single.get("url", "").strip()
    if not url:
        raise BadCdxQuery("give the URL: url=example.com/page (or example.com/*, *.example.com)")
    match_type = single.get("matchType", "")
    if not match_type:
        # pywb's wildcard forms, read only when matchType is not given.
        if url.startswith("*."):
            url, match_type = url[2:], "domain"
        elif url.endswith("*"):
            url, match_type = url[:-1], "prefix"
        else:
            match_type = "exact"
    if match_type not in MATCH_TYPES:
        raise BadCdxQuery(f"matchType={match_type!r}: use one of {', '.join(MATCH_TYPES)}")
    if not url:
        raise BadCdxQuery("url=*: give at least a host before the *")
    return url, match_type


def _output(single: dict[str, str]) -> str:
    output = single.get("output", DEFAULT_OUTPUT)
    if output not in OUTPUTS:
        raise BadCdxQuery(f"output={output!r}: use one of {', '.join(OUTPUTS)}")
    return output


def _sort_and_closest(single: dict[str, str]) -> tuple[str, str | None]:
    sort = single.get("sort", "")
    if sort and sort not in SORTS:
        raise BadCdxQuery(f"sort={sort!r}: use reverse or closest (with closest=TIMESTAMP)")
    closest = single.get("closest") or None
    if closest is not None:
        closest = _timestamp("closest", closest)
    elif sort == "closest":
        raise BadCdxQuery("sort=closest needs closest=TIMESTAMP")
    return sort, closest


def _limit(single: dict[str, str]) -> int:
    if "limit" not in single:
        return DEFAULT_LIMIT
    text = single["limit"].strip()
    if not text.isdigit() or int(text) < 1:
        raise BadCdxQuery(f"limit={single['limit']!r}: give a whole number >= 1")
    return int(text)


def _time_range(single: dict[str, str]) -> tuple[str | None, str | None]:
    """The from and to timestamps, padded to 14 digits."""
    from_ts = single.get("from") or single.get("from_ts") or None
    to_ts = single.get("to") or None
    if from_ts is not None:
        from_ts = pad_timestamp(_timestamp("from", from_ts), PAD_14_DOWN)
    if to_ts is not None:
        to_ts = pad_timestamp(_timestamp("to", to_ts), PAD_14_UP)
    return from_ts, to_ts


def _fields(single: dict[str, str]) -> tuple[str, ...] | None:
    fields = None
    names = single.get("fields") or single.get("fl")
    if names:
        fields = tuple(name.strip() for name in names.split(","))
        unknown = [name for name in fields if name not in LINE_FIELDS + ABSENT_FIELDS]
        if unknown:
            raise BadCdxQuery(
                f"fields: no field {unknown[0]!r}; the fields are {', '.join(LINE_FIELDS)}"
            )
    return fields


def _whole_number(name: str, text: str, low: int, high: int) -> int:
    """A parameter's whole number between `low` and `high`; BadCdxQuery naming it otherwise."""
    digits = text.strip()
    if _NUMBER.fullmatch(digits) is None or not low <= int(digits) <= high:
        raise BadCdxQuery(f"{name}={text!r}: give a whole number from {low} to {high:,}")
    return int(digits)


def _paging(single: dict[str, str]) -> tuple[int | None, int]:
    """The page asked for (None for none) and the page size, in blocks (pywb's default when it
    is not given or empty)."""
    page = None
    if "page" in single:
        page = _whole_number("page", single["page"], 0, MAX_PAGE)
    size = DEFAULT_PAGE_SIZE
    if single.get("pageSize"):
        size = _whole_number("pageSize", single["pageSize"], 1, MAX_PAGE_SIZE)
    return page, size


def parse_query(params: Iterable[tuple[str, str]]) -> CdxQuery:
    """The query of pywb's CDX parameters (a name given twice: the first, except `filter`,
    which may be repeated); BadCdxQuery says which parameter is wrong and why."""
    single, filters = _split_params(params)
    url, match_type = _url_and_match_type(single)
    output = _output(single)
    sort, closest = _sort_and_closest(single)
    limit = _limit(single)
    from_ts, to_ts = _time_range(single)
    fields = _fields(single)
    page, page_size = _paging(single)
    key, end_key = search_range(url, match_type)
    return CdxQuery(
        url=url,
        match_type=match_type,
        key=key,
        end_key=end_key,
        from_ts=from_ts,
        to_ts=to_ts,
        limit=limit,
        reverse=sort == "reverse" or _bool(single.get("reverse", "")),
        closest=closest,
        filters=tuple(parse_filter(text) for text in filters),
        fields=fields,
        output=output,
        page=page,
        page_size=page_size,
        show_num_pages=_bool(single.get("showNumPages", "")),
        show_paged_index=_bool(single.get("showPagedIndex", "")),
    )


def search_range(url: str, match_type: str) -> tuple[str, str]:
    """The SURT keys a query matches, `start <= key < end`, as pywb's calc_search_range makes
    them."""
    start = surt_key(url)

    def after(text: str) -> str:
        return text[:-1] + chr(ord(text[-1]) + 1)

    if match_type == "exact":
        return start, start + "!"
    if match_type == "prefix":
        if url.endswith("/") and not start.endswith("/"):
            start += "/"
        if url.endswith("?") and not start.endswith("?"):
            start += "?"
        return start, after(start)
    host = start.split(")/")[0]
    if match_type == "host":
        return host + ")/", host + "*"
    return (host + "," if "," not in host else host + ")/"), host + "-"


def with_scheme(url: str) -> str:
    """A URL as typed to a CDX server (`example.com/page`) made one the archive can key."""
    return url if "://" in url else "http://" + url


def lines_of(url: str, captures: Sequence[Capture], deadline: Deadline | None = None) -> list[Row]:
    """The rows of a URL's captures that a CDX server lists: responses, revisits, "not
    modified" answers and stream segments (not WARC requests, metadata, variants or pending
    revisits), oldest first."""
    key = surt_key(url)
    rows = []
    for capture in _watched(captures, deadline):
        if capture.kind not in REPLAYED_KINDS:
            continue
        revisit = capture.kind is RecordKind.REVISIT
        rows.append(
            Row(
                urlkey=key,
                timestamp=format_digits(capture.time),
                url=url,
                status=None if revisit else str(capture.status),
                digest=str(sha256_digest(capture.content)),
                time=capture.time,
                header=capture.header,
                mime=REVISIT_MIME if revisit else None,
            )
        )
    return rows


def sort_key(row: Row) -> tuple[str, str, str, int]:
    """pywb's order, that of its sorted index lines: key, timestamp, then URL."""
    return (row.urlkey, row.timestamp, row.url, row.time)


def _watched(items: Iterable[T], deadline: Deadline | None) -> Iterable[T]:
    """The items, the deadline looked at now and then when there is one."""
    return items if deadline is None else deadline.watch(items)


def clamp(query: CdxQuery, rows: Iterable[Row], deadline: Deadline | None = None) -> list[Row]:
    """The rows between `from` and `to` (timestamp prefixes padded: `from=2019` is
    20190101000000, `to=2019` 20191231235959), both included."""
    return [
        row
        for row in _watched(rows, deadline)
        if (query.from_ts is None or row.timestamp >= query.from_ts)
        and (query.to_ts is None or row.timestamp <= query.to_ts)
    ]


def apply_filters(
    query: CdxQuery, rows: Iterable[Row], deadline: Deadline | None = None
) -> list[Row]:
    return [row for row in _watched(rows, deadline) if all(match(row) for match in query.filters)]


def order(query: CdxQuery, rows: list[Row]) -> list[Row]:
    """The rows to show, in order: nearest `closest` first (ties in index order), or the last
    `limit` newest first (`reverse`), or the first `limit`."""
    if query.closest is not None:
        at = timestamp_to_sec(query.closest)
        nearest = sorted(rows, key=lambda row: abs(at - timestamp_to_sec(row.timestamp)))
        return nearest[: query.limit]
    if query.reverse:
        return rows[::-1][: query.limit]
    return rows[: query.limit]


def _chosen(query: CdxQuery, values: dict[str, str]) -> dict[str, str]:
    if query.fields is None:
        return values
    return {name: values[name] for name in query.fields if name in values}


def cdxj_line(row: Row, query: CdxQuery | None) -> str:
    values = row.fields()
    rest = {k: v for k, v in values.items() if k not in ("urlkey", "timestamp")}
    if query is not None:
        rest = _chosen(query, rest)
    return f"{row.urlkey} {row.timestamp} {json.dumps(rest)}"


def render(query: CdxQuery, rows: Sequence[Row], deadline: Deadline | None = None) -> str:
    """The body of the answer: one line a row, each ending in a newline."""
    each = _watched(rows, deadline)
    if query.output == "link":
        links = [
            f'<{escape_uri(row.url)}>; rel="memento"; datetime="{format_http_date(row.time)}"'
            for row in each
        ]
        return ",\n".join(links) + "\n" if links else ""
    if query.output == "cdxj":
        lines = [cdxj_line(row, query) for row in each]
    elif query.output == "json":
        lines = [json.dumps(_chosen(query, row.fields())) for row in each]
    else:
        names = query.fields or LINE_FIELDS
        lines = [" ".join(row.get(name) or "-" for name in names) for row in each]
    return "".join(line + "\n" for line in lines)


def mime_of(block: bytes | None) -> str:
    """The mime field of a capture from its header block: the Content-Type without parameters,
    `unk` without one, `-` when the block cannot be read."""
    if block is None:
        return "-"
    try:
        content_type = parse_header_block(block).get("Content-Type")
    except DlwebError:
        return "-"
    if not content_type or not content_type.strip():
        return UNKNOWN_MIME
    return _MIME_END.split(content_type.strip(), maxsplit=1)[0]


# -- reading the archive --------------------------------------------------------------------


@dataclass
class _Reader:
    client: ClusterClient
    gate: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(READS_IN_FLIGHT))

    async def captures(self, url: str) -> tuple[str, list[Capture]]:
        """The URL as its structure file stores it and its captures; none when the file is gone
        or was never archived."""
        async with self.gate:
            try:
                return await self.client.read_structure(structure_name(url), url)
            except NotFound:
                return url, []

    async def fill_mimes(self, rows: Sequence[Row]) -> None:
        """Read the header blocks of the rows without a mime (in packs, the rest one by one),
        and their Content-Types off the event loop."""
        names = list(dict.fromkeys(row.header for row in rows if row.mime is None))
        if not names:
            return
        blocks: dict[str, bytes | None] = dict(await self.client.get_small_contents(names))

        async def alone(name: str) -> None:
            async with self.gate:
                try:
                    blocks[name] = await self.client.get_header_block(name)
                except DlwebError:
                    blocks[name] = None

        await asyncio.gather(*(alone(name) for name in names if name not in blocks))
        await asyncio.to_thread(_set_mimes, rows, blocks)


def _set_mimes(rows: Sequence[Row], blocks: dict[str, bytes | None]) -> None:
    """Give the rows without a mime the one of their header block."""
    mimes = {name: mime_of(block) for name, block in blocks.items()}
    for row in rows:
        if row.mime is None:
            row.mime = mimes.get(row.header, "-")


def _exact_urls(query: CdxQuery, index: Path) -> list[str]:
    """The URL of an exact query and the other URLs of its key (https, www.) in the URL-key
    index, when there is one."""
    same = [with_scheme(query.url)]
    if (index / URLKEYS_FILE).is_file():
        with UrlKeys(index) as keys:
            same += [url for _, url in keys.between(query.key, query.end_key)]
    return _distinct(same)


def _distinct(urls: Iterable[str]) -> list[str]:
    """One URL of each structure file, sorted: the index lists a URL as it was captured
    (`http://iana.org`), which reads the same structure file as its canonical form."""
    return sorted({canonical_url(url) for url in urls})


def _key_groups(
    query: CdxQuery, keys: UrlKeys, deadline: Deadline, start: str | None = None
) -> Generator[tuple[str, list[str]], None, None]:
    """Each SURT key of a prefix, host or domain range (from `start` on) with its URLs, in key
    order. Closed before `keys` when left unfinished: closing it closes the index's cursor."""
    rows = keys.between(start or query.key, query.end_key)
    listed = (row for row in deadline.watch(rows) if row[1] != PENDING_REGISTRY_URL)
    try:
        for key, group in itertools.groupby(listed, key=lambda row: row[0]):
            yield key, _distinct(url for _, url in group)
    finally:
        if isinstance(rows, Generator):  # its cursor is closed now, while the index is open
            rows.close()


def _targets(query: CdxQuery, index: Path, deadline: Deadline) -> list[list[str]]:
    """The URLs to read, grouped by SURT key in key order (a group is never split, so that rows
    come in order however the groups are read)."""
    if query.match_type == "exact":
        return [_exact_urls(query, index)]
    with UrlKeys(index) as keys:
        return [urls for _, urls in _key_groups(query, keys, deadline)]


# -- paging -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """BLOCK_KEYS keys of a range (fewer in its last block), each with its URLs; `number` is
    its place in the range from 0, `offset` the number of keys of the range before it."""

    number: int
    offset: int
    keys: list[tuple[str, list[str]]]


def block_count(keys: int) -> int:
    """The blocks of a range of `keys` SURT keys."""
    return -(-keys // BLOCK_KEYS)


def page_count(blocks: int, page_size: int) -> int:
    return -(-blocks // page_size)


def page_info(blocks: int, page_size: int) -> dict[str, int]:
    """The answer to showNumPages, pywb's."""
    return {"pages": page_count(blocks, page_size), "pageSize": page_size, "blocks": blocks}


def invalid_page(page: int, pages: int) -> BadCdxQuery:
    """pywb's error for a page past the last."""
    return BadCdxQuery(f"Page {page} invalid: First Page is 0, Last Page is {pages - 1}")


def cut_blocks(groups: list[tuple[str, list[str]]], first_key: int) -> list[Block]:
    """Key groups cut into blocks, the first group being key `first_key` of the range (a
    multiple of BLOCK_KEYS)."""
    blocks = []
    for start in range(0, len(groups), BLOCK_KEYS):
        offset = first_key + start
        blocks.append(Block(offset // BLOCK_KEYS, offset, groups[start : start + BLOCK_KEYS]))
    return blocks


def _range_blocks(query: CdxQuery, index: Path) -> int:
    with UrlKeys(index) as keys:
        return block_count(keys.count_keys(query.key, query.end_key))


def _range_page(query: CdxQuery, index: Path, deadline: Deadline) -> list[Block]:
    """The blocks of the page asked for (0 when none is), read from its first key (found in the
    index) up to its last; none in a range without keys, BadCdxQuery for a page past the last."""
    page = query.page or 0
    first = page * query.page_size * BLOCK_KEYS
    with UrlKeys(index) as keys:
        start = keys.key_at(query.key, query.end_key, first) if first else query.key
        if start is None:
            blocks = block_count(keys.count_keys(query.key, query.end_key))
            if blocks:
                raise invalid_page(page, page_count(blocks, query.page_size))
            return []
        with contextlib.closing(_key_groups(query, keys, deadline, start)) as groups:
            taken = list(itertools.islice(groups, query.page_size * BLOCK_KEYS))
    return cut_blocks(taken, first) if taken else []


async def _has_lines(reader: _Reader, urls: Sequence[str]) -> bool:
    """Whether any of the URLs has a capture a CDX server lists."""
    read = await asyncio.gather(*(reader.captures(url) for url in urls))
    return any(lines_of(url, captures) for url, captures in read)


async def _block_count(reader: _Reader, query: CdxQuery, index: Path, deadline: Deadline) -> int:
    if query.match_type == "exact":
        urls = await asyncio.to_thread(_exact_urls, query, index)
        return 1 if await _has_lines(reader, urls) else 0
    return await asyncio.to_thread(_range_blocks, query, index)


async def _page_blocks(
    reader: _Reader, query: CdxQuery, index: Path, deadline: Deadline
) -> list[Block]:
    """The blocks of the page asked for. An exact query's page 0 is its one block, answered
    empty when it has no capture (as pywb's); its paged index and later pages read whether it
    has one first."""
    if query.match_type != "exact":
        return await asyncio.to_thread(_range_page, query, index, deadline)
    page = query.page or 0
    urls = await asyncio.to_thread(_exact_urls, query, index)
    block = Block(0, 0, [(query.key, urls)])
    if page == 0 and not query.show_paged_index:
        return [block]
    if not await _has_lines(reader, urls):
        return []
    if page > 0:
        raise invalid_page(page, 1)
    return [block]


def paged_index_line(query: CdxQuery, block: Block, timestamp: str) -> str:
    """A block as pywb lists a secondary index line: its first key and that key's first
    timestamp, then where it is: the URL-key index, the keys before it, its keys, its number."""
    where = {
        "urlkey": f"{block.keys[0][0]} {timestamp}",
        "part": INDEX_PART,
        "offset": block.offset,
        "length": len(block.keys),
        "lineno": block.number,
    }
    if query.output == "json":
        return json.dumps(where)
    return "\t".join(str(value) for value in where.values())


async def _first_timestamp(reader: _Reader, urls: Sequence[str]) -> str:
    """The timestamp of the first listed capture of the URLs, `-` when they have none."""
    read = await asyncio.gather(*(reader.captures(url) for url in urls))
    return min((row.timestamp for url, caps in read for row in lines_of(url, caps)), default="-")


async def _paged_index(reader: _Reader, query: CdxQuery, blocks: Sequence[Block]) -> str:
    firsts = await asyncio.gather(*(_first_timestamp(reader, b.keys[0][1]) for b in blocks))
    lines = [
        paged_index_line(query, block, first) for block, first in zip(blocks, firsts, strict=True)
    ]
    return "".join(line + "\n" for line in lines)


# -- answering --------------------------------------------------------------------------------


async def answer(client: ClusterClient, query: CdxQuery, index: Path) -> str:
    """The body answering `query`: captures read from the cluster, the URLs of a prefix, host or
    domain range from the URL-key index in the search index folder `index` (NoUrlIndex when it
    has none); with `page`, those of the page's blocks only; with showNumPages or
    showPagedIndex, the page count or the page's blocks. OverBudget ends an answer that takes
    longer than CDX_BUDGET seconds."""
    deadline = answer_deadline(CDX_BUDGET, "the CDX query", _ADVICE)
    reader = _Reader(client)
    if query.show_num_pages:
        count = await _block_count(reader, query, index, deadline)
        return json.dumps(page_info(count, query.page_size)) + "\n"
    if not query.paged:
        groups = await asyncio.to_thread(_targets, query, index, deadline)
        return await _lines(reader, query, groups, deadline)
    blocks = await _page_blocks(reader, query, index, deadline)
    if query.show_paged_index:
        return await _paged_index(reader, query, blocks)
    groups = [urls for block in blocks for _, urls in block.keys]
    return await _lines(reader, query, groups, deadline)


async def _lines(
    reader: _Reader, query: CdxQuery, groups: list[list[str]], deadline: Deadline
) -> str:
    """The lines of the captures of the URL groups (in key order). Without closest or reverse,
    reading stops once `limit` rows are found. The rows are made, filtered, ordered and written
    on threads."""
    mime_first = query.filters_need("mime")
    everything = query.closest is not None or query.reverse
    found: list[Row] = []
    step = READS_IN_FLIGHT
    for start in range(0, len(groups), step):
        deadline.check()
        urls = [url for group in groups[start : start + step] for url in group]
        read = await asyncio.gather(*(reader.captures(url) for url in urls))
        rows = await asyncio.to_thread(_select, query, read, deadline, not mime_first)
        if mime_first:
            await reader.fill_mimes(rows)
            rows = await asyncio.to_thread(apply_filters, query, rows, deadline)
        found += rows
        if not everything and len(found) >= query.limit:
            break
    shown = await asyncio.to_thread(order, query, found)
    deadline.check()
    if query.wants("mime"):
        await reader.fill_mimes(shown)
    return await asyncio.to_thread(render, query, shown, deadline)


def _select(
    query: CdxQuery, read: list[tuple[str, list[Capture]]], deadline: Deadline, filtered: bool
) -> list[Row]:
    """The rows of the captures read, in order, between `from` and `to`, and filtered when
    `filtered` (the filters that read the mime are applied once it is read)."""
    rows = [row for url, captures in read for row in lines_of(url, captures, deadline)]
    rows = clamp(query, sorted(rows, key=sort_key), deadline)
    return apply_filters(query, rows, deadline) if filtered else rows
