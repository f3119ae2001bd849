// Package filter decides which URLs a crawl follows.
//
// Scope is the first stage: from the seeds it derives the set of hosts,
// registered domains or URL prefixes the crawl stays in (wget's default,
// --domains, Heritrix's SURT-prefix scope) or lets everything http(s)
// through. Limits on the shape of a URL (its length) are checked here too.
// A URL refused by a filter is counted by the caller, never fetched.
package filter
