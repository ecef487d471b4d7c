"""The date addon: which moment of the archive a request is answered from.

The request's `Accept-Datetime` when it has one (an unparseable one gets 400), else its client's
setting in the date harbor, else the latest capture; the replay addon reads it from the flow.
"""

from mitmproxy import http

import harbors
from archive.timestamps import MAX_TIME, BadTime, parse_http_date

from .guard import client_of

AT = "dlweb-at"


class DatePicker:
    def __init__(self, settings: harbors.ClientSettings) -> None:
        self.settings = settings

    def request(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None:
            return
        wanted = flow.request.headers.get("accept-datetime")
        try:
            at = parse_http_date(wanted) if wanted is not None else self._date_of(client_of(flow))
        except BadTime as exc:
            flow.response = http.Response.make(
                400, f"Accept-Datetime: {exc}\n", {"Content-Type": "text/plain; charset=utf-8"}
            )
            return
        flow.metadata[AT] = at

    def _date_of(self, client: str) -> int:
        """The client's date; for the latest capture, the end of time (one cache key for all)."""
        setting = self.settings.get(client)
        return setting.at if setting.at is not None else MAX_TIME
