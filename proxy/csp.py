"""Whether a page's Content-Security-Policy lets the bar in. The bar is an inline style and an
inline script with no nonce (a nonce would have to be added to the archived policy, changing what
the page's own scripts may do), and a frame of `api.dlweb` (its coherence figure): a policy that
forbids any of them keeps the bar out, and the page goes as archived.

A policy is read as browsers read one: directives split at `;`, sources at ASCII white space,
names and keywords in any case, the first of two directives of one name kept. Several policies
(comma-separated, or several headers and `<meta>`) all hold: each must let the bar in.
"""

import re

_SPACE_RE = re.compile(r"[\t\n\f\r ]+")
# The directives that govern each part of the bar, the first present one deciding.
_GOVERNING = {
    "inline scripts": ("script-src-elem", "script-src", "default-src"),
    "inline styles": ("style-src-elem", "style-src", "default-src"),
    "frames": ("frame-src", "child-src", "default-src"),
}
# Sources with which `'unsafe-inline'` is ignored.
_OVERRIDING = ("'nonce-", "'sha256-", "'sha384-", "'sha512-", "'strict-dynamic'")


def refusal(header: str) -> str:
    """What the policies in `header` forbid of the bar, or "" when they allow all of it."""
    for policy in header.split(","):
        directives: dict[str, list[str]] = {}
        for directive in policy.split(";"):
            tokens = _SPACE_RE.split(directive.strip().lower())
            if tokens[0]:
                directives.setdefault(tokens[0], tokens[1:])
        for part, names in _GOVERNING.items():
            sources = next((directives[name] for name in names if name in directives), None)
            if sources is not None and not _allows(part, sources):
                return f"its Content-Security-Policy forbids {part}"
    return ""


def _allows(part: str, sources: list[str]) -> bool:
    if part == "frames":  # no archived policy names api.dlweb; `http:` allows HTTPS too
        return "*" in sources or "http:" in sources
    return "'unsafe-inline'" in sources and not any(s.startswith(_OVERRIDING) for s in sources)
