"""Pages about topics, for the focused crawl benchmark: a third of each site is about the
campaign's topic (renewable energy), the rest about four others, and nothing but the words tells
them apart.

A site is a tree of pages (`/` and the rest, every page within `levels` links of `/`, `branching`
children a page). `/` is a home page mixing every topic. Each other page has a topic: a child
keeps its parent's topic with probability HOMOPHILY (sections of a site), else draws one (the
campaign's with probability 1/3); then random pages at every level are switched to or from the
campaign's topic until a third of the site's pages (rounded) are about it, so relevant pages sit
at every level, under hubs of both kinds, and are linked from both kinds; relevant sections
lead to deep relevant pages.
A page's text mixes its topic's words (TOPIC_SHARE of the words) with common ones and a few of
other topics. Each page links to its children, its parent and related pages (of its topic with
probability RELATED_SAME, else any), each anchor naming its target's title as a real site does,
or a generic "read more" (GENERIC_ANCHOR); the paths are made of common words, the same for all
topics.
"""

import random

CAMPAIGN = "energy"
TOPICS = {
    CAMPAIGN: """solar wind turbine photovoltaic renewable energy electricity grid battery storage
        hydropower geothermal emissions carbon decarbonisation kilowatt megawatt inverter
        offshore onshore biomass hydrogen efficiency insulation heat pump panels rooftop
        utility feed tariff transmission capacity generation power plant climate fossil
        charging microgrid""",
    "cooking": """recipe oven flour butter sugar bake roast simmer garlic onion sauce pasta
        dough yeast kitchen chef tomato pepper salt olive herbs dessert chocolate cream soup
        grill spices vegetables meal dinner lunch breakfast pan knife slice stew cheese
        cinnamon""",
    "football": """football match goal striker midfielder defender goalkeeper league season
        referee penalty kick pitch stadium coach transfer club fans tournament cup championship
        tackle dribble header corner offside squad injury derby supporters trophy scored
        win draw fixture""",
    "travel": """travel flight hotel beach island passport luggage airport tourist museum
        itinerary hostel backpacking cruise mountain hiking trail village castle guidebook
        visa booking resort sightseeing train ferry journey destination holiday coast lake
        souvenir map""",
    "music": """music album song guitar piano drums concert band singer lyrics melody rhythm
        chord orchestra symphony jazz rock festival vinyl record studio tour stage chorus
        violin bass tempo playlist composer opera track""",
}
_COMMON = """the of and to in is for on with as by at from page news story about data report
    update world local review opinion event city people year new time day good first many part
    way week group plan work place people month life family public service point help
    information today also best great number small large long open free early another"""
COMMON = _COMMON.split()
TOPIC_SHARE = 0.35
STRAY_SHARE = 0.04  # words of another topic, in any page
HOMOPHILY = 0.6
RELATED_SAME = 0.6
GENERIC_ANCHOR = 0.15
TEXT_SIZES = (2_000, 6_000)
LINKS = (3, 8)

# What the benchmark's focus file says of the campaign: keywords and two example texts.
KEYWORDS = ["renewable energy", "solar power", "wind turbine", "electricity grid", "battery"]
EXAMPLES = [
    "Renewable energy from solar panels and wind turbines now supplies a growing share of the"
    " electricity on the grid. Offshore wind farms and rooftop photovoltaic installations add"
    " generation capacity every year, while battery storage and heat pumps help balance demand"
    " and cut carbon emissions from fossil power plants.",
    "Hydropower, geothermal plants and biomass complete the mix of low-carbon generation. Grid"
    " operators invest in transmission lines, inverters and microgrids; feed-in tariffs and"
    " efficiency programmes such as home insulation and electric vehicle charging speed up the"
    " decarbonisation of the power sector.",
]

_VOCABULARY = {topic: words.split() for topic, words in TOPICS.items()}
_OTHERS = [topic for topic in TOPICS if topic != CAMPAIGN]


def _draw_topic(rng: random.Random) -> str:
    return CAMPAIGN if rng.random() < 1 / 3 else rng.choice(_OTHERS)


