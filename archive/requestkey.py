"""The lookup URL of a request other than GET: its method and body folded into the query.

A page that POSTs a JSON body and draws the answer replays only if the archive finds the answer
by the request's method and body, not by its URL alone. pywb and the webrecorder tools index such
a response under a URL that carries `__wb_method=post` and the body as query arguments; the
archive keys it the same way, so that an import of their WARC files and a lookup from the proxy
meet on one structure file:

    POST http://example.com/api  {"q": "cats", "page": 2}
    -> http://example.com/api?__wb_method=post&q=cats&page=2

The body is folded by its Content-Type: a form is percent-decoded; a multipart form becomes its
fields, URL-encoded; JSON (and text/plain that parses as JSON) becomes `name=value` pairs of its
scalars, each named by the key that holds it, with repeated names made distinct (`a`, `a.2_`,
`a.3_`, ...); anything else, or a form or JSON body that does not decode, becomes
`__wb_post_data=<base64>`. The folded part is cut at MAX_FOLDED characters. pywb folds the body of
POST and PUT only and leaves an undecodable JSON body out; here every method but GET and HEAD
folds its body, and an undecodable one is kept as base64, so that different bodies keep
different keys.
"""

import base64
import json
import math
from collections.abc import Iterator
from email.message import Message
from email.parser import BytesParser
from email.policy import compat32
from email.utils import collapse_rfc2231_value
from itertools import repeat
from typing import Any
from urllib.parse import quote, unquote_plus, urlencode

MAX_FOLDED = 4096
METHOD_ARG = "__wb_method="
POST_DATA_ARG = "__wb_post_data="
_UNFOLDED_METHODS = frozenset({"GET", "HEAD"})
_FORM = "application/x-www-form-urlencoded"
_JSON = "application/json"


class _Undecodable(Exception):
    """A body that does not decode as its Content-Type says."""


def lookup_url(method: str, url: str, content_type: str | None, body: bytes) -> str:
    """The URL a request is archived and looked up under: `url` itself for GET and HEAD, else
    `url` with `__wb_method=<method>` and the folded body added to its query."""
    verb = method.strip()
    if not verb or verb.upper() in _UNFOLDED_METHODS:
        return url
    url = url.partition("#")[0]  # a fragment never reaches the server
    key = f"{url}{'&' if '?' in url else '?'}{METHOD_ARG}{quote(verb.lower(), safe='')}"
    folded = _fold(content_type or "", body)[:MAX_FOLDED] if body else ""
    return f"{key}&{folded}" if folded else key


def original_url(url: str) -> str:
    """The URL a lookup URL was made from (a plain URL is its own)."""
    at = _method_arg_at(url)
    return url if at < 0 else url[:at]


def _method_arg_at(url: str) -> int:
    """Where the `?` or `&` that starts the folded part is, or -1."""
    if METHOD_ARG not in url:
        return -1
    query_at = url.find("?")
    if query_at < 0:
        return -1
    if url.startswith(METHOD_ARG, query_at + 1):
        return query_at
    return url.find("&" + METHOD_ARG, query_at)


def _fold(content_type: str, body: bytes) -> str:
    """The body as query arguments, by its Content-Type."""
    mime = content_type.strip().lower()
    try:
        if mime.startswith(_FORM):
            return _fold_form(body)
        if mime.startswith("multipart/"):
            return _fold_multipart(content_type, body)
        if mime.startswith(_JSON) or mime.startswith("text/plain"):
            return _fold_json(body)
    except _Undecodable:
        pass
    return _fold_binary(body)


def _fold_binary(body: bytes) -> str:
    return POST_DATA_ARG + base64.b64encode(body).decode("ascii")


def _fold_form(body: bytes) -> str:
    """A URL-encoded form percent-decoded as a whole, as pywb does (a `#` stays escaped, since
    it would end the URL's query)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise _Undecodable from None
    return unquote_plus(text).replace("#", "%23")


def _fold_multipart(content_type: str, body: bytes) -> str:
    """The fields of a multipart form, URL-encoded in their order."""
    one_line = content_type.replace("\r", " ").replace("\n", " ")
    head = f"Content-Type: {one_line}\r\n\r\n".encode("utf-8", "replace")
    try:
        message = BytesParser(policy=compat32).parsebytes(head + body)
        if not message.is_multipart():
            raise _Undecodable
        parts = [part for part in message.get_payload() if isinstance(part, Message)]
        fields = [field for part in parts if (field := _form_field(part))]
        return urlencode(fields)
    # The email package reports a malformed message by defects, but a few shapes of bad input
    # still raise from its parsing, with no documented list of exception types.
    except Exception as exc:
        raise _Undecodable from exc


def _form_field(part: Message) -> tuple[str, str | bytes] | None:
    """A multipart part as a form field: a file's bytes as they are, text decoded as UTF-8."""
    disposition = _disposition(part)
    name = disposition.get_param("name", header="content-disposition")
    if name is None:
        return None
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return None
    field = collapse_rfc2231_value(name, errors="replace")
    if disposition.get_param("filename", header="content-disposition") is not None:
        return field, payload
    return field, payload.decode("utf-8", "replace")


def _disposition(part: Message) -> Message:
    """A part's Content-Disposition alone, its raw bytes read as UTF-8 (as browsers send a
    field's name), so that its parameters keep their letters."""
    raw = next((str(v) for k, v in part.raw_items() if k.lower() == "content-disposition"), "")
    holder = Message()
    holder["Content-Disposition"] = raw.encode("utf-8", "surrogateescape").decode(
        "utf-8", "replace"
    )
    return holder


def _fold_json(body: bytes) -> str:
    """JSON as the `name=value` pairs of its scalars, in document order."""
    try:
        document = json.loads(body)
        pairs: dict[str, str] = {}
        repeats: dict[str, int] = {}
        for name, value in _scalars(document):
            if name in pairs:
                repeats[name] = repeats.get(name, 1) + 1
                name = f"{name}.{repeats[name]}_"
            pairs[name] = value
        return urlencode(pairs)
    except (ValueError, RecursionError, OverflowError):
        raise _Undecodable from None


def _scalars(document: Any) -> Iterator[tuple[str, str]]:
    """Each scalar of a JSON document with the name of the object key nearest above it (the
    elements of a list take the list's name); scalars without a name are left out."""
    stack: list[Iterator[tuple[str, Any]]] = [iter([("", document)])]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        key, value = item
        if isinstance(value, dict):
            stack.append(iter(value.items()))
        elif isinstance(value, list):
            stack.append(zip(repeat(key), value, strict=False))
        elif key:
            yield key, _scalar_text(value)


def _scalar_text(value: Any) -> str:
    """A JSON scalar written as JavaScript would, for the ones pywb writes so."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, float) and math.modf(value)[0] == 0.0:
        return str(int(value))
    return str(value)
