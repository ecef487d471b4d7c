"""What a site report's samples of text tell, worked out where the report arrives (the
scheduler, the crawl command) rather than in the site agent, whose memory and time go to
crawling: the site's language (language_guess.py) and its phrases (keywords.py)."""

from collections.abc import Mapping
from typing import Any

from .keywords import phrases_of

__all__ = ["told"]


def told(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report with `text.language` and `text.phrases` in place of the samples they are told
    from (a report that has them already, or has no text, is left as it is)."""
    text = report.get("text")
    if not isinstance(text, Mapping) or "language" in text:
        return dict(report)
    sample = text.get("sample")
    worked = {key: value for key, value in text.items() if key not in ("sample", "phrase_sample")}
    worked["language"] = ""
    if isinstance(sample, str) and sample:
        # Here, not at the top: its filters and numpy are wanted once a report brings text,
        # which a quick re-crawl of unchanged sites never does.
        from .language_guess import guess_language

        worked["language"] = guess_language(sample)
    worked["phrases"] = phrases_of(text.get("phrase_sample"))
    return {**report, "text": worked}
