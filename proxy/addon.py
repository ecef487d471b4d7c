"""The proxy's addons, in the order mitmproxy runs them on each request: access, harbors, date,
replay. Each answers the requests that are its concern and leaves the others to the next, as
mitmproxy's own addons do; nothing reaches the live web unless the replay addon leaves it to."""

from pathlib import Path

import harbors
from archive.reading import CaptureReader

from .access import Access
from .dates import DatePicker
from .guard import Guard
from .harbor_desk import HarborDesk
from .replay import Replay


def archive_addons(
    reader: CaptureReader,
    settings: harbors.ClientSettings,
    access: Access,
    ca_folder: Path,
    live_allowed: bool = False,
    log_requests: bool = False,
) -> list[object]:
    """The addons that answer every request from the archive."""
    return [
        Guard(access),
        HarborDesk(settings, reader, live_allowed, ca_folder),
        DatePicker(settings),
        Replay(reader, settings, live_allowed, log_requests),
    ]
