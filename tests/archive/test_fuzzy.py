"""Fuzzy matching of a requested URL against archived URLs of its path: every default rule of
docs/fuzzy.md, the score, methods, an operator's rules, and rules files refused at start."""

import random
from pathlib import Path

import pytest

from archive.errors import ConfigError
from archive.fuzzy import FuzzyMatch, FuzzyRules, _levenshtein
from archive.variants import path_of

RULES = FuzzyRules.load()
PAGE = "http://example.com/news/index.html"
SCRIPT = "http://example.com/static/app.js"


def chosen(requested: str, candidates: list[str], rules: FuzzyRules = RULES) -> str | None:
    found = rules.match(requested, candidates)
    return None if found is None else found.url


def test_the_path_of_a_url_is_the_url_up_to_its_query_and_none_without_one() -> None:
    assert path_of("http://example.com/a.js?_=1") == "http://example.com/a.js"
    assert path_of("http://example.com/a?") == "http://example.com/a"
    assert path_of("http://example.com/a.js") is None
    assert path_of("http://example.com/a#top?x=1") is None


@pytest.mark.parametrize(
    ("parameter", "rule"),
    [
        ("_=1732650000000", "cache-busters"),
        ("cb=a8f3e2", "cache-busters"),
        ("uncache=42", "cache-busters"),
        ("utm_source=newsletter", "tracking"),
        ("UTM_Campaign=spring", "tracking"),
        ("fbclid=IwAR3xyz", "tracking"),
        ("gclid=Cj0KCQ", "tracking"),
        ("msclkid=abc123", "tracking"),
        ("callback=jQuery112403691827193641_1732650000000", "jsonp-callbacks"),
        ("callback=jsonp1732650000", "jsonp-callbacks"),
        ("ts=1732650000", "timestamps"),
        ("timestamp=1732650000123", "timestamps"),
        ("cachebust=173265000012345", "timestamps"),
        ("_ts=1732650000", "timestamps"),
        ("sid=9f86d081", "session-ids"),
        ("sessionid=abc", "session-ids"),
        ("JSESSIONID=0A1B2C", "session-ids"),
        ("PHPSESSID=r2t5uvjq435r4q7ib3vtdjq120", "session-ids"),
        ("sessid=77", "session-ids"),
        ("ASPSESSIONIDQQGGGNCG=LKJHG", "session-ids"),
    ],
)
def test_each_default_ignored_parameter_is_ignored_on_both_sides(parameter: str, rule: str) -> None:
    name = parameter.partition("=")[0]
    candidates = [f"{PAGE}?id=7&{name}=other0000000", f"{PAGE}?id=8"]
    found = RULES.match(f"{PAGE}?{parameter}&id=8", candidates)
    assert found == FuzzyMatch(f"{PAGE}?id=8", f"same query without {rule}")
    assert chosen(f"{PAGE}?id=8", [f"{PAGE}?id=8&{parameter}"]) == f"{PAGE}?id=8&{parameter}"


@pytest.mark.parametrize(
    "parameter",
    [
        "_=abc",  # a cache buster of digits only
        "callback=showResults",  # a callback a page names itself
        "ts=12345",  # too short for a timestamp
        "ts=1234567890123456",  # too long for a timestamp
        "stamp=1732650000",  # a name without bust, ts or timestamp
    ],
)
def test_a_parameter_whose_value_does_not_fit_its_rule_is_kept(parameter: str) -> None:
    name = parameter.partition("=")[0]
    assert chosen(f"{PAGE}?{parameter}", [f"{PAGE}?{name}=zzzzzzzzzzzzzzzzzzz"]) is None


def test_the_first_candidate_with_the_same_query_wins_as_the_nearest_in_date() -> None:
    candidates = [f"{SCRIPT}?v=2&_=1", f"{SCRIPT}?v=3&_=2", f"{SCRIPT}?v=3&_=3"]
    assert chosen(f"{SCRIPT}?_=9&v=3", candidates) == f"{SCRIPT}?v=3&_=2"


