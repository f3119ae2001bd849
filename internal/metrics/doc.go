// Package metrics exposes one crawl's figures to Prometheus, on a registry
// of its own (never the process-wide default one), through an
// http.Handler that the console mounts at /metrics.
//
// Most figures are not kept here: a collector reads the crawl's counters
// (internal/stats) when Prometheus scrapes, so the crawl pays nothing for
// them between scrapes. Only distributions, which counters cannot give,
// are observed as the crawl goes: the duration and size of each response
// and the duration of each DNS lookup, into fixed-bucket histograms (a few
// atomic adds per observation, no lock, no allocation).
//
// Naming follows Prometheus's rules, checked by a test with promlint:
// every name starts with petrel_, is in base units (seconds, bytes),
// counters end in _total, histograms of time in _seconds. Labels take a
// handful of fixed values (a status class, a reason, a state); no label
// ever holds a URL, a host or an address, so the number of series does
// not grow with the crawl.
//
// An agent of a crawl of several also serves the exchange's figures
// (Sources.Cluster: URLs sent and received, members, the outbox), all
// named petrel_cluster_*; an agent alone serves none of them. Other parts
// add figures of their own with Metrics.Register.
package metrics
