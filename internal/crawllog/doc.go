// Package crawllog writes a crawl's line logs: logs/crawl.log, one line
// per fetch and per refused URL in Heritrix's crawl.log format, and
// logs/skipped.jsonl, one JSON object per refused URL (Browsertrix's
// skippedPages), which `petrel why` searches.
//
// # crawl.log
//
// Twelve fields separated by single spaces (the status and size fields
// are padded on the left with spaces to 5 and 10 characters, as Heritrix
// pads them, so a run of spaces separates fields too); a field with no
// value is "-":
//
//	1  time of logging, UTC, ISO 8601 to the millisecond: 2026-12-01T07:35:19.123Z
//	2  status: the HTTP status, or a negative code (below)
//	3  size: the body bytes received (transfer coding removed), "-" for none
//	4  the URL
//	5  hop path: the hops from the seed (L link, R redirect, E embed,
//	   X speculative, P prerequisite: robots.txt); "-" for a seed
//	6  via: the URL the URL was found on
//	7  MIME type of the response, lower case without parameters;
//	   "no-type" for a response without one, "unknown" without a response
//	8  fetcher: "#" and the fetcher's number from 001, "#000" for a line
//	   no fetcher wrote (a URL refused before any request)
//	9  start and duration: the request's start (17 digits,
//	   yyyyMMddHHmmssSSS) "+" its duration in milliseconds
//	10 digest: "sha1:" and the base-32 SHA-1 of the payload, as in the
//	   WARC record's WARC-Payload-Digest
//	11 source: the seed the URL descends from
//	12 annotations, comma-separated: "Nt" (the Nth try), "lenTrunc",
//	   "timeTrunc", "disconnectTrunc" (body cut), "duplicate:digest" (a
//	   revisit record of a payload stored before), "duplicate:dedup-index"
//	   (a revisit record of a payload an earlier crawl stored, found in
//	   --dedup-index), "revisit:not-modified"
//	   (a 304 to a revisit's conditional GET, stored as a
//	   server-not-modified revisit record; the hop path of a revisit ends
//	   in V), "warc:FILE@OFFSET" (the record's file and the
//	   offset of its gzip member), "err:KIND" (why a fetch failed),
//	   "skip:REASON" (why a URL was refused), "nostore" (the store filter
//	   kept it out of the WARC files), and last "lang:CODES" (the page's
//	   languages when they were detected, --languages or a filter that
//	   reads them: ISO 639-3 codes, largest share first, separated by ";"
//	   since a comma separates annotations, as in "lang:eng;fra";
//	   Languages writes it, Line.Languages reads it back as the CDXJ
//	   field has it, "eng,fra")
//
// The negative codes are Heritrix's (FetchStatusCodes): -1 the name did
// not resolve, -2 the connection failed, -3 the connection broke, -4 a
// timeout, -5 any other failure, -6 the host's name lookup had failed
// before, -8 the retries are used up, -61 the robots.txt prerequisite
// failed (not fetched after every retry), -62 another prerequisite failed
// (the host was purged as broken, or given up as unreachable), -4000 a trap rule (chaff), -4001 too
// many link hops (or a sitemap nested too deep), -4002 too many embed hops (a requisite named by a
// document beyond --max-embed-hops or --max-css-hops), -5000 out of scope (scope or schedule filter), -5001
// blocked by the operator (address guard, blocklist), -5002 refused by a
// fetch filter, -5003 over a quota (per-host budget), -9998 robots.txt.
//
// # skipped.jsonl
//
// One JSON object a line: {"time", "url", "via", "reason", "rule",
// "status"}: reason is one of the Reason values, rule the text of the
// rule that refused the URL when there is one (the filter, the robots.txt
// line), status the crawl.log code of the refusal.
//
// # events.jsonl
//
// EventLog (events.go) writes the agent's event log, one slog record a
// Write, rotated past a size like crawl.log (events.jsonl.1, .2, …); the
// oldest rotated files are removed so that all hold at most a total, the
// newest events kept.
//
// # Invariants
//
// Lines are formatted by the caller's goroutine, outside any lock, then
// appended to a buffer under the log's own short lock; one goroutine
// writes the buffer out (every FlushEvery, or when it holds a quarter of
// its bound) and sends the lines to the subscribers. A writer blocks only
// when the buffer holds its bound (BufferBytes) and the disk has not kept
// up: memory is bounded and no line is lost. A subscriber that does not
// keep up misses lines (counted), never slows the crawl.
//
// crawl.log is rotated when it passes MaxFileBytes: it is renamed
// crawl.log.N (N = 1, 2, …, the highest the newest) and a new crawl.log is
// started. skipped.jsonl rotates the same way; once it and its rotated
// files hold SkippedTotalBytes, further refusals are counted, not written,
// so the first ones, those an operator asks about most, are kept.
//
// A URL refused again for the same reason is logged once: a fixed table of
// recent refusals (by hash) suppresses the repeats, so a link found on
// every page of a site and refused makes one line, not one per page. The
// callers count every refusal.
package crawllog