def test_the_query_is_compared_as_a_set_of_pairs_in_any_order_and_encoding() -> None:
    found = RULES.match(f"{PAGE}?b=2&q=a%20b&a=1", [f"{PAGE}?x=1", f"{PAGE}?a=1&q=a+b&b=2"])
    assert found == FuzzyMatch(f"{PAGE}?a=1&q=a+b&b=2", "same query in another order or encoding")


def test_a_repeated_parameter_counts_each_time() -> None:
    assert chosen(f"{PAGE}?tag=a&tag=b", [f"{PAGE}?tag=a", f"{PAGE}?tag=b&tag=a"]) == (
        f"{PAGE}?tag=b&tag=a"
    )


def test_a_static_resource_with_few_candidates_matches_the_nearest_whatever_its_query() -> None:
    candidates = [f"{SCRIPT}?v=9f8e7d", f"{SCRIPT}?v=0a1b2c", f"{SCRIPT}?v=9f8e7d"]
    found = RULES.match(f"{SCRIPT}?v=5c6d7e&lang=fr", candidates)
    assert found == FuzzyMatch(
        f"{SCRIPT}?v=9f8e7d", "static-resources: .js, nearest of 2 candidates"
    )
    font = "http://cdn.example.com/fonts/Inter.WOFF2"
    assert chosen(f"{font}?display=swap", [f"{font}?v=4"]) == f"{font}?v=4"


def test_a_static_resource_with_many_candidates_does_not_match_another_query() -> None:
    candidates = [f"{SCRIPT}?v={token}" for token in ("9f8e7d", "0a1b2c", "3d4e5f", "6a7b8c")]
    assert chosen(f"{SCRIPT}?v=5c6d7e&lang=fr", candidates) is None


def test_a_page_is_not_a_static_resource() -> None:
    for path in (PAGE, "http://example.com/item.php", "http://example.com/item"):
        assert chosen(f"{path}?id=5c6d7e", [f"{path}?id=9f8e7d"]) is None


def test_the_score_prefers_the_same_parameter_names() -> None:
    candidates = [f"{PAGE}?q=cats", f"{PAGE}?q=cat&page=4"]
    found = RULES.match(f"{PAGE}?q=cats&page=3", candidates)
    assert found == FuzzyMatch(f"{PAGE}?q=cat&page=4", "closest-query: score 0.90 >= 0.85")
    assert chosen(f"{PAGE}?q=cats&page=3", [f"{PAGE}?q=cats"]) is None


def test_the_score_compares_numbers_by_relative_closeness() -> None:
    candidates = [f"{PAGE}?page=2", f"{PAGE}?page=30", f"{PAGE}?page=11", f"{PAGE}?page=13"]
    assert chosen(f"{PAGE}?page=10", candidates) == f"{PAGE}?page=11"
    assert chosen(f"{PAGE}?v=1732650000", [f"{PAGE}?v=5", f"{PAGE}?v=1732600000"]) == (
        f"{PAGE}?v=1732600000"
    )


def test_the_score_compares_strings_by_edit_distance() -> None:
    candidates = [f"{PAGE}?q=gallery", f"{PAGE}?q=muse", f"{PAGE}?q=museums"]
    assert chosen(f"{PAGE}?q=museum", candidates) == f"{PAGE}?q=museums"


def test_equal_scores_go_to_the_nearest_candidate() -> None:
    assert chosen(f"{PAGE}?q=cat", [f"{PAGE}?q=bat", f"{PAGE}?q=cut"]) == f"{PAGE}?q=bat"
    assert chosen(f"{PAGE}?q=cat", [f"{PAGE}?q=cut", f"{PAGE}?q=bat"]) == f"{PAGE}?q=cut"


def test_a_score_below_the_threshold_does_not_match() -> None:
    assert chosen(f"{PAGE}?id=123", [f"{PAGE}?id=987", f"{PAGE}?ref=123"]) is None


def test_no_match_returns_none() -> None:
    assert RULES.match(f"{SCRIPT}?_=1", []) is None
    assert RULES.match(f"{PAGE}?lang=fr", [f"{PAGE}?lang=de", f"{PAGE}?page=2"]) is None