def topics_of(rng: random.Random, pages: int, branching: int) -> list[str]:
    """Each page's topic ("" for the home page), exactly a third of the pages the campaign's."""
    topics = [""]
    for index in range(1, pages):
        parent = topics[(index - 1) // branching]
        keep = parent and rng.random() < HOMOPHILY
        topics.append(parent if keep else _draw_topic(rng))
    wanted = round(pages / 3)
    relevant = [i for i, topic in enumerate(topics) if topic == CAMPAIGN]
    others = [i for i, topic in enumerate(topics) if topic not in ("", CAMPAIGN)]
    rng.shuffle(relevant)
    rng.shuffle(others)
    while len(relevant) > wanted:
        topics[relevant.pop()] = rng.choice(_OTHERS)
    while len(relevant) < wanted and others:
        index = others.pop()
        topics[index] = CAMPAIGN
        relevant.append(index)
    return topics


def _words(rng: random.Random, topic: str, count: int) -> list[str]:
    words = []
    for _ in range(count):
        draw = rng.random()
        if topic and draw < TOPIC_SHARE:
            words.append(rng.choice(_VOCABULARY[topic]))
        elif draw < TOPIC_SHARE + STRAY_SHARE or (not topic and draw < 0.5):
            words.append(rng.choice(_VOCABULARY[rng.choice(list(TOPICS))]))
        else:
            words.append(rng.choice(COMMON))
    return words


def _paragraphs(rng: random.Random, topic: str) -> list[str]:
    size = rng.randint(*TEXT_SIZES)
    paragraphs, sentences, length = [], [], 0
    while length < size:
        sentence = " ".join(_words(rng, topic, rng.randint(6, 20))).capitalize() + "."
        sentences.append(sentence)
        length += len(sentence) + 1
        if len(sentences) == 5:
            paragraphs.append(" ".join(sentences))
            sentences = []
    if sentences:
        paragraphs.append(" ".join(sentences))
    return paragraphs


def _links(rng: random.Random, index: int, topics: list[str], branching: int) -> list[int]:
    """Children, parent, then related pages up to a drawn count."""
    pages = len(topics)
    first = branching * index + 1
    linked = [child for child in range(first, first + branching) if child < pages]
    if index > 0:
        linked.append((index - 1) // branching)
    wanted = max(rng.randint(*LINKS) - len(linked), 0)
    same = [p for p in range(pages) if topics[p] == topics[index] and p not in linked]
    rest = [p for p in range(pages) if p not in linked]
    for _ in range(wanted):
        pool = same if same and rng.random() < RELATED_SAME else rest
        pool = [p for p in pool if p != index and p not in linked]
        if pool:
            linked.append(rng.choice(pool))
    return linked


def topical_site(
    rng: random.Random, name: str, pages: int, branching: int, external: str
) -> tuple[dict[str, bytes], frozenset[str]]:
    """A site's pages by path, and the paths of those about the campaign's topic."""
    topics = topics_of(rng, pages, branching)
    paths = ["/"] + [
        f"/{rng.choice(COMMON)}/{rng.choice(COMMON)}-{index}.html" for index in range(1, pages)
    ]
    titles = ["home"] + [" ".join(rng.sample(_VOCABULARY[t], 3)) for t in topics[1:]]
    bodies = {}
    for index, path in enumerate(paths):
        paragraphs = _paragraphs(rng, topics[index])
        targets = _links(rng, index, topics, branching)
        for n, target in enumerate(targets):
            text = "read more" if rng.random() < GENERIC_ANCHOR else titles[target]
            slot = n * len(paragraphs) // len(targets)
            paragraphs[slot] += f' See <a href="{paths[target]}">{text}</a>.'
        title = f"{name}: {titles[index]}"
        body = "\n".join(f"<p>{paragraph}</p>" for paragraph in paragraphs)
        bodies[path] = (
            f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}'
            f"</title></head>\n<body>\n<h1>{title}</h1>\n{body}\n<footer>Elsewhere: {external}"
            "</footer>\n</body></html>\n"
        ).encode()
    relevant = frozenset(
        path for path, topic in zip(paths, topics, strict=True) if topic == CAMPAIGN
    )
    return bodies, relevant
