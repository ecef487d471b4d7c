"""Which storage nodes exist, which are connected, and the state each is in."""

import logging
import time
from collections.abc import Callable

from archive.hip import Peer

from .db import MasterDB, NodeRow

log = logging.getLogger(__name__)

ADMIN_STATES = ("alive", "read-only", "draining")
COUNTING = ("alive", "read-only")
# The least time a master that starts gives the nodes to connect to it: twice the longest wait
# between a node's connection attempts (archive.hip's backoff, capped at 5 s). A node that found
# no master for a while, as when the master restarts, retries only that often, so a shorter
# grace period would have it marked down, and its files copied then trimmed again, on its way
# back.
REJOIN = 10.0


def _state_of(row: NodeRow) -> str:
    """A reachable node's state: the one its admin chose, read-only while its disk is full."""
    return "read-only" if row.admin_state == "alive" and row.full else row.admin_state


class Membership:
    """Node rows, live links and the grace-period clock that turns a lost node down, then dead."""

    def __init__(
        self, db: MasterDB, grace: float, dead_after: float, on_change: Callable[[], None]
    ) -> None:
        self.db = db
        self.grace = grace
        self.dead_after = dead_after
        self.on_change = on_change
        self.rows: dict[str, NodeRow] = {row.id: row for row in db.nodes()}
        self.links: dict[str, Peer] = {}
        self.lost_at: dict[str, float] = {}
        # Nodes known at start that have not connected since: given REJOIN at least.
        self.awaited: set[str] = set()
        # Whether this master started knowing no node (a new one, or its database was lost).
        self.knew_none = not self.rows
        self.settle_until = 0.0
        # The inventory position each connected node announced when it joined.
        self.announced: dict[str, int] = {}
        # Set for the repair pass: more nodes may hold a replica, so every file is to be checked.
        self.rescan = False
        # Set for the repair pass: a node can now serve or take copies it could not before.
        self.widened = False
        self.start()

    def start(self) -> None:
        """Start the clock of the nodes' return, when the master starts serving (opening a large
        database takes time): a restarted master gives every node it knows a fresh grace period,
        REJOIN at least, to connect again; a master that knows no node (a new one, or one whose
        database was lost) gives the nodes one grace period before it judges which files lack
        copies."""
        started = time.monotonic()
        self.awaited = {node for node in self.rows if not self.connected(node)}
        self.lost_at.update(dict.fromkeys(self.awaited, started))
        self.settle_until = started + self.grace if self.knew_none else started

    @property
    def rejoin(self) -> float:
        """How long a node known at start has to connect to this master."""
        return max(self.grace, REJOIN)

    # -- views ----------------------------------------------------------------------------------

    def connected(self, node: str) -> bool:
        peer = self.links.get(node)
        return peer is not None and not peer.closed

    def readable(self) -> list[str]:
        """Nodes that can serve reads now."""
        return [
            row.id
            for row in self.rows.values()
            if row.state in ADMIN_STATES and self.connected(row.id)
        ]

    def counting(self) -> list[str]:
        """Nodes whose copies count toward targets: alive or read-only, lost for less than grace."""
        return [row.id for row in self.rows.values() if row.state in COUNTING]

    def receivers(self) -> list[NodeRow]:
        """Connected nodes that may receive new files."""
        return [
            row for row in self.rows.values() if row.state == "alive" and self.connected(row.id)
        ]

    def usable(self) -> int:
        """How many nodes may hold a counted replica: no target asks for more copies than this.
        Read-only nodes are among them, so a file that wants more copies than the nodes taking
        new files can hold shows below target (it cannot be placed) instead of at it."""
        return len(self.counting())

    def in_grace(self) -> bool:
        """Whether some node is lost but not yet down: its copies still count."""
        return any(
            node in self.lost_at and row.state in ADMIN_STATES for node, row in self.rows.items()
        )

    def settling(self) -> bool:
        """Whether the master's view of who holds what is still incomplete: a new master's first
        grace period, or a connected node still sending the inventory it had when it joined."""
        if time.monotonic() < self.settle_until:
            return True
        return any(
            self.connected(node) and self.rows[node].seq < seq
            for node, seq in self.announced.items()
        )

    def address(self, node: str) -> str:
        return self.rows[node].address

    def public_state(self, row: NodeRow) -> str:
        if row.state in ADMIN_STATES and not self.connected(row.id):
            return "unreachable"
        return row.state

    # -- changes --------------------------------------------------------------------------------

    def join(self, peer: Peer, row: NodeRow, announced: int) -> NodeRow:
        """A node connected with its inventory at `announced`: keep its admin state, take its new
        address and sizes."""
        old = self.rows.get(row.id)
        before = (old.state, old.reliability) if old is not None else (None, None)
        if old is not None:
            row.admin_state = old.admin_state
            row.seq = old.seq
            row.last_scrub = old.last_scrub
            if old.state == "dead":
                row.seq = 0
        row.state = _state_of(row)
        row.last_seen = time.time()
        self.rows[row.id] = row
        self.links[row.id] = peer
        self.announced[row.id] = announced
        self.lost_at.pop(row.id, None)
        self.awaited.discard(row.id)
        self.db.save_node(row)
        self._moved(row, *before)
        self.widened = True
        log.info("node %s joined from %s (%s, %s)", row.id, row.address, row.domain, row.state)
        self.on_change()
        return row

    def leave(self, peer: Peer) -> None:
        if self.links.get(peer.name) is peer:
            del self.links[peer.name]
            self.lost_at[peer.name] = time.monotonic()
            log.warning("node %s lost; down in %.0f s unless it returns", peer.name, self.grace)
            self.on_change()

    def set_admin_state(self, node: str, state: str) -> NodeRow:
        row = self.rows[node]
        before = row.state
        row.admin_state = state
        if row.state in ADMIN_STATES:
            row.state = _state_of(row)
        self.db.save_node(row)
        self._moved(row, before, row.reliability)
        self.widened = True
        log.info("node %s set to %s", node, state)
        self.on_change()
        return row

    def set_full(self, node: str, full: bool) -> None:
        """A node said its disk is at its reserve, or has room again: read-only meanwhile, so
        that nothing new is placed on it, unless an admin chose its state."""
        row = self.rows[node]
        if row.full == full:
            return
        row.full = full
        if row.state not in ADMIN_STATES:
            return
        before = row.state
        row.state = _state_of(row)
        if row.state == before:
            return
        self.db.save_node(row)
        self._moved(row, before, row.reliability)
        self.widened = True
        if full:
            log.warning(
                "node %s is full (%d bytes free, reserve %d): read-only until space returns",
                node,
                row.free,
                row.reserve,
            )
        else:
            log.info("node %s has room again: %s", node, row.state)
        self.on_change()

    def tick(self) -> None:
        """Turn nodes lost for longer than the grace period down, and down ones dead."""
        now = time.monotonic()
        for node, since in list(self.lost_at.items()):
            row = self.rows.get(node)
            if row is None or self.connected(node):
                self.lost_at.pop(node, None)
                continue
            lost_for = now - since
            grace = self.rejoin if node in self.awaited else self.grace
            if row.state in ADMIN_STATES and lost_for >= grace:
                before = row.state
                row.state = "down"
                self.db.save_node(row)
                self._moved(row, before, row.reliability)
                log.warning("node %s is down: its files are being re-replicated", node)
                self.on_change()
            elif row.state == "down" and lost_for >= self.dead_after:
                row.state = "dead"
                self.db.save_node(row)
                forgotten = self.db.forget_locations(node)
                self.lost_at.pop(node, None)
                log.warning("node %s is dead; forgot its %d locations", node, forgotten)
                self.on_change()

    def _moved(self, row: NodeRow, state: str | None, reliability: str | None) -> None:
        """Mark for the repair pass what a node's change from `state` and `reliability` means:
        its files when its copies start or stop counting, or count for another class."""
        counts = row.state in COUNTING
        if (state in COUNTING) != counts or (counts and reliability != row.reliability):
            self.db.mark_node(row.id)
        # Targets are capped by the counting nodes, and only alive ones take copies.
        if (row.state == "alive" and state != "alive") or (counts and state not in COUNTING):
            self.rescan = True
