"""What a site report's samples of text tell, worked out where the report arrives (the
scheduler, the crawl command) rather than in the site agent, whose memory and time go to
crawling: the site's language (language_guess.py) and its phrases (keywords.py)."""

import threading
from collections.abc import Mapping
from typing import Any

from .keywords import phrases_of
from .language_guess import guess_language, judge_filters

__all__ = ["prepare", "told"]


def prepare() -> None:
    """Build the language filters in a thread (a tenth of a second), so that the first report
    told does not wait for them."""
    threading.Thread(target=judge_filters, name="judge-filters", daemon=True).start()


def told(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report with `text.language` and `text.phrases` in place of the samples they are told
    from (a report that has them already, or has no text, is left as it is)."""
    text = report.get("text")
    if not isinstance(text, Mapping) or "language" in text:
        return dict(report)
    sample = text.get("sample")
    worked = {key: value for key, value in text.items() if key not in ("sample", "phrase_sample")}
    worked["language"] = guess_language(sample) if isinstance(sample, str) else ""
    worked["phrases"] = phrases_of(text.get("phrase_sample"))
    return {**report, "text": worked}
