"""The score of a post's links from the post's popularity.

A post's engagement is e = 2 x reblogs + replies + favourites: a boost shows the post to a new
audience, so it weighs twice a favourite; a reply, a conversation, as much as a favourite. The
score is e / (e + HALF), from 0 (nobody reacted) towards 1, half at HALF weighted interactions:
it grows with each interaction, the first ones counting most, and never saturates. A URL linked
by several posts takes the score of the most popular one. A post of a source that tells no
popularity (a feed item) has NO_POPULARITY.
"""

__all__ = ["HALF", "NO_POPULARITY", "best_scores", "popularity"]

HALF = 10.0
NO_POPULARITY = 0.5
REBLOG_WEIGHT = 2.0


def popularity(reblogs: int, favourites: int, replies: int) -> float:
    """The score, 0 to 1, of a post with these counts (negative counts are taken as 0)."""
    engagement = REBLOG_WEIGHT * max(reblogs, 0) + max(favourites, 0) + max(replies, 0)
    return engagement / (engagement + HALF)


def best_scores(scored: list[tuple[str, float]]) -> dict[str, float]:
    """Each URL once, with the highest score it was given."""
    best: dict[str, float] = {}
    for url, score in scored:
        if score > best.get(url, -1.0):
            best[url] = score
    return best
