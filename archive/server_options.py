"""What every server of a cluster is started with, whatever else it takes: the folder it keeps its
files in, where it listens, and its cluster's configuration."""

from dataclasses import dataclass
from pathlib import Path

from .config import ClusterConfig


@dataclass(frozen=True)
class ServerOptions:
    data: Path
    host: str
    port: int
    config: ClusterConfig
