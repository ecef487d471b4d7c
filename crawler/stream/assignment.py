"""A stream assignment: which stream a streaming agent records, and how, as the scheduler sends
it and the agent checks it (one type at both ends, as crawler/order.py is for sites)."""

import argparse
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from archive.errors import DlwebError
from archive.timestamps import MAX_TIME
from archive.urlkey import BadUrl, canonical_url

from .recording import StreamSettings

__all__ = ["ROLE", "Assignment", "BadAssignment", "check_stream_url"]

ROLE = "streamer"  # the HIP role a streaming agent declares to its scheduler

# The settings an assignment may carry, and whether each is a whole number.
_SETTINGS = {"chunk_seconds": False, "chunk_bytes": True, "point_seconds": False, "timeout": False}


class BadAssignment(DlwebError):
    """A stream assignment that cannot be carried out as given; says which field and why."""


def check_stream_url(url: object) -> str:
    """The URL itself when a streaming agent can record it (http or https, a host)."""
    if not isinstance(url, str) or not url:
        raise BadAssignment("assignment field url must be a non-empty string")
    try:
        canonical_url(url)
    except BadUrl as exc:
        raise BadAssignment(f"assignment field url: {exc}") from None
    return url


@dataclass(frozen=True)
class Assignment:
    stream: int  # the stream's id in the scheduler's database
    url: str
    settings: StreamSettings = field(default_factory=StreamSettings)
    resolve: dict[str, list[str]] = field(default_factory=dict)
    # When the stream's last recording ended (UTC microseconds), for a stream handed over from
    # an agent that stopped: the new recording begins with a gap from then. 0: none before.
    resumes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "url": self.url,
            "settings": {
                **{name: getattr(self.settings, name) for name in _SETTINGS},
                "rendition": self.settings.rendition,
            },
            "resolve": {host: list(addresses) for host, addresses in self.resolve.items()},
            "resumes": self.resumes,
        }

    @classmethod
    def from_json(cls, data: object) -> "Assignment":
        """An assignment from the network, every field checked."""
        if not isinstance(data, Mapping):
            raise BadAssignment("a stream assignment must be a JSON object")
        unknown = set(data) - {"stream", "url", "settings", "resolve", "resumes"}
        if unknown:
            raise BadAssignment(f"assignment field {sorted(unknown)[0]} is unknown")
        stream = data.get("stream")
        if type(stream) is not int or stream < 1:
            raise BadAssignment("assignment field stream must be a stream id, a whole number >= 1")
        url = check_stream_url(data.get("url"))
        resumes = data.get("resumes", 0)
        if type(resumes) is not int or not 0 <= resumes <= MAX_TIME:
            raise BadAssignment("assignment field resumes must be a time in microseconds, or 0")
        given = data.get("settings", {})
        if not isinstance(given, Mapping):
            raise BadAssignment("assignment field settings must be an object")
        values: dict[str, Any] = {}
        for key, value in given.items():
            if key == "rendition":
                values[key] = _rendition(value)
                continue
            whole = _SETTINGS.get(key)
            if whole is None:
                raise BadAssignment(f"assignment field settings.{key} is unknown")
            if (
                isinstance(value, bool)
                or not isinstance(value, int if whole else int | float)
                or not math.isfinite(value)
                or value <= 0
            ):
                kind = "a whole number" if whole else "a number"
                raise BadAssignment(f"assignment field settings.{key} must be {kind} > 0")
            values[key] = value if whole else float(value)
        resolve = data.get("resolve", {})
        if not isinstance(resolve, Mapping) or not all(
            isinstance(host, str)
            and isinstance(addresses, list)
            and all(isinstance(a, str) for a in addresses)
            for host, addresses in resolve.items()
        ):
            raise BadAssignment("assignment field resolve must map host names to address lists")
        return cls(
            stream=stream,
            url=url,
            settings=StreamSettings(**values),
            resolve={host.lower(): list(addresses) for host, addresses in resolve.items()},
            resumes=resumes,
        )


def parse_rendition(text: str) -> str:
    """An argparse type for an HLS rendition rule: highest, lowest, or a most bits/s."""
    if text in ("highest", "lowest") or (text.isdigit() and int(text) > 0):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not highest, lowest or a number of bits/s")


def _rendition(value: object) -> str:
    try:
        return parse_rendition(value if isinstance(value, str) else repr(value))
    except argparse.ArgumentTypeError as exc:
        raise BadAssignment(f"assignment field settings.rendition: {exc}") from None
