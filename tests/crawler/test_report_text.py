"""What a report's text samples tell, worked out by `dlweb crawl` as each report comes in from a
forked agent: the site's language and its phrases."""

from pathlib import Path
from typing import Any

from aiohttp import web

from deploy.testing.web_server import WebServer, answering
from tests.crawler.conftest import run_crawler

TEXTS = {
    "en": "The harbour museum shows the old fishing boats of the bay. Every boat has its story, "
    "told by the families who sailed it for a hundred years.",
    "fr": "Le musée du port montre les vieux bateaux de pêche de la baie. Chaque bateau a son "
    "histoire, racontée par les familles qui l'ont mené pendant cent ans.",
}


def site_in(language: str) -> Any:
    text = TEXTS[language]

    async def handle(request: web.Request) -> web.Response:
        if request.path not in ("/", "/more.html"):
            return web.Response(status=404, text="not here")
        link = '<a href="/more.html">more</a>' if request.path == "/" else ""
        body = f"<!DOCTYPE html><title>{language}</title><p>{text}</p><p>{text}</p>{link}"
        return web.Response(text=body, content_type="text/html")

    return handle


def test_forked_agents_reports_each_tell_their_sites_language_and_phrases(
    cluster_factory: Any, tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    with (
        WebServer(answering(site_in("en"))) as english,
        WebServer(answering(site_in("fr"))) as french,
    ):
        crawl = run_crawler(
            cluster,
            tmp_path / "report.json",
            tmp_path / "work",
            "--delay",
            "0",
            "--agents",
            "2",
            f"{english.base}/",
            f"{french.base}/",
        )
    languages = [report["text"]["language"] for report in crawl.reports]
    assert languages == ["en", "fr"], crawl.output
    for report in crawl.reports:
        assert report["pages"] == 2
        assert report["text"]["phrases"], report["text"]
        assert "sample" not in report["text"] and "phrase_sample" not in report["text"]
