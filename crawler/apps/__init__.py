"""Application-aware crawling: the software behind a site (WordPress, Drupal, MediaWiki...) told
from its pages, and its rules applied: links that lead nowhere new dropped, URLs in canonical
form, the content area found, each rule relaxed when a changed theme no longer matches it."""

from .detect import Detected, detect, page_kind
from .page import Page, read_page
from .rules import Application, BadRules, Rule, load_rules, read_application
from .site_rules import AppRules, PageRules, shipped_rules

__all__ = [
    "AppRules",
    "Application",
    "BadRules",
    "Detected",
    "Page",
    "PageRules",
    "Rule",
    "detect",
    "load_rules",
    "page_kind",
    "read_application",
    "read_page",
    "shipped_rules",
]
