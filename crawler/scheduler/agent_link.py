"""An agent as the scheduler knows it while its connection comes and goes: a site crawler
(service.py) or a streaming agent (streams.py), whose work waits a grace period for it once its
connection drops."""

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from archive.hip import Peer

__all__ = ["AgentLink", "gone_longer_than", "has_left"]


@dataclass
class AgentLink:
    name: str
    peer: Peer | None
    gone_since: float = 0.0  # time.monotonic() when its connection dropped

    @property
    def connected(self) -> bool:
        return self.peer is not None and not self.peer.closed

    def absence(self) -> float:
        """Seconds since its connection dropped; 0 while it has one."""
        return time.monotonic() - self.gone_since if self.peer is None else 0.0

    def joined(self, peer: Peer) -> None:
        self.peer, self.gone_since = peer, 0.0

    def left(self, peer: Peer) -> bool:
        """Whether `peer` was its connection, now gone (not an older one it replaced)."""
        if self.peer is not peer:
            return False
        self.peer, self.gone_since = None, time.monotonic()
        return True


Agent = TypeVar("Agent", bound=AgentLink)


def has_left(agents: Mapping[str, AgentLink], peer: Peer) -> bool:
    """Whether `peer` was the connection of one of `agents`, now gone."""
    agent = agents.get(peer.name)
    return agent is not None and agent.left(peer)


def gone_longer_than(grace: float, agents: Mapping[str, Agent]) -> list[Agent]:
    """The agents whose connection dropped `grace` seconds ago or more."""
    return [agent for agent in agents.values() if agent.peer is None and agent.absence() >= grace]
