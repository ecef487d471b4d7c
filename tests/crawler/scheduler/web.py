"""A web of 22 sites on loopback for the scheduler's tests, every property of it known in advance.

`python -m tests.crawler.scheduler.web --port-file FILE` serves twenty sites, site-01.web.test
... site-20.web.test, each on its own address (127.0.2.1 ... 127.0.2.20), and two personal sites
under one shared host, home.web.test/~alice/ and home.web.test/~bob/, on 127.0.2.21: all on one
port, the site picked by the Host header (and, on home.web.test, by the path's `/~USER/`). As in
tests.crawler.sites, a host name asked on an address not its own gets 421, so a crawler must be
told HOST:IP. Every host's robots.txt allows everything; every site has 3 to 6 pages linked to
each other, their text in one language (LANGUAGES) about one topic.

A site is named by its host name, or by HOST/~USER for a personal site (`site_of` maps a URL to
its site; ACCEPT gives each site's delimitation for a collect order).

The site graph, EDGES (a link from a page of one site to any page of another):

    site-01 (seed) -> 02 03 06 | 13 14 15             relevant | irrelevant
    02 (hub)  -> 04 05 06 07 08 09 12 ~alice          03 (hub) -> 04 05 06 07 08 11 12 ~alice
    04 -> 05   05 -> 04   06, 07, 08, 11, 12, ~alice -> 04 05   09 -> 04 10   10 -> 05
    12 -> 16   ~alice -> ~bob   ~bob -> 19
    13 -> 14 17   14 -> 07 18   15 -> 17 19   16 -> 18 20   17 -> 20   18 -> 20   19 -> 15

- RELEVANT (heritage: "archive", "heritage", "museum"): 01 to 12 and ~alice; site-11 is in
  French ("patrimoine", "musée", "archives"; note that a substring count of "archive" finds
  "archives" there too, and it has neither "heritage" nor "museum").
- IRRELEVANT (cooking or cars, none of either language's keywords): 13 to 20 and ~bob.
- On the graph restricted to RELEVANT, HITS puts 02 and 03 first as hubs and 04 and 05 first as
  authorities, far ahead of the rest (the order within each pair is not specified).
- A focused campaign from SEEDS that crawls every site it discovers but follows the external
  links of relevant sites only meets each site at DEPTHS (09's deep page leads to 10, met at 3;
  12 to 16 and ~alice to ~bob, irrelevant, met at 3 and blacklisted) and never meets
  NEVER_DISCOVERED = 17 18 19 20, linked from irrelevant sites only.
- CHANGING (site-06): every GET of its `/` starts a new round; every page of the site then
  shows that round's bulletin (new sentences, so new text chunks) and a later Last-Modified.
- FEED_SITE (site-08) announces /feed.xml; POST /feed-bump?site=site-08.web.test publishes the
  next acquisition: a new item in the feed, a new page /news/N.html, linked from its `/`.
- Every other site, STABLE (site-07) among them, sends the same bytes every time (ETag and
  Last-Modified answered with 304).

The control server on 127.0.0.1: `GET /stats` (requests in all, per host, per host and path with
its query, per site; the current round of CHANGING and version of the feed), `GET /log` (every
request: time, address, host, site, method, path, status, if_none_match, if_modified_since,
user_agent), `POST /reset` (clears the counts and the log; `?all=1` also brings the round back to
0 and the feed to its first version) and `POST /feed-bump?site=HOST`. FILE gets
`{"port": P, "control": URL, "addresses": [...]}` once all listen.

Tests start it with `serve_web`.
"""

import argparse
import asyncio
import contextlib
import datetime
import email.utils
import html
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from aiohttp import web

from deploy.testing.web_server import WebServer
from tests.crawler.sites import (
    BASE_TIME,
    NOT_FOUND,
    ROOT,
    Answer,
    Resource,
    _stop,
    announce_and_wait,
    bind_shared_port,
    links,
    read_port_file,
    redirect,
    robots,
    send_resource,
    url,
)

# The sites, named by their role.


def _numbered(n: int) -> str:
    return f"site-{n:02d}.web.test"


PORTAL = _numbered(1)  # the seed: a heritage portal
LINKS_HUB = _numbered(2)  # hub: Heritage Links
GUIDE_HUB = _numbered(3)  # hub: the Museum and Archive Guide
MUSEUM = _numbered(4)  # authority: the National Museum
ARCHIVE = _numbered(5)  # authority: the City Archive
NEWS = _numbered(6)  # CHANGING: Heritage News Daily
REGISTER = _numbered(7)  # STABLE: the Heritage Register
BULLETIN = _numbered(8)  # FEED_SITE: the Museum Acquisitions Bulletin
TRUST = _numbered(9)  # the Regional Heritage Trust, met at depth 2
MILL = _numbered(10)  # the Mill Village Museum, met at depth 3 through the trust only
BOURGOGNE = _numbered(11)  # in French: Patrimoine de Bourgogne
SOCIETY = _numbered(12)  # the Industrial Heritage Society
COOKING = _numbered(13)  # Weeknight Cooking
CAR_REVIEWS = _numbered(14)  # Car Reviews Weekly
PASTA = _numbered(15)  # Pasta at Home
CAR_CLUB = _numbered(16)  # the Vintage Car Club, met at depth 3 through the society
BREAD = _numbered(17)  # Bread and Pastry: never discovered
RACING = _numbered(18)  # Motor Racing Results: never discovered
SPICES = _numbered(19)  # Spice Market Recipes: never discovered
ELECTRIC = _numbered(20)  # Electric Cars Today: never discovered
HOME = "home.web.test"  # shared hosting: each /~USER/ is a site of its own
ALICE = f"{HOME}/~alice"  # relevant: a family historian
BOB = f"{HOME}/~bob"  # irrelevant: a cook

