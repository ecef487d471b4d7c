"""One site's application-aware rules: the software found on its first pages, then, page by page,
the links its rules drop and the canonical form of its URLs (parameters that change nothing
dropped), each rule relaxed when a changed theme no longer matches it."""

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from lxml import etree

from archive.urlkey import BadUrl, canonical_url

from ..links import Link, LinkKind
from .detect import detect, matches, page_kind
from .page import Page, read_page
from .relax import compiles, relaxed, tag_names
from .rules import Application, Rule, compiled, load_rules

DETECT_PAGES = 5  # pages a site's software is looked for on; unknown after them
TRUST_AFTER = 2  # further pages a relaxed expression must match on before it is trusted
MAX_RELAXATIONS = 5  # pages a rule is relaxed on without success before it is given up
MAX_COUNTED = 100_000  # distinct URLs remembered to count the saved ones


@functools.cache
def shipped_rules() -> tuple[Application, ...]:
    """The rules the package ships, loaded once."""
    return load_rules()


@dataclass
class PageRules:
    """What the rules say of one page."""

    application: str
    kind: str
    skip: set[str] = field(default_factory=set)  # canonical URLs of links to drop
    follow: set[str] = field(default_factory=set)  # canonical URLs of links to keep regardless
    content: list[str] = field(default_factory=list)  # the text of its content areas


@dataclass
class _RuleState:
    """A rule as this site's pages use it: its expression, maybe relaxed, and a trial one."""

    rule: Rule
    xpath: etree.XPath
    expression: str
    trial: tuple[str, etree.XPath] | None = None
    confirmed: int = 0
    failures: int = 0
    rejected: set[str] = field(default_factory=set)


class AppRules:
    """The application rules of one site (see the module's docstring)."""

    def __init__(self, applications: tuple[Application, ...]) -> None:
        self.applications = applications
        self.application: Application | None = None
        self.looked = 0  # pages the software was looked for on
        self._states: list[_RuleState] = []
        self._saved: set[str] = set()
        self.saved = 0

    def examine(
        self, url: str, document: bytes, headers: Sequence[tuple[str, str]] = ()
    ) -> PageRules | None:
        """What the rules say of a page; None when the site's software is unknown."""
        if self.application is None and self.looked >= DETECT_PAGES:
            return None
        page = read_page(url, document, list(headers))
        if page is None:
            return None
        if self.application is None:
            self.looked += 1
            found = detect(page, self.applications)
            if found is None:
                return None
            self._found(found.application)
        assert self.application is not None
        kind = page_kind(page, self.application)
        result = PageRules(self.application.name, kind)
        for state in self._states:
            if not state.rule.applies(kind):
                continue
            selected = self._select(state, page)
            if state.rule.action == "content":
                result.content.extend(_text(e) for e in selected if isinstance(e, etree._Element))
            else:
                into = result.skip if state.rule.action == "skip" else result.follow
                into.update(self._urls(page.url, selected))
        return result

    def links(
        self, url: str, document: bytes, links: list[Link], headers: Sequence[tuple[str, str]] = ()
    ) -> list[Link]:
        """A page's links with those its rules skip dropped, the others in canonical form."""
        rules = self.examine(url, document, headers)
        if rules is None:
            return links
        kept = []
        for link in links:
            if link.kind is not LinkKind.PAGE:
                kept.append(link)
                continue
            key = _canonical(link.url)
            if key in rules.skip and key not in rules.follow:
                self._count(key)
                continue
            canonical = self.canonical(link.url)
            if canonical != link.url:
                if _canonical(canonical) != key:
                    self._count(key)
                link = Link(canonical, link.kind, link.requisite, link.text)
            kept.append(link)
        return kept

    def canonical(self, url: str) -> str:
        """The URL without the parameters that change nothing on the site's application."""
        if self.application is None:
            return url
        parts = urlsplit(url)
        if not parts.query:
            return url
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        kept = [(k, v) for k, v in pairs if not self.application.useless(k)]
        if len(kept) == len(pairs):
            return url
        return urlunsplit(parts._replace(query=urlencode(kept)))

    def summary(self) -> dict[str, Any] | None:
        """The report's account: the application found, the URLs its rules saved, its rules
        relaxed (trusted, and still on trial)."""
        if self.application is None:
            return None
        return {
            "name": self.application.name,
            "saved": self.saved,
            "relaxed": {
                s.rule.name: s.expression for s in self._states if s.expression != s.rule.xpath
            },
            "on_trial": {s.rule.name: s.trial[0] for s in self._states if s.trial is not None},
        }

    def _found(self, application: Application) -> None:
        self.application = application
        self._states = [
            _RuleState(r, compiled(r.xpath, f"rule {r.name}"), r.xpath) for r in application.rules
        ]

    def _select(self, state: _RuleState, page: Page) -> list[object]:
        """What a rule selects on a page; a required rule that selects nothing is relaxed."""
        if state.trial is not None:
            expression, xpath = state.trial
            if found := matches(xpath, page.root):
                state.confirmed += 1
                if state.confirmed >= TRUST_AFTER:
                    state.xpath, state.expression, state.trial = xpath, expression, None
                return found
            state.rejected.add(expression)
            state.trial = None
        found = matches(state.xpath, page.root)
        if found or not state.rule.required or state.failures >= MAX_RELAXATIONS:
            return found
        for expression in relaxed(state.expression, page.tags(), self._lent_tags()):
            if expression in state.rejected or (xpath := compiles(expression)) is None:
                continue
            if found := matches(xpath, page.root):
                state.trial, state.confirmed = (expression, xpath), 0
                return found
        state.failures += 1
        return []

    def _lent_tags(self) -> set[str]:
        """The tag names the rules of applications of the same category use."""
        assert self.application is not None
        tags: set[str] = set()
        for other in self.applications:
            if other.category == self.application.category and other is not self.application:
                for rule in other.rules:
                    tags |= tag_names(rule.xpath)
        return tags

    def _urls(self, base: str, selected: list[object]) -> set[str]:
        """The canonical URLs of what a rule selected: links, elements holding links, hrefs."""
        found: set[str] = set()
        for item in selected:
            if isinstance(item, etree._Element):
                hrefs = [item.get("href")] if item.get("href") else item.xpath(".//@href")
            else:
                hrefs = [str(item)]
            for href in hrefs:
                found.add(_canonical(urljoin(base, str(href).strip())))
        found.discard("")
        return found

    def _count(self, url: str) -> None:
        """Count a URL the rules kept the crawl from asking for, once."""
        if url in self._saved:
            return
        self.saved += 1
        if len(self._saved) < MAX_COUNTED:
            self._saved.add(url)


def _canonical(url: str) -> str:
    try:
        return canonical_url(url.split("#", 1)[0])
    except BadUrl:
        return ""


def _text(element: etree._Element) -> str:
    return " ".join(" ".join(element.itertext()).split())
