"""Reading the reports the agents send (they come from the network): their figures, the files
they name and the change they measured at each level of a site."""

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["existing_file", "report_count", "report_number", "with_change_by_level"]


def report_number(report: Mapping[str, Any], key: str) -> float:
    """A report's figure, 0 when absent or not a number (reports come from the network)."""
    value = report.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return float(value)


def report_count(report: Mapping[str, Any], key: str) -> int:
    """A report's figure as a whole number, 0 when absent or not a number."""
    return int(report_number(report, key))


def existing_file(name: str) -> Path | None:
    """The file of a path a report or the store names, if it is there (an agent's disk)."""
    return Path(name) if name and Path(name).is_file() else None


def with_change_by_level(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report with the share of new contents at each level of the site, where it changes."""
    kept = dict(report)
    levels = report.get("levels")
    if isinstance(levels, Mapping):
        kept["change_by_level"] = {
            level: round(counts["new_contents"] / seen, 4)
            for level, counts in levels.items()
            if isinstance(counts, Mapping)
            and (seen := counts.get("new_contents", 0) + counts.get("known_contents", 0))
        }
    return kept
