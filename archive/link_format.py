"""URIs as they go out between `<` and `>`: in a Link header (RFC 8288), a link-format document
such as a Memento TimeMap (RFC 6690), or a Location header.

An archived URL is whatever a crawled site or an imported file said: it may hold `>`, `"`, a
space, a control character or text beyond ASCII. Written raw between the brackets, it ends the
entry early and what follows reads as entries or parameters of the archive's own; in a header, a
CR LF starts a header of the sender's choosing. So every character a URI reference may not hold
is percent-encoded (its UTF-8 bytes), and the escapes already there are kept: the URI the reader
gets names the same resource, in ASCII only.
"""

import re

# What a URI reference may hold (RFC 3986: unreserved, gen-delims, sub-delims), and `%` only as
# the start of an escape.
_URI = r"A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;="
_CLEAN = re.compile(rf"(?:[{_URI}]|%[0-9A-Fa-f]{{2}})*")
_NOT_URI = re.compile(rf"%(?![0-9A-Fa-f]{{2}})|[^{_URI}%]+")


def escape_uri(uri: str) -> str:
    """`uri` with every character a URI reference may not hold percent-encoded, its escapes
    kept: safe inside `<...>` and in a header. Text that is not valid Unicode (a lone surrogate,
    as a byte that was not UTF-8 is decoded) is encoded too, never refused."""
    if _CLEAN.fullmatch(uri):
        return uri
    return _NOT_URI.sub(_escaped, uri)


def _escaped(match: re.Match[str]) -> str:
    text = match.group()
    try:
        data = text.encode("utf-8", "surrogateescape")  # a byte decoded so: that byte again
    except UnicodeEncodeError:
        data = text.encode("utf-8", "surrogatepass")
    return "".join(f"%{byte:02X}" for byte in data)
