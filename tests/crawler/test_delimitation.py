"""Delimitation: the paper's TF1 example, host terms that tricky hosts cannot fool, regular
expressions, clear errors for bad expressions and orders, and the smaller depth of dynamic URLs."""

from __future__ import annotations

import dataclasses

import pytest

from archive.errors import DlwebError
from crawler.delimitation import (
    BadExpression,
    BadOrder,
    Delimitation,
    compile_expression,
    derived_accept,
    host_and_rest,
    is_dynamic,
    split_url,
)
from crawler.order import Order

TF1 = Delimitation(
    start_url="http://www.tf1.fr/",
    accept="//tf1.fr OR //tf1.com OR .tf1.fr OR .tf1.com",
    reject="//eurosport.tf1.fr OR //eurosport.tf1.com",
)


@pytest.mark.parametrize(
    "url",
    [
        "http://tf1.fr/",
        "https://tf1.fr:8080/programmes/",
        "http://www.tf1.fr/news?id=3",
        "http://a.b.tf1.fr/",
        "http://tf1.com/",
        "https://videos.tf1.com/x.mp4",
        "http://user@tf1.fr/",
        "http://eurosport.tf1.fr.tf1.fr/",
    ],
)
def test_tf1_accepts(url: str) -> None:
    assert TF1.inside(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://eurosport.tf1.fr/",
        "https://eurosport.tf1.com:8443/foot",
        "http://tf1.fr.evil.com/",
        "http://nottf1.fr/",
        "http://evil.com/tf1.fr/",
        "http://evil.com/?u=//tf1.fr",
        "http://tf1.org/",
        "http://fr/",
    ],
)
def test_tf1_rejects(url: str) -> None:
    assert not TF1.inside(url)


def test_hosts_are_compared_without_case() -> None:
    assert TF1.inside("HTTP://WWW.TF1.FR/Page")
    assert compile_expression("//TF1.FR")("http://tf1.fr/")


def test_exact_host_term_does_not_cover_subdomains_of_a_rejected_host() -> None:
    assert not TF1.inside("http://eurosport.tf1.fr/")
    assert TF1.inside("http://live.eurosport.tf1.fr/")


def test_suffix_term_matches_subdomains_only() -> None:
    matches = compile_expression(".tf1.fr")
    assert matches("http://www.tf1.fr/")
    assert matches("http://a.b.tf1.fr/")
    assert not matches("http://tf1.fr/")
    assert not matches("http://nottf1.fr/")
    assert not matches("http://www.tf1.fr.evil.com/")


def test_host_term_with_path_matches_a_path_prefix() -> None:
    matches = compile_expression("//tf1.fr/news/ OR .tf1.com/index.php?sec=")
    assert matches("http://tf1.fr/news/")
    assert matches("https://tf1.fr/news/2024/a.html")
    assert not matches("http://tf1.fr/new")
    assert not matches("http://tf1.fr/sport/news/")
    assert not matches("http://www.tf1.fr/news/")
    assert matches("http://www.tf1.com/index.php?sec=3")
    assert not matches("http://www.tf1.com/index.php")


def test_host_terms_are_canonicalised_like_urls() -> None:
    assert compile_expression("//café.fr/%7euser/")("http://xn--caf-dma.fr/~user/a")
    assert compile_expression("//tf1.fr.")("http://tf1.fr/")


def test_ip_host_terms() -> None:
    matches = compile_expression("//192.168.1.10 OR //[::1]")
    assert matches("http://192.168.1.10:8080/")
    assert matches("http://[::1]:8080/x")
    assert not matches("http://192.168.1.100/")


def test_other_terms_are_substrings() -> None:
    matches = compile_expression("/forum/ OR ?print=")
    assert matches("http://site.fr/a/forum/b")
    assert matches("http://site.fr/a?print=1")
    assert not matches("http://forum.site.fr/")


def test_regex_terms_are_searched_in_the_url() -> None:
    matches = compile_expression(r"re:\.pdf$ OR re:/page-[0-9]{1,3}/")
    assert matches("http://site.fr/doc.pdf")
    assert not matches("http://site.fr/doc.pdf?x=1")
    assert matches("http://site.fr/page-12/")
    assert not matches("http://site.fr/page-1234/")


