// Package benchcrawl is Petrel's crawl benchmark harness (petrel bench crawl): it
// measures a whole crawl against the synthetic web side by side with the
// crawlers a user would pick instead, and against the web's own limit.
//
// [Run] starts "petrel testweb" as a separate process, so that server and
// crawler are measured apart, and runs against it, one after the other and
// each as a separate process with the same politeness settings:
//
//   - Petrel ("petrel crawl", WARC gzip and parsing on). Its page count is
//     Fetched from state/stats.json, checked against the page records of its
//     WARC files; allocations per page come from the RuntimeMallocs and
//     RuntimeTotalAlloc counters it writes there; its pages/s series is
//     parsed from its "--progress" lines.
//   - The Colly crawler of bench/colly (its own Go module, built on demand):
//     one LimitRule per host (Parallelism 1, Delay = host delay), robots.txt
//     obeyed, names from the hosts file only; Colly cannot express the per-IP
//     delay. It prints the same progress lines and a final JSON line.
//   - GNU wget -r, in a private mount namespace (unshare --mount) whose
//     /etc/hosts is the web's hosts file, whose nsswitch.conf says
//     "hosts: files" and whose resolv.conf names only a decoy name server on
//     loopback. Before wget runs, a check in that namespace proves that a
//     listed name resolves, an unlisted one fails at once, and the decoy gets
//     no packet; if the check fails wget is skipped. Its pages are counted
//     from its --no-verbose log.
//   - The Scrapy crawler of bench/scrapy (Debian's /usr/bin/python3 with
//     python3-scrapy) and the Crawlee CheerioCrawler of bench/crawlee (node,
//     crawlee from Options.ToolsDir), each in the namespace wget has, since
//     both resolve names with the system resolver only (peers.go). Each is
//     configured as a careful user would: the host delay, one request at a
//     time per host where the tool can say so, robots.txt obeyed, Petrel's
//     concurrency cap, the same page bound, the web's certificate authority
//     trusted (Scrapy verifies against it; Node takes NODE_EXTRA_CA_CERTS);
//     neither stores anything. Both print Colly's progress lines and final
//     JSON line.
//   - The limit: wrk processes, one per chosen address, cycling through every
//     page of every host on it via the Host header; the limit is the sum of
//     their rates.
//
// For every crawler the harness reports pages/s (the crawler's own count
// over the wall time of its process, exec to exit), CPU-seconds per 1,000 pages and peak RSS (from
// the rusage that wait4 returns, which includes the waited-for descendants,
// so wget behind unshare is covered), bytes written, the CPU the web used
// meanwhile, ratios to Petrel, and the politeness violations the web's own
// request log shows while the crawler ran (politeness.go: the web, started
// with --hit-log, writes its log once stopped after the last crawl; every
// run's requests are those that began during its process's life, judged
// with testweb.PolitenessGaps against the host and IP delays). The limit
// is measured on a web started afresh without a log. In the
// politeness-bound mode it also
// reports the politeness efficiency: the steady-state rate ÷ the rate the
// delays allow, the sum over the web's addresses of min(1/ip-delay,
// hosts on the address/host-delay).
//
// With Options.Shape "real" the web is "petrel testweb --shape real" (the
// generated web shaped like the real one: HTTPS with its own certificate
// authority, which every crawler is given, real page sizes, latency,
// failures, redirects) and the limit is not measured.
//
// With Options.Agents it adds a crawl of several agents to every round
// (agents.go); with Options.Ops a crawl with the console on and polled
// next to Petrel's with the operations off (ops.go).
//
// Invariants: every child runs in its own process group with a parent-death
// signal, is interrupted at the time bound (SIGINT, or SIGTERM for wget) and
// killed with its group after a grace period or when it exits; output lines,
// kept output and series are bounded; nothing leaves the loopback addresses.
package benchcrawl
