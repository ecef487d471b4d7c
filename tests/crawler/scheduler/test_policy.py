"""The scheduler's policies: filters on site reports, the language guesser, priorities of sites
not crawled yet, re-crawl intervals, and change rates from chunk signature files."""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from archive.errors import CorruptFile, DlwebError
from crawler.report import chunk_signatures
from crawler.scheduler.policy import (
    Filters,
    change_rate,
    guess_language,
    judge,
    new_chunk_share,
    new_content_share,
    next_interval,
    priority,
)


def report(
    pages: int = 20,
    words: int = 4000,
    keywords: dict[str, int] | None = None,
    types: dict[str, int] | None = None,
) -> dict[str, Any]:
    return {
        "pages": pages,
        "content_types": {"text/html": pages, "image/png": 7} if types is None else types,
        "text": {"documents": pages, "words": words, "keywords": keywords or {}},
    }


# -- judge --------------------------------------------------------------------------------------

MUSEUMS = Filters(keywords=("museum", "painting"), min_keyword_hits=3, languages=("fr", "en"))


def test_a_site_on_topic_passes_with_its_keyword_hits_per_thousand_words() -> None:
    verdict = judge(report(keywords={"museum": 6, "painting": 4, "other": 50}), MUSEUMS, "fr")
    assert verdict.passed and verdict.reasons == []
    assert verdict.relevance == pytest.approx(1000 * 10 / 4000)


def test_a_site_off_topic_fails_every_filter_it_misses() -> None:
    verdict = judge(report(pages=0, keywords={"museum": 2}, types={"image/png": 3}), MUSEUMS, "de")
    assert not verdict.passed
    assert verdict.relevance == pytest.approx(1000 * 2 / 4000)
    assert verdict.reasons == [
        "0 pages, fewer than 1",
        "no page of type text/html (served: image/png)",
        "language de, not fr, en",
        "2 keyword hits, fewer than 3",
    ]


def test_content_types_are_compared_without_parameters() -> None:
    filters = Filters(content_types=("text/html", "application/pdf"))
    assert judge(report(types={"Application/PDF; version=1.4": 2}), filters).passed
    assert not judge(report(types={"text/html": 0, "image/gif": 4}), filters).passed
    assert judge(report(types={}), Filters(content_types=())).passed


def test_without_keywords_every_site_is_as_relevant_and_language_may_be_unknown() -> None:
    verdict = judge(report(), Filters(languages=("fr",)))
    assert verdict.passed and verdict.relevance == 1.0
    assert judge(report(), Filters(languages=("fr",)), "").passed


def test_a_malformed_report_fails_without_an_exception() -> None:
    bad: dict[str, Any] = {"pages": "many", "content_types": [1, 2], "text": {"keywords": 5}}
    verdict = judge(bad, MUSEUMS)
    assert not verdict.passed and verdict.relevance == 0.0
    assert len(verdict.reasons) == 3
    assert not judge({"pages": float("inf"), "text": None}, Filters()).passed


# -- guess_language -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("The museum is open on Sunday and the entry is free for children.", "en"),
        ("Le musée est ouvert le dimanche et l'entrée est gratuite pour les enfants.", "fr"),
        ("Das Museum ist am Sonntag geöffnet und der Eintritt ist für Kinder frei.", "de"),
        ("El museo está abierto el domingo y la entrada es gratuita para los niños.", "es"),
        ("Il museo è aperto la domenica e l'ingresso è gratuito per i bambini.", "it"),
        ("Het museum is op zondag open en de toegang is gratis voor de kinderen.", "nl"),
        ("O museu está aberto no domingo e a entrada é gratuita para as crianças.", "pt"),
        ("What is this?", "en"),
        ("Où est la gare, s'il vous plaît ?", "fr"),
        ("Wo ist der Bahnhof, bitte?", "de"),
    ],
)
def test_guess_language_of_short_texts(text: str, language: str) -> None:
    assert guess_language(text) == language


