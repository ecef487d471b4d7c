"""A site's page graph drawn as SVG on the server, for the map harbor: no script, no library.

The layout is deterministic and cheap: each page goes in the column of its level (its fewest
links from the start page, breadth-first; pages no link from the start reaches go in a last
column), in the order the crawl met it, a level of more than ROWS pages spilling into further
columns. At most `limit` pages are placed, those of the lowest levels first. Each page is a box
with a short label inside a link; the links between pages are curves behind the boxes, hidden
from screen readers, which get each box's link and its name.
"""

import html
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["Layout", "Placed", "label_of", "layout", "levels", "svg"]

ROWS = 16  # pages a column holds
BOX_WIDTH, BOX_HEIGHT = 180, 24
COLUMN_GAP, ROW_GAP = 70, 10
MARGIN = 8
LABEL = 24  # characters of a page's label, at most


@dataclass(frozen=True)
class Placed:
    """A page in the drawing: its place in the graph's pages, its level (None: no link from the
    start page reaches it) and the top left corner of its box."""

    page: int
    level: int | None
    x: int
    y: int


@dataclass(frozen=True)
class Layout:
    placed: tuple[Placed, ...]
    edges: tuple[tuple[int, int], ...]  # between placed pages, by their places in `placed`
    width: int
    height: int
    left_out: int  # pages not placed

    def by_level(self) -> list[tuple[int | None, list[Placed]]]:
        """The placed pages grouped by level, in the drawing's order."""
        groups: list[tuple[int | None, list[Placed]]] = []
        for node in self.placed:
            if not groups or groups[-1][0] != node.level:
                groups.append((node.level, []))
            groups[-1][1].append(node)
        return groups


def levels(count: int, edges: Sequence[tuple[int, int]], start: int = 0) -> list[int | None]:
    """Each page's fewest links from `start` (None where none lead), breadth-first."""
    found: list[int | None] = [None] * count
    if not 0 <= start < count:
        return found
    targets: list[list[int]] = [[] for _ in range(count)]
    for a, b in edges:
        targets[a].append(b)
    found[start] = 0
    queue = deque([start])
    while queue:
        page = queue.popleft()
        for target in targets[page]:
            if found[target] is None:
                found[target] = (found[page] or 0) + 1
                queue.append(target)
    return found


def layout(count: int, edges: Sequence[tuple[int, int]], limit: int) -> Layout:
    """The places of at most `limit` of `count` pages linked by `edges` (pairs of places below
    `count`), page 0 the start page."""
    level_of = levels(count, edges)
    unreached = max((lv for lv in level_of if lv is not None), default=-1) + 1
    order = sorted(range(count), key=lambda p: (_rank(level_of[p], unreached), p))[:limit]
    placed: list[Placed] = []
    column, row, previous = -1, ROWS, -1
    for page in order:
        rank = _rank(level_of[page], unreached)
        if rank != previous or row == ROWS:
            column, row, previous = column + 1, 0, rank
        x = MARGIN + column * (BOX_WIDTH + COLUMN_GAP)
        placed.append(Placed(page, level_of[page], x, MARGIN + row * (BOX_HEIGHT + ROW_GAP)))
        row += 1
    where = {node.page: i for i, node in enumerate(placed)}
    kept = tuple(sorted((where[a], where[b]) for a, b in edges if a in where and b in where))
    width = MARGIN + (column + 1) * (BOX_WIDTH + COLUMN_GAP)
    rows = max((node.y for node in placed), default=MARGIN - BOX_HEIGHT - ROW_GAP)
    height = rows + BOX_HEIGHT + MARGIN
    return Layout(tuple(placed), kept, max(width, 0), height, count - len(placed))


def _rank(level: int | None, unreached: int) -> int:
    return unreached if level is None else level


def label_of(url: str, start: str) -> str:
    """A page's short label: its path and query on the start page's host, else its host and
    path; cut to LABEL characters."""
    try:
        parts, home = urlsplit(url), urlsplit(start)
    except ValueError:
        return _cut(url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return _cut(path if parts.netloc == home.netloc else f"{parts.netloc}{path}")


def _cut(text: str) -> str:
    return text if len(text) <= LABEL else text[: LABEL - 1] + "…"


def _curve(source: Placed, target: Placed) -> str:
    """A link drawn between two boxes: from the right side of its source to the left side of a
    target in a column to the right, to the right side of one in the same column (bulging right),
    from the left side of its source to the right side of one to the left."""
    y1, y2 = source.y + BOX_HEIGHT // 2, target.y + BOX_HEIGHT // 2
    bend = COLUMN_GAP // 2
    if target.x > source.x:
        x1, x2 = source.x + BOX_WIDTH, target.x
        c1, c2 = x1 + max(bend, (x2 - x1) // 3), x2 - max(bend, (x2 - x1) // 3)
    elif target.x == source.x:
        x1 = x2 = source.x + BOX_WIDTH
        c1 = c2 = x1 + bend
    else:
        x1, x2 = source.x, target.x + BOX_WIDTH
        c1, c2 = x1 - bend, x2 + bend
    return f'<path d="M{x1} {y1} C{c1} {y1} {c2} {y2} {x2} {y2}" marker-end="url(#arrow)"/>'


def svg(
    drawn: Layout,
    pages: Sequence[str],
    href: Callable[[str], str],
    name: Callable[[str], str],
    label: Callable[[str], str],
    title: str,
) -> str:
    """The drawing: `title` names it, each page a link to `href(url)` named `name(url)` whose
    box shows `label(url)`."""
    curves = [_curve(drawn.placed[a], drawn.placed[b]) for a, b in drawn.edges]
    boxes = []
    for node in drawn.placed:
        url = pages[node.page]
        level = "unreached" if node.level is None else f"level{min(node.level, 3)}"
        boxes.append(
            f'<a href="{html.escape(href(url))}" aria-label="{html.escape(name(url))}"'
            f' class="{level}"><title>{html.escape(url)}</title>'
            f'<rect x="{node.x}" y="{node.y}" width="{BOX_WIDTH}" height="{BOX_HEIGHT}"'
            ' rx="4"/>'
            f'<text x="{node.x + 8}" y="{node.y + BOX_HEIGHT // 2 + 5}">'
            f"{html.escape(label(url))}</text></a>"
        )
    return (
        f'<svg class="site-map" xmlns="http://www.w3.org/2000/svg" role="group"'
        f' aria-labelledby="map-title" width="{drawn.width}" height="{drawn.height}"'
        f' viewBox="0 0 {drawn.width} {drawn.height}">'
        f'<title id="map-title">{html.escape(title)}</title>'
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7"'
        ' markerHeight="7" orient="auto-start-reverse"><path d="M0 0 L8 4 L0 8 z"/></marker>'
        "</defs>"
        f'<g class="links" aria-hidden="true">{"".join(curves)}</g>'
        f'<g class="pages">{"".join(boxes)}</g></svg>'
    )
