"""The words of a text, as the crawler's text analysis counts them (chunks, language sample)."""

import re

__all__ = ["words_of"]

_WORD = re.compile(r"\w+", re.UNICODE)


def words_of(text: str) -> list[str]:
    return _WORD.findall(text.lower())
