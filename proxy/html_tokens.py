"""The tokens of an HTML page and where each lies in its text: the WHATWG tokenizer's rules (what
browsers follow), for what decides where a tag, a comment or a raw-text element begins and ends.

The page is read as Latin-1, one character a byte, so a token's place in the text is its place
in the bytes; for a charset in which every byte below 0x80 is that ASCII character (UTF-8, the
single-byte charsets, EUC, Shift_JIS, GBK, Big5) the tokenizer decides exactly as on the decoded
text, since it decides on ASCII characters only.

Raw-text elements switch the tokenizer as the tree builder does outside SVG and MathML (which
never come before a body): `title` and `textarea` hold text up to their end tag, `style`, `xmp`,
`iframe`, `noembed`, `noframes` and `noscript` (scripting on, as where the bar's script runs) too,
`script` by the script-data states (its `<!--` and `<script>` escapes included), `plaintext` to the
end. What is in them, and character references, yield no token.

Why not a library: html5lib and tinyhtml5, the Python ones, are quadratic in a tag's attributes
(a 400 KB tag of 200,000 attributes takes them 100 s); html5-parser, selectolax and markupever
do not tell where a token is. Here each step is one regular expression whose repetitions are
possessive or atomic, so a page is read in time linear in its length, holding one token at once.
"""

import re
from collections.abc import Iterator
from html import unescape
from typing import Literal, NamedTuple

Kind = Literal["start", "end", "text", "comment", "doctype", "eof"]

_WS = r"\t\n\f\r "
# After `<` or `</`: a tag name, then attributes (a quoted value must close, or the tag never
# ends: the rest of the page is in it), up to `>`.
_TAG_RE = re.compile(
    rf"""([A-Za-z][^{_WS}/>]*+)
    (?>(?>[{_WS}/]++|[^{_WS}/>][^{_WS}/>=]*+
       (?>[{_WS}]*+=[{_WS}]*+(?>"[^"]*+"|'[^']*+'|[^{_WS}>"'][^{_WS}>]*+|(?=>))|(?![{_WS}]*+=))
    )*+)>""",
    re.VERBOSE,
)
_ATTRIBUTE_RE = re.compile(
    rf"""([^{_WS}/>][^{_WS}/>=]*+)
    (?:[{_WS}]*+=[{_WS}]*+("[^"]*+"|'[^']*+'|[^{_WS}>"'][^{_WS}>]*+)?)?""",
    re.VERBOSE,
)
# A script that switches between its escape states more often than this counts as one that never
# ends: its page gets no token after it, rather than a second of the proxy's time.
MAX_ESCAPES = 10_000
_COMMENT_END_RE = re.compile(r"--!?>")
_SCRIPT_RE = re.compile(rf"<!--|</script(?=[{_WS}/>])", re.IGNORECASE)
_ESCAPED_RE = re.compile(rf"-->|</script(?=[{_WS}/>])|<script(?=[{_WS}/>])", re.IGNORECASE)
_DOUBLE_ESCAPED_RE = re.compile(rf"-->|</script(?=[{_WS}/>])", re.IGNORECASE)
RCDATA = frozenset({"title", "textarea"})
RAWTEXT = frozenset({"style", "xmp", "iframe", "noembed", "noframes", "noscript"})
_RAW_ENDS = {
    name: re.compile(rf"</{name}(?=[{_WS}/>])", re.IGNORECASE) for name in RCDATA | RAWTEXT
}


class Token(NamedTuple):
    """A token and the span of text it came from; `name` is a tag's, in lower case. A tuple: one
    is made for every tag and text of a page's head, in half the time of a frozen dataclass."""

    kind: Kind
    start: int
    end: int
    name: str = ""


def tokens(text: str, at: int = 0) -> Iterator[Token]:
    """The page's tokens from `at` on. The last is an `eof` token only where the page ends
    outside any token (not inside a tag, a comment, a doctype or a raw-text element)."""
    end = len(text)
    while at < end:
        found = text.find("<", at)
        if found < 0:
            yield Token("text", at, end)
            break
        if found > at:
            yield Token("text", at, found)
        token = _markup(text, found)
        if token is None:  # a `<` that opens nothing: text, read on after it
            yield Token("text", found, found + 1)
            at = found + 1
            continue
        if token.end < 0:  # it runs to the end of the page
            return
        if token.kind != "end" or token.name:  # `</>` is no token at all
            yield token
        at = token.end
        if token.kind == "start" and (token.name in RCDATA or token.name in RAWTEXT):
            closing = _RAW_ENDS[token.name].search(text, at)
            at = _closing(text, closing.start() if closing else -1)
        elif token.kind == "start" and token.name == "script":
            at = _closing(text, _script_end(text, at))
        elif token.kind == "start" and token.name == "plaintext":
            return
        if at < 0:
            return
    yield Token("eof", end, end)