HOSTS: dict[str, str] = {
    **{_numbered(n): f"127.0.2.{n}" for n in range(1, 21)},
    HOME: "127.0.2.21",
}
ADDRESSES: tuple[str, ...] = tuple(dict.fromkeys(HOSTS.values()))
# Site -> the address it is served on.
SITES: dict[str, str] = {
    **{_numbered(n): HOSTS[_numbered(n)] for n in range(1, 21)},
    ALICE: HOSTS[HOME],
    BOB: HOSTS[HOME],
}

SEEDS: tuple[str, ...] = (PORTAL,)
KEYWORDS: tuple[str, ...] = ("archive", "heritage", "museum")
FRENCH_KEYWORDS: tuple[str, ...] = ("patrimoine", "musée", "archives")
RELEVANT: frozenset[str] = frozenset(
    {PORTAL, LINKS_HUB, GUIDE_HUB, MUSEUM, ARCHIVE, NEWS, REGISTER, BULLETIN, TRUST, MILL}
    | {BOURGOGNE, SOCIETY, ALICE}
)
IRRELEVANT: frozenset[str] = frozenset(SITES) - RELEVANT
FRENCH: frozenset[str] = frozenset({BOURGOGNE})
LANGUAGES: dict[str, str] = {site: "fr" if site in FRENCH else "en" for site in SITES}
TOPICS: dict[str, str] = {
    **dict.fromkeys(RELEVANT, "heritage"),
    **dict.fromkeys((COOKING, PASTA, BREAD, SPICES, BOB), "cooking"),
    **dict.fromkeys((CAR_REVIEWS, CAR_CLUB, RACING, ELECTRIC), "cars"),
}
TOP_HUBS: frozenset[str] = frozenset({LINKS_HUB, GUIDE_HUB})
TOP_AUTHORITIES: frozenset[str] = frozenset({MUSEUM, ARCHIVE})
NEVER_DISCOVERED: frozenset[str] = frozenset({BREAD, RACING, SPICES, ELECTRIC})
CHANGING = NEWS
STABLE = REGISTER
FEED_SITE = BULLETIN
FEED_PATH = "/feed.xml"


def _edges(source: str, *targets: str) -> frozenset[tuple[str, str]]:
    return frozenset((source, target) for target in targets)


EDGES: frozenset[tuple[str, str]] = (
    _edges(PORTAL, LINKS_HUB, GUIDE_HUB, NEWS, COOKING, CAR_REVIEWS, PASTA)
    | _edges(LINKS_HUB, MUSEUM, ARCHIVE, NEWS, REGISTER, BULLETIN, TRUST, SOCIETY, ALICE)
    | _edges(GUIDE_HUB, MUSEUM, ARCHIVE, NEWS, REGISTER, BULLETIN, BOURGOGNE, SOCIETY, ALICE)
    | _edges(MUSEUM, ARCHIVE)
    | _edges(ARCHIVE, MUSEUM)
    | _edges(NEWS, MUSEUM, ARCHIVE)
    | _edges(REGISTER, MUSEUM, ARCHIVE)
    | _edges(BULLETIN, MUSEUM, ARCHIVE)
    | _edges(TRUST, MUSEUM, MILL)
    | _edges(MILL, ARCHIVE)
    | _edges(BOURGOGNE, MUSEUM, ARCHIVE)
    | _edges(SOCIETY, MUSEUM, ARCHIVE, CAR_CLUB)
    | _edges(ALICE, MUSEUM, ARCHIVE, BOB)
    | _edges(BOB, SPICES)
    | _edges(COOKING, CAR_REVIEWS, BREAD)
    | _edges(CAR_REVIEWS, REGISTER, RACING)
    | _edges(PASTA, BREAD, SPICES)
    | _edges(CAR_CLUB, RACING, ELECTRIC)
    | _edges(BREAD, ELECTRIC)
    | _edges(RACING, ELECTRIC)
    | _edges(SPICES, PASTA)
)
# How many site links away from a seed a focused campaign (external links of relevant sites
# followed, of irrelevant ones not) meets each site it ever meets.
DEPTHS: dict[str, int] = {
    PORTAL: 0,
    **dict.fromkeys((LINKS_HUB, GUIDE_HUB, NEWS, COOKING, CAR_REVIEWS, PASTA), 1),
    **dict.fromkeys((MUSEUM, ARCHIVE, REGISTER, BULLETIN, TRUST, BOURGOGNE, SOCIETY, ALICE), 2),
    **dict.fromkeys((MILL, CAR_CLUB, BOB), 3),
}


def host_of(site: str) -> str:
    return site.split("/", 1)[0]


def root_of(site: str) -> str:
    """The path of a site's first page: `/`, or `/~USER/` for a personal site."""
    _, slash, rest = site.partition("/")
    return f"/{rest}/" if slash else "/"


