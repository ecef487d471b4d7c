"""Full-text queries that tantivy cannot withstand are refused before it reads them: too long
(over 1,000 characters), nested too deeply (over 16 levels, in any of the ways its grammar
nests), or of too many words (over 64). A query near those limits is run whole (hits, facets,
snippets) in a process of its own (query_runner.py), so that a query which crashed tantivy
would end that process, not the tests; so is each query of a fuzz run, arbitrary text and deep
nestings, which must all be answered or refused."""

import json
import select
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import tantivy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from search.errors import BadQuery, OverBudget
from search.index import QUERIES, SEARCHES_AT_ONCE, mark_built, parse, search
from tests.security.query_runner import small_index

ANSWER_TIMEOUT = 30.0  # seconds for the runner to answer one query: past it, it hangs
# The limits docs/search.md gives.
MAX_QUERY_CHARS = 1_000
MAX_DEPTH = 16
MAX_WORDS = 64

# Ways tantivy's grammar nests, each as the query of n levels, and the most levels the checker
# lets through (MAX_DEPTH levels: a NOT, + or - before a group or a term is a level too).
NESTINGS: dict[str, tuple[Callable[[int], str], int]] = {
    "parentheses": (lambda n: "(" * n + "a" + ")" * n, MAX_DEPTH),
    "negated terms in groups": (lambda n: "b (-" * n + "a" + ")" * n, MAX_DEPTH - 1),
    "negated groups": (lambda n: "(-" * n + "a" + ")" * n, MAX_DEPTH // 2),
    "required groups": (lambda n: "(+" * n + "a" + ")" * n, MAX_DEPTH // 2),
    "a chain of NOTs": (lambda n: "b " + "NOT " * n + "a", MAX_DEPTH),
    "NOT and AND": (lambda n: "b AND (NOT " * n + "a" + ")" * n, MAX_DEPTH - 1),
    "field groups": (lambda n: "title:(" * n + "a" + ")" * n, MAX_DEPTH),
    "boosted groups": (lambda n: "(" * n + "a" + ")^2" * n, MAX_DEPTH),
    "phrases in groups": (lambda n: '("a b" ' * n + "'c'" + ")" * n, MAX_DEPTH),
    "ranges in groups": (lambda n: "(year:[2019 TO 2021] " * n + "a" + ")" * n, MAX_DEPTH),
    "escapes and quotes": (lambda n: '(a\\" "b\\" (" ' * n + "c" + ")" * n, MAX_DEPTH),
}


class Runner:
    """query_runner.py as a process, asked one query at a time."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.security.query_runner"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._line() == "ready"

    def _line(self) -> str:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], ANSWER_TIMEOUT)
        if not ready:
            return "no answer"
        line = self.process.stdout.readline().strip()
        return line or f"ended with status {self.process.wait()}"

    def run(self, query: str) -> str:
        """`ok`, `BadQuery`, or how the runner failed: it ended (a crash), or did not answer."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(query) + "\n")
        self.process.stdin.flush()
        return self._line()

    def peak_memory(self) -> int:
        """The most memory the runner has held, in bytes."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
        return int(line.split()[1]) * 1024

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture(scope="module")
def runner() -> Iterator[Runner]:
    started = Runner()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> tantivy.Index:
    return small_index(tmp_path_factory.mktemp("index"))


@pytest.mark.parametrize("nesting", NESTINGS)
def test_a_query_nested_past_the_limit_is_refused_and_one_at_it_is_run(
    nesting: str, index: tantivy.Index, runner: Runner
) -> None:
    make, deepest = NESTINGS[nesting]
    with pytest.raises(BadQuery, match=f"nests more than {MAX_DEPTH} levels deep"):
        parse(index, make(deepest + 1))
    assert_not_refused(index, make(deepest))
    assert runner.run(make(deepest)) in ("ok", "BadQuery")


def assert_not_refused(index: tantivy.Index, query: str) -> None:
    """The query is read by tantivy: parsed, or found malformed, but not refused for a limit."""
    try:
        parse(index, query)
    except BadQuery as malformed:
        assert "cannot read the query" in str(malformed)


def test_a_readers_queries_pass_and_those_too_long_or_of_too_many_words_are_refused(
    index: tantivy.Index, runner: Runner
) -> None:
    for query in (
        "lighthouse keeper",
        '"east wing"',
        "lighthouse AND (keeper OR guide) -title:shop year:2019",
        "time:[2019-01-01T00:00:00Z TO 2020-01-01T00:00:00Z]",
        '(museum OR menu) domain:"bbc.co.uk" content_type:"text/plain"',
        'url:"http://example.org/a/page.html"',
        "a" * MAX_QUERY_CHARS,
        " ".join(["lighthouse"] * MAX_WORDS),
    ):
        parse(index, query)
        assert runner.run(query) == "ok"
    with pytest.raises(BadQuery, match=f"at most {MAX_QUERY_CHARS:,} are read"):
        parse(index, "a" * (MAX_QUERY_CHARS + 1))
    with pytest.raises(BadQuery, match=f"has {MAX_WORDS + 1} words; at most {MAX_WORDS}"):
        parse(index, " ".join(["lighthouse"] * (MAX_WORDS + 1)))
    # Each word of a phrase counts, and each part of a word tantivy splits (a-b is two).
    with pytest.raises(BadQuery, match="words"):
        parse(index, '"' + "-".join(["a"] * (MAX_WORDS + 1)) + '"')


def test_the_command_line_refuses_a_query_nested_9000_deep_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    small_index(folder)
    mark_built(folder, {})
    deep = "(" * 9000 + "a" + ")" * 9000
    done = subprocess.run(
        [sys.executable, "-m", "dlweb", "search", "--index", str(folder), deep],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert (
        done.stderr == "dlweb: error: the query is 18,001 characters long; at most 1,000 are read\n"
    )


def test_a_search_not_answered_within_its_budget_is_refused_with_503_and_the_next_runs(
    index: tantivy.Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(QUERIES, "seconds", 0.2)
    began, gate = threading.Semaphore(0), threading.Event()

    def hold() -> None:
        """A search that cannot end until the gate opens, holding a thread of QUERIES."""
        began.release()
        gate.wait()

    refused: list[bool] = []

    def asker() -> None:
        try:
            QUERIES.run(hold)
        except OverBudget:
            refused.append(True)
        else:
            refused.append(False)

    askers = [threading.Thread(target=asker) for _ in range(SEARCHES_AT_ONCE)]
    for thread in askers:
        thread.start()
    for _ in askers:
        began.acquire()  # every thread of QUERIES busy
    try:
        with pytest.raises(OverBudget, match="the search took longer than 0.2 s") as late:
            search(index, "lighthouse")
        assert late.value.status == 503
        for thread in askers:  # each gives up on its held search within its own budget
            thread.join(timeout=30)
    finally:
        gate.set()
        for thread in askers:
            thread.join()
    assert refused == [True] * SEARCHES_AT_ONCE
    assert [hit.url for hit in search(index, "lighthouse").hits] == [
        "http://a.test/", "http://b.test/x",
    ]  # fmt: skip


# Pieces of tantivy's syntax, and what nests, for the fuzz run to put together.
PIECES = [
    "(", ")", "-", "+", "NOT ", "AND ", "OR ", "IN ", '"', "'", "\\", "[", "]", "{", "}",
    "^2", "^", "~2", "*", ":", "title:", "year:", "TO", ">=", "a", "b", "2019", " ", "é", "\t",
]  # fmt: skip
UNITS = ["(", "(-", "(+", "b (-", "NOT ", "title:(", "(NOT ", '("a" ', "a^2 (", "-", "\\("]
TEXTS = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(PIECES), max_size=300).map("".join),
    st.builds(
        lambda unit, levels, core, unclosed: unit * levels + core + ")" * (levels - unclosed),
        st.sampled_from(UNITS),
        # About the limits, and deep enough to crash tantivy (some 900 or 8,000 levels).
        st.one_of(st.integers(0, 40), st.integers(900, 2_000), st.just(9_000)),
        st.sampled_from(["a", '"a b"', "year:[1 TO 2]", "", "a)", '"'] + PIECES),
        st.integers(0, 2),
    ),
)


@settings(
    max_examples=1500,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(query=TEXTS)
def test_any_query_is_answered_or_refused_without_a_crash_a_hang_or_a_gigabyte(
    query: str, runner: Runner
) -> None:
    assert runner.run(query) in ("ok", "BadQuery"), query
    assert runner.peak_memory() < 1024**3
