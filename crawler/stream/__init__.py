"""The streaming agent's recorder: live Icecast/SHOUTcast, progressive and HLS streams, recorded
into the cluster as chunks with points on both clocks (archive/streams)."""

from typing import TYPE_CHECKING

from archive.lazy import lazy_exports

if TYPE_CHECKING:
    from .recorder import classify, record
    from .report import Recording
    from .settings import StreamSettings
    from .store import StreamStore

__all__ = ["Recording", "StreamSettings", "StreamStore", "classify", "record"]

# Loaded on first use: every `dlweb` command imports this package for its subcommands' options.
__getattr__ = lazy_exports(__name__, __file__)
