"""How long an API asks to be left alone: a 429's Retry-After (seconds or an HTTP date), and
X-RateLimit-Remaining / X-RateLimit-Reset (Mastodon sends the reset as an ISO 8601 time; some
APIs send seconds since the epoch)."""

import email.utils
from collections.abc import Mapping
from datetime import datetime

__all__ = ["limit_reset", "retry_after"]


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds a Retry-After asks for from `now` (0 for a date past), None when it says
    nothing readable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(when.timestamp() - now, 0.0)


def limit_reset(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds to wait before the next request when X-RateLimit-Remaining says none is left
    (0 for a reset past), None when requests remain or the headers say nothing readable."""
    remaining = headers.get("X-RateLimit-Remaining", "").strip()
    if not remaining.isdigit() or int(remaining) > 0:
        return None
    reset = headers.get("X-RateLimit-Reset", "").strip()
    if reset.isdigit():
        return max(float(reset) - now, 0.0)
    try:
        when = datetime.fromisoformat(reset.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(when.timestamp() - now, 0.0)
