"""Which language a text is in, told from its frequent function words (cheap, good enough to
keep a campaign to its languages)."""

import re

__all__ = ["guess_language", "words_of"]

_WORD = re.compile(r"\w+", re.UNICODE)


def words_of(text: str) -> list[str]:
    return _WORD.findall(text.lower())


# Frequent function words of each language the guesser knows. A word several languages share
# counts for each of them, divided among them, so the words only one has decide.
_FUNCTION_WORDS = {
    "en": "the and of to is in that it was for with as on are this be by have from not but at"
    " which they you his her were has an or will would what there their been we",
    "fr": "le la les et des est un une du que qui dans pour pas sur au avec ce il elle sont nous"
    " vous mais ou par plus cette ont aux été être je ne se son sa ses leur",
    "de": "der die das und ist nicht ein eine zu den von mit sich des auf für im dem auch es an"
    " als nach wie wir ich sie bei oder aus wird werden hat sind noch kann über",
    "es": "el la los las y que de en un una es por con para del se no al lo como más pero sus"
    " su le ha este esta está son muy también fue hay entre cuando todo yo",
    "it": "il la le di e che è un una per non con del della dei gli si sono da nel nella alla"
    " al ma come anche più questo questa ha ci lo essere loro io tutto",
    "nl": "de het een en van is dat die niet in op te zijn met voor er maar om ook als bij aan"
    " dan nog wat wordt naar heeft hij ze zij ik we worden deze uit kan geen door",
    "pt": "o a os as e de do da dos das que em no na um uma é para com não por mais se ao como"
    " mas foi ele ela são seu sua também muito há isso está nos",
}
_LANGUAGES_OF: dict[str, list[str]] = {}
for _language, _words in _FUNCTION_WORDS.items():
    for _word in _words.split():
        _LANGUAGES_OF.setdefault(_word, []).append(_language)
_WORD_WEIGHTS = {
    word: {language: 1.0 / len(languages) for language in languages}
    for word, languages in _LANGUAGES_OF.items()
}
MIN_LANGUAGE_SCORE = 2.0  # below it, too few function words to tell
MIN_LANGUAGE_LEAD = 1.25  # the best language's score over the next one's


def guess_language(text: str) -> str:
    """The ISO 639-1 code of the language a text is in, among en, fr, de, es, it, nl and pt, from
    its frequent function words; "" when the text holds too few of them to tell."""
    scores = dict.fromkeys(_FUNCTION_WORDS, 0.0)
    for word in words_of(text):
        for language, weight in _WORD_WEIGHTS.get(word, {}).items():
            scores[language] += weight
    ranked = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    (best, score), (_, runner_up) = ranked[0], ranked[1]
    if score < MIN_LANGUAGE_SCORE or score < MIN_LANGUAGE_LEAD * runner_up:
        return ""
    return best
