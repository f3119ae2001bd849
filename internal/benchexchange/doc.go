// Package benchexchange measures the exchange of URLs between two agents:
// it backs "petrel bench exchange".
//
// One agent routes URLs to another over loopback through everything a
// crawl uses — package cluster's batches, the sender's durable outbox,
// HTTP/2 over mutual TLS, the receiver's inbox (acknowledged after its
// group-committed fsync) and the applier — with a host that only counts
// what it is given. Sender and receiver run in two processes, so that
// each side's CPU time is its own; the receiver runs the crawl's
// coordinator (an embedded etcd member) on its port + 2.
//
// Files:
//
//	doc.go             this map and the package's role
//	run.go             Options, Side; RunReceiver, RunSender; the URLs sent (URL)
//	benchurl_test.go   the shape of those URLs
package benchexchange
