"""Whether a page's scripts build it, judged from its parse: the `auto` browser mode's rule.

A page with no script is what its HTML says. One with scripts is loaded in the browser when it
shows little text of its own (an empty shell that scripts fill), when it carries the marks of a
framework that renders in the browser, or when its inline scripts ask the network for more and
its text is short.
"""

import re

# Visible text under which a page with scripts is taken for a shell its scripts fill.
SHELL_TEXT = 200
# Visible text under which inline scripts that fetch are taken to fetch the page's content.
FETCHING_TEXT = 1000
# How much of the document is looked at.
HEAD = 1024 * 1024

_SCRIPT = re.compile(rb"<script\b", re.IGNORECASE)
_FRAMEWORK = re.compile(
    rb"__NEXT_DATA__|__NUXT__|data-reactroot|ng-version=|\bng-app\b|data-v-app|"
    rb"<div[^>]*\bid=[\"']?(?:root|app|__next|__nuxt)[\"']?[^>]*>\s*</div>|"
    rb"<noscript[^>]*>[^<]*(?:enable|requires?)\s+javascript",
    re.IGNORECASE,
)
_FETCHING = re.compile(
    rb"\bfetch\s*\(|XMLHttpRequest|\$\.(?:ajax|get|post|getJSON)\s*\(|\bimport\s*\("
)


def built_by_scripts(document: bytes, text: str) -> bool:
    """Whether a page (its HTML and the visible text its parse found) is built by scripts."""
    head = document[:HEAD]
    if not _SCRIPT.search(head):
        return False
    visible = len(" ".join(text.split()))
    if visible < SHELL_TEXT or _FRAMEWORK.search(head):
        return True
    return visible < FETCHING_TEXT and _FETCHING.search(head) is not None