# Each site's accept expression (crawler.delimitation): its host, or its host and /~USER/.
ACCEPT: dict[str, str] = {
    site: f"//{host_of(site)}" + ("" if root_of(site) == "/" else root_of(site)) for site in SITES
}


def site_url(site: str, port: int, path: str = "") -> str:
    """The absolute URL of `path` (relative to the site's first page) on `site`."""
    return url(host_of(site), root_of(site) + path, port)


def site_at(host: str, path: str) -> str | None:
    """The site that `path` on `host` belongs to, if any."""
    host = host.lower().rstrip(".")
    if host == HOME:
        user = path.split("/", 2)[1] if path.startswith("/~") else ""
        site = f"{HOME}/{user}"
        return site if site in SITES else None
    return host if host in SITES else None


def site_of(address: str) -> str | None:
    """The site of an absolute URL, or None when it is none of this web's."""
    parts = urllib.parse.urlsplit(address)
    return site_at(parts.hostname or "", parts.path or "/")


# The content.


@dataclass(frozen=True, slots=True)
class Page:
    """One page: its text, the site's pages it links to, and its links to other sites."""

    title: str
    text: tuple[str, ...]  # paragraphs
    links: tuple[str, ...] = ()  # paths relative to the site's first page ("" is that page)
    out: tuple[tuple[str, str, str], ...] = ()  # (site, path relative to its first page, text)


@dataclass(frozen=True, slots=True)
class Site:
    name: str
    pages: Mapping[str, Page]  # path relative to the first page ("" is the first page)


