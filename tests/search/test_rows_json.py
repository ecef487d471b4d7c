"""The JSON of a hit, a backlink and a similar page: their fields in order, some shown otherwise."""

import json

from search.backlinks import Backlink, Similar
from search.index import Hit


def test_a_hit_is_its_fields_with_score_highlights_and_simhash_shown():
    hit = Hit(
        1.23456789,
        "http://a/",
        "2019-01-01T00:00:00Z",
        "A",
        "a b",
        [(0, 1)],
        "<b>a</b> b",
        "d" * 64,
        "text/html",
        200,
        "en",
        255,
    )
    assert json.dumps(hit.as_json()) == json.dumps(
        {
            "score": 1.234568,
            "url": "http://a/",
            "time": "2019-01-01T00:00:00Z",
            "title": "A",
            "snippet": "a b",
            "highlights": [[0, 1]],
            "snippet_html": "<b>a</b> b",
            "digest": "d" * 64,
            "content_type": "text/html",
            "status": 200,
            "lang": "en",
            "simhash": "00000000000000ff",
        }
    )


def test_a_backlink_and_a_similar_page_are_their_fields():
    link = Backlink("http://a/", "2019-01-01T00:00:00Z", "A", ["here", "there"])
    assert list(link.as_json().items()) == [
        ("url", "http://a/"),
        ("time", "2019-01-01T00:00:00Z"),
        ("title", "A"),
        ("anchors", ["here", "there"]),
    ]
    near = Similar("http://b/", "2020-01-01T00:00:00Z", "B", 3, 1 << 60)
    assert list(near.as_json().items()) == [
        ("url", "http://b/"),
        ("time", "2020-01-01T00:00:00Z"),
        ("title", "B"),
        ("distance", 3),
        ("simhash", "1000000000000000"),
    ]
