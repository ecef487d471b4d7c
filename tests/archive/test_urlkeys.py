"""SURT keys made without the surt library for plain URLs are the library's, to the letter."""

import random
import sqlite3
from pathlib import Path

import surt

from archive.url_index import URLKEYS_FILE, UrlKeys, surt_key

EDGES = [
    "http://example.org",
    "http://example.org/",
    "https://Example.ORG/A/B.html",
    "http://www.example.org/News/",
    "http://www2.example.org/a/",
    "http://wwwexample.org/a",
    "http://sub.www.example.org/x",
    "http://example.org/~user/",
    "http://a-b.example.org/x_y.z",
    "http://127.0.0.1/x",  # an address: the library's rules
    "http://example.org/a//b",
    "http://example.org/a/./b",
    "http://example.org/x/..",
    "http://example.org/a%20b",
    "http://example.org/a?b=2&a=1",
    "http://example.org:8080/a",
    "http://user@example.org/a",
    "http://example.org/a#top",
]


def random_url(rng: random.Random) -> str:
    labels = rng.randint(1, 4)
    host = ".".join(
        "".join(rng.choice("abcXYZ019-") for _ in range(rng.randint(1, 6))) for _ in range(labels)
    )
    if rng.random() < 0.3:
        host = rng.choice(["www.", "www2.", "WWW.", "www1."]) + host
    path = "".join(rng.choice("aAbZ09-_.~/") for _ in range(rng.randint(0, 15)))
    return rng.choice(["http://", "https://"]) + host + ("/" if rng.random() < 0.8 else "") + path


def test_every_key_is_the_surt_librarys() -> None:
    rng = random.Random(5)
    urls = EDGES + [random_url(rng) for _ in range(50_000)]
    differ = [
        (url, surt_key(url), surt.surt(url)) for url in urls if surt_key(url) != surt.surt(url)
    ]
    assert not differ, differ[:10]


def test_a_range_counts_and_skips_its_distinct_keys_in_the_index(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / URLKEYS_FILE) as db:
        db.execute("CREATE TABLE urls (urlkey TEXT, url TEXT, structure TEXT)")
        for n in range(5):  # each key twice: its http and https URLs
            for scheme in ("http", "https"):
                url = f"{scheme}://example.org/{n}"
                db.execute("INSERT INTO urls VALUES (?, ?, ?)", (surt_key(url), url, "-"))
        db.execute("INSERT INTO urls VALUES ('org,other)/', 'http://other.org/', '-')")
    start, end = "org,example)/", "org,example)0"
    with UrlKeys(tmp_path) as keys:
        assert keys.count_keys(start, end) == 5
        assert keys.count_keys("org,example)/9", end) == 0
        assert [keys.key_at(start, end, n) for n in (0, 3, 4, 5)] == [
            "org,example)/0",
            "org,example)/3",
            "org,example)/4",
            None,
        ]
