"""A Mastodon instance on loopback for the API crawler's tests: the subset of the public API the
crawler uses, posts that link to pages of a news site it also serves, and the rate limits of a
real instance.

- `GET /api/v1/timelines/tag/TAG` and `GET /api/v1/accounts/ID/statuses`: the statuses, newest
  first, paged by `limit` (default 20, at most 40), `max_id` and `since_id`, a full page's Link
  header naming the next (rel="next", by max_id); `GET /api/v1/accounts/lookup?acct=NAME`.
- Every API answer carries X-RateLimit-Limit, -Remaining and -Reset (never 0 remaining).
- The first request of each timeline is answered 429: a hashtag's with `Retry-After: 1`
  (seconds), an account's with `Retry-After` the HTTP date of the next whole second.
- Hashtag `broken` answers JSON that does not parse, `huge` a list over 8 MiB; an unknown
  account is 404.
- `GET /@USER/ID` is the status's own page; `GET /story/N.html` the news pages the statuses link
  to, which `GET /` does not link to (ask them on NEWS, the instance on INSTANCE: one server
  answers both host names).

STATUSES says who posted what, with which counts; STORY_ENGAGEMENT gives each story the highest
weighted engagement (2 x boosts + favourites + replies) of the statuses linking to it, so the
popularity order of the stories is known in advance (STORIES_BY_POPULARITY).

`Mastodon` serves from a thread of its own (deploy/testing/web_server.py) and keeps `log`, one
`Request` per request.
"""

import email.utils
import json
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from aiohttp import web

from deploy.testing.web_server import WebServer

INSTANCE = "mastodon.test"
NEWS = "news.test"
ACCOUNTS = {"1": "alice", "2": "bob", "3": "carol"}
HASHTAG = "heritage"
TOO_LARGE = 9 * 2**20  # bytes of hashtag `huge`'s answer


@dataclass(frozen=True)
class Status:
    id: int
    account: str
    tagged: bool  # carries #heritage
    story: int  # the story its content links to
    card: bool  # the link is also its preview card's
    reblogs: int
    favourites: int
    replies: int

    @property
    def engagement(self) -> int:
        return 2 * self.reblogs + self.favourites + self.replies


STATUSES = [
    Status(101, "alice", True, 1, False, 0, 1, 0),
    Status(102, "bob", True, 2, True, 5, 10, 2),
    Status(103, "alice", True, 3, False, 1, 2, 1),
    Status(104, "bob", True, 4, True, 20, 30, 5),
    Status(105, "carol", True, 5, False, 2, 0, 0),
    Status(106, "alice", False, 6, False, 0, 0, 0),
]
STORY_ENGAGEMENT = {s.story: s.engagement for s in STATUSES}
STORIES_BY_POPULARITY = sorted(STORY_ENGAGEMENT, key=lambda n: -STORY_ENGAGEMENT[n])
RATE_LIMIT = 300


@dataclass(frozen=True)
class Request:
    time: float
    host: str
    path: str  # with its query
    status: int
    user_agent: str


