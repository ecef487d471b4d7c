"""The site crawler agents' state as the scheduler last polled it (their `status` call): what its
status page and `/api/status` show of each agent's uptime, memory and current work."""

import time
from dataclasses import dataclass

from archive.crawl_calls import STATUS, AgentStatus
from archive.hip import HipError, Nothing, Peer, RemoteError

__all__ = ["Polled"]


@dataclass
class Polled:
    """An agent's last answer to `status`, and whether its last poll got one."""

    status: AgentStatus | None = None
    at: float = 0.0  # time.time() of the last answer
    unanswered: str = ""  # why the last poll got no answer; "" when it got one

    async def poll(self, peer: Peer, timeout: float) -> None:
        """Ask the agent its state; an agent that does not answer within `timeout` seconds, or
        answers what is no status, keeps its last answer and is marked as not answering."""
        try:
            status = await STATUS.call(peer, Nothing(), timeout=timeout)
        except (HipError, RemoteError, OSError) as exc:
            self.unanswered = str(exc) or type(exc).__name__
            return
        self.status, self.at, self.unanswered = status, time.time(), ""
