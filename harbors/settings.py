"""Each client's harbor settings (browsing date, live mode, recording, the date banner), kept per
client address on disk, and the key of the tokens a change of them takes (consent.py).

Settings are read on every proxied request, so they live in memory. Several proxy processes may
serve the same archive from one settings file: a change is made under a lock on the file (read
it, change it, write it under a temporary name, flush, rename), and each process reads the file
again when it has changed, looking at most once a second.
"""

import fcntl
import ipaddress
import json
import time
from dataclasses import dataclass
from pathlib import Path

from archive.atomic import atomic_write
from archive.errors import ConfigError

from .consent import Consent

RECHECK_EVERY = 1.0


@dataclass(frozen=True, slots=True)
class ClientSetting:
    at: int | None = None  # UTC microseconds; None browses the latest captures
    live: bool = False
    record: bool = False  # browse the live web and store every response it gives
    banner: bool = False  # a bar atop archived HTML pages: their date, neighbours and coherence


class ClientSettings:
    def __init__(self, path: Path, secret: bytes) -> None:
        self.path = Path(path)
        self.consent = Consent(secret)  # the cluster's: every proxy process agrees on tokens
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._settings: dict[str, ClientSetting] = {}
        self._seen: float | None = None  # modification time of the file last read
        self._checked = 0.0
        self._reload()

    def get(self, client: str) -> ClientSetting:
        now = time.monotonic()
        if now - self._checked >= RECHECK_EVERY:
            self._checked = now
            self._reload()
        return self._settings.get(client, ClientSetting())

    def set(self, client: str, setting: ClientSetting) -> None:
        with open(self._lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._reload()
            self._settings[client] = setting
            data = {
                address: {
                    "at": value.at,
                    "live": value.live,
                    "record": value.record,
                    "banner": value.banner,
                }
                for address, value in sorted(self._settings.items())
            }
            atomic_write(self.path, json.dumps(data, indent=1).encode())
            self._seen = self.path.stat().st_mtime

    def _reload(self) -> None:
        try:
            changed = self.path.stat().st_mtime
        except FileNotFoundError:
            return
        if changed != self._seen:
            self._settings = _load(self.path)
            self._seen = changed


def _load(path: Path) -> dict[str, ClientSetting]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        settings = {}
        for address, value in data.items():
            ipaddress.ip_address(address)
            at, live = value["at"], value["live"]
            record, banner = value.get("record", False), value.get("banner", False)
            if not (at is None or isinstance(at, int)) or not isinstance(live, bool):
                raise ValueError(f"bad setting for {address}")
            if not isinstance(record, bool) or not isinstance(banner, bool):
                raise ValueError(f"bad setting for {address}")
            settings[address] = ClientSetting(at, live, record, banner)
        return settings
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a file of client settings ({exc})") from None
