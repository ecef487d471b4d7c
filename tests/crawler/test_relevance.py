"""Online relevance: a test campaign's pages scored in the order a hand-labelled set ranks them;
anchor and URL evidence raising a link's score; spam scoring 0; the weights of the focus used."""

import math

from archive.crawl_calls import Focus
from crawler.relevance import MAX_TEXT, Relevance

CAMPAIGN = Focus(
    keywords=("flood", "flooding", "river", "evacuation", "rainfall"),
    examples=(
        "The river burst its banks after days of heavy rainfall. Flood water reached the town"
        " centre and hundreds of residents were evacuated as the flood defences failed.",
        "Flooding along the valley: emergency services led the evacuation of villages while the"
        " river level kept rising; more rain is forecast and the flood warning stays in force.",
    ),
    url_scores={r"/news/": 0.8, r"/shop/": 0.1},
    spam=("host:spam.example",),
)

# Short pages of a test site, each graded by hand for the campaign: 3 very relevant, 0 not.
LABELLED: list[tuple[int, str, str]] = [
    (
        3,
        "http://site.example/news/flood-evacuation.html",
        "Flood: thousands evacuated as the river rises. After a week of rainfall the river"
        " burst its banks overnight; flood water covers the lower town and the evacuation of"
        " two villages goes on. The flood warning remains in force.",
    ),
    (
        3,
        "http://site.example/alerts/flood-warning.html",
        "Flood warning for the river valley. Heavy rainfall is expected; residents near the"
        " river should prepare for flooding and follow the evacuation routes.",
    ),
    (
        2,
        "http://site.example/reports/rainfall.html",
        "Monthly rainfall report: rainfall was twice the average and river levels rose across"
        " the region, though no flooding was recorded this month.",
    ),
    (
        2,
        "http://site.example/insurance/claims.html",
        "Making an insurance claim after water damage to your home: flood cover, photographs of"
        " the damage, and what the assessor will ask.",
    ),
    (
        2,
        "http://site.example/volunteers.html",
        "Volunteers helped families clean their homes after the flood; sandbags, pumps and"
        " dry clothes were handed out at the town hall.",
    ),
    (
        1,
        "http://site.example/tourism/river-cruises.html",
        "River cruises: discover castles and vineyards from the deck of our boats, with lunch"
        " served on board during the summer season.",
    ),
    (
        1,
        "http://site.example/weather/forecast.html",
        "Weather forecast: sunny spells on Monday, light showers on Tuesday, temperatures mild"
        " for the season with a gentle breeze.",
    ),
    (
        0,
        "http://site.example/recipes/apple-pie.html",
        "Apple pie recipe: peel the apples, mix flour, butter and sugar, bake for forty minutes"
        " and serve warm with cream.",
    ),
    (
        0,
        "http://site.example/sport/football.html",
        "Football results: the home side won three goals to one, with a late penalty sealing"
        " the victory in front of a full stadium.",
    ),
    (
        0,
        "http://site.example/software/release.html",
        "Release notes: version 2.4 fixes a crash at startup, speeds up the search index and"
        " adds a dark theme to the settings page.",
    ),
    (
        0,
        "http://site.example/cinema/listings.html",
        "Cinema listings for this week: a comedy, a thriller and an animated film for the"
        " whole family, shown every evening.",
    ),
    (
        0,
        "http://site.example/shop/shoes.html",
        "Our new collection of shoes and boots: leather, suede and canvas, in every size, with"
        " free delivery on orders over fifty euros.",
    ),
]


def ranks(values: list[float]) -> list[float]:
    """Ranks from 1, ties given the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for i in order[start : end + 1]:
            result[i] = (start + end) / 2 + 1
        start = end + 1
    return result


def spearman(xs: list[float], ys: list[float]) -> float:
    """Spearman's rank correlation: Pearson's of the ranks."""
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    covariance = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    spread = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return covariance / spread


def test_page_scores_rank_a_hand_labelled_set_as_its_grades_do() -> None:
    relevance = Relevance(CAMPAIGN)
    scores = [relevance.page(url, text).score for _, url, text in LABELLED]
    grades = [float(grade) for grade, _, _ in LABELLED]
    correlation = spearman(scores, grades)
    print(f"Spearman rank correlation of relevance with the hand grades: {correlation:.3f}")
    assert correlation >= 0.8
    assert all(0.0 <= score <= 1.0 for score in scores)
    assert min(scores[:2]) > max(scores[7:])


def test_anchor_text_and_url_patterns_raise_a_link_score_spam_scores_zero() -> None:
    relevance = Relevance(CAMPAIGN)
    _, url, text = LABELLED[4]
    page = relevance.page(url, text)
    plain = relevance.link(page, "http://site.example/page.html", "more")
    by_anchor = relevance.link(page, "http://site.example/page.html", "flood evacuation")
    by_url = relevance.link(page, "http://site.example/news/page.html", "more")
    assert by_anchor > plain and by_url > plain
    assert relevance.link(page, "http://spam.example/news/flood.html", "flood") == 0.0
    spam_page = relevance.page("http://www.spam.example/flood.html", LABELLED[0][2])
    assert spam_page.score == 0.0
    assert relevance.link(spam_page, "http://site.example/x.html", "") == 0.0


def test_the_words_around_an_anchor_count_for_its_link() -> None:
    relevance = Relevance(CAMPAIGN)
    filler = " ".join(["calendar"] * 60)
    text = f"Our shop sells shoes in town. {filler} After the flood and the evacuation of the valley, read the report here."
    page = relevance.page("http://site.example/", text)
    assert relevance.link(page, "http://site.example/a", "report here") > relevance.link(
        page, "http://site.example/b", "sells shoes"
    )


def test_weights_of_the_focus_decide_the_mix_and_the_text_scored_is_bounded() -> None:
    only_url = Relevance(
        Focus(
            keywords=("flood",),
            url_scores={"/news/": 0.7},
            weights={"document": 0, "paragraph": 0, "anchor": 0, "url": 1},
        )
    )
    page = only_url.page("http://site.example/news/a.html", "nothing about it")
    assert page.score == 0.7
    relevance = Relevance(CAMPAIGN)
    long_page = relevance.page("http://site.example/", "word " * MAX_TEXT + "flood river")
    assert len(long_page.text) == MAX_TEXT and long_page.document == 0.0
