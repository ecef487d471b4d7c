"""What the harbors' security tests share: the page the archive holds for them, and the setting
their client (127.0.0.1, where Chromium comes from) starts each test from and keeps when nothing
may change it."""

from typing import Any

from tests.proxy.conftest import Proxy, put_setting, setting_of

HELD = "http://held.test/page.html"
HTML = ("Content-Type", "text/html; charset=utf-8")
BASELINE: dict[str, Any] = {
    "date": "2021-06-01T00:00:00Z",
    "live": False,
    "record": False,
    "banner": False,
}


def reset(proxy: Proxy) -> Proxy:
    """The proxy, its client's setting put back to the baseline."""
    assert put_setting(proxy, **BASELINE)[0] == 200
    return proxy


def setting(proxy: Proxy) -> dict[str, Any]:
    """The client's setting, without its token."""
    return {key: value for key, value in setting_of(proxy).items() if key in BASELINE}


def unchanged(proxy: Proxy) -> bool:
    return setting(proxy) == BASELINE
