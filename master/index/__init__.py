"""The index node: the insertion path of the cluster (docs/cluster.md)."""