def test_a_method_folded_in_the_query_never_matches_another_method() -> None:
    api = "http://example.com/api/search.json"
    post = f"{api}?__wb_method=post&q=cats&_=2"
    assert chosen(f"{api}?__wb_method=post&q=cats&_=1", [f"{api}?q=cats", post]) == post
    for other in (f"{api}?q=cats", f"{api}?__wb_method=put&q=cats", f"{api}?__wb_method=put"):
        assert chosen(f"{api}?__wb_method=post&q=cats", [other]) is None
    assert chosen(f"{api}?q=cats&_=1", [f"{api}?__wb_method=post&q=cats"]) is None


def test_post_data_is_compared_as_text_even_when_it_looks_like_a_number() -> None:
    api = "http://example.com/api/data.php"
    post = f"{api}?__wb_method=post&__wb_post_data="
    assert chosen(f"{post}2000", [f"{post}2999"]) is None
    assert chosen(f"{api}?n=2000", [f"{api}?n=2999"]) == f"{api}?n=2999"
    body = "eyJxdWVyeSI6Im11c2V1bSIsInBhZ2UiOjJ9"
    candidates = [f"{post}eyJxdWVyeSI6ImdhbGxlcnkifQ", f"{post}{body[:-2]}M30"]
    assert chosen(f"{post}{body}", candidates) == f"{post}{body[:-2]}M30"


def test_an_operator_rule_for_a_domain_applies_there_and_not_elsewhere(tmp_path: Path) -> None:
    extra = tmp_path / "fuzzy.yaml"
    extra.write_text(
        "rules:\n"
        "  - name: news-editions\n"
        "    domains: [news.example]\n"
        "    ignore:\n"
        "      - name: edition\n"
        "        value: '[a-z]+'\n",
        encoding="utf-8",
    )
    rules = FuzzyRules.load(extra)
    for host in ("news.example", "www.news.example", "NEWS.example."):
        page = f"http://{host}/today.html"
        found = rules.match(f"{page}?edition=paris", [f"{page}?edition=lyon"])
        assert found == FuzzyMatch(f"{page}?edition=lyon", "same query without news-editions")
    for host in ("other.example", "fakenews.example"):
        page = f"http://{host}/today.html"
        assert chosen(f"{page}?edition=paris", [f"{page}?edition=lyon"], rules) is None
    assert chosen(f"{PAGE}?edition=paris", [f"{PAGE}?edition=lyon"], RULES) is None
    assert chosen(f"{SCRIPT}?_=1", [f"{SCRIPT}?_=2"], rules) == f"{SCRIPT}?_=2"


def test_an_operator_rule_can_make_a_domain_stricter() -> None:
    rules = FuzzyRules.from_text(
        "rules:\n"
        "  - name: scores\n"
        "    min_score: 0.75\n"
        "  - name: assets\n"
        "    static: {extensions: [js], max_candidates: 3}\n"
        "  - name: strict-shop\n"
        "    domains: shop.example\n"
        "    min_score: 0.99\n"
        "    static: {max_candidates: 0}\n",
        "test rules",
    )
    for host, expected in (("shop.example", None), ("example.org", "2")):
        page = f"http://{host}/list.js"
        assert chosen(f"{page}?page=10", [f"{page}?page=11"], rules) == (
            expected and f"{page}?page=11"
        )
        assert chosen(f"{page}?v=abc", [f"{page}?v=xyz"], rules) == (expected and f"{page}?v=xyz")


