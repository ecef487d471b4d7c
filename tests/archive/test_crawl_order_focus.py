"""A crawl order's focus, injected URLs and blacklist: carried whole over the wire, and refused
field by field when bad."""

from typing import Any

import pytest

from archive.crawl_calls import CrawlOrder, Focus, ScoredUrl
from archive.hip import RemoteError

START = "http://a.example/"


def test_a_focused_order_comes_back_from_its_json_as_it_was_sent() -> None:
    order = CrawlOrder(
        START,
        focus=Focus(
            keywords=("museum", "painting"),
            examples=("A museum of fine arts and its paintings.",),
            url_scores={"/collection/": 0.8},
            spam=("host:ads.example",),
            weights={"document": 0.5, "anchor": 0.3, "url": 0.2},
            update="max",
        ),
        injected=(ScoredUrl("http://a.example/p1", 0.9, "arts"),),
        blocked=("prefix:http://a.example/print/",),
    )
    assert CrawlOrder.from_json(order.to_json(), "crawl") == order


def test_an_order_without_focus_says_nothing_of_it() -> None:
    sent = CrawlOrder(START).to_json()
    assert not {"focus", "injected", "blocked"} & set(sent)
    assert CrawlOrder.from_json(sent, "crawl").focus is None


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"injected": [{"url": "ftp://a.example/", "score": 0.5}]}, r"injected\[0\].url"),
        ({"injected": [{"url": START, "score": 1.5}]}, r"injected\[0\].score"),
        ({"injected": "http://a.example/"}, "injected must be a list"),
        ({"blocked": ["a.example"]}, "blocked: pattern 'a.example' must start with"),
        ({"focus": {"update": "sum"}}, "focus.update must be one of max, avg, last, first"),
        ({"focus": {"weights": {"title": 1}}}, "focus.weights must map some of"),
        ({"focus": {"weights": {"url": -1}}}, "focus.weights.url must be a number >= 0"),
        ({"focus": {"url_scores": {"(": 0.5}}}, "is not a regular expression"),
        ({"focus": {"spam": ["re:("]}}, "focus.spam"),
        ({"focus": {"keywords": "museum"}}, "focus.keywords must be a list of strings"),
    ],
)
def test_a_bad_field_is_refused_by_name(fields: dict[str, Any], said: str) -> None:
    with pytest.raises(RemoteError, match=said):
        CrawlOrder.from_json({"start_url": START, **fields}, "crawl")
