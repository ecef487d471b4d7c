"""Memento clients nobody here wrote, run from a virtual environment of their own (peers.py):
memento-cli's `memento list`, which lists a URL's mementos from the TimeMap a memento names, and
memento-client's `MementoClient`, which follows a TimeGate's redirect to a memento."""

import hashlib
import json
import subprocess
from typing import Any

from deploy.testing.peers import peer_venv

REQUIREMENTS = ("memento-cli==0.0.6", "memento-client==0.6.1")
VENV_NAME = f"memento-{hashlib.sha256(' '.join(REQUIREMENTS).encode()).hexdigest()[:8]}"
TIMEOUT = 120.0

# memento-client asks the URI-M for its original, then the TimeGate under `gate` for the
# memento closest to the date, and gives the closest, first, last, previous and next it found.
_CLIENT = """
import datetime, json, sys
from memento_client import MementoClient

gate, uri, when = sys.argv[1:4]
client = MementoClient(timegate_uri=gate, check_native_timegate=False)
found = client.get_memento_info(uri, datetime.datetime.fromisoformat(when))
shown = {
    rel: [memento["uri"][0], memento["datetime"].isoformat()]
    for rel, memento in found.get("mementos", {}).items()
}
print(json.dumps({"original": found.get("original_uri"), "mementos": shown}))
"""


def _run(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, env={})
    if done.returncode != 0:
        raise AssertionError(f"{command[0]} exited with {done.returncode}:\n{done.stderr}")
    return done.stdout


def memento_list(uri_m: str) -> list[str]:
    """`memento list URI-M`: its lines, `datetime URI-M` each."""
    return _run([str(peer_venv(VENV_NAME, REQUIREMENTS) / "memento"), "list", uri_m]).splitlines()


def memento_info(gate: str, uri: str, when: str) -> dict[str, Any]:
    """What memento-client finds for `uri` (a URI-M) near `when` (ISO 8601), through the
    TimeGates under `gate`."""
    python = str(peer_venv(VENV_NAME, REQUIREMENTS) / "python")
    found: dict[str, Any] = json.loads(_run([python, "-c", _CLIENT, gate, uri, when]))
    return found
