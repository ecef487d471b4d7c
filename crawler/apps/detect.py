"""Which known application built a page, and what kind of page it is.

Each sign of an application counts: its generator meta tag most, a cookie of its own next, then
each shape of URL its pages link or load and each piece of its markup. The application with the
highest score of at least DETECTED wins.
"""

from dataclasses import dataclass

from lxml import etree

from .page import Page
from .rules import Application

GENERATOR_SCORE = 3
COOKIE_SCORE = 2
DETECTED = 2


@dataclass(frozen=True)
class Detected:
    application: Application
    score: int


def detect(page: Page, applications: tuple[Application, ...]) -> Detected | None:
    """The application whose signs the page shows most, or None when none shows enough."""
    generator = page.generator().lower()
    references = page.references()
    best: Detected | None = None
    for application in applications:
        score = 0
        if application.generator and generator.startswith(application.generator.lower()):
            score += GENERATOR_SCORE
        if any(c.startswith(p) for p in application.cookies for c in page.cookies):
            score += COOKIE_SCORE
        score += sum(any(u in r for r in references) for u in application.urls)
        score += sum(bool(matches(x, page.root)) for x in application.markup)
        if score >= DETECTED and (best is None or score > best.score):
            best = Detected(application, score)
    return best


def page_kind(page: Page, application: Application) -> str:
    """The kind of page (the first of the application's kinds that matches), or `other`."""
    for kind, xpath in application.kinds:
        if matches(xpath, page.root):
            return kind
    return "other"


def matches(xpath: etree.XPath, root: etree._Element) -> list[object]:
    """What an XPath selects, as a list (an XPath that fails at run time selects nothing)."""
    try:
        found = xpath(root)
    except etree.XPathEvalError:
        return []
    if isinstance(found, list):
        return found
    return [found] if found else []
