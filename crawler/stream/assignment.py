"""A stream assignment: which stream a streaming agent records, and how. The scheduler sends it
and the agent checks it as a RecordOrder (archive/stream_calls.py), the message of both ends;
an Assignment is one with the recorder's settings filled in."""

import argparse
from dataclasses import dataclass, field
from typing import Any

from archive.errors import DlwebError
from archive.hip import RemoteError
from archive.stream_calls import RECORD, SETTINGS, RecordOrder, is_rendition, rendition_fault
from archive.stream_calls import stream_url as _stream_url

from .settings import StreamSettings

__all__ = ["ROLE", "Assignment", "BadAssignment", "check_stream_url"]

ROLE = "streamer"  # the HIP role a streaming agent declares to its scheduler


class BadAssignment(DlwebError):
    """A stream assignment that cannot be carried out as given; says which field and why."""


def check_stream_url(url: object) -> str:
    """The URL itself when a streaming agent can record it (http or https, a host)."""
    try:
        return _stream_url(url)
    except RemoteError as exc:
        raise BadAssignment(exc.message) from None


@dataclass(frozen=True)
class Assignment:
    stream: int  # the stream's id in the scheduler's database
    url: str
    settings: StreamSettings = field(default_factory=StreamSettings)
    resolve: dict[str, list[str]] = field(default_factory=dict)
    # When the stream's last recording ended (UTC microseconds), for a stream handed over from
    # an agent that stopped: the new recording begins with a gap from then. 0: none before.
    resumes: int = 0

    def message(self) -> RecordOrder:
        """The `record` call's params that give this assignment, with every setting."""
        return RecordOrder(
            self.stream,
            self.url,
            {
                **{name: getattr(self.settings, name) for name in SETTINGS},
                "rendition": self.settings.rendition,
            },
            {host: list(addresses) for host, addresses in self.resolve.items()},
            self.resumes,
        )

    @classmethod
    def of(cls, message: RecordOrder) -> "Assignment":
        """The assignment a `record` call gives, the settings it does not give the recorder's
        defaults."""
        settings: dict[str, Any] = dict(message.settings)
        return cls(
            stream=message.stream,
            url=message.url,
            settings=StreamSettings(**settings),
            resolve={host: list(addresses) for host, addresses in message.resolve.items()},
            resumes=message.resumes,
        )

    def to_json(self) -> dict[str, Any]:
        return self.message().to_json()

    @classmethod
    def from_json(cls, data: object) -> "Assignment":
        """An assignment from the network, every field checked."""
        try:
            return cls.of(RecordOrder.from_json(data, RECORD.name))
        except RemoteError as exc:
            raise BadAssignment(exc.message) from None


def parse_rendition(text: str) -> str:
    """An argparse type for an HLS rendition rule: highest, lowest, or a most bits/s."""
    if is_rendition(text):
        return text
    raise argparse.ArgumentTypeError(rendition_fault(text))
