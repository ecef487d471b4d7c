"""The crawl rules of known web applications, read from YAML and checked when they are loaded.

One file per application (rules/*.yaml): how to tell it (generator tag, URL shapes, cookies,
markup), the kinds of its pages, the URL parameters that change nothing, and named rules, each
an XPath: links to skip, links to follow, the content area. A malformed file is refused with its
line, an XPath that does not compile with the name of its rule.
"""

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from lxml import etree

from archive.errors import DlwebError
from archive.yaml_safe import safe_load

RULES_FOLDER = Path(__file__).parent / "rules"
ACTIONS = ("skip", "follow", "content")
MAX_RULES_FILE = 256 * 1024


class BadRules(DlwebError):
    """A rules file that cannot be used, with where and why."""


@dataclass(frozen=True)
class Rule:
    name: str
    action: str  # skip, follow or content
    xpath: str
    pages: frozenset[str] = frozenset()  # the page kinds it applies to; empty: every kind
    # Expected to match on every page of its kinds: when it no longer does (a changed theme),
    # relaxed expressions are tried (relax.py).
    required: bool = False

    def applies(self, kind: str) -> bool:
        return not self.pages or kind in self.pages


@dataclass(frozen=True)
class Application:
    name: str
    category: str  # applications of one category lend their tag names to relaxed rules
    generator: str = ""  # how a generator meta tag's content starts
    urls: tuple[str, ...] = ()  # pieces of URLs its pages link or load
    cookies: tuple[str, ...] = ()  # how the names of its cookies start
    markup: tuple[etree.XPath, ...] = ()
    kinds: tuple[tuple[str, etree.XPath], ...] = ()  # the first that matches names a page's kind
    parameters: tuple[str, ...] = ()  # URL parameters that change nothing (fnmatch patterns)
    rules: tuple[Rule, ...] = field(default=())

    def useless(self, parameter: str) -> bool:
        """True for a URL parameter that changes nothing on this application's pages."""
        lowered = parameter.lower()
        return any(fnmatch.fnmatchcase(lowered, pattern) for pattern in self.parameters)


def load_rules(folder: Path = RULES_FOLDER) -> tuple[Application, ...]:
    """Every application of a rules folder, by the order of the file names."""
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise BadRules(f"{folder}: no rules file (*.yaml)")
    return tuple(read_application(path) for path in files)


def read_application(path: Path) -> Application:
    """One application's rules from its file; BadRules says where they are wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadRules(f"{path}: cannot read the rules: {exc}") from None
    if len(text) > MAX_RULES_FILE:
        raise BadRules(f"{path}: more than {MAX_RULES_FILE} characters")
    try:
        data = safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "somewhere"
        problem = getattr(exc, "problem", None) or str(exc)
        raise BadRules(f"{path}: not YAML at {where}: {problem}") from None
    try:
        return _application(data)
    except (TypeError, ValueError, KeyError) as exc:
        raise BadRules(f"{path}: {exc}") from None


def _application(data: Any) -> Application:
    if not isinstance(data, dict):
        raise ValueError("a mapping of the application's fields is expected")
    known = {"application", "category", "detect", "kinds", "parameters", "rules"}
    if unknown := set(data) - known:
        raise ValueError(f"unknown fields: {', '.join(sorted(map(str, unknown)))}")
    name = _text(data.get("application"), "application")
    detect = data.get("detect") or {}
    if not isinstance(detect, dict):
        raise ValueError("detect: a mapping is expected")
    kinds = data.get("kinds") or {}
    if not isinstance(kinds, dict):
        raise ValueError("kinds: a mapping of page kinds to XPaths is expected")
    return Application(
        name=name,
        category=_text(data.get("category"), "category"),
        generator=str(detect.get("generator") or ""),
        urls=_texts(detect.get("urls"), "detect.urls"),
        cookies=_texts(detect.get("cookies"), "detect.cookies"),
        markup=tuple(
            compiled(x, f"detect.markup {n}")
            for n, x in enumerate(_texts(detect.get("markup"), "detect.markup"), 1)
        ),
        kinds=tuple((str(k), compiled(v, f"kind {k}")) for k, v in kinds.items()),
        parameters=tuple(p.lower() for p in _texts(data.get("parameters"), "parameters")),
        rules=tuple(_rule(entry) for entry in data.get("rules") or []),
    )


def _rule(entry: Any) -> Rule:
    if not isinstance(entry, dict):
        raise ValueError("rules: each rule is a mapping (name, action, xpath, pages, required)")
    name = _text(entry.get("name"), "a rule's name")
    action = entry.get("action")
    if action not in ACTIONS:
        raise ValueError(f"rule {name}: action must be one of {', '.join(ACTIONS)}")
    xpath = _text(entry.get("xpath"), f"rule {name}: xpath")
    compiled(xpath, f"rule {name}")
    return Rule(
        name=name,
        action=action,
        xpath=xpath,
        pages=frozenset(_texts(entry.get("pages"), f"rule {name}: pages")),
        required=bool(entry.get("required", False)),
    )


def compiled(xpath: object, owner: str) -> etree.XPath:
    """An XPath compiled (with the EXSLT regular expressions); ValueError names its owner."""
    if not isinstance(xpath, str) or not xpath.strip():
        raise ValueError(f"{owner}: an XPath is expected")
    try:
        return etree.XPath(xpath, namespaces=_NAMESPACES, smart_strings=False)
    except etree.XPathSyntaxError as exc:
        raise ValueError(f"{owner}: the XPath {xpath!r} does not compile: {exc}") from None


_NAMESPACES = {"re": "http://exslt.org/regular-expressions"}


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what}: a non-empty string is expected")
    return value.strip()


def _texts(value: object, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{what}: a list of strings is expected")
    return tuple(value)