def test_commas_belong_to_a_regex_term_up_to_or() -> None:
    matches = compile_expression("re:/a{1,2}/ OR //b.fr")
    assert matches("http://x.fr/aa/")
    assert matches("http://b.fr/")


@pytest.mark.parametrize(
    "text",
    [
        "//a.fr OR //b.fr",
        "//a.fr or //b.fr",
        "//a.fr\n//b.fr\n",
        "//a.fr, //b.fr",
        "//a.fr,//b.fr",
        "  //a.fr  OR\n\n//b.fr OR  ",
    ],
)
def test_separators(text: str) -> None:
    matches = compile_expression(text)
    assert matches("http://a.fr/")
    assert matches("http://b.fr/")
    assert not matches("http://c.fr/")


def test_empty_expression_matches_nothing() -> None:
    assert not compile_expression("")("http://a.fr/")
    assert not compile_expression(" \n ")("http://a.fr/")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("//a.fr OR re:[a-", "term 2 're:[a-': invalid regular expression"),
        ("re:", "empty regular expression"),
        ("//a.fr //b.fr", "whitespace inside a term"),
        ("//a.fr:8080", "takes no port"),
        ("//[::1]:80", "takes no port"),
        ("//user@a.fr", "no user info"),
        ("//", "no host"),
        (".", "no host"),
        ("//a..fr", "empty label in host"),
        ("//a_b!{}.fr", "invalid character"),
        ("OR", "holds no term"),
    ],
)
def test_bad_expressions_say_which_term_and_why(text: str, why: str) -> None:
    with pytest.raises(BadExpression) as caught:
        compile_expression(text, "reject expression")
    message = str(caught.value)
    assert message.startswith(f"reject expression {text!r}")
    assert why in message


def test_default_accept_is_the_start_host_and_its_subdomains() -> None:
    site = Delimitation("http://www.example.org/start")
    assert site.accept == "//example.org OR .example.org"
    assert site.inside("http://example.org/")
    assert site.inside("https://blog.example.org/")
    assert not site.inside("http://example.com/")


@pytest.mark.parametrize(
    ("host", "accept"),
    [
        ("www.tf1.fr", "//tf1.fr OR .tf1.fr"),
        ("blog.tf1.fr", "//blog.tf1.fr OR .blog.tf1.fr"),
        ("www.com", "//www.com OR .www.com"),
        ("localhost", "//localhost OR .localhost"),
        ("10.0.0.1", "//10.0.0.1"),
        ("[::1]", "//[::1]"),
    ],
)
def test_derived_accept(host: str, accept: str) -> None:
    assert derived_accept(host) == accept


def test_reject_only() -> None:
    site = Delimitation("http://site.fr/", reject="/private/ OR re:[?&]sort=")
    assert site.inside("http://www.site.fr/a")
    assert not site.inside("http://site.fr/private/x")
    assert not site.inside("http://site.fr/list?page=2&sort=name")


def test_from_order() -> None:
    order = {
        "start_url": "http://www.tf1.fr/",
        "accept": TF1.accept,
        "reject": TF1.reject,
        "max_depth": 20,
        "max_dynamic_depth": 3,
        "previous_signatures": "ignored",
    }
    site = Delimitation.from_order(order)
    assert site == dataclasses.replace(TF1, max_depth=20, max_dynamic_depth=3)
    assert not site.inside("http://eurosport.tf1.fr/")


def test_from_order_defaults() -> None:
    site = Delimitation.from_order({"start_url": "http://site.fr/", "accept": None})
    assert (site.accept, site.reject, site.max_depth, site.max_dynamic_depth) == (
        "//site.fr OR .site.fr",
        "",
        150,
        5,
    )


