"""The streaming agent's recorder: live Icecast/SHOUTcast, progressive and HLS streams, recorded
into the cluster as chunks with points on both clocks (archive/streams)."""

from .recorder import classify, record
from .recording import Recording, StreamSettings
from .store import StreamStore

__all__ = ["Recording", "StreamSettings", "StreamStore", "classify", "record"]