SPECS: dict[str, Site] = {
    PORTAL: Site(
        "Heritage Portal",
        {
            "": Page(
                "Heritage Portal",
                (
                    "A portal to heritage on the web: museum collections, archive holdings and "
                    "the people who keep them.",
                    "Start with our directory of heritage sites, or read the daily news.",
                ),
                ("about.html", "directory.html", "elsewhere.html"),
                ((NEWS, "", "Heritage News Daily"),),
            ),
            "about.html": Page(
                "About the portal",
                (
                    "The Heritage Portal is run by volunteers who visit every museum and every "
                    "archive they list.",
                ),
                ("directory.html",),
            ),
            "directory.html": Page(
                "Directory",
                (
                    "Two directories list most heritage institutions: one kept by librarians, "
                    "one by a museum guide.",
                ),
                ("elsewhere.html",),
                (
                    (LINKS_HUB, "", "Heritage Links"),
                    (GUIDE_HUB, "guide.html", "The Museum and Archive Guide"),
                ),
            ),
            "elsewhere.html": Page(
                "Elsewhere on the web",
                ("Not everything our visitors like is heritage. Other sites they asked for:",),
                ("directory.html",),
                (
                    (COOKING, "", "Weeknight Cooking"),
                    (CAR_REVIEWS, "", "Car Reviews Weekly"),
                    (PASTA, "", "Pasta at Home"),
                ),
            ),
        },
    ),
    LINKS_HUB: Site(
        "Heritage Links",
        {
            "": Page(
                "Heritage Links",
                (
                    "A list of heritage sites on the web, sorted by kind: museum, archive, "
                    "society, person.",
                ),
                ("museums.html", "archives.html", "people.html", "about.html"),
            ),
            "museums.html": Page(
                "Museums",
                ("Every museum here shows its collections online, with its heritage news.",),
                ("archives.html",),
                (
                    (MUSEUM, "", "National Museum"),
                    (NEWS, "", "Heritage News Daily"),
                    (REGISTER, "", "Heritage Register"),
                    (SOCIETY, "", "Industrial Heritage Society"),
                ),
            ),
            "archives.html": Page(
                "Archives",
                ("Each archive here opens its holdings to readers.",),
                ("museums.html",),
                (
                    (ARCHIVE, "", "City Archive"),
                    (BULLETIN, "", "Museum Acquisitions Bulletin"),
                    (TRUST, "about.html", "Regional Heritage Trust"),
                ),
            ),
            "people.html": Page(
                "People",
                ("Personal pages of heritage enthusiasts, each with its own archive.",),
                (),
                ((ALICE, "", "Alice's family history"),),
            ),
            "about.html": Page(
                "About Heritage Links",
                ("Heritage Links is kept up to date by a museum librarian and an archive clerk.",),
            ),
        },
    ),
    GUIDE_HUB: Site(
        "The Museum and Archive Guide",
        {
            "": Page(
                "The Museum and Archive Guide",
                (
                    "The guide to every museum and archive worth a visit, and to the heritage "
                    "societies behind them.",
                ),
                ("guide.html", "regions.html", "about.html"),
            ),
            "guide.html": Page(
                "The guide",
                ("The great institutions, reviewed by our museum and archive critics.",),
                ("regions.html",),
                (
                    (MUSEUM, "", "National Museum"),
                    (ARCHIVE, "", "City Archive"),
                    (REGISTER, "register.html", "Heritage Register"),
                    (BULLETIN, "", "Museum Acquisitions Bulletin"),
                ),
            ),
            "regions.html": Page(
                "Regions",
                ("Heritage far from the capital, and the people who keep its archive.",),
                ("guide.html",),
                (
                    (BOURGOGNE, "", "Burgundy, in French"),
                    (SOCIETY, "", "Industrial Heritage Society"),
                    (ALICE, "", "Alice's family history"),
                    (NEWS, "", "Heritage News Daily"),
                ),
            ),
            "about.html": Page(
                "About the guide",
                ("Written since 1998 by a retired museum keeper who loves heritage.",),
            ),
        },
    ),
    MUSEUM: Site(
        "National Museum",
        {
            "": Page(
                "National Museum",
                (
                    "The National Museum keeps the country's heritage: paintings, tools, "
                    "clothes and letters.",
                ),
                ("collections.html", "visit.html", "about.html"),
            ),
            "collections.html": Page(
                "Collections",
                (
                    "Our collections grow every year; the archive of the museum records every "
                    "object that enters.",
                ),
                ("visit.html",),
            ),
            "visit.html": Page(
                "Visit",
                ("The museum opens every day but Monday; the heritage garden in summer only.",),
                ("collections.html",),
            ),
            "about.html": Page(
                "About the museum",
                ("The museum was founded in 1850. Its papers went to the City Archive.",),
                (),
                ((ARCHIVE, "", "City Archive"),),
            ),
        },
    ),
    ARCHIVE: Site(
        "City Archive",
        {
            "": Page(
                "City Archive",
                (
                    "The City Archive keeps the records of the city since 1200: charters, maps "
                    "and registers. Our heritage is on paper.",
                ),
                ("holdings.html", "reading-room.html", "about.html"),
            ),
            "holdings.html": Page(
                "Holdings",
                ("Papers stay here; the objects they describe go to the museum.",),
                ("reading-room.html",),
                ((MUSEUM, "collections.html", "the National Museum's collections"),),
            ),
            "reading-room.html": Page(
                "Reading room",
                ("Anyone may read in the archive's reading room, from Tuesday to Saturday.",),
                ("holdings.html",),
            ),
            "about.html": Page(
                "About the archive",
                ("A museum of paper, some say: the archive of a city and of its heritage.",),
            ),
        },
    ),
    NEWS: Site(
        "Heritage News Daily",
        {
            "": Page(
                "Heritage News Daily",
                ("News from every museum, archive and heritage society, rewritten each round.",),
                ("latest.html", "about.html"),
            ),
            "latest.html": Page(
                "Latest",
                ("The latest from the two great houses of our heritage.",),
                ("about.html",),
                ((MUSEUM, "", "National Museum"), (ARCHIVE, "", "City Archive")),
            ),
            "about.html": Page(
                "About the news",
                ("Written by a museum guard and an archive clerk, on their lunch break.",),
            ),
        },
    ),
    REGISTER: Site(
        "Heritage Register",
        {
            "": Page(
                "Heritage Register",
                (
                    "The register of protected buildings, closed in 1990: it never changes, "
                    "like a museum piece or an archive box.",
                ),
                ("register.html", "about.html"),
            ),
            "register.html": Page(
                "The register",
                (
                    "Each listed building, with the museum that holds its model and the archive "
                    "that holds its plans.",
                ),
                ("about.html",),
                ((MUSEUM, "", "National Museum"), (ARCHIVE, "holdings.html", "City Archive")),
            ),
            "about.html": Page(
                "About the register",
                ("Kept as it was when the heritage office closed.",),
                ("register.html",),
            ),
        },
    ),
    BULLETIN: Site(
        "Museum Acquisitions Bulletin",
        {
            "": Page(
                "Museum Acquisitions Bulletin",
                (
                    "What museums and archives acquired lately, for everyone who follows "
                    "heritage. Subscribe to the feed.",
                ),
                ("about.html",),
            ),
            "about.html": Page(
                "About the bulletin",
                ("We read the museum and archive registers so that you need not.",),
                (),
                ((MUSEUM, "", "National Museum"), (ARCHIVE, "", "City Archive")),
            ),
        },
    ),
    TRUST: Site(
        "Regional Heritage Trust",
        {
            "": Page(
                "Regional Heritage Trust",
                (
                    "The trust restores heritage buildings in the region and gives their archive "
                    "to the county.",
                ),
                ("projects.html", "about.html"),
            ),
            "projects.html": Page(
                "Projects",
                ("A chapel, a bridge and the old mill, with help from the national museum.",),
                ("projects/mill.html",),
                ((MUSEUM, "visit.html", "National Museum"),),
            ),
            "projects/mill.html": Page(
                "The mill",
                ("The millers are remembered by a small museum in the village.",),
                ("projects.html",),
                ((MILL, "", "Mill Village Museum"),),
            ),
            "about.html": Page(
                "About the trust",
                ("Founded by three farmers in 1962.",),
                ("projects.html",),
            ),
        },
    ),
    MILL: Site(
        "Mill Village Museum",
        {
            "": Page(
                "Mill Village Museum",
                ("A village museum in the old mill: a heritage of flour and water.",),
                ("history.html", "about.html"),
            ),
            "history.html": Page(
                "History",
                ("The mill's account books are in the City Archive.",),
                ("about.html",),
                ((ARCHIVE, "reading-room.html", "City Archive"),),
            ),
            "about.html": Page(
                "About the mill",
                ("Open on Sundays, when the wheel turns.",),
                ("history.html",),
            ),
        },
    ),
    BOURGOGNE: Site(
        "Patrimoine de Bourgogne",
        {
            "": Page(
                "Patrimoine de Bourgogne",
                (
                    "Le patrimoine de la région : châteaux, abbayes, musées et archives, "
                    "racontés par ceux qui les gardent.",
                ),
                ("musees.html", "archives.html", "a-propos.html"),
            ),
            "musees.html": Page(
                "Musées",
                ("Le musée national prête ses collections aux musées de la région.",),
                ("archives.html",),
                ((MUSEUM, "", "Le musée national"),),
            ),
            "archives.html": Page(
                "Archives",
                ("Les archives de la ville conservent les chartes et les cartes anciennes.",),
                ("musees.html",),
                ((ARCHIVE, "", "Les archives de la ville"),),
            ),
            "a-propos.html": Page(
                "À propos",
                ("Ce site est tenu par des bénévoles passionnés de patrimoine.",),
            ),
        },
    ),
    SOCIETY: Site(
        "Industrial Heritage Society",
        {
            "": Page(
                "Industrial Heritage Society",
                ("The society records industrial heritage: factories, mines and railways.",),
                ("sites.html", "members.html", "about.html"),
            ),
            "sites.html": Page(
                "Sites",
                ("Machines are kept by the museum; factory papers by the archive.",),
                ("members.html",),
                ((MUSEUM, "", "National Museum"), (ARCHIVE, "", "City Archive")),
            ),
            "members.html": Page(
                "Members",
                ("Some of our members restore old vehicles too.",),
                ("sites.html",),
                ((CAR_CLUB, "", "Vintage Car Club"),),
            ),
            "about.html": Page(
                "About the society",
                ("Our own archive holds ten thousand photographs of works and museum pieces.",),
            ),
        },
    ),
    ALICE: Site(
        "Alice's family history",
        {
            "": Page(
                "Alice's family history",
                (
                    "I trace my family through the city archive's registers and the museum's "
                    "letters: a family heritage, one record at a time.",
                ),
                ("sources.html", "family.html"),
                ((BOB, "", "My neighbour Bob's page"),),
            ),
            "sources.html": Page(
                "Sources",
                ("Where I found them all.",),
                ("family.html",),
                ((ARCHIVE, "", "City Archive"), (MUSEUM, "", "National Museum")),
            ),
            "family.html": Page(
                "The family",
                ("Weavers, then millers, then a museum guard: my grandmother.",),
                ("sources.html",),
            ),
        },
    ),
    BOB: Site(
        "Bob's kitchen",
        {
            "": Page(
                "Bob's kitchen",
                ("Recipes from my kitchen, tested on my neighbours.",),
                ("recipes.html", "bread.html"),
            ),
            "recipes.html": Page(
                "Recipes",
                ("Stews, pies and a very slow onion soup.",),
                ("bread.html",),
                ((SPICES, "", "Spice Market Recipes"),),
            ),
            "bread.html": Page(
                "Bread",
                ("Flour, water, salt, yeast and a whole night of patience.",),
                ("recipes.html",),
            ),
        },
    ),
    COOKING: Site(
        "Weeknight Cooking",
        {
            "": Page(
                "Weeknight Cooking",
                ("Dinners ready in thirty minutes, with what is left in the fridge.",),
                ("recipes.html", "soups.html", "about.html"),
            ),
            "recipes.html": Page(
                "Recipes",
                ("Fried rice, omelettes, a quick curry and a lemon tart.",),
                ("soups.html",),
                ((BREAD, "", "Bread and Pastry"),),
            ),
            "soups.html": Page(
                "Soups",
                ("Leek and potato, tomato, and a green pea soup for spring.",),
                ("recipes.html",),
            ),
            "about.html": Page(
                "About the cook",
                ("I cook; my brother drives and writes about it.",),
                (),
                ((CAR_REVIEWS, "", "Car Reviews Weekly"),),
            ),
        },
    ),
    CAR_REVIEWS: Site(
        "Car Reviews Weekly",
        {
            "": Page(
                "Car Reviews Weekly",
                ("One new car a week, driven for five hundred miles before we say a word.",),
                ("reviews.html", "about.html"),
            ),
            "reviews.html": Page(
                "Reviews",
                ("This week: a small hatchback, a large estate and a noisy coupé.",),
                ("about.html",),
                ((RACING, "results.html", "Motor Racing Results"),),
            ),
            "about.html": Page(
                "About the reviews",
                ("On our test drives we pass many old buildings listed by town.",),
                ("reviews.html",),
                ((REGISTER, "", "Old buildings listed by town"),),
            ),
        },
    ),
    PASTA: Site(
        "Pasta at Home",
        {
            "": Page(
                "Pasta at Home",
                ("Fresh pasta by hand: flour, eggs and a rolling pin.",),
                ("sauces.html", "about.html"),
            ),
            "sauces.html": Page(
                "Sauces",
                ("Tomato and basil, butter and sage, and a slow ragù for Sundays.",),
                ("about.html",),
                ((BREAD, "bread.html", "Bread and Pastry"), (SPICES, "", "Spice Market Recipes")),
            ),
            "about.html": Page(
                "About the pasta",
                ("My grandmother taught me to roll it thin enough to read through.",),
                ("sauces.html",),
            ),
        },
    ),
    CAR_CLUB: Site(
        "Vintage Car Club",
        {
            "": Page(
                "Vintage Car Club",
                ("Owners of old cars who meet to polish, drive and repair them.",),
                ("meetings.html", "garage.html", "about.html"),
            ),
            "meetings.html": Page(
                "Meetings",
                ("First Sunday of every month, in the car park behind the station.",),
                ("garage.html",),
            ),
            "garage.html": Page(
                "The garage",
                ("Spare parts, manuals and friends who race.",),
                ("meetings.html",),
                ((ELECTRIC, "", "Electric Cars Today"), (RACING, "", "Motor Racing Results")),
            ),
            "about.html": Page(
                "About the club",
                ("Founded in 1971 by four drivers and a mechanic.",),
            ),
        },
    ),
    BREAD: Site(
        "Bread and Pastry",
        {
            "": Page(
                "Bread and Pastry",
                ("Sourdough, croissants and buns, baked at dawn.",),
                ("bread.html", "about.html"),
            ),
            "bread.html": Page(
                "Bread",
                ("A starter, kept alive for twelve years on flour and water.",),
                ("about.html",),
            ),
            "about.html": Page(
                "About the bakery",
                ("Our delivery van is electric, and quiet at five in the morning.",),
                ("bread.html",),
                ((ELECTRIC, "", "Electric Cars Today"),),
            ),
        },
    ),
    RACING: Site(
        "Motor Racing Results",
        {
            "": Page(
                "Motor Racing Results",
                ("Every race of the season, lap by lap.",),
                ("results.html", "about.html"),
            ),
            "results.html": Page(
                "Results",
                ("First, second and third, with their fastest laps.",),
                ("about.html",),
                ((ELECTRIC, "charging.html", "Electric Cars Today"),),
            ),
            "about.html": Page(
                "About the results",
                ("Timed by volunteers with stopwatches.",),
                ("results.html",),
            ),
        },
    ),
    SPICES: Site(
        "Spice Market Recipes",
        {
            "": Page(
                "Spice Market Recipes",
                ("Cumin, cardamom, saffron: what to cook with them.",),
                ("spices.html", "about.html"),
            ),
            "spices.html": Page(
                "Spices",
                ("Toast them dry, grind them late, use them soon.",),
                ("about.html",),
                ((PASTA, "", "Pasta at Home"),),
            ),
            "about.html": Page(
                "About the market",
                ("A stall at the Saturday market, since 1984.",),
                ("spices.html",),
            ),
        },
    ),
    ELECTRIC: Site(
        "Electric Cars Today",
        {
            "": Page(
                "Electric Cars Today",
                ("Range, charging and batteries, tested in winter.",),
                ("charging.html", "about.html"),
            ),
            "charging.html": Page(
                "Charging",
                ("How long a charge takes, at home and on the motorway.",),
                ("about.html",),
            ),
            "about.html": Page(
                "About us",
                ("Two engineers and a borrowed van.",),
                ("charging.html",),
            ),
        },
    ),
}

