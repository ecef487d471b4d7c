"""The API crawler's pure parts: the popularity score, the reading of rate limits, the reading
of hostile statuses, and the refusal of a bad configuration at start."""

import argparse
import email.utils

import pytest

from archive.command_line import run
from crawler.social.cli import add_arguments
from crawler.social.feeds import items
from crawler.social.popularity import HALF, NO_POPULARITY, best_scores, popularity
from crawler.social.rate_limits import limit_reset, retry_after
from crawler.social.statuses import content_links, post_of

NOW = 1_800_000_000.0


def test_popularity_is_0_without_reactions_half_at_HALF_and_grows_below_1():
    assert popularity(0, 0, 0) == 0
    assert popularity(0, int(HALF), 0) == 0.5
    assert popularity(0, 1, 0) < popularity(0, 2, 0) < popularity(0, 10**9, 0) < 1
    assert popularity(1, 0, 0) == popularity(0, 2, 0) == popularity(0, 1, 1)
    assert popularity(-5, -1, -1) == 0


def test_a_url_linked_by_several_posts_keeps_its_best_score():
    assert best_scores([("a", 0.2), ("b", 0.1), ("a", 0.7), ("a", 0.3)]) == {"a": 0.7, "b": 0.1}


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after("120", NOW) == 120
    assert retry_after(email.utils.formatdate(NOW + 30, usegmt=True), NOW) == 30
    assert retry_after(email.utils.formatdate(NOW - 30, usegmt=True), NOW) == 0
    assert retry_after("soon", NOW) is None
    assert retry_after(None, NOW) is None


def test_rate_limit_headers_hold_requests_only_once_none_remain():
    reset = "2027-01-15T08:00:30.000Z"
    at = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    assert limit_reset({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}, at) == 30
    assert limit_reset({"X-RateLimit-Remaining": "3", "X-RateLimit-Reset": reset}, at) is None
    epoch = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(at) + 12)}
    assert limit_reset(epoch, at) == 12
    assert limit_reset({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "never"}, at) is None


def test_a_status_links_to_its_card_and_content_links_not_to_mentions_or_hashtags():
    status = {
        "id": "7",
        "url": "https://social.example/@ann/7",
        "content": '<p><a href="https://news.example/a">a</a>'
        ' <a href="https://social.example/tags/x" class="mention hashtag" rel="tag">#x</a>'
        ' <a href="https://social.example/@bob" class="u-url mention">@bob</a>'
        ' <a href="javascript:alert(1)">no</a></p>',
        "card": {"url": "https://news.example/b"},
        "reblogs_count": 1,
        "favourites_count": 2,
        "replies_count": 3,
    }
    post = post_of(status)
    assert post is not None
    assert post.page == "https://social.example/@ann/7"
    assert post.links == ("https://news.example/b", "https://news.example/a")
    assert post.score == popularity(1, 2, 3)


def test_a_boost_is_read_as_its_original_and_hostile_fields_are_ignored():
    original = {"uri": "https://social.example/users/ann/statuses/1", "reblogs_count": 4}
    post = post_of({"reblog": original, "reblogs_count": 0})
    assert post is not None and post.page == original["uri"] and post.score == popularity(4, 0, 0)
    hostile = post_of(
        {"url": 5, "card": "x", "content": ["<a>"], "reblogs_count": "9", "favourites_count": True}
    )
    assert hostile is not None and (hostile.page, hostile.links, hostile.score) == ("", (), 0)
    assert post_of([1, 2]) is None
    assert len(content_links('<a href="https://x.example/">' * 10_000)) == 100


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "nothing to follow"),
        (["--hashtag", "art"], "need the Mastodon --instance"),
        (["--instance", "ftp://social.example", "--hashtag", "art"], "not an http(s) URL"),
        (["--instance", "https://social.example/explore", "--hashtag", "art"], "no path"),
        (["--instance", "https://social.example", "--hashtag", "two words"], "not a hashtag"),
        (["--instance", "https://social.example", "--account", "a b@c"], "not an account"),
        (["--feed", "file:///etc/passwd"], "not an http(s) URL of a feed"),
        (["--feed", "https://x.example/f", "--scheduler-api", "x"], "scheduler's http://"),
    ],
)
def test_a_bad_configuration_is_refused_at_start_with_what_is_wrong(args, message, capsys):
    parser = argparse.ArgumentParser(prog="dlweb api-crawler")
    add_arguments(parser)
    try:
        status = run(parser, ["-c", "none.yaml", *args])
    except SystemExit as exc:
        status = exc.code
    assert status == 2
    assert message in capsys.readouterr().err


def test_each_page_of_a_feed_is_a_post_of_no_known_popularity():
    rss = (
        b'<?xml version="1.0"?><rss version="2.0"><channel><title>News</title>'
        b"<link>https://news.example/</link>"
        b"<item><title>One</title><link>https://news.example/1</link></item>"
        b"<item><title>Two</title><link>https://news.example/2</link>"
        b'<enclosure url="https://news.example/2.mp3" type="audio/mpeg"/></item>'
        b"</channel></rss>"
    )
    posts = items("https://news.example/feed.xml", rss)
    assert [post.links for post in posts] == [
        ("https://news.example/",),
        ("https://news.example/1",),
        ("https://news.example/2",),
    ]
    assert {post.score for post in posts} == {NO_POPULARITY}