class Mastodon(WebServer):
    def __init__(self) -> None:
        super().__init__(self._app())
        self.log: list[Request] = []
        self._lock = threading.Lock()
        self._throttled: set[str] = set()  # timelines answered 429 once

    def instance(self) -> str:
        return f"http://{INSTANCE}:{self.port}"

    def story(self, number: int) -> str:
        return f"http://{NEWS}:{self.port}/story/{number}.html"

    def resolve(self) -> list[str]:
        """HOST:IP pins that send the instance's and the news site's names here."""
        return [f"{INSTANCE}:127.0.0.1", f"{NEWS}:127.0.0.1"]

    def requests(self, path_start: str) -> list[Request]:
        with self._lock:
            return [r for r in self.log if r.path.startswith(path_start)]

    def _app(self) -> web.Application:
        app = web.Application(middlewares=[self._logged])
        app.router.add_get("/api/v1/timelines/tag/{tag}", self._tag)
        app.router.add_get("/api/v1/accounts/lookup", self._lookup)
        app.router.add_get("/api/v1/accounts/{id}/statuses", self._account)
        app.router.add_get("/@{user}/{id}", self._status_page)
        app.router.add_get("/story/{number}.html", self._story)
        app.router.add_get("/", self._front)
        app.router.add_get("/robots.txt", self._robots)
        return app

    @web.middleware
    async def _logged(self, request: web.Request, handler: object) -> web.StreamResponse:
        answer: web.StreamResponse
        try:
            answer = await handler(request)  # type: ignore[operator]
        except web.HTTPException as exc:
            answer = exc
        with self._lock:
            self.log.append(
                Request(
                    time.time(),
                    request.host,
                    request.path_qs,
                    answer.status,
                    request.headers.get("User-Agent", ""),
                )
            )
        if isinstance(answer, web.HTTPException):
            raise answer
        return answer

    def _throttle(self, request: web.Request, retry_after: str) -> web.Response | None:
        """429 for the first request of a timeline."""
        with self._lock:
            if request.path in self._throttled:
                return None
            self._throttled.add(request.path)
        return web.json_response(
            {"error": "Too many requests"}, status=429, headers={"Retry-After": retry_after}
        )

    async def _tag(self, request: web.Request) -> web.Response:
        tag = request.match_info["tag"]
        if tag == "broken":
            return web.Response(body=b'[{"id": "1", ', content_type="application/json")
        if tag == "huge":
            return web.Response(
                body=b"[" + b" " * TOO_LARGE + b"]", content_type="application/json"
            )
        throttled = self._throttle(request, "1")
        if throttled is not None:
            return throttled
        return self._page(request, [s for s in STATUSES if s.tagged and tag == HASHTAG])

    async def _lookup(self, request: web.Request) -> web.Response:
        acct = request.query.get("acct", "")
        found = next((i for i, name in ACCOUNTS.items() if name == acct), None)
        if found is None:
            return web.json_response({"error": "Record not found"}, status=404)
        return self._json(request, self._account_json(request, found))

    async def _account(self, request: web.Request) -> web.Response:
        name = ACCOUNTS.get(request.match_info["id"])
        if name is None:
            return web.json_response({"error": "Record not found"}, status=404)
        ahead = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
        throttled = self._throttle(request, email.utils.format_datetime(ahead, usegmt=True))
        if throttled is not None:
            return throttled
        return self._page(request, [s for s in STATUSES if s.account == name])

    def _page(self, request: web.Request, statuses: list[Status]) -> web.Response:
        query = request.query
        limit = min(int(query.get("limit", "20")), 40)
        newest_first = sorted(statuses, key=lambda s: -s.id)
        if "max_id" in query:
            newest_first = [s for s in newest_first if s.id < int(query["max_id"])]
        if "since_id" in query:
            newest_first = [s for s in newest_first if s.id > int(query["since_id"])]
        page = newest_first[:limit]
        headers = {}
        if len(page) == limit:
            following = {k: v for k, v in query.items() if k != "max_id"} | {"max_id": page[-1].id}
            url = f"{request.scheme}://{request.host}{request.path}?{urlencode(following)}"
            headers["Link"] = f'<{url}>; rel="next"'
        return self._json(request, [self._status_json(request, s) for s in page], headers)

    def _json(
        self, request: web.Request, data: object, headers: dict[str, str] | None = None
    ) -> web.Response:
        reset = datetime.now(UTC) + timedelta(minutes=5)
        with self._lock:
            remaining = RATE_LIMIT - len(self.log) % RATE_LIMIT
        limits = {
            "X-RateLimit-Limit": str(RATE_LIMIT),
            "X-RateLimit-Remaining": str(max(remaining - 1, 1)),
            "X-RateLimit-Reset": reset.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        return web.Response(
            text=json.dumps(data), content_type="application/json", headers=limits | (headers or {})
        )

    def _account_json(self, request: web.Request, account_id: str) -> dict[str, object]:
        name = ACCOUNTS[account_id]
        base = f"{request.scheme}://{request.host}"
        return {"id": account_id, "username": name, "acct": name, "url": f"{base}/@{name}"}

    def _status_json(self, request: web.Request, status: Status) -> dict[str, object]:
        base = f"{request.scheme}://{request.host}"
        news = f"http://{NEWS}:{self.port}"
        story = f"{news}/story/{status.story}.html"
        tag = (
            f' <a href="{base}/tags/{HASHTAG}" class="mention hashtag" rel="tag">#<span>'
            f"{HASHTAG}</span></a>"
            if status.tagged
            else ""
        )
        content = (
            f'<p>Read <a href="{story}" rel="nofollow noopener" target="_blank">{story}</a>'
            f'{tag} with <span class="h-card"><a href="{base}/@carol" class="u-url mention">'
            "@<span>carol</span></a></span></p>"
        )
        account_id = next(i for i, name in ACCOUNTS.items() if name == status.account)
        return {
            "id": str(status.id),
            "created_at": "2026-01-01T00:00:00.000Z",
            "url": f"{base}/@{status.account}/{status.id}",
            "uri": f"{base}/users/{status.account}/statuses/{status.id}",
            "content": content,
            "account": self._account_json(request, account_id),
            "reblog": None,
            "card": {"url": story, "title": f"Story {status.story}"} if status.card else None,
            "reblogs_count": status.reblogs,
            "favourites_count": status.favourites,
            "replies_count": status.replies,
        }

    async def _status_page(self, request: web.Request) -> web.Response:
        user, status_id = request.match_info["user"], request.match_info["id"]
        if not status_id.isdigit() or user not in ACCOUNTS.values():
            raise web.HTTPNotFound()
        return web.Response(
            text=f"<html><title>{user}: status {status_id}</title><body>a status</body></html>",
            content_type="text/html",
        )

    async def _story(self, request: web.Request) -> web.Response:
        number = request.match_info["number"]
        if not number.isdigit() or int(number) not in STORY_ENGAGEMENT:
            raise web.HTTPNotFound()
        return web.Response(
            text=f"<html><title>Story {number}</title><body><p>Heritage news {number}.</p>"
            "</body></html>",
            content_type="text/html",
        )

    async def _front(self, request: web.Request) -> web.Response:
        """A front page that links to no story: a crawler finds them only when given them."""
        return web.Response(
            text="<html><title>Front page</title><body><p>Today's news.</p></body></html>",
            content_type="text/html",
        )

    async def _robots(self, request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nAllow: /\n")