# CHANGING: each round's bulletin, shown on every page of the site.
STORIES: tuple[str, ...] = (
    "The National Museum opened a room of Roman glass",
    "The City Archive put its oldest charter online",
    "A heritage weekend drew crowds to the old mill",
    "Volunteers catalogued a box of letters in a village archive",
    "A museum of toys reopened after its roof was mended",
    "The register of listed bridges gained three entries",
    "A school visited the museum stores behind the scenes",
)
# FEED_SITE: acquisition N is ACQUISITIONS[(N - 1) % len(ACQUISITIONS)].
ACQUISITIONS: tuple[str, ...] = (
    "a clock made in 1750",
    "a box of glass negatives",
    "a weaver's loom",
    "a map of the old port",
    "a sailor's diary",
)
ROBOTS = robots("User-agent: *", "Disallow:")
RSS = "application/rss+xml"


def bulletin(round_: int) -> str:
    """The text CHANGING shows in round `round_`: three stories that differ from round to round."""
    stories = (STORIES[(round_ + i) % len(STORIES)] for i in range(3))
    return f"Round {round_}. " + " ".join(f"{story}, says round {round_}." for story in stories)


def _text(text: str) -> str:
    return html.escape(text, quote=False)


def document(title: str, body: str, language: str, head: str = "") -> bytes:
    return (
        f'<!DOCTYPE html>\n<html lang="{language}">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{_text(title)}</title>\n{head}</head>\n<body>\n"
        f"<h1>{_text(title)}</h1>\n{body}</body>\n</html>\n"
    ).encode()


