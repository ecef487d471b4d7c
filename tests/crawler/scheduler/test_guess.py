"""Guessing a discovered site's delimitation: registered domains, personal pages on shared hosts,
addresses, and delimitations that stay disjoint whichever site is found first."""

from __future__ import annotations

from pathlib import Path

import pytest

from archive.urlkey import BadUrl, canonical_url
from crawler.delimitation import Delimitation
from crawler.scheduler.guess import guess_site
from crawler.scheduler.store import Site, SqliteStore

DOMAIN_REJECT_PART = "re:^https?://[^/]+/~[^/?]"


@pytest.mark.parametrize(
    ("url", "start_url", "accept"),
    [
        # Registered domains, from the public suffix list, or hosts under unknown top-level
        # domains.
        (
            "https://www.example.org/a/b?x=1",
            "https://www.example.org/",
            "//example.org OR .example.org",
        ),
        ("http://news.bbc.co.uk/sport", "http://news.bbc.co.uk/", "//bbc.co.uk OR .bbc.co.uk"),
        (
            "https://ann.github.io/blog/",
            "https://ann.github.io/",
            "//ann.github.io OR .ann.github.io",
        ),
        (
            "http://a.b.corp.internal:8080/x",
            "http://a.b.corp.internal:8080/",
            "//a.b.corp.internal OR .a.b.corp.internal",
        ),
        (
            "http://www.site-01.web.test/a",
            "http://www.site-01.web.test/",
            "//site-01.web.test OR .site-01.web.test",
        ),
        (
            "http://www.Bücher.de/",
            "http://www.xn--bcher-kva.de/",
            "//xn--bcher-kva.de OR .xn--bcher-kva.de",
        ),
        ("http://localhost/", "http://localhost/", "//localhost OR .localhost"),
        (
            "http://home.com/ann/",
            "http://home.com/",
            "//home.com OR .home.com",
        ),  # the domain itself
        ("http://perso.free.fr/index.html", "http://perso.free.fr/", "//free.fr OR .free.fr"),
        ("http://perso.free.fr/", "http://perso.free.fr/", "//free.fr OR .free.fr"),
        ("https://sites.google.com/", "https://sites.google.com/", "//google.com OR .google.com"),
        # Personal pages.
        ("http://www.uni.edu/~ann/cv.html", "http://www.uni.edu/~ann/", "//www.uni.edu/~ann/"),
        ("http://www.uni.edu/~ann", "http://www.uni.edu/~ann/", "//www.uni.edu/~ann/"),
        ("http://www.uni.edu:8000/%7Eann/", "http://www.uni.edu:8000/~ann/", "//www.uni.edu/~ann/"),
        (
            "http://perso.free.fr/ann/photos/1.jpg",
            "http://perso.free.fr/ann/",
            "//perso.free.fr/ann/",
        ),
        ("http://perso.free.fr/ann", "http://perso.free.fr/ann/", "//perso.free.fr/ann/"),
        (
            "http://perso.free.fr/ann.smith/",
            "http://perso.free.fr/ann.smith/",
            "//perso.free.fr/ann.smith/",
        ),
        (
            "http://members.aol.com/bob/?p=2",
            "http://members.aol.com/bob/",
            "//members.aol.com/bob/",
        ),
        (
            "http://users.skynet.be/carl/a",
            "http://users.skynet.be/carl/",
            "//users.skynet.be/carl/",
        ),
        ("http://home.planet.nl/~dan/", "http://home.planet.nl/~dan/", "//home.planet.nl/~dan/"),
        (
            "http://people.csail.mit.edu/eve/",
            "http://people.csail.mit.edu/eve/",
            "//people.csail.mit.edu/eve/",
        ),
        (
            "https://sites.google.com/site/fanclub/news",
            "https://sites.google.com/site/fanclub/",
            "//sites.google.com/site/fanclub/",
        ),
        (
            "https://sites.google.com/view/trail",
            "https://sites.google.com/view/trail/",
            "//sites.google.com/view/trail/",
        ),
        # Addresses.
        ("http://192.0.2.7:8080/a", "http://192.0.2.7:8080/", "//192.0.2.7"),
        ("http://[2001:db8::1]/x", "http://[2001:db8::1]/", "//[2001:db8::1]"),
        ("http://192.0.2.7/~ann/", "http://192.0.2.7/~ann/", "//192.0.2.7/~ann/"),
    ],
)
def test_guessed_start_url_and_accept(url: str, start_url: str, accept: str) -> None:
    guessed = guess_site(url)
    assert (guessed.start_url, guessed.accept) == (start_url, accept)
    site = Delimitation(guessed.start_url, guessed.accept, guessed.reject)  # a valid delimitation
    # A directory named without its final slash is the site's start URL without it.
    assert site.inside(canonical_url(url)) or canonical_url(url).split("?")[0] + "/" == start_url
    personal = accept.count("/") > 2
    assert (guessed.reject == "") == personal
    assert personal or DOMAIN_REJECT_PART in guessed.reject


def test_a_domain_site_leaves_personal_pages_to_their_own_sites() -> None:
    free = Delimitation(*guess_site("http://www.free.fr/"))
    google = Delimitation(*guess_site("https://www.google.com/"))
    example = Delimitation(*guess_site("http://example.org/"))
    for url in [
        "http://perso.free.fr/ann/",
        "http://perso.free.fr/ann",
        "http://perso.free.fr/ann?page=2",
        "http://members.x.free.fr/bob/a.html",
        "http://www.free.fr/~carl/",
        "https://www.free.fr:8443/~carl",
    ]:
        assert not free.inside(url), url
        assert free.inside(guess_site(url).start_url) is False
    for url in ["http://perso.free.fr/", "http://perso.free.fr/a.html", "http://www.free.fr/~"]:
        assert free.inside(url), url
    assert not google.inside("https://sites.google.com/site/fanclub/")
    assert google.inside("https://sites.google.com/site/")
    assert google.inside("https://mail.google.com/mail/u/0/")
    assert not example.inside("http://www.example.org/~ann/")
    assert example.inside("http://perso.example.org/")


def site_of(store: SqliteStore, url: str) -> Site | None:
    """The site a link leads to: the one it is in, or else the one its guessed start URL is in
    (a link to a directory without its final slash leads to the directory's site)."""
    return store.find_site_for(canonical_url(url)) or store.find_site_for(guess_site(url).start_url)


def test_discovering_in_any_order_gives_disjoint_sites(tmp_path: Path) -> None:
    urls = [
        "http://perso.free.fr/ann/index.html",
        "http://www.free.fr/",
        "http://perso.free.fr/bob",
        "http://www.uni.edu/~carl/",
        "http://maths.uni.edu/",
        "http://www.uni.edu/~dan/x.html",
    ]
    for order in (urls, urls[::-1]):
        with SqliteStore(tmp_path / f"{order[0][7:12]}.db") as store:
            for url in order:
                assert site_of(store, url) is None, url
                store.add_site(*guess_site(url))
            assert store.counts()["sites"] == len(urls)
            for url in urls:
                owner = site_of(store, url)
                assert owner is not None and owner.start_url == guess_site(url).start_url


@pytest.mark.parametrize(
    "url", ["ftp://example.org/", "example.org", "http://", "http://exa mple.org/"]
)
def test_a_bad_url_is_refused(url: str) -> None:
    with pytest.raises(BadUrl):
        guess_site(url)
