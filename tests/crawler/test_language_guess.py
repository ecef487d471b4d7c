"""The crawler's language guesser, judged on texts its judge texts are not made of (articles of
the same declaration the judge texts leave out, in language_texts/) and against py3langid."""

import time
from collections.abc import Iterator
from pathlib import Path

import py3langid
import pytest

from crawler.language_guess import LANGUAGES, MAX_CHARS, guess_language, judge_filters

HELD_OUT = Path(__file__).with_name("language_texts")
CUTS = (300, 1_000)  # characters of the held-out texts a guess is given
PIECES = 4  # pieces of each held-out text, spread over it, at each cut


def held_out_pieces() -> Iterator[tuple[str, str]]:
    """(language, piece of its held-out text) for each language shipped, cut at each of CUTS."""
    for language in LANGUAGES:
        text = (HELD_OUT / f"{language}.txt").read_text("utf-8").replace("\n", " ")
        for cut in CUTS:
            step = max(cut, len(text) // PIECES)
            for start in range(0, len(text) - cut + 1, step)[:PIECES]:
                yield language, text[start : start + cut]


PIECES_OF = list(held_out_pieces())


def test_judge_texts_cover_at_least_24_languages_each_with_a_held_out_text() -> None:
    assert len(LANGUAGES) >= 24
    assert all((HELD_OUT / f"{language}.txt").is_file() for language in LANGUAGES)


def test_the_filters_are_built_in_well_under_a_second() -> None:
    judge_filters.cache_clear()
    started = time.process_time()
    judge_filters()
    assert time.process_time() - started < 0.5  # about 0.1 s


def test_names_the_right_language_of_at_least_90_percent_of_held_out_texts() -> None:
    right = sum(guess_language(text) == language for language, text in PIECES_OF)
    languages = {language for language, _ in PIECES_OF}
    assert len(languages) >= 20
    share = right / len(PIECES_OF)  # measured: 343 of 343
    assert share >= 0.9, f"right for {right} of {len(PIECES_OF)} texts ({share:.1%})"


def test_agrees_with_py3langid_on_at_least_85_percent_of_held_out_texts() -> None:
    agreed = sum(guess_language(text) == py3langid.classify(text)[0] for _, text in PIECES_OF)
    share = agreed / len(PIECES_OF)  # measured: 340 of 343 (it takes 3 Indonesian ones for Malay)
    assert share >= 0.85, f"agreed on {agreed} of {len(PIECES_OF)} texts ({share:.1%})"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "museum",  # a word of many languages
        "de la",
        "Paris 2024 — 12:30 · 75001",  # digits and punctuation tell nothing
        "Ceci est un test. This is a test. Das ist ein Test. Это тест. これはテストです。",
        "ኢትዮጵያ በአፍሪካ ቀንድ የምትገኝ ሀገር ናት። ዋና ከተማዋ አዲስ አበባ ናት።",  # Ge'ez: no judge text
        "ᐃᓄᒃᑎᑐᑦ ᐅᖃᐅᓯᖅ ᐃᓄᐃᑦ ᐅᖃᐅᓯᖓᑦ ᓄᓇᕗᒻᒥ ᐊᒻᒪ ᓄᓇᕕᒻᒥ ᐅᖃᐅᓯᐅᔪᖅ",  # Canadian syllabics
    ],
)
def test_short_mixed_or_unknown_script_text_names_no_language(text: str) -> None:
    assert guess_language(text) == ""


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Our shop ships worldwide: add the items to your basket, then pay by card.", "en"),
        ("Unser Geschäft liefert weltweit. Legen Sie die Artikel in den Warenkorb.", "de"),
        ("Nasz sklep wysyła na cały świat. Dodaj produkty do koszyka i zapłać kartą.", "pl"),
        ("Москва является столицей России. В городе много музеев, театров и парков.", "ru"),
        ("Kauppamme toimittaa tuotteita kaikkialle maailmaan. Maksa kortilla.", "fi"),
        ("当店は世界中に発送しています。商品をカートに入れてカードでお支払いください。", "ja"),
        ("本店向全世界发货。请把商品加入购物车并用银行卡付款，送货通常需要三到五个工作日。", "zh"),
    ],
)
def test_names_the_language_of_text_unlike_its_judge_texts(text: str, language: str) -> None:
    assert guess_language(text) == language


@pytest.mark.parametrize(
    ("piece", "times"), [("a", 50_000_000), ("Zoë ", 10_000_000), ("語", 50_000_000)]
)
def test_a_huge_text_is_read_only_as_far_as_its_first_characters(piece: str, times: int) -> None:
    hostile = piece * times
    judge_filters()
    started = time.process_time()
    guessed = guess_language(hostile)
    assert time.process_time() - started < 0.5
    assert guessed == guess_language(hostile[:MAX_CHARS])
