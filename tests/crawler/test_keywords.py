"""A site's characteristic phrases, found by variable-length n-grams from its text."""

import random

from crawler.keywords import STOP_WORDS, PhraseCounter, phrase_words
from crawler.report import SiteReport
from crawler.report_text import told

# Pages of a site about one museum: its name comes back on every page, among other words.
MUSEUM_PAGES = [
    "The Museum of Fine Arts opens a new wing for Flemish tapestries this spring.",
    "Tickets: the Museum of Fine Arts is free for students under twenty-five.",
    "Guided tours of the Museum of Fine Arts leave the great hall at noon.",
    "Our fine arts library lends catalogues. Click here to read more.",
    "Flemish tapestries restored by the Museum of Fine Arts travel to Ghent.",
    "Volunteers help the Museum of Fine Arts with its Flemish tapestries.",
]


def counted(pages: list[str], counter: PhraseCounter | None = None) -> PhraseCounter:
    counter = counter or PhraseCounter()
    for text in pages:
        counter.add(text)
    return counter


def test_a_repeated_phrase_comes_out_as_one_keyword_not_its_words() -> None:
    phrases = dict(counted(MUSEUM_PAGES).phrases())
    assert phrases["museum of fine arts"] == 5
    assert phrases["flemish tapestries"] == 3
    for part in ("museum", "fine arts", "fine", "arts", "flemish", "tapestries"):
        assert part not in phrases


def test_the_best_phrase_ranks_first_and_common_words_rank_low() -> None:
    ranked = [phrase for phrase, _ in counted(MUSEUM_PAGES * 3).phrases()]
    assert ranked[:2] == ["museum of fine arts", "flemish tapestries"]
    # Twice as frequent, but made of words every site uses.
    pages = ["Home page | Privacy policy"] * 8 + ["Flemish tapestries"] * 4
    assert counted(pages).phrases() == [
        ("flemish tapestries", 4),
        ("home page", 8),
        ("privacy policy", 8),
    ]


def test_a_phrase_neither_begins_nor_ends_with_a_stop_word() -> None:
    phrases = [phrase for phrase, _ in counted(MUSEUM_PAGES * 3).phrases(top=100)]
    assert phrases
    for phrase in phrases:
        words = phrase.split()
        assert words[0] not in STOP_WORDS and words[-1] not in STOP_WORDS, phrase
        assert 1 <= len(words) <= 4


def test_phrases_do_not_cross_sentences_or_list_items() -> None:
    assert phrase_words("Solar panels. Wind farms | Heat pumps") == [
        ["solar", "panels"],
        ["wind", "farms"],
        ["heat", "pumps"],
    ]
    phrases = dict(counted(["Solar panels. Wind farms | Heat pumps"] * 4).phrases())
    assert set(phrases) == {"solar panels", "wind farms", "heat pumps"}


def test_a_phrase_that_often_comes_without_its_longer_form_stays_a_phrase() -> None:
    pages = ["Solar energy for homes."] * 3 + ["Solar energy is cheap."] * 3
    phrases = dict(counted(pages).phrases())
    # Each longer form holds only half of its count: all three are phrases of the site.
    assert phrases == {"solar energy": 6, "solar energy for homes": 3, "solar energy is cheap": 3}


def test_the_table_of_n_grams_stays_bounded_and_keeps_what_is_frequent() -> None:
    rng = random.Random(7)
    vocabulary = [f"word{i}" for i in range(20_000)]
    counter = PhraseCounter(max_table=5_000, max_site_words=1_000_000)
    for page in range(300):
        noise = " ".join(rng.choice(vocabulary) for _ in range(200))
        counter.add(f"{noise}. Deep sea exploration. {page}")
        assert len(counter.counts) < 5_000
    assert counter.pruned > 0
    assert counter.phrases()[0] == ("deep sea exploration", 300)


def test_a_site_reads_at_most_its_word_budget() -> None:
    counter = counted(["alpha beta gamma delta"] * 10, PhraseCounter(max_site_words=10))
    assert counter.words == 10
    assert counter.counts["alpha"] == 3


def test_the_report_gives_the_top_phrases_with_counts_beside_the_campaign_keywords() -> None:
    report = SiteReport("http://museum.test/")
    for text in MUSEUM_PAGES:
        report.text.add(text, ("tapestries",))
    sent = report.to_json()["text"]
    assert "phrases" not in sent and "language" not in sent  # told where the report arrives
    text = told(report.to_json())["text"]
    assert "phrase_sample" not in text and "sample" not in text
    assert text["language"] == "en"
    assert text["keywords"] == {"tapestries": 3}
    assert text["phrases"][0] == {"phrase": "museum of fine arts", "count": 5}
    assert len(text["phrases"]) <= 30