def render(site: str, page: Page, port: int, extra: str = "", head: str = "") -> bytes:
    spec, root = SPECS[site], root_of(site)
    body = "".join(f"<p>{_text(text)}</p>\n" for text in page.text) + extra
    here = host_of(site)
    if page.out:
        body += links(
            *(
                (
                    root_of(target) + path
                    if host_of(target) == here
                    else site_url(target, port, path),
                    _text(text),
                )
                for target, path, text in page.out
            )
        )
    menu = [("", spec.name)] + [(path, spec.pages[path].title) for path in page.links]
    body += "<nav>\n" + links(*((root + path, _text(text)) for path, text in menu))
    body += "</nav>\n"
    return document(page.title, body, LANGUAGES[site], head)


def build(site: str, port: int, round_: int = 0, feed: int = 1) -> dict[str, Resource]:
    """What `site` answers, by absolute path: its pages (and FEED_SITE's feed)."""
    root, spec = root_of(site), SPECS[site]
    if site == CHANGING:
        extra = f"<p>{_text(bulletin(round_))}</p>\n"
        modified = BASE_TIME + datetime.timedelta(hours=round_)
        return {
            root + path: Resource(render(site, page, port, extra), modified=modified)
            for path, page in spec.pages.items()
        }
    resources = {
        root + path: Resource(render(site, page, port)) for path, page in spec.pages.items()
    }
    if site == FEED_SITE:
        resources.update(news(site, port, feed))
    return resources


