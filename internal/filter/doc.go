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
// Invariants: filters are pure functions of the URL, its Meta numbers and
// the seeds; they hold no state that changes during a crawl, so they are
// safe for concurrent use and a resumed crawl filters as the first run did.
// A URL refused by a filter is counted by the caller, never fetched.
package filter