def attributes(text: str, tag: Token, most: int = 1000) -> dict[str, str] | None:
    """A tag's attributes, names in lower case, values with their references resolved; the first
    of two of one name wins, as in browsers. None for a tag of more than `most` attributes."""
    found: dict[str, str] = {}
    after_name = tag.start + (2 if tag.kind == "end" else 1) + len(tag.name)
    for count, attribute in enumerate(_ATTRIBUTE_RE.finditer(text, after_name, tag.end - 1)):
        if count >= most:
            return None
        value = attribute.group(2) or ""
        if value[:1] in ("'", '"'):
            value = value[1:-1]
        found.setdefault(attribute.group(1).lower(), unescape(value))
    return found


def _markup(text: str, at: int) -> Token | None:
    """The token that the `<` at `at` opens; None where it opens none; an `end` of -1 where the
    page ends inside it."""
    following = text[at + 1 : at + 2]
    if following == "!":
        if text.startswith("<!--", at):
            return Token("comment", at, _comment_end(text, at + 4))
        kind: Kind = "doctype" if text[at + 2 : at + 9].lower() == "doctype" else "comment"
        return Token(kind, at, _after(text, ">", at + 2))
    if following == "?":
        return Token("comment", at, _after(text, ">", at + 1))
    if following == "/":
        if text[at + 2 : at + 3] == ">":
            return Token("end", at, at + 3)  # nameless: skipped
        tag = _TAG_RE.match(text, at + 2)
        if tag is not None:
            return Token("end", at, tag.end(), tag.group(1).lower())
        if at + 2 >= len(text):
            return None
        if text[at + 2].isascii() and text[at + 2].isalpha():
            return Token("end", at, -1)
        return Token("comment", at, _after(text, ">", at + 2))
    if following.isascii() and following.isalpha():
        tag = _TAG_RE.match(text, at + 1)
        if tag is None:
            return Token("start", at, -1)
        return Token("start", at, tag.end(), tag.group(1).lower())
    return None


def _comment_end(text: str, at: int) -> int:
    """Where a comment whose `<!--` ends at `at` ends: `<!-->` and `<!--->` are whole ones."""
    if text.startswith(">", at):
        return at + 1
    if text.startswith("->", at):
        return at + 2
    found = _COMMENT_END_RE.search(text, at)
    return found.end() if found else -1


def _after(text: str, mark: str, at: int) -> int:
    found = text.find(mark, at)
    return found + len(mark) if found >= 0 else -1


def _script_end(text: str, at: int) -> int:
    """Where the end tag of a script whose text starts at `at` starts, through the script-data
    escape states (`<!--` ... `-->`, and a `<script>` inside, where `</script>` does not end it);
    -1 where the page ends first, or after MAX_ESCAPES switches."""
    pattern = _SCRIPT_RE
    for _ in range(MAX_ESCAPES):
        found = pattern.search(text, at)
        if found is None:
            break
        mark = found.group(0)
        if pattern is _SCRIPT_RE:
            if mark.startswith("</"):
                return found.start()
            pattern, at = _ESCAPED_RE, found.start() + 2  # its `--` may close it: `<!-->`
        elif mark == "-->":
            pattern, at = _SCRIPT_RE, found.end()
        elif pattern is _ESCAPED_RE and mark.startswith("</"):
            return found.start()
        else:  # `<script` opens the double escape, `</script` closes it
            pattern = _DOUBLE_ESCAPED_RE if pattern is _ESCAPED_RE else _ESCAPED_RE
            at = found.end()
    return -1


def _closing(text: str, at: int) -> int:
    """After the end tag that starts at `at`; -1 where there is none or it never closes."""
    if at < 0:
        return -1
    tag = _TAG_RE.match(text, at + 2)
    return tag.end() if tag else -1
