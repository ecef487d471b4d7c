"""A client's consent to a change of its harbor settings: tokens that only the harbors' answers
to that client hold.

An archived page runs in the researcher's browser and can make it send any request to the
harbors (an image, a form, a fetch), but it cannot read their answers: the harbors grant no
cross-origin access. So a change of the date, the live web, recording or the banner takes a token
that only the harbors tell the client:

- its *form token*, one per client address, in a hidden field of every form of the date harbor
  and in api.dlweb's `GET /date` (programs send it back in the `X-Dlweb-Token` header): it allows
  any change;
- a *link token*, bound to the client, a date and a page, in each link that sets the date and
  opens that page (calendars, search hits, stream times, the banner's neighbours): it allows that
  one change and nothing else, so a link leaked to the archived page it sits in (the banner is in
  the page) is worth no more than a click on it.

Tokens are HMAC-SHA256 under a key derived from the cluster secret with a label of its own (the
secret itself is neither the key nor ever sent), so every proxy process of a cluster makes and
accepts the same ones; 128 bits of it, base64url. They last as long as the client's address and
the cluster secret.
"""

import base64
import hmac
import json

from archive.link_format import escape_uri

LABEL = b"dlweb harbor consent v1"
TOKEN_BYTES = 16


class Consent:
    """The key tokens are made with, derived once from the cluster secret."""

    def __init__(self, secret: bytes) -> None:
        self._key = hmac.digest(secret, LABEL, "sha256")

    def form_token(self, client: str) -> str:
        return self._token("form", client)

    def link_token(self, client: str, at: int, back: str) -> str:
        """The token of the link that sets the client's date to `at` (UTC microseconds) and
        opens `back` (bound to its ASCII spelling, as the link carries it)."""
        return self._token("link", client, str(at), escape_uri(back))

    def allows_form(self, client: str, given: str) -> bool:
        return _same(self.form_token(client), given)

    def allows_link(self, client: str, at: int, back: str, given: str) -> bool:
        return _same(self.link_token(client, at, back), given)

    def _token(self, *fields: str) -> str:
        message = json.dumps(fields).encode()  # a list: no two field lists make one message
        digest = hmac.digest(self._key, message, "sha256")[:TOKEN_BYTES]
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _same(token: str, given: str) -> bool:
    """Whether the token given is that one, compared in constant time."""
    return hmac.compare_digest(token.encode(), given.encode("utf-8", "replace"))