def published(n: int) -> str:
    """When acquisition `n` was published, as an RSS date."""
    return email.utils.format_datetime(BASE_TIME + datetime.timedelta(days=n - 1), usegmt=True)


def news(site: str, port: int, version: int) -> dict[str, Resource]:
    """FEED_SITE's first page, feed and news pages, at the feed's `version`."""
    root, spec = root_of(site), SPECS[site]
    latest = BASE_TIME + datetime.timedelta(days=version - 1)
    numbers = range(version, 0, -1)
    items = links(*((f"{root}news/{n}.html", f"Acquisition {n}") for n in numbers))
    head = f'<link rel="alternate" type="{RSS}" title="Acquisitions" href="{FEED_PATH}">\n'
    resources = {root: Resource(render(site, spec.pages[""], port, items, head), modified=latest)}
    for n in numbers:
        page = Page(
            f"Acquisition {n}",
            (
                f"The museum acquired {ACQUISITIONS[(n - 1) % len(ACQUISITIONS)]}; its papers "
                "went to the archive, and it joins the heritage of the city.",
            ),
            ("about.html",),
        )
        resources[f"{root}news/{n}.html"] = Resource(
            render(site, page, port), modified=BASE_TIME + datetime.timedelta(days=n - 1)
        )
    feed = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0">\n<channel>\n'
        f"<title>{spec.name}</title>\n<link>{site_url(site, port)}</link>\n"
        "<description>What museums acquired lately.</description>\n"
        + "".join(
            f"<item><title>Acquisition {n}</title>"
            f"<link>{site_url(site, port, f'news/{n}.html')}</link>"
            f'<guid isPermaLink="true">{site_url(site, port, f"news/{n}.html")}</guid>'
            f"<pubDate>{published(n)}</pubDate></item>\n"
            for n in numbers
        )
        + "</channel>\n</rss>\n"
    )
    resources[FEED_PATH] = Resource(feed.encode(), RSS, modified=latest)
    return resources


# The server.


@dataclass
class Counts:
    requests: int = 0
    hosts: Counter[str] = field(default_factory=Counter)
    paths: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    sites: Counter[str] = field(default_factory=Counter)


class SiteWeb:
    """The sites, CHANGING's round, FEED_SITE's version, and what was asked of them."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.round = 0
        self.feed = 1
        self.resources = {site: build(site, port) for site in SITES}
        self.counts = Counts()
        self.log: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        transport = request.transport
        assert transport is not None
        address = transport.get_extra_info("sockname")[0]
        host = request.host.rsplit(":", 1)[0].lower().rstrip(".")
        site = site_at(host, request.path) if HOSTS.get(host) == address else None
        entry: dict[str, Any] = {
            "time": time.time(),
            "address": address,
            "host": request.host,
            "site": site,
            "method": request.method,
            "path": request.raw_path,
            "if_modified_since": request.headers.get("If-Modified-Since"),
            "if_none_match": request.headers.get("If-None-Match"),
            "user_agent": request.headers.get("User-Agent"),
            "status": None,
        }
        self.log.append(entry)
        self.counts.requests += 1
        self.counts.hosts[host] += 1
        self.counts.paths[host][request.raw_path] += 1
        if site is not None:
            self.counts.sites[site] += 1
        return await send_resource(request, entry, self.route(request, address, host, site))

    def route(self, request: web.Request, address: str, host: str, site: str | None) -> Resource:
        if HOSTS.get(host) != address:
            return Resource(b"This host is not served on this address.\n", "text/plain", 421)
        if request.method not in ("GET", "HEAD"):
            return Resource(b"GET or HEAD only.\n", "text/plain", 405, (("Allow", "GET, HEAD"),))
        path = request.path
        if path == "/robots.txt":
            return ROBOTS
        if site is None:
            return NOT_FOUND
        root = root_of(site)
        if path == root.rstrip("/"):
            return redirect(301, root)
        if site == CHANGING and path == root and request.method == "GET":
            self.round += 1
            self.resources[site] = build(site, self.port, self.round)
        return self.resources[site].get(path, NOT_FOUND)

    def bump(self, site: str) -> int:
        self.feed += 1
        self.resources[site] = build(site, self.port, feed=self.feed)
        return self.feed

    def reset(self, everything: bool) -> None:
        self.counts = Counts()
        self.log.clear()
        if everything:
            self.round, self.feed = 0, 1
            for site in (CHANGING, FEED_SITE):
                self.resources[site] = build(site, self.port)

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.counts.requests,
            "hosts": dict(self.counts.hosts),
            "paths": {host: dict(paths) for host, paths in self.counts.paths.items()},
            "sites": dict(self.counts.sites),
            "round": self.round,
            "feed": self.feed,
        }

    def control_app(self) -> web.Application:
        async def stats(request: web.Request) -> web.Response:
            return web.json_response(self.stats())

        async def log(request: web.Request) -> web.Response:
            return web.json_response(self.log)

        async def reset(request: web.Request) -> web.Response:
            everything = request.query.get("all", "") not in ("", "0")
            self.reset(everything)
            return web.json_response({"reset": True, "all": everything})

        async def feed_bump(request: web.Request) -> web.Response:
            site = request.query.get("site", "")
            if site != FEED_SITE:
                raise web.HTTPNotFound(text=f"no feed on {site!r}\n")
            version = self.bump(site)
            return web.json_response(
                {"site": site, "version": version, "new": f"{root_of(site)}news/{version}.html"}
            )

        app = web.Application()
        app.router.add_get("/stats", stats)
        app.router.add_get("/log", log)
        app.router.add_post("/reset", reset)
        app.router.add_post("/feed-bump", feed_bump)
        return app


async def serve(port_file: Path, parent: int = 0) -> None:
    """Serve until SIGTERM or SIGINT, or until `parent` (when given) is no longer the parent."""
    sockets = bind_shared_port(ADDRESSES)
    port = sockets[0].getsockname()[1]
    state = SiteWeb(port)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", state.handle)
    sites = WebServer(app, sockets=sockets, shutdown_timeout=0.2)
    await sites.start_here()
    control = await announce_and_wait(state.control_app(), port, ADDRESSES, port_file, parent)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(sites.stop_here(), control.stop_here()), 5)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port-file", type=Path, required=True, help="where to write the ports")
    parser.add_argument("--parent", type=int, default=0, help="exit when this is not the parent")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.port_file, args.parent))


# The client side, for tests.


class _Unfollowed(urllib.request.HTTPRedirectHandler):
    """Redirects answered as they are, not followed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}), _Unfollowed())


