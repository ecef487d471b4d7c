"""The CDX API's filters are read by RE2, in time linear in the text matched whatever the
expression, and a CDX answer has a time budget: a fuzz run of the filter parser (arbitrary
text, and expressions that nest quantifiers, which take Python's re hours over a long URL),
and an answer that runs out of time in its filtering."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from search import cdx
from search.budget import answer_deadline
from search.errors import BadCdxQuery, OverBudget

# Rows with long fields: a backtracking engine takes 2**40 steps over them for `.*(a|a)*Q`.
ROWS = [
    cdx.Row(
        urlkey="test,x)/" + "a" * 40,
        timestamp="20190301100000",
        url="http://x.test/" + "a" * length,
        status="200",
        digest="sha256:" + "A" * 52,
        time=1_551_434_400_000_000,
        header="b" * 64,
        mime="text/html",
    )
    for length in (40, 10_000)
]
PIECES = [
    "(",
    ")",
    "*",
    "+",
    "?",
    "|",
    ".",
    "a",
    "Q",
    "\\1",
    "(?=",
    "(?<!",
    "{25}",
    "[",
    "]",
    "^",
    "$",
]
NESTED = st.builds(
    lambda inner, levels, quantifier: (
        ".*" + "(" * levels + inner + (")" + quantifier) * levels + "Q"
    ),
    st.sampled_from(["a|a", "a|aa", "a+", "a*", ".", "a?a"]),
    st.integers(1, 4),
    st.sampled_from(["*", "+", "{2,}"]),
)
FILTERS = st.tuples(
    st.sampled_from(["", "!"]),
    st.sampled_from(["~url:", "~", "~status:", "=url:", "url:", "~mime:"]),
    st.one_of(
        st.text(max_size=100), st.lists(st.sampled_from(PIECES), max_size=60).map("".join), NESTED
    ),
).map("".join)


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(text=FILTERS)
def test_any_filter_is_refused_in_one_line_or_matched_in_linear_time(text: str) -> None:
    try:
        matches = cdx.parse_filter(text)
    except BadCdxQuery as refused:
        assert "\n" not in str(refused)
        return
    for row in ROWS:
        assert matches(row) in (True, False)


def test_a_cdx_answer_past_its_budget_stops_in_its_filtering_with_503() -> None:
    query = cdx.parse_query([("url", "x.test/*"), ("filter", "~url:.*a$")])
    rows = ROWS[:1] * 10_000
    spent = answer_deadline(0.0, "the CDX query", "narrow it")
    with pytest.raises(OverBudget, match="the CDX query took longer than 0 s: narrow it") as over:
        cdx.apply_filters(query, rows, spent)
    assert over.value.status == 503
    assert len(cdx.apply_filters(query, rows, answer_deadline(600.0, "the CDX query", ""))) == len(
        rows
    )