@pytest.mark.parametrize(
    ("order", "why"),
    [
        ({}, "order has no start_url"),
        ({"start_url": ""}, "order has no start_url"),
        ({"start_url": 3}, "order field 'start_url': expected str, got int 3"),
        ({"start_url": "ftp://a.fr/"}, "start_url: bad URL 'ftp://a.fr/'"),
        ({"start_url": "http:///x"}, "missing host"),
        ({"start_url": "http://a.fr/", "accept": ["//a.fr"]}, "'accept': expected str, got list"),
        ({"start_url": "http://a.fr/", "max_depth": "9"}, "'max_depth': expected int, got str"),
        ({"start_url": "http://a.fr/", "max_depth": True}, "'max_depth': expected int, got bool"),
        ({"start_url": "http://a.fr/", "max_depth": 2.5}, "expected int, got float"),
        ({"start_url": "http://a.fr/", "max_depth": -1}, "max_depth -1 is negative"),
        ({"start_url": "http://a.fr/", "max_dynamic_depth": -2}, "max_dynamic_depth -2 is neg"),
        ({"start_url": "http://a.fr/", "accept": "//b.fr"}, "outside its own delimitation"),
        ({"start_url": "http://a.fr/", "reject": "//a.fr"}, "outside its own delimitation"),
        ({"start_url": "http://a.fr/", "reject": "re:("}, "reject expression 're:(': term 1"),
    ],
)
def test_from_order_errors(order: dict[str, object], why: str) -> None:
    with pytest.raises(BadOrder) as caught:
        Delimitation.from_order(order)
    assert why in str(caught.value)
    assert isinstance(caught.value, DlwebError)
    assert isinstance(caught.value, ValueError)


def test_bad_expression_is_a_bad_order() -> None:
    with pytest.raises(BadOrder):
        Delimitation("http://a.fr/", accept="re:[")


def test_delimitation_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        TF1.max_depth = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("url", "dynamic"),
    [
        ("http://a.fr/", False),
        ("http://a.fr/page.html", False),
        ("http://a.fr/dir/", False),
        ("http://a.fr/photo.php.jpg", False),
        ("http://a.fr/php/page", False),
        ("http://a.fr/?", False),
        ("http://a.fr/?q=1", True),
        ("http://a.fr/list?page=2", True),
        ("http://a.fr/index.php", True),
        ("http://a.fr/Default.ASPX", True),
        ("http://a.fr/app/login.do", True),
        ("http://a.fr/save.action", True),
        ("http://a.fr/x.jsp", True),
        ("http://a.fr/search.pl", True),
        ("http://a.fr/cgi-bin/counter", True),
        ("http://a.fr/a;type=2/b", True),
        ("http://a.fr/x.cfm#top", True),
    ],
)
def test_is_dynamic(url: str, dynamic: bool) -> None:
    assert is_dynamic(url) is dynamic


def test_allows_depth() -> None:
    site = Delimitation("http://a.fr/", max_depth=10, max_dynamic_depth=2)
    assert site.allows_depth("http://a.fr/x.html", 10)
    assert not site.allows_depth("http://a.fr/x.html", 11)
    assert site.allows_depth("http://a.fr/x?p=1", 2)
    assert not site.allows_depth("http://a.fr/x?p=1", 3)
    assert not site.allows_depth("http://a.fr/x.php", 3)


def test_split_url_and_host_and_rest() -> None:
    assert split_url("http://a.fr:81/b/c?d=1&e#f") == ("http://a.fr:81", "/b/c", "d=1&e")
    assert split_url("http://a.fr") == ("http://a.fr", "", "")
    assert split_url("http://a.fr?x") == ("http://a.fr", "", "x")
    assert host_and_rest("https://u:p@WWW.A.FR:8443/x?y") == ("www.a.fr", "/x?y")
    assert host_and_rest("http://[::1]:8080?q") == ("[::1]", "?q")
    assert host_and_rest("/relative") == ("", "/relative")


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"browser": "sometimes"}, "order field browser must be one of never, auto, always"),
        ({"browser": True}, "order field browser must be one of"),
        ({"browser_budget": 0}, "browser_budget must be a number of seconds > 0"),
        ({"browser_budget": "30"}, "browser_budget must be a number of seconds > 0"),
    ],
)
def test_a_bad_browser_mode_or_budget_is_a_bad_order(fields: dict[str, object], why: str) -> None:
    with pytest.raises(BadOrder) as caught:
        Order.from_json({"start_url": "http://a.fr/", **fields})
    assert why in str(caught.value)


def test_an_order_carries_its_browser_mode_and_budget() -> None:
    order = Order.from_json({"start_url": "http://a.fr/", "browser": "auto", "browser_budget": 5})
    assert (order.browser, order.browser_budget) == ("auto", 5.0)
    assert Order.from_json({"start_url": "http://a.fr/"}).browser == "never"