@dataclass
class Web:
    """The web running in a subprocess, and its control server."""

    process: subprocess.Popen[bytes]
    port: int
    control: str
    log_path: Path

    def url(self, host: str, path: str = "/") -> str:
        return url(host, path, self.port)

    def site_url(self, site: str, path: str = "") -> str:
        """A URL on `site`, `path` relative to its first page: its start URL by default."""
        return site_url(site, self.port, path)

    def resolve_args(self) -> list[str]:
        """HOST:IP for every host, as the crawler's --resolve takes them."""
        return [f"{host}:{address}" for host, address in HOSTS.items()]

    def resolve_map(self) -> dict[str, list[str]]:
        """Host name -> addresses, as a collect order's `resolve` takes them."""
        return {host: [address] for host, address in HOSTS.items()}

    def get(
        self,
        host: str,
        path: str = "/",
        headers: dict[str, str] | None = None,
        address: str | None = None,
    ) -> Answer:
        """Ask `host` for `path` on its own address (or on `address`)."""
        request = urllib.request.Request(
            f"http://{address or HOSTS[host]}:{self.port}{path}",
            headers={"Host": f"{host}:{self.port}", **(headers or {})},
        )
        try:
            with _DIRECT.open(request, timeout=10) as answer:
                return Answer(answer.status, answer.headers, answer.read())
        except urllib.error.HTTPError as error:
            with error:
                return Answer(
                    error.code, cast(http.client.HTTPMessage, error.headers), error.read()
                )

    def fetch(self, url_: str, headers: dict[str, str] | None = None) -> Answer:
        """Ask for an absolute URL of this web, its host resolved to its address."""
        parts = urllib.parse.urlsplit(url_)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        return self.get(parts.hostname or "", path, headers)

    def _call(self, method: str, path: str) -> Any:
        request = urllib.request.Request(self.control + path, method=method)
        with _DIRECT.open(request, timeout=10) as answer:
            return json.load(answer)

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = self._call("GET", "/stats")
        return stats

    def log(self) -> list[dict[str, Any]]:
        log: list[dict[str, Any]] = self._call("GET", "/log")
        return log

    def reset(self, everything: bool = False) -> None:
        """Forget the counts and the log; `everything` also restarts CHANGING and the feed."""
        self._call("POST", "/reset?all=1" if everything else "/reset")

    def feed_bump(self, host: str = FEED_SITE) -> int:
        """Publish the next item of `host`'s feed; the feed's new version."""
        query = urllib.parse.urlencode({"site": host})
        version: int = self._call("POST", f"/feed-bump?{query}")["version"]
        return version

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def serve_web(tmp_path: Path) -> Iterator[Web]:
    """Run the web in a subprocess until the block ends, however it ends."""
    folder = Path(tempfile.mkdtemp(prefix="web-", dir=tmp_path))
    port_file, output = folder / "port.json", folder / "web.log"
    command = [
        sys.executable,
        "-m",
        "tests.crawler.scheduler.web",
        "--port-file",
        str(port_file),
        "--parent",
        str(os.getpid()),
    ]
    with open(output, "wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        ready = read_port_file(process, port_file, output)
        yield Web(process, ready["port"], ready["control"], output)
    finally:
        _stop(process)


if __name__ == "__main__":
    main()
