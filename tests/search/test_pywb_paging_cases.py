"""pywb's own tests of its paged CDX index (`pywb/warcserver/index/test/test_zipnum.py`, read by
name from pywb's source release), asked of the archive after an import of the WARC files pywb's
sample index was made from.

pywb's zipnum index cuts its CDX file into blocks of lines (four a block in its sample, 38
blocks); a block here is BLOCK_KEYS URL keys (search/cdx.py says why). So where a case's figure
is a count of pywb's blocks, the archive's is the count of its blocks over the same captures: the
URL keys of the range in pywb's own sample CDX file, BLOCK_KEYS a block. Everything else is
pywb's expectation as it stands: the page size, an empty range's zero blocks and pages, an exact
URL's one block, the parameters the count ignores, the error for a page past the last, the lines
of every unpaged query, and that a page's lines are lines of the range in the range's order.
pywb's sample index also has two lines made by hand (`time-zones/X` and `/Y`, pointing at the
record of `time-zones`); no WARC record is theirs, so pywb's lines are compared where a record
of the WARC files is theirs.
"""

import ast
import asyncio
import doctest
import gzip
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.timeutils import iso_date_to_timestamp

from deploy.testing.cluster import Cluster
from deploy.testing.pywb import pywb_source
from search import cdx
from tests.master.conftest import module_cluster_factory  # noqa: F401  (a fixture)

from .cdx_api import Paged
from .conftest import dlweb

ZIPNUM_TESTS = "pywb/warcserver/index/test/test_zipnum.py"
SAMPLE_CDX = "sample_archive/zipcdx/zipnum-sample.cdx.gz"
SAMPLE_WARCS = ("iana.warc.gz", "example.warc.gz", "dupes.warc.gz")  # those its lines name
# pywb's tests of the page count, by name.
COUNT_CASES = (
    "test_blocks_def_page_size",
    "test_blocks_def_size_2",
    "test_blocks_set_page_size",
    "test_blocks_alt_q",
    "test_blocks_secondary_match",
    "test_blocks_no_match",
    "test_blocks_zero_pages",
    "test_blocks_ignore_filter_params",
    "test_blocks_ignore_timestamp_params",
)


@dataclass(frozen=True)
class Case:
    """A query of pywb's tests and what pywb answers it: a page count, lines, or an error."""

    name: str
    params: dict[str, Any]
    answer: Any

    @property
    def query(self) -> str:
        return urlencode({k: str(v).lower() if v is True else v for k, v in self.params.items()})


def _call_params(call: ast.Call) -> dict[str, Any]:
    """The keyword arguments of a call of pywb's test helpers, with its URL."""
    params = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg}
    if call.args:
        params["url"] = ast.literal_eval(call.args[0])
    return params


def count_case(source: str, name: str) -> Case:
    """A `test_blocks_*` function of pywb's: its query, and the page count it asserts."""
    function = next(
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and node.name == name
    )
    call = next(node for node in ast.walk(function) if isinstance(node, ast.Call) and node.keywords)
    compared = next(node for node in ast.walk(function) if isinstance(node, ast.Compare))
    return Case(name, _call_params(call), ast.literal_eval(compared.comparators[0]))


def error_cases(source: str, name: str) -> list[Case]:
    """The queries of a test function of pywb's that expects each of them refused."""
    function = next(
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and node.name == name
    )
    calls = [node for node in ast.walk(function) if isinstance(node, ast.Call) and node.keywords]
    return [Case(name, _call_params(call), None) for call in calls]


def doctest_cases(source: str) -> Iterator[Case]:
    """The `zip_ops_test` examples of pywb's module docstring: a query and the lines pywb
    prints for it (an error: its message). The examples on pywb's bad index files are its own."""
    docstring = ast.get_docstring(ast.parse(source), clean=False) or ""
    for number, example in enumerate(doctest.DocTestParser().get_examples(docstring)):
        call = ast.parse(example.source.strip(), mode="eval").body
        if not isinstance(call, ast.Call) or getattr(call.func, "id", "") != "zip_ops_test":
            continue
        answer = example.exc_msg if example.exc_msg else example.want.splitlines()
        yield Case(f"example {number}", _call_params(call), answer)


@dataclass
class Sample:
    paged: Paged
    keys: list[str]  # the URL keys of pywb's sample CDX file, sorted, each once
    archived: set[tuple[str, str]]  # (URL, 14-digit timestamp) of each record of the WARCs

    def recorded(self, lines: list[str]) -> list[tuple[str, str, str, str]]:
        """pywb's lines whose capture is a record of the WARC files."""
        rows = [_fields(line) for line in lines]
        return [row for row in rows if (row[2], row[1]) in self.archived]

    def blocks(self, params: dict[str, Any]) -> int:
        """The archive's blocks for the captures of pywb's sample that a query matches."""
        query = cdx.parse_query(
            [(k, str(v)) for k, v in params.items() if k in ("url", "matchType")]
        )
        keys = [key for key in self.keys if query.key <= key < query.end_key]
        if query.match_type == "exact":
            return 1 if keys else 0
        return cdx.block_count(len(keys))


@pytest.fixture(scope="module")
def pywb_tests() -> str:
    return (pywb_source() / ZIPNUM_TESTS).read_text()


