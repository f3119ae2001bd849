// Package filter decides which URLs a crawl follows.
//
// Scope is the first stage: from the seeds it derives the set of hosts,
// registered domains or URL prefixes the crawl stays in (wget's default,
// --domains, Heritrix's SURT-prefix scope) or lets everything http(s)
// through.
//
// Traps is the second: limits on the shape and provenance of a URL that end
// crawler traps (infinite calendars, ever deeper relative paths, redirect
// chains): the URL length (2 KiB by default), the length of the redirect
// chain that led to the URL (--max-redirects), its distance in links from a
// seed (--max-depth) and the repetition of one path segment (Heritrix's
// PathologicalPathDecideRule). Traps.Check names the rule that refused a URL
// so that the caller counts each cut by reason.
//
// The filter language (Parse) is BUbiNG's, for its five stages (Stage):
// schedule (before a URL enters the frontier), fetch (before its request),
// parse (whether to parse a response), follow (whether to follow a page's
// links and requisites) and store (whether to write its WARC records).
// Each stage is a setting (schedule-filter, …); --scope is shorthand for a
// schedule filter (Scope.Filter writes it out). A filter is parsed once
// into a tree of predicates joined by and (&), or (|), not (!) and
// parentheses ("and" binds tighter than "or"); true and false are
// constants:
//
//	SchemeEquals(https) and not (HostEndsWith(.example.org) or PathEndsWithOneOf(.jpg,.png))
//
// The predicates (URL ones decide at every stage; response ones, the
// language's among them, in the parse, follow and store stages;
// IsDuplicate in parse and follow only):
//
//	SchemeEquals(s)              the scheme is s
//	HostEquals(h)                the host is h (case-insensitive)
//	HostEndsWith(suffix)         the host ends with suffix
//	HostEndsWithOneOf(a,b,…)     the host ends with one of them
//	HostMatchesRegex(re)         the host matches the RE2 expression (unanchored)
//	PortEquals(n)                the port, the scheme's default when none is written
//	PathStartsWith(p)            the path starts with p
//	PathEndsWithOneOf(a,b,…)     the path ends with one of them (case-insensitive)
//	URLEquals(u)                 the URL is u (both normalised)
//	URLContains(s)               the URL contains s
//	URLMatchesRegex(re)          the whole URL matches re (anchored at both ends, as Java's matches)
//	URLShorterThan(n)            the URL has fewer than n characters
//	SURTPrefix(p)                the SURT form starts with p, e.g. SURTPrefix(http://(org,example,);
//	                             without a scheme, (org,example,) matches http and https
//	DuplicateSegmentsLessThan(n) no path segment occurs n times or more
//	DepthAtMost(n)               at most n link hops from the seed
//	IsSeed                       the URL is a seed
//	LastHopIs(E,X)               the last hop of the hop path is one of the letters
//	ContentTypeStartsWith(t)     the response's Content-Type starts with t (case-insensitive)
//	StatusCategory(n)            the status is nxx
//	StatusEquals(n)              the status is n
//	IsDuplicate                  the payload is one already stored (a revisit record)
//	LanguageIsOneOf(c,d,…)       the page's main language (the largest share of its
//	                             text, package lang) is one of the ISO 639-3 codes;
//	                             und: none was identified (not an HTML or text/plain
//	                             page, or too little text), e.g. LanguageIsOneOf(eng,und)
//
// Arguments are the text between the parentheses, trimmed; list
// predicates split it at commas. An argument in double quotes may hold
// anything (commas, parentheses, \" and \\). A filter that does not parse
// is a SyntaxError naming the column; one that reads what its stage cannot
// know is refused by Stage.Check.
//
// Invariants: filters are pure functions of the URL, its Meta numbers and
// the seeds; they hold no state that changes during a crawl, so they are
// safe for concurrent use and a resumed crawl filters as the first run did.
// A URL refused by a filter is counted by the caller, never fetched.
//
// Languages. A filter that reads a page's languages (NeedsLanguage) has
// the caller detect them before the store stage (package agent: the
// page is parsed once, before it is stored). A page the store filter
// refuses for its language is counted and logged as every store refusal
// is ("nostore" in crawl.log, filter-store in skipped.jsonl); its links
// are still followed, as the follow filter says (which may read the
// language too: LanguageIsOneOf in the follow filter stops them).
package filter
