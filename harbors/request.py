"""A request to a harbor, as the proxy hands it over, and the one way its parameters that name a
web page are read.

A harbor puts such a URL in links, in a player's source, in a `Location`: a `javascript:` or
`data:` URL there would run in the harbor's own origin, a control character would end the header.
So a URL parameter is an http or https URL with a host and a readable port, of bounded length,
valid text without control characters (archive/url_parts.py), or it is refused (400, the
parameter named); what beyond ASCII it holds is percent-encoded where it goes out
(archive/link_format.py).
"""

from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from archive.errors import ClientFault
from archive.url_parts import MAX_URL_LENGTH, split_url

SUFFIX = ".dlweb"
MAX_BODY = 64 * 1024  # a form or a JSON setting: a few fields, one URL among them
MAX_FIELDS = 32
_SHOWN = 100  # characters of a refused value quoted in its message


class BadParameter(ClientFault):
    """A parameter of a harbor request that cannot be used; the message names it."""


class TooLarge(BadParameter):
    """A request body larger than the harbors read."""

    status = 413


def is_harbor(host: str) -> bool:
    return host.lower().rstrip(".").endswith(SUFFIX)


@dataclass(frozen=True)
class HarborRequest:
    client: str  # the client's IP address: harbor settings are per client
    method: str
    host: str
    path: str
    # Every parameter in order, a name given twice kept twice (the CDX API's `filter`).
    query_pairs: tuple[tuple[str, str], ...] = ()
    headers: dict[str, str] = field(default_factory=dict)  # names in lower case
    body: bytes = b""

    @property
    def query(self) -> dict[str, str]:
        """The parameters by name, each one's last value; a parameter with no value is left
        out, as if not given."""
        return {name: value for name, value in self.query_pairs if value}

    def fields(self) -> dict[str, str]:
        """A form's fields as `query` gives parameters: a POST's from its body (BadParameter
        when it is larger than MAX_BODY or has more than MAX_FIELDS fields), else the query's."""
        if self.method != "POST":
            return self.query
        if len(self.body) > MAX_BODY:
            raise TooLarge(f"the form is larger than {MAX_BODY:,} bytes")
        try:
            pairs = parse_qsl(
                self.body.decode("utf-8", "replace"),
                keep_blank_values=True,
                max_num_fields=MAX_FIELDS,
            )
        except ValueError:
            raise BadParameter(f"the form has more than {MAX_FIELDS} fields") from None
        return {name: value for name, value in pairs if value}

    def url(self, name: str, given: dict[str, str] | None = None) -> str:
        """The URL of a web page the parameter `name` gives (in `given`, else in the query):
        "" when absent, BadParameter when it is not an http or https URL with a host."""
        value = (self.query if given is None else given).get(name, "")
        return web_url(name, value) if value else ""


def web_url(name: str, value: str) -> str:
    """`value`, the parameter `name`, when it is an http or https URL with a host that a harbor
    may link to; BadParameter saying why not otherwise."""
    shown = repr(value[:_SHOWN]) + ("..." if len(value) > _SHOWN else "")
    try:
        parts = split_url(value, MAX_URL_LENGTH, f"{name}={shown}")
    except ValueError as exc:
        raise BadParameter(str(exc)) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise BadParameter(f"{name}={shown}: the scheme is not http or https")
    if not parts.hostname:
        raise BadParameter(f"{name}={shown} names no host")
    return value
