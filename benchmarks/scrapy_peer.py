"""Scrapy as a peer crawler: its own virtual environment, built once and cached, and a spider.

Scrapy is not a dlweb dependency, so it lives in a virtual environment of its own beside pywb's
(see deploy/testing/peers.py), built on first use from the latest release on PyPI. The spider crawls
each start URL's site, following the links of a page to its own host only, and writes every page
to a file of its own, as a Scrapy user would in the callback. Host names come from a JSON file
({name: address}) through a resolver of the spider's module, so the URLs are the sites' own.
"""

import hashlib
import json
import subprocess
from pathlib import Path

from deploy.testing.peers import peer_venv

REQUIREMENTS = ("scrapy",)
# The environment's name says what it holds, so one built from other requirements is not reused.
VENV_NAME = f"scrapy-{hashlib.sha256(' '.join(REQUIREMENTS).encode()).hexdigest()[:8]}"
SPIDER_MODULE = "farm_spider"
# The crawl's politeness is dlweb's: robots.txt honoured, no delay, never two requests at once to
# one site. Scrapy starts CONCURRENT_ITEMS tasks for what each response's callback yields: at the
# default of 100, for the 3 to 9 requests a page yields here, they take about 40% of its CPU; 8 is
# as fast as any other value measured. The resolver is the process's, so it is set here rather
# than in the spider.
SETTINGS = {
    "ROBOTSTXT_OBEY": "True",
    "DOWNLOAD_DELAY": "0",
    "AUTOTHROTTLE_ENABLED": "False",
    "CONCURRENT_REQUESTS": "100",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
    "CONCURRENT_ITEMS": "8",
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": "False",
    "TWISTED_DNS_RESOLVER": f"{SPIDER_MODULE}.FarmResolver",
}
SPIDER = """
import hashlib
import json
from pathlib import Path
from urllib.parse import urlsplit

import scrapy
from scrapy.linkextractors import LinkExtractor
from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer


@implementer(IResolverSimple)
class FarmResolver:
    def __init__(self, reactor, hosts):
        self.reactor = reactor
        self.hosts = hosts

    @classmethod
    def from_crawler(cls, crawler, reactor):
        return cls(reactor, json.loads(Path(crawler.settings["FARM_HOSTS"]).read_text()))

    def install_on_reactor(self):
        self.reactor.installResolver(self)

    def getHostByName(self, name, timeout=()):
        if name in self.hosts:
            return defer.succeed(self.hosts[name])
        return defer.fail(DNSLookupError(name))


class FarmSpider(scrapy.Spider):
    name = "farm"

    def __init__(self, urls, out, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = Path(urls).read_text().split()
        self.allowed_domains = [urlsplit(url).hostname for url in self.start_urls]
        self.out = Path(out)
        self.links = LinkExtractor()

    def parse(self, response):
        host = urlsplit(response.url).netloc
        folder = self.out / host.replace(":", "_")
        folder.mkdir(exist_ok=True)
        name = hashlib.sha256(response.url.encode()).hexdigest()[:32]
        (folder / f"{name}.html").write_bytes(response.body)
        for link in self.links.extract_links(response):
            if urlsplit(link.url).netloc == host:
                yield response.follow(link)
"""


def scrapy_bin() -> Path:
    """The `bin` directory of a virtual environment with Scrapy, built on first use (as pywb's)."""
    return peer_venv(VENV_NAME, REQUIREMENTS)


def scrapy_version() -> str:
    """Scrapy's version, as `scrapy version` prints it ("Scrapy 2.13.3")."""
    done = subprocess.run([str(scrapy_bin() / "scrapy"), "version"], capture_output=True, text=True)
    return done.stdout.split()[-1]


def scrapy_command(workdir: Path, urls: list[str], hosts: dict[str, str], out: Path) -> list[str]:
    """The command line of a Scrapy crawl of `urls` writing pages under `out`; writes the spider
    and its inputs into `workdir`."""
    spider = workdir / f"{SPIDER_MODULE}.py"
    spider.write_text(SPIDER)
    (workdir / "urls.txt").write_text("\n".join(urls) + "\n")
    (workdir / "hosts.json").write_text(json.dumps(hosts))
    settings = {**SETTINGS, "FARM_HOSTS": str(workdir / "hosts.json")}
    command = [str(scrapy_bin() / "scrapy"), "runspider", str(spider)]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    return command + ["-a", f"urls={workdir / 'urls.txt'}", "-a", f"out={out}"]
