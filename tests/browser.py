"""Headless Chromium, as the tests drive it: through a proxy, in a fresh profile."""

import shutil
import subprocess
from pathlib import Path

BROWSER_TIMEOUT = 60


def chromium(proxy: str, profile: Path, url: str, *mode: str) -> str:
    """Load url in headless Chromium through the proxy at `proxy` (http://host:port)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser is not None, "Chromium is not installed (apt-get install chromium)"
    done = subprocess.run(
        [
            browser,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            f"--proxy-server={proxy}",
            "--window-size=800,600",
            "--virtual-time-budget=5000",
            *mode,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
