"""Links as parsers report them, typed by how a browser's user would meet them."""

import enum
from dataclasses import dataclass


class LinkKind(enum.StrEnum):
    PAGE = "page"  # needs a user's action (a click, a form): goes to the next level
    COMPONENT = "component"  # loaded with its page (image, script, style, frame, redirect)
    FEED = "feed"  # RSS or Atom: reported to the scheduler
    STREAM = "stream"  # audio or video stream: reported, not fetched


@dataclass(frozen=True, slots=True)
class Link:
    """An absolute URL (fragment removed) found in a document."""

    url: str
    kind: LinkKind
    # Followed even outside the site's delimitation: what a page needs to be seen as it was.
    # Components are requisites except frames and redirects; pages never, but the start URL.
    requisite: bool
    text: str = ""
