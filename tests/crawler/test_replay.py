"""After a crawl, every page of the site replays through the proxy in headless Chromium with all
its requisites, and nothing is asked of the live web."""

from tests.browser import chromium
from tests.crawler.sites import ALPHA, EXPECTED_ALPHA
from tests.crawler.test_crawl import QUICK

PAGES = sorted(path for host, path in EXPECTED_ALPHA["pages"] | EXPECTED_ALPHA["sitemap"])
NOT_LINKED = ("/favicon.ico",)  # browsers ask for it; no page names it, so it was never crawled


def test_every_crawled_page_replays_with_all_its_requisites(
    cluster_factory, crawl, sites, proxy_factory, tmp_path
):
    cluster = cluster_factory(nodes=2, replicas=1)
    crawl(cluster, *QUICK, sites.url(ALPHA))
    proxy = proxy_factory(cluster, "--log-requests")
    sites.reset()
    doms = {}
    for number, path in enumerate(PAGES):
        doms[path] = chromium(
            proxy.url, tmp_path / f"profile-{number}", sites.url(ALPHA, path), "--dump-dom"
        )
    assert sites.log() == [], "the browser reached the live test web"
    log = proxy.log.read_text()
    replayed = [line for line in log.splitlines() if "replayed " in line]
    missing = [
        line
        for line in log.splitlines()
        if ("not archived" in line or "cannot replay" in line)
        and any(f"//{host}:" in line for host in sites.hosts)
        and not any(name in line for name in NOT_LINKED)
    ]
    assert not missing, "\n".join(missing)
    assert len(replayed) > len(PAGES) * 2
    for host, path in EXPECTED_ALPHA["components"] | EXPECTED_ALPHA["scripted"]:
        assert f"{host}:{sites.port}{path}" in log, f"{host}{path} was not replayed"
    # The script ran from the archive and wrote its image, which came from the archive too.
    assert 'id="written"' in doms["/"]
    assert "<frameset" in doms["/frames.html"] or "<frame" in doms["/frames.html"]
