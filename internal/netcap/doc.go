// Package netcap bounds the connections a listener holds open, so that
// whoever reaches a port cannot take the descriptors the crawl needs.
//
// Every listener of an agent is wrapped by Limit: the console, the
// cluster's exchange, and the embedded etcd member's client and peer
// ports. Past the cap a new connection is accepted and closed at once
// (its peer reads EOF or a reset), counted (Listener.Refused), and
// logged at most once a second per listener, the refusals not logged
// counted into the next line. A connection within the cap is never
// delayed, and one past it never waits in the kernel's backlog: the
// accept loop always runs.
//
// Files:
//
//	doc.go     this map and the package's contract
//	listen.go  Limit, Listener: the capped listener and its counted, rate-limited refusals
package netcap