@pytest.fixture(scope="module")
def sample(
    module_cluster_factory: Callable[..., Cluster],  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Sample:
    """A one-node cluster with pywb's sample WARCs imported and the search index rebuilt."""
    source = pywb_source()
    cluster = module_cluster_factory(nodes=1, replicas=1)
    config = str(cluster.config_path)
    warcs = [str(source / "sample_archive" / "warcs" / name) for name in SAMPLE_WARCS]
    done = dlweb("import", "-c", config, *warcs)
    assert done.returncode == 0, done.stdout + done.stderr
    index = tmp_path_factory.mktemp("pywb-sample") / "index"
    done = dlweb("search", "rebuild", "-c", config, "--index", str(index))
    assert done.returncode == 0, done.stdout + done.stderr
    with gzip.open(source / SAMPLE_CDX, "rt") as lines:
        keys = sorted({line.split(" ", 1)[0] for line in lines if line.strip()})
    archived = set()
    for warc in warcs:
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                url = record.rec_headers.get_header("WARC-Target-URI")
                stamp = iso_date_to_timestamp(record.rec_headers.get_header("WARC-Date") or "")
                archived.add((url, stamp))
    return Sample(Paged(cluster, index), keys, archived)


def _fields(line: str) -> tuple[str, str, str, str]:
    """A CDX line of pywb's (CDX 11 text) or of ours (JSON) as (urlkey, timestamp, url, status)."""
    if line.startswith("{"):
        row = json.loads(line)
        return row["urlkey"], row["timestamp"], row["url"], row.get("status", "-")
    urlkey, timestamp, url, _, status = line.split(" ")[:5]
    return urlkey, timestamp, url, status


async def _rows(paged: Paged, query: str) -> list[tuple[str, str, str, str]]:
    return [_fields(line) for line in await paged.lines(query + "&output=json")]


async def _page_count(paged: Paged, params: dict[str, Any]) -> int:
    counted = {k: v for k, v in params.items() if k not in ("page", "showPagedIndex", "output")}
    status, _, body = await paged.ask(Case("", {**counted, "showNumPages": True}, None).query)
    assert status == 200, body
    pages: int = json.loads(body)["pages"]
    return pages


@pytest.mark.parametrize("name", COUNT_CASES)
def test_pywbs_page_counts_hold_over_its_sample(name: str, pywb_tests: str, sample: Sample) -> None:
    case = count_case(pywb_tests, name)
    status, kind, body = asyncio.run(sample.paged.ask(case.query))
    assert (status, kind) == (200, "application/json"), body
    got = json.loads(body)
    blocks = sample.blocks(case.params) if case.answer["blocks"] else 0
    assert blocks or not case.answer["blocks"], f"{name}: pywb finds blocks, the sample no key"
    size = case.answer["pageSize"]
    assert got == {"blocks": blocks, "pages": cdx.page_count(blocks, size), "pageSize": size}


def test_pywbs_bad_page_values_are_refused(pywb_tests: str, sample: Sample) -> None:
    cases = error_cases(pywb_tests, "test_invalid_int_param")
    assert {name for case in cases for name in case.params} >= {"page", "pageSize"}
    for case in cases:
        said = asyncio.run(sample.paged.error(case.query))
        assert "not-an-integer" in said and "give a whole" in said, said


def test_pywbs_examples_hold_over_its_sample(pywb_tests: str, sample: Sample) -> None:
    cases = list(doctest_cases(pywb_tests))
    assert len(cases) >= 15, "pywb's examples were not found"
    for case in cases:
        asyncio.run(_check_example(sample, case))


async def _check_example(sample: Sample, case: Case) -> None:
    paged, params = sample.paged, case.params
    where = f"{case.name}: {case.query}"
    if isinstance(case.answer, str):  # pywb's error for a page past the last
        pages = await _page_count(paged, params)
        assert params["page"] >= pages, where
        said = await paged.error(case.query)
        assert said == f"Page {params['page']} invalid: First Page is 0, Last Page is {pages - 1}"
        return
    if "page" not in params and not params.get("showPagedIndex"):
        expected = sample.recorded(case.answer)
        rows = await _rows(paged, case.query)
        assert rows == expected, f"{where}: {rows}"
        return
    if not sample.blocks(params):
        # pywb's zipnum lists its last block for a range past its last key (it cannot tell
        # whether that block holds captures of the range); the URL-key index can: none.
        assert await paged.lines(case.query) == [], where
        return
    await _check_pages(sample, case)


async def _check_pages(sample: Sample, case: Case) -> None:
    """A paged example: the archive's pages of the query list the unpaged lines once, in order,
    the lines pywb shows for its page among them; its paged index lists one line a block."""
    paged, params = sample.paged, case.params
    unpaged = {k: v for k, v in params.items() if k not in ("page", "pageSize", "showPagedIndex")}
    whole = await _rows(paged, Case("", unpaged, None).query)
    pages = await _page_count(paged, params)
    listed = []
    for page in range(pages):
        listed += await _rows(
            paged,
            Case("", {**unpaged, "page": page, "pageSize": params.get("pageSize", 10)}, None).query,
        )
    assert listed == whole, case.name
    if params.get("showPagedIndex"):
        asked = {**params, "page": min(params.get("page", 0), pages - 1)}
        index = await paged.lines(Case("", asked, None).query)
        assert index and all(
            set(json.loads(line)) == {"urlkey", "part", "offset", "length", "lineno"}
            if line.startswith("{")
            else len(line.split("\t")) == 5
            for line in index
        ), case.name
        return
    shown = sample.recorded(case.answer)
    assert shown, case.name
    assert [row for row in shown if row not in whole] == [], case.name
