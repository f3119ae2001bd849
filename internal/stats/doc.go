// Package stats holds the counters of one crawl, as BUbiNG's Frontier keeps
// them (fetched resources, robots fetched, bytes, status classes, content
// types, duplicates, outdegree), the progress line printed every few
// seconds, and the end-of-crawl summary.
//
// Counters are plain atomics updated by every stage of the agent; a
// Snapshot copies them at one moment for printing or serialising. Nothing
// here blocks the crawl: readers never take a lock the writers need.
package stats
