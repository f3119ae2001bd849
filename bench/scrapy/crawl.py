"""The Scrapy peer crawler of Petrel's crawl benchmark (petrel bench crawl).

It crawls the synthetic web from a seeds file configured as a careful user
would: one request at a time per host (CONCURRENT_REQUESTS_PER_DOMAIN = 1)
with DOWNLOAD_DELAY = the host delay, not randomised, AutoThrottle off,
robots.txt obeyed, the same global concurrency cap as Petrel
(CONCURRENT_REQUESTS), the scheduler Scrapy's "broad crawls" advice names
(DownloaderAwarePriorityQueue, breadth-first), links followed within the
web (allowed_domains "test"), at most --max-urls responses
(CLOSESPIDER_PAGECOUNT). Scrapy cannot
express a per-IP delay as well as a per-host one (its slots are keyed by
one or the other), so --ip-delay is accepted and ignored. It stores nothing.

Scrapy resolves names with the system resolver only; the harness runs it in
a private mount namespace whose /etc/hosts is the web's hosts file. Scrapy's
default TLS context verifies no certificate; with --ca-file it verifies
every server against that certificate authority (Twisted's
optionsForClientTLS with it as the trust root).

Every --progress seconds it prints "pages N (R/s)" on stderr, and at the end
one JSON line on stdout: {"pages":N,"errors":E,"elapsed_s":S,...}.
Run with Debian's /usr/bin/python3 (python3-scrapy).
"""

import argparse
import json
import sys
import time

import scrapy
from scrapy import signals
from scrapy.core.downloader.contextfactory import BrowserLikeContextFactory
from scrapy.crawler import CrawlerProcess
from scrapy.exceptions import IgnoreRequest
from twisted.internet import reactor, task
from twisted.internet.ssl import Certificate, optionsForClientTLS

TRUST_ROOT = None  # the --ca-file certificate, set before the crawl starts


class CAFileContextFactory(BrowserLikeContextFactory):
    """Verifies every server against TRUST_ROOT."""

    def creatorForNetloc(self, hostname, port):
        return optionsForClientTLS(
            hostname=hostname.decode("ascii"),
            trustRoot=TRUST_ROOT,
            extraCertificateOptions={"method": self._ssl_method},
        )


class WebSpider(scrapy.Spider):
    name = "petrel-bench-scrapy"
    allowed_domains = ["test"]
    custom_settings = {"HTTPERROR_ALLOW_ALL": True}  # a 404 is a page fetched, as for the others

    def __init__(self, seeds, progress, **kw):
        super().__init__(**kw)
        self.seeds, self.progress = seeds, progress
        self.pages = self.errors = self.robots = self.bytes = 0
        self.start = time.monotonic()
        self.stopped = False

    @classmethod
    def from_crawler(cls, crawler, *args, **kw):
        spider = super().from_crawler(crawler, *args, **kw)
        crawler.signals.connect(spider.closed_with, signal=signals.spider_closed)
        return spider

    def start_requests(self):
        if self.progress > 0:
            self._last = (0, time.monotonic())
            self._loop = task.LoopingCall(self.report)
            self._loop.start(self.progress, now=False)
        for s in self.seeds:
            yield scrapy.Request(s, errback=self.failed)

    def report(self):
        n, t = self._last
        now = time.monotonic()
        print(f"pages {self.pages} ({(self.pages - n) / max(now - t, 1e-9):.0f}/s)", file=sys.stderr, flush=True)
        self._last = (self.pages, now)

    def parse(self, response):
        self.pages += 1
        self.bytes += len(response.body)
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, errback=self.failed)

    def failed(self, failure):
        if failure.check(IgnoreRequest):  # robots.txt forbids it
            self.robots += 1
        else:
            self.errors += 1

    def closed_with(self, spider, reason):
        if getattr(self, "_loop", None) and self._loop.running:
            self._loop.stop()
        res = {"pages": self.pages, "errors": self.errors, "robots_blocked": self.robots, "bytes_received": self.bytes,
               "elapsed_s": time.monotonic() - self.start, "stopped": reason == "shutdown",
               "reason": reason}
        print(json.dumps(res), flush=True)


def read_seeds(path):
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]


def main():
    global TRUST_ROOT
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", required=True)
    p.add_argument("--host-delay", type=float, default=0.1, help="seconds between requests to one host")
    p.add_argument("--ip-delay", type=float, default=0.01, help="accepted; Scrapy cannot express it beside the host delay")
    p.add_argument("--concurrency", type=int, default=256, help="global cap on requests in flight")
    p.add_argument("--max-urls", type=int, default=0, help="stop after this many responses (0 = none)")
    p.add_argument("--progress", type=float, default=1.0)
    p.add_argument("--ca-file", default="")
    p.add_argument("--user-agent", default="petrel-bench-scrapy/1.0")
    a = p.parse_args()
    settings = {
        "USER_AGENT": a.user_agent,
        "ROBOTSTXT_OBEY": True,
        "DOWNLOAD_DELAY": a.host_delay,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "CONCURRENT_REQUESTS": a.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "CONCURRENT_REQUESTS_PER_IP": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "CLOSESPIDER_PAGECOUNT": a.max_urls,
        "DOWNLOAD_TIMEOUT": 10,
        "COOKIES_ENABLED": False,
        # Scrapy's advice for broad crawls: a scheduler that prefers the
        # hosts with the fewest requests in the downloader, breadth-first.
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "REACTOR_THREADPOOL_MAXSIZE": 20,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    }
    if a.ca_file:
        with open(a.ca_file, "rb") as f:
            TRUST_ROOT = Certificate.loadPEM(f.read())
        settings["DOWNLOADER_CLIENTCONTEXTFACTORY"] = __name__ + ".CAFileContextFactory"
    proc = CrawlerProcess(settings)
    proc.crawl(WebSpider, seeds=read_seeds(a.seeds), progress=a.progress)
    proc.start()


if __name__ == "__main__":
    main()
