"""What a followed API gives the API crawler: posts, each with its own page, the URLs it links
to and its score. A new API is one more `Source`."""

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .api_client import ApiClient

__all__ = ["Post", "Source"]


@dataclass(frozen=True, slots=True)
class Post:
    """A post: its own page ('' when it has none), the URLs it links to, and their score (0 to
    1, from the post's popularity: popularity.py)."""

    page: str
    links: tuple[str, ...]
    score: float


class Source(Protocol):
    """A hashtag, an account, a feed...: `name` says which in the logs and the report; each
    call of `posts` is one round, newer posts only after the first when the API allows it."""

    name: str

    def posts(self, api: "ApiClient") -> AsyncIterator[Post]: ...
