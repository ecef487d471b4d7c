"""The language of a text, told by py3langid (97 languages, its model shipped in the package),
so that a search can be narrowed to one."""

import itertools
import re
import threading
from typing import Any

import numpy as np

MIN_LETTERS = 40  # a shorter text is too short to tell
MIN_PROBABILITY = 0.6  # a less certain guess is left out
# Characters of the text read: the guess costs in proportion. On 453 texts in 167 languages
# (translations shipped with Debian), 300 characters (some 45 words) named the right language
# of 308 and a wrong one of 49, 600 characters of 311 and 49, at two thirds of the cost.
SAMPLE = 300
_LETTER = re.compile(r"[^\W\d_]")


_loading = threading.Lock()
_loaded: list[Any] = []


def _identifier() -> Any:
    """The identifier, loaded once: its model takes one to two seconds to inflate."""
    with _loading:
        if not _loaded:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            # Its table of feature weights comes as float16, which numpy multiplies without
            # BLAS: as float32 (57 MB instead of 28) a guess scores in half the time, the same.
            identifier.nb_ptc = np.asarray(identifier.nb_ptc, dtype=np.float32)
            _loaded.append(identifier)
    return _loaded[0]


def load() -> None:
    """Load the model now, where a first guess must not wait for it."""
    _identifier()


def preload() -> None:
    """Load the model on a thread of its own (inflating it lets the GIL go), while the caller
    does something else first."""
    threading.Thread(target=_identifier, name="dlweb-langid", daemon=True).start()


def guess_language(text: str) -> str:
    """The ISO 639-1 code of the language `text` is in, or "" when it cannot be told."""
    sample = text[:SAMPLE]
    if next(itertools.islice(_LETTER.finditer(sample), MIN_LETTERS - 1, None), None) is None:
        return ""  # fewer letters than MIN_LETTERS
    code, probability = _identifier().classify(sample)
    return str(code) if probability >= MIN_PROBABILITY else ""
