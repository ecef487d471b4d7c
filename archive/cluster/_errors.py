"""The errors of the cluster client."""

from ..errors import DlwebError


class ClusterError(DlwebError):
    """The cluster could not do what was asked (no index node, no replica answered...)."""


class NoIndexNode(ClusterError):
    """The master has no index node connected to take inserts."""
