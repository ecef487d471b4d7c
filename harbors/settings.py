"""Each client's harbor settings (browsing date, live mode), kept per client address on disk.

Settings are read on every proxied request, so they live in memory; every change is written to
a JSON file under a temporary name, flushed and renamed, so a proxy restart finds them again.
"""

import ipaddress
import json
import os
from dataclasses import dataclass
from pathlib import Path

from archive.errors import ConfigError


@dataclass(frozen=True, slots=True)
class ClientSetting:
    at: int | None = None  # UTC microseconds; None browses the latest captures
    live: bool = False


class ClientSettings:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._settings: dict[str, ClientSetting] = {}
        if self.path.exists():
            self._settings = _load(self.path)

    def get(self, client: str) -> ClientSetting:
        return self._settings.get(client, ClientSetting())

    def set(self, client: str, setting: ClientSetting) -> None:
        self._settings[client] = setting
        data = {
            address: {"at": value.at, "live": value.live}
            for address, value in sorted(self._settings.items())
        }
        temp = self.path.with_name(f".{self.path.name}.part")
        with open(temp, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, self.path)


def _load(path: Path) -> dict[str, ClientSetting]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        settings = {}
        for address, value in data.items():
            ipaddress.ip_address(address)
            at, live = value["at"], value["live"]
            if not (at is None or isinstance(at, int)) or not isinstance(live, bool):
                raise ValueError(f"bad setting for {address}")
            settings[address] = ClientSetting(at, live)
        return settings
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a file of client settings ({exc})") from None
