"""Where the bar goes in a page: where the browser starts the page's body, as the WHATWG tree
builder decides from the page's tokens (proxy/html_tokens.py), and the Content-Security-Policy
of each `<meta http-equiv>` of its head.

The bar goes right after the page's `<body ...>` tag, or, with none, right before the first
token that starts the body (text other than white space, or a tag that has no place in a head),
or at the end of a page that ends outside any token. So the bar is never inside a tag, an
attribute, a comment or a raw-text element, and every element of the page's head stays in its
head: a `<meta>` Content-Security-Policy after `</head>` still applies, which a bar before it
would have moved into the body, where browsers ignore it.

There is no place where the body never starts before the page ends inside a tag, a comment, a
template or a raw-text element; in a frameset, which a body's content would break (one given
before any text or tag that closes the chance of a frameset); and where what follows depends on
what the tokens alone do not tell: SVG, MathML, a table's columns or a select in a template of
the head, SVG or MathML before the first text of a body begun without a `<body>` tag (a frameset
may still come from inside them).
"""

import re
from dataclasses import dataclass

from .html_tokens import Token, attributes, tokens

# Reading the start of a page costs a few microseconds a token: a page that has this many before
# its body's place is known gets no bar rather than a good part of a second of the proxy's time.
MAX_TOKENS = 25_000
# Head elements, put back into the head when they come after `</head>`; `noscript` is one only
# before (scripting on: its content is raw text).
_AFTER_HEAD = frozenset({"base", "basefont", "bgsound", "link", "meta", "noframes", "script"})
_AFTER_HEAD |= {"style", "title"}
_IN_HEAD = _AFTER_HEAD | {"noscript"}
# The start tags that, in the body, close the chance of a frameset (and `input` unless hidden).
_NO_FRAMESET = frozenset({"applet", "area", "body", "br", "button", "dd", "dt", "embed", "hr"})
_NO_FRAMESET |= {"iframe", "image", "img", "input", "keygen", "li", "listing", "marquee", "object"}
_NO_FRAMESET |= {"pre", "select", "table", "textarea", "wbr", "xmp"}
# White space as the tree builder sees it, character references to it included, and NUL, which
# Chromium drops from text outside SVG and MathML (so it starts no body there, unlike in the
# standard: a body begun later keeps the head's elements in the head in both).
_BLANK_RE = re.compile(
    r"(?:[\t\n\f\r \0]++|&(?:Tab|NewLine);"
    r"|&#(?:[xX]0*+(?:9|[aAcCdD]|20)(?![0-9a-fA-F])|0*+(?:9|1[023]|32)(?!\d));?)*+"
)
_EQUIV_RE = re.compile("http-equiv", re.IGNORECASE)


@dataclass(frozen=True)
class Placement:
    """Where the bar goes (None: nowhere, for the reason `why`), and the content of every
    Content-Security-Policy `<meta>` of the head, in order."""

    at: int | None
    why: str
    policies: tuple[str, ...]


def placement(text: str, at: int = 0) -> Placement:
    """Where the bar goes in the page `text`, read from `at` (past a byte-order mark)."""
    reader = _Reader(text)
    for count, token in enumerate(tokens(text, at)):
        if count >= MAX_TOKENS:
            return Placement(None, f"more than {MAX_TOKENS:,} tokens before its body", ())
        found = reader.step(token)
        if found is not None:
            return found
    if reader.body >= 0:  # the rest is raw text: no frameset follows
        return reader.placed(reader.body)
    return Placement(None, "it ends inside a tag, a comment or a raw-text element", ())


class _Reader:
    """The tree builder's steps before the body (the head and its templates), then in a body
    begun without a `<body>` tag until nothing can turn it into a frameset."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.mode = "before"  # the head not begun, "in" it, or "after" it
        self.templates = 0  # how deep in templates of the head
        self.body = -1  # where the body starts, once known
        self.policies: list[str] = []

    def step(self, token: Token) -> Placement | None:
        """The placement this token settles, or None to read on."""
        if self.body >= 0:
            return self._in_body(token)
        if self.templates:
            return self._in_template(token)
        return self._in_head(token)

    def placed(self, at: int) -> Placement:
        return Placement(at, "", tuple(self.policies))

    def _in_head(self, token: Token) -> Placement | None:
        kind, name = token.kind, token.name
        if kind == "text":
            content = _content(self.text, token)
            self.body = -1 if content is None else content
        elif kind == "eof" or kind == "end" and name in ("body", "html", "br"):
            self.body = token.start
        elif kind == "end" and name == "head":
            self.mode = "after"
        elif kind != "start":
            return None  # a comment, a doctype, an end tag ignored
        elif name == "body":  # no frameset can follow
            return self.placed(token.end)
        elif name == "frameset":
            return Placement(None, "a frameset", ())
        elif name == "head" or name == "html":
            self.mode = "in" if name == "head" and self.mode == "before" else self.mode
        elif name == "template" or name in (_AFTER_HEAD if self.mode == "after" else _IN_HEAD):
            self.mode = "in" if self.mode == "before" else self.mode
            self.templates = 1 if name == "template" else 0
            if name == "meta" and not _note_policy(self.text, token, self.policies):
                return Placement(None, "a <meta> of more than 1,000 attributes in its head", ())
        else:
            self.body = token.start
        return self._in_body(token) if self.body >= 0 else None

    def _in_template(self, token: Token) -> Placement | None:
        """Inside a template of the head, whose content never starts the body. What would be
        parsed by rules the tokens alone do not tell (SVG, MathML, a table's columns, a select)
        keeps the bar out."""
        if token.kind == "eof":
            return Placement(None, "a template of its head that never ends", ())
        if token.name == "template":
            self.templates += 1 if token.kind == "start" else -1
        elif token.kind == "start" and token.name in ("svg", "math", "col", "colgroup", "select"):
            return Placement(None, f"a <{token.name}> in a template of its head", ())
        return None

    def _in_body(self, token: Token) -> Placement | None:
        """In a body begun without a `<body>` tag: a frameset may still replace it, even from
        inside SVG or MathML, whose tags the tokens alone do not tell."""
        if token.kind == "start" and token.name in ("frameset", "svg", "math"):
            return Placement(None, f"a <{token.name}> before its first text", ())
        if token.kind == "eof" or _closes_frameset(self.text, token):
            return self.placed(self.body)
        return None


def _closes_frameset(text: str, token: Token) -> bool:
    """Whether this token, in the body, ends the chance of a frameset (`frameset-ok`)."""
    if token.kind == "text":
        return _content(text, token) is not None
    if token.kind == "end":
        return token.name == "br"
    if token.kind != "start" or token.name not in _NO_FRAMESET:
        return False
    if token.name != "input":
        return True
    found = attributes(text, token)
    return found is not None and found.get("type", "").lower() != "hidden"


def _content(text: str, token: Token) -> int | None:
    """Where the first character other than white space is in a text token, or None."""
    blanks = _BLANK_RE.match(text, token.start, token.end)
    found = blanks.end() if blanks else token.start
    return found if found < token.end else None


def _note_policy(text: str, meta: Token, policies: list[str]) -> bool:
    """Note the policy of a Content-Security-Policy `<meta>`; False for a meta too long to
    read, which may hold one."""
    if not _EQUIV_RE.search(text, meta.start, meta.end):  # an attribute's name is never escaped
        return True
    found = attributes(text, meta)
    if found is None:
        return False
    if found.get("http-equiv", "").strip().lower() == "content-security-policy":
        policies.append(found.get("content", ""))
    return True
