"""The API crawler: follows a campaign's hashtags, accounts and feeds through social-media APIs
(the Mastodon public API, RSS and Atom), archives each API answer and each post's own page as
captures, and injects the URLs the posts link to into the scheduler, scored by the posts'
popularity.

- `sources`: the interface a followed API implements (a `Source` yields `Post`s);
- `mastodon`: hashtag and account timelines of a Mastodon instance;
- `feeds`: RSS and Atom feeds;
- `api_client`: the GETs, their rate limits, bounds and errors, and the archiving of answers;
- `popularity`: the score of a post from its boosts, favourites and replies;
- `inject`: the call that hands scored URLs to the scheduler;
- `crawl`: one round over every source, and the report;
- `cli`: `dlweb api-crawler`.
"""
