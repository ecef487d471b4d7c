"""What an API crawl may be told to follow, checked as the command line reads it: a Mastodon
instance, hashtags and accounts of it, and feeds (light: the command line loads no network
module before it runs)."""

import re

from archive.url_parts import MAX_URL_LENGTH, shown_url, split_url

__all__ = [
    "ACCOUNT",
    "HASHTAG",
    "MAX_LIMIT",
    "account",
    "check_feed",
    "check_instance",
    "hashtag",
]

MAX_LIMIT = 40  # statuses a page may hold, as Mastodon allows
HASHTAG = re.compile(r"\w{1,100}")
ACCOUNT = re.compile(r"\w{1,30}(@[A-Za-z0-9.\-]{1,253})?")


def check_instance(url: str) -> str:
    """The instance's base URL (scheme and host); ValueError saying what is wrong otherwise."""
    shown = shown_url(url)
    parts = split_url(url, MAX_URL_LENGTH, shown)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{shown} is not an http(s) URL of a Mastodon instance")
    if parts.path.strip("/") or parts.query or parts.fragment:
        raise ValueError(f"{shown}: give the instance alone (scheme and host), no path")
    return f"{parts.scheme}://{parts.netloc.lower()}"


def check_feed(url: str) -> str:
    """The feed's URL; ValueError saying what is wrong otherwise."""
    shown = shown_url(url)
    parts = split_url(url, MAX_URL_LENGTH, shown)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{shown} is not an http(s) URL of a feed")
    return url


def hashtag(text: str) -> str:
    """A hashtag, its # optional."""
    tag = text.removeprefix("#")
    if not HASHTAG.fullmatch(tag):
        raise ValueError(f"{text!r} is not a hashtag (letters, digits and _, at most 100)")
    return tag


def account(text: str) -> str:
    """An account, user or user@domain, its leading @ optional."""
    name = text.removeprefix("@")
    if not ACCOUNT.fullmatch(name):
        raise ValueError(f"{text!r} is not an account (user or user@domain)")
    return name