@pytest.mark.parametrize("text", ["", "museum", "Paris 2024 — 12:30", "de la"])
def test_guess_language_says_nothing_without_enough_function_words(text: str) -> None:
    assert guess_language(text) == ""


# -- priority -----------------------------------------------------------------------------------


def test_priority_formula_and_monotony() -> None:
    assert priority([2.0, 4.0], [0.5, 0.25], 0.1) == pytest.approx(3.0 * 1.75 + 0.1)
    assert priority([], [], 0.3) == 0.3
    base = priority([2.0, 4.0], [0.5, 0.25], 0.1)
    assert priority([2.5, 4.0], [0.5, 0.25], 0.1) > base
    assert priority([2.0, 4.0], [0.5, 0.5], 0.1) > base
    assert priority([2.0, 4.0], [0.5, 0.25], 0.2) > base


# -- temporal -----------------------------------------------------------------------------------


def test_next_interval_halves_doubles_keeps_and_clamps() -> None:
    day = 86_400.0
    assert next_interval(day, 0.5) == day / 2
    assert next_interval(day, 0.01) == day * 2
    assert next_interval(day, 0.1) == day
    assert next_interval(day, 0.3) == day  # "more than high" halves
    assert next_interval(5000, 0.9) == 3600  # not below the shortest
    assert next_interval(20 * day, 0.0) == 30 * day  # nor above the longest
    assert next_interval(0, 0.0) == 3600
    assert next_interval(100, 0.9, shortest=10, longest=50) == 50


def chunk_file(path: Path, signatures: list[int]) -> Path:
    np.array(signatures, dtype="<u8").tofile(path)
    return path


def test_change_rate_is_the_larger_of_new_chunks_and_new_contents(tmp_path: Path) -> None:
    before = chunk_file(tmp_path / "1.chunks", [1, 2, 3, 4, 2**64 - 1])
    after = chunk_file(tmp_path / "2.chunks", [3, 4, 5, 6, 2**64 - 1, 5, 5])  # 5 repeats
    assert new_chunk_share(before, after) == pytest.approx(2 / 5)
    few_contents = {"new_contents": 1, "known_contents": 9}
    many_contents = {"new_contents": 7, "known_contents": 3}
    assert change_rate(few_contents, before, after) == pytest.approx(0.4)
    assert change_rate(many_contents, before, after) == pytest.approx(0.7)
    assert change_rate(many_contents, None, after) == pytest.approx(0.7)  # first crawl
    assert change_rate({}, before, before) == 0.0
    empty = chunk_file(tmp_path / "3.chunks", [])
    assert new_chunk_share(before, empty) == 0.0
    assert new_chunk_share(empty, after) == 1.0


def test_an_edit_changes_few_of_the_crawler_s_chunks(tmp_path: Path) -> None:
    rng = random.Random(3)
    vocabulary = [
        "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) for _ in range(500)
    ]
    words = rng.choices(vocabulary, k=5000)
    edited = [*words[:2500], "a", "sentence", "inserted", *words[2500:], "appended"]
    before = chunk_file(tmp_path / "1.chunks", chunk_signatures(words))
    after = chunk_file(tmp_path / "2.chunks", chunk_signatures(edited))
    assert 0 < new_chunk_share(before, after) < 0.02


def test_new_content_share() -> None:
    assert new_content_share({"new_contents": 0, "known_contents": 0}) == 0.0
    assert new_content_share({"new_contents": 3, "known_contents": 1}) == 0.75
    assert new_content_share({"new_contents": "3", "known_contents": -1}) == 0.0


def test_a_bad_chunk_file_is_a_clear_error(tmp_path: Path) -> None:
    good = chunk_file(tmp_path / "good.chunks", [1, 2])
    cut = tmp_path / "cut.chunks"
    cut.write_bytes(b"\x01" * 12)
    with pytest.raises(CorruptFile, match="12 bytes, not a whole number"):
        new_chunk_share(good, cut)
    with pytest.raises(DlwebError, match="missing.chunks: cannot read"):
        change_rate({}, tmp_path / "missing.chunks", good)
