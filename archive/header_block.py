"""Header blocks: a response's status line and header fields, kept as received.

A header block is stored as a content file of its own, so identical blocks are stored once. Its
bytes are the status line and the header lines as the server sent them, each ending in CRLF, then
an empty line. Replay parses it back to send the archived status and headers.

Blocks come from archived servers and imported files, so they are read as hostile: in one pass,
each line once, whatever their bytes, and none larger than MAX_HEADER_BLOCK (what browsers accept
of a response's headers).
"""

import re
from dataclasses import dataclass

from .errors import CorruptFile

# Longer spellings first: the parser takes the first prefix that matches.
_PROTOCOLS = ["HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/2", "HTTP/3"]
_CHUNKED = re.compile(rb"chunked", re.IGNORECASE)
# What HTTP allows in a field's name (a token) and bans in its value: controls but tab (CR, LF
# and NUL end a field or the head; RFC 9110 section 5).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
MAX_HEADER_BLOCK = 256 * 1024


@dataclass(frozen=True)
class HeaderBlock:
    protocol: str
    status: int
    reason: str
    headers: list[tuple[str, str]]

    def get(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)


def encode_header_block(
    status: int, reason: str, headers: list[tuple[str, str]], protocol: str = "HTTP/1.1"
) -> bytes:
    """Header block bytes for a response whose raw header bytes are no longer at hand."""
    lines = [f"{protocol} {status} {reason}".rstrip()]
    lines.extend(f"{name}: {value}" for name, value in headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", errors="replace")


def valid_field(name: str, value: str) -> bool:
    """Whether a header field may be sent as it is, so that no value of an archived response or
    of a request can end a field or the head early and add its own."""
    return _TOKEN.fullmatch(name) is not None and _CONTROL.search(value) is None


def parse_header_block(data: bytes, where: str = "header block") -> HeaderBlock:
    if len(data) > MAX_HEADER_BLOCK:
        raise CorruptFile(
            f"{where}: a header block of {len(data)} bytes, more than the"
            f" {MAX_HEADER_BLOCK // 1024} KiB a response's headers may take"
        )
    protocol, status, reason = _status_line(data, where)
    return HeaderBlock(protocol, status, reason, _fields(data))


def _fields(data: bytes) -> list[tuple[str, str]]:
    """The header fields after the status line, read as warcio (and so pywb) reads them: up to
    the first line that is empty once its trailing white space is removed; a line that starts
    with a space or a tab continues the line before it; a line without a colon is no field (nor
    are the lines that continue it); each line is UTF-8, else Latin-1."""
    fields: list[tuple[str, str]] = []
    name: str | None = None
    value: list[str] = []
    lines = data.split(b"\n")
    for index in range(1, len(lines)):
        line = _decoded(lines[index]).rstrip()
        if not line:
            break
        if index > 1 and line[0] in " \t":
            value.append(line)
            continue
        if name is not None:
            fields.append((name, "".join(value)))
        field, colon, first = line.partition(":")
        name, value = (field.rstrip(" \t"), [first.lstrip()]) if colon else (None, [])
    if name is not None:
        fields.append((name, "".join(value)))
    return fields


def _decoded(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode("iso-8859-1")


def status_of(data: bytes, where: str = "header block") -> int:
    """The status of a header block, checked as parse_header_block checks it, from its status
    line alone (an import needs no more of each response's headers)."""
    return _status_line(data, where)[1]


def _status_line(data: bytes, where: str) -> tuple[str, int, str]:
    """The protocol, status and reason of a block's first line, which must be an HTTP status
    line with a status of 3 digits."""
    end = data.find(b"\n")
    line = _decoded(data[: end if end >= 0 else len(data)]).rstrip()
    upper = line.upper()
    protocol = next((p for p in _PROTOCOLS if upper.startswith(p)), None)
    if protocol is None:
        raise CorruptFile(f"{where}: not an HTTP status line and headers (it starts {line[:40]!r})")
    status_line = line[len(protocol) :].strip()
    code, _, reason = status_line.partition(" ")
    if not (len(code) == 3 and code.isascii() and code.isdigit() and code[0] != "0"):
        raise CorruptFile(
            f"{where}: not an HTTP status line and headers (status {code[:20]!r} is not 3 digits)"
        )
    return protocol, int(code), reason


def declares_chunked(data: bytes) -> bool:
    """True when a header block says its payload was sent with chunked transfer encoding."""
    if _CHUNKED.search(data) is None:  # the common case: no line can say so
        return False
    for line in data.split(b"\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"transfer-encoding":
            return b"chunked" in value.lower()
    return False


def media_type(content_type: str | None) -> str:
    """The media type a Content-Type names, lowercased, without its parameters ("" for none)."""
    return (content_type or "").partition(";")[0].strip().lower()


def charset_of(content_type: str | None) -> str | None:
    """The charset a Content-Type names, unquoted, as given (None when it names none)."""
    for parameter in (content_type or "").split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip("\"'"):
            return value.strip().strip("\"'")
    return None
