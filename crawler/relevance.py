"""How relevant a page and its links are to a campaign's focus, scored while the site is crawled.

The topic is a term vector: each term of the example texts counted, each term of a keyword
counted KEYWORD_COUNT times more, weighted (1 + ln count) * idf, where idf = 1 + ln((1 + n) /
(1 + df)) over the n example texts (df: how many hold the term; 1 for every term without
examples). A text's vector is weighted the same way from its own counts (a term no example
holds gets the highest idf). Terms are the lowercase words of two characters or more, common
English and French words left out. Four levels of evidence, each from 0 to 1:

- document: the cosine of the page's text (its first MAX_TEXT characters) with the topic;
- paragraph: the best cosine among windows of PARAGRAPH_WORDS terms (every PARAGRAPH_STEP
  terms), the page's text being one line once parsed;
- anchor: the cosine of a link's anchor text with the topic, blended with that of the CONTEXT
  characters of the page's text either side of it (ANCHOR_SHARE to the anchor's own words, the
  rest to its context: the words a link is named by tell more of its target than the words
  around it, which tell more of the page it sits on; either alone when the other has no term);
- url: the highest score of the focus's URL patterns found in the URL (none: no evidence).

A page's relevance is the weighted mean of document, paragraph and url (the focus's weights,
DEFAULT_WEIGHT each when not given), over the levels that have evidence; a link's score is the
weighted mean of its page's document and paragraph levels and its own anchor and url levels.
A URL the spam patterns block scores 0, as do the links of a page whose URL they block.
"""

import math
from collections import Counter
from dataclasses import dataclass

from archive.blocklist import Blocklist, linear_regex
from archive.crawl_calls import Focus

from .words import words_of

__all__ = ["DEFAULT_WEIGHT", "RELEVANT", "PageRelevance", "Relevance", "terms"]

MAX_TEXT = 20_000  # characters of a page's text (or of an example) scored
PARAGRAPH_WORDS = 60
PARAGRAPH_STEP = 30
CONTEXT = 120  # characters of text either side of an anchor
ANCHOR_SHARE = 0.75  # of the anchor level, what its own words weigh against its context
MAX_CONTEXTS = 500  # links of a page whose anchor is looked for in its text; others: anchor alone
KEYWORD_COUNT = 3
DEFAULT_WEIGHT = 1.0
RELEVANT = 0.2  # a page scoring this or more counts as relevant in the report
_COMMON = """a an and are as at be been but by can do for from has have he her his how if in into is
    it its more no not of on or our she so than that the their them there these they this to
    us was we were what when where which who will with you your au aux avec ce ces dans de des
    du elle en est et il ils la le les leur mais ne nous ou par pas pour qu que qui sa se ses
    son sont sur un une vous"""
STOP_WORDS = frozenset(_COMMON.split())


def terms(text: str) -> list[str]:
    """The words a vector counts: lowercase, of two characters or more, not common words."""
    return [w for w in words_of(text) if len(w) > 1 and w not in STOP_WORDS]


@dataclass(frozen=True, slots=True)
class PageRelevance:
    """One page's evidence and the relevance it makes."""

    document: float
    paragraph: float
    url: float | None
    spam: bool
    score: float
    text: str  # lowercase, cut at MAX_TEXT: where anchors are looked for