def test_a_rules_file_with_a_bad_regular_expression_is_refused_with_its_line(
    tmp_path: Path,
) -> None:
    extra = tmp_path / "fuzzy.yaml"
    extra.write_text(
        "rules:\n"
        "  - name: shop-carts\n"
        "    domains: [shop.example]\n"
        "    ignore:\n"
        "      - name_pattern: 'cart_(id'\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as refused:
        FuzzyRules.load(extra)
    message = str(refused.value)
    assert message.startswith(f"{extra}, line 5: rule 'shop-carts': ignore[0].name_pattern: ")
    assert "bad regular expression 'cart_(id'" in message


def test_a_rules_file_with_an_unknown_key_is_refused_with_its_line() -> None:
    text = "rules:\n  - name: typo\n    ignored:\n      - name: edition\n"
    with pytest.raises(ConfigError, match=r"^ops\.yaml, line 3: rule 'typo': ignored: unknown key"):
        FuzzyRules.from_text(text, "ops.yaml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules:\n  - ignore: [{name: a}]\n", "line 2: rule #1: name: is required"),
        ("rules:\n  - name: a\n    domains: [a.example]\n", "line 2: rule 'a': says nothing"),
        ("rules:\n  - name: a\n    min_score: 2\n", "line 3: rule 'a': min_score: must be"),
        ("rules:\n  - name: a\n    min_score: high\n", "line 3: rule 'a': min_score: must be"),
        ("rules:\n  - name: a\n    domains: ['http://a.example/']\n    min_score: 1\n", "line 3"),
        ("rules:\n  - name: a\n    static: {extensions: [a/b]}\n", "line 3: rule 'a': static."),
        ("rules:\n  - name: a\n    ignore: [{name: a, name_pattern: b}]\n", "name or name_pat"),
        ("rules:\n  - {name: a, min_score: 1}\n  - {name: a, min_score: 1}\n", "line 3: rule 'a'"),
        ("rules:\n  - name: !!python/name:os.system\n    min_score: 1\n", "line 2: rule #1"),
        ("rules:\n  - name: a\n   min_score: [\n", "line 3: not valid YAML"),
        ("rulez: []\n", "line 1: rulez: unknown key"),
    ],
)
def test_a_malformed_rules_file_is_refused_with_its_line_and_rule(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        FuzzyRules.from_text(text, "ops.yaml")
    assert str(refused.value).startswith("ops.yaml, ")
    assert message in str(refused.value)


def test_an_operator_file_cannot_reuse_a_default_rule_name(tmp_path: Path) -> None:
    extra = tmp_path / "fuzzy.yaml"
    extra.write_text("rules:\n  - name: tracking\n    min_score: 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="line 2: rule 'tracking': name: 'tracking' already"):
        FuzzyRules.load(extra)


def test_a_missing_operator_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        FuzzyRules.load(tmp_path / "absent.yaml")


def test_an_empty_rules_file_has_no_rules() -> None:
    rules = FuzzyRules.from_text("", "empty.yaml")
    assert chosen(f"{SCRIPT}?_=1", [f"{SCRIPT}?_=2"], rules) is None
    assert chosen(f"{SCRIPT}?_=1", [f"{SCRIPT}?_=1"], rules) == f"{SCRIPT}?_=1"


@pytest.mark.parametrize(
    "url",
    [
        "",
        "?",
        "&&&=",
        "http://[::1/a.js?_=1",
        "http://%zz/a.js?_=1",
        "http://bü cher/?_=1",
        "ftp://x/?\x00=\udcff",
        "http://a/?" + "x=1&" * 5000,
        "%%%?%%%=%%%",
    ],
)
def test_a_malformed_url_never_raises(url: str) -> None:
    RULES.match(url, [url, "http://example.com/?_=1", "?", "http://[/?q=1"])
    RULES.match(f"{SCRIPT}?q=1", [url])


def test_the_edit_distance_is_that_of_the_textbook_algorithm() -> None:
    def textbook(one: str, other: str) -> int:
        previous = list(range(len(other) + 1))
        for row, a in enumerate(one, 1):
            current = [row]
            for column, b in enumerate(other, 1):
                cost = previous[column - 1] + (a != b)
                current.append(min(previous[column] + 1, current[column - 1] + 1, cost))
            previous = current
        return previous[-1]

    generator = random.Random(7)
    for _ in range(2000):
        one = "".join(generator.choices("abc", k=generator.randint(0, 40)))
        other = "".join(generator.choices("abcd", k=generator.randint(0, 80)))
        assert _levenshtein(one, other) == textbook(one, other), (one, other)
