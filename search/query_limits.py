"""What a full-text query may ask before tantivy's query parser sees it: its length, how deeply
it nests, and how many words it has.

tantivy parses a query and runs it by recursion, one stack frame or more for each level of
nesting, on the caller's thread: some 900 groups such as `b (-b (-b (-…)))` overflow an 8 MiB
stack and the whole process dies (every client of the proxy with it), and a chain of NOTs takes
time in the square of its length. Any archived page can make a browser send such a query to
`api.dlweb` or `search.dlweb`. So every query is measured here first, by a reading of tantivy's
syntax that needs no recursion, and refused with a BadQuery naming the limit it passes. The
limits are far below what tantivy withstands (the shortest query found to crash it is 4,600
characters long) and far above what a reader types.
"""

import re

from .errors import BadQuery

MAX_QUERY_CHARS = 1_000
# Groups in parentheses, each a level, and each NOT, + or - before a group or a term one more.
MAX_DEPTH = 16
MAX_WORDS = 64  # as the index splits them: runs of letters and digits

# What ends a bare word in tantivy's syntax (a backslash escapes any of them).
_WORD_END = frozenset(" \t\r\n\f\v()[]{}\"'^:")
_OPERATORS = frozenset({"AND", "OR", "TO", "IN"})
_TOKEN = re.compile(r"[^\W_]+")  # tantivy's default tokenizer keeps alphanumeric runs


def check_query(query: str) -> None:
    """Refuse, with a BadQuery that names the limit, a query longer than MAX_QUERY_CHARS,
    nested deeper than MAX_DEPTH or of more than MAX_WORDS words; any other query is safe to
    hand to tantivy's parser (which may still find it malformed)."""
    if len(query) > MAX_QUERY_CHARS:
        raise BadQuery(
            f"the query is {len(query):,} characters long; at most {MAX_QUERY_CHARS:,} are read"
        )
    depth, words = _measure(query)
    if depth > MAX_DEPTH:
        raise BadQuery(
            f"the query nests more than {MAX_DEPTH} levels deep (each group in parentheses is"
            " a level, and each NOT, + or - before it); write it flatter"
        )
    if words > MAX_WORDS:
        raise BadQuery(
            f"the query has {words} words; at most {MAX_WORDS} are read (each word of a phrase"
            " counts)"
        )


def _measure(query: str) -> tuple[int, int]:
    """How deeply `query` nests and how many words it has, read left to right as tantivy's
    grammar reads it: a quote (single or double) starts a phrase up to the same quote unescaped,
    a bracket a range or a set up to its closing bracket, a backslash escapes the next
    character. Malformed text (an unclosed quote, a stray parenthesis) is measured too: tantivy
    recurses over it before it finds the fault."""
    groups: list[int] = []  # the levels each open group adds: 1, and its NOTs, + and -
    level = 0  # the sum of those
    pending = 0  # NOT, + and - read since the last term or group
    deepest = words = 0
    at, end = 0, len(query)
    while at < end:
        char = query[at]
        if char.isspace():
            at += 1
        elif char == "(":
            groups.append(1 + pending)
            level += 1 + pending
            pending = 0
            deepest = max(deepest, level)
            at += 1
        elif char == ")":
            if groups:
                level -= groups.pop()
            at += 1
        elif char in "+-":
            pending += 1
            at += 1
        elif char in "\"'":
            close = _closing(query, at + 1, char)
            words += len(_TOKEN.findall(query, at + 1, close))
            deepest = max(deepest, level + pending)
            pending = 0
            at = close + 1
        elif char in "[{":
            close = min(_closing(query, at + 1, "]"), _closing(query, at + 1, "}"))
            bounds = query[at + 1 : close].split()
            words += sum(1 for bound in bounds if bound not in _OPERATORS)
            deepest = max(deepest, level + pending)
            pending = 0
            at = close + 1
        elif char == "^":  # a boost, of the term or group before: its number is no word
            at += 1
            while at < end and (query[at].isdigit() or query[at] == "."):
                at += 1
        elif char in ":]}":  # a field's colon (its name was read before), a stray bracket
            at += 1
        else:
            stop = max(_word_end(query, at), at + 1)
            word = query[at:stop]
            at = stop
            if word == "NOT" and at < end and query[at].isspace():
                pending += 1
            elif word not in _OPERATORS and not _names_field(query, at):
                words += max(1, len(_TOKEN.findall(word)))
                deepest = max(deepest, level + pending)
                pending = 0
    return max(deepest, level + pending), words


def _closing(query: str, start: int, quote: str) -> int:
    """Where the `quote` that closes what began before `start` is (a backslash escapes one
    character), or the end of the query when none does."""
    at = start
    while at < len(query):
        if query[at] == "\\":
            at += 2
        elif query[at] == quote:
            return at
        else:
            at += 1
    return len(query)


def _word_end(query: str, start: int) -> int:
    """Where the bare word beginning at `start` ends."""
    at = start
    while at < len(query) and query[at] not in _WORD_END:
        at += 2 if query[at] == "\\" else 1
    return min(at, len(query))


def _names_field(query: str, after: int) -> bool:
    """Whether the word ending at `after` is a field's name (`title:`, `title :`)."""
    rest = query[after : after + 64].lstrip()
    return rest.startswith(":")