class Relevance:
    """The topic of a focus and the scoring of pages and links against it."""

    def __init__(self, focus: Focus) -> None:
        examples = [Counter(terms(text[:MAX_TEXT])) for text in focus.examples]
        frequencies: Counter[str] = Counter()
        for example in examples:
            frequencies.update(example.keys())
        self._documents = len(examples)
        self._frequencies = frequencies
        self._rarest = self._idf(0)
        counts: Counter[str] = Counter()
        for example in examples:
            counts.update(example)
        for keyword in focus.keywords:
            for term in terms(keyword):
                counts[term] += KEYWORD_COUNT
        topic = self._vector(counts)
        norm = math.sqrt(sum(w * w for w in topic.values())) or 1.0
        self._topic = {term: weight / norm for term, weight in topic.items()}
        self._weights = {
            level: focus.weights.get(level, DEFAULT_WEIGHT)
            for level in ("document", "paragraph", "anchor", "url")
        }
        # Patterns by score, best first, and one expression telling whether any is found.
        self._patterns = [
            (score, linear_regex(pattern))
            for pattern, score in sorted(focus.url_scores.items(), key=lambda item: -item[1])
        ]
        self._any_pattern = (
            linear_regex("|".join(f"(?:{p})" for p in focus.url_scores))
            if focus.url_scores
            else None
        )
        self._spam = Blocklist(focus.spam)

    def _idf(self, frequency: int) -> float:
        return 1.0 + math.log((1 + self._documents) / (1 + frequency))

    def _vector(self, counts: Counter[str]) -> dict[str, float]:
        """TF-IDF weights of term counts."""
        idf, frequencies = self._idf, self._frequencies
        return {
            term: (1.0 + math.log(count)) * idf(frequencies.get(term, 0))
            for term, count in counts.items()
        }

    def similarity(self, counts: Counter[str]) -> float:
        """The cosine of term counts (TF-IDF-weighted) with the topic."""
        if not counts or not self._topic:
            return 0.0
        vector = self._vector(counts)
        norm = math.sqrt(sum(w * w for w in vector.values()))
        topic = self._topic
        dot = sum(weight * topic[term] for term, weight in vector.items() if term in topic)
        return min(1.0, dot / norm) if norm else 0.0

    def url_score(self, url: str) -> float | None:
        """The best score of the URL patterns found in `url`, None when none is."""
        if self._any_pattern is None or self._any_pattern.search(url) is None:
            return None
        return next((score for score, pattern in self._patterns if pattern.search(url)), None)

    def spam(self, url: str) -> bool:
        return bool(self._spam) and self._spam.blocks(url)

    def page(self, url: str, text: str) -> PageRelevance:
        """The relevance of a page from its URL and its text."""
        text = text[:MAX_TEXT].lower()
        words = terms(text)
        document = self.similarity(Counter(words))
        paragraph = document
        if len(words) > PARAGRAPH_WORDS:
            starts = range(0, len(words) - PARAGRAPH_STEP, PARAGRAPH_STEP)
            paragraph = max(
                self.similarity(Counter(words[start : start + PARAGRAPH_WORDS])) for start in starts
            )
        url_score = self.url_score(url)
        spam = self.spam(url)
        score = 0.0 if spam else self._mean(document, paragraph, None, url_score)
        return PageRelevance(document, paragraph, url_score, spam, score, text)

    def link(self, page: PageRelevance | None, url: str, anchor: str, position: int = 0) -> float:
        """A link's score from its page's evidence, its anchor text and its URL; `position`,
        the link's rank in its page, bounds how many anchors are looked for in the text."""
        if self.spam(url):
            return 0.0
        anchor_score = None
        if anchor:
            own, around = Counter(terms(anchor)), Counter[str]()
            if page is not None and position < MAX_CONTEXTS:
                found = page.text.find(anchor.lower())
                if found >= 0:
                    before = page.text[max(0, found - CONTEXT) : found]
                    after = page.text[found + len(anchor) : found + len(anchor) + CONTEXT]
                    around.update(terms(before.partition(" ")[2] + " " + after.rpartition(" ")[0]))
            if own and around:
                anchor_score = ANCHOR_SHARE * self.similarity(own)
                anchor_score += (1 - ANCHOR_SHARE) * self.similarity(around)
            elif own or around:
                anchor_score = self.similarity(own or around)
        if page is None:
            document = paragraph = None
        elif page.spam:
            document = paragraph = 0.0
        else:
            document, paragraph = page.document, page.paragraph
        return self._mean(document, paragraph, anchor_score, self.url_score(url))

    def _mean(
        self,
        document: float | None,
        paragraph: float | None,
        anchor: float | None,
        url: float | None,
    ) -> float:
        """The weighted mean of the levels that have evidence; 0 when none has."""
        weights = self._weights
        total = weighted = 0.0
        for level, value in (
            ("document", document),
            ("paragraph", paragraph),
            ("anchor", anchor),
            ("url", url),
        ):
            if value is not None:
                total += weights[level]
                weighted += weights[level] * value
        return weighted / total if total else 0.0
