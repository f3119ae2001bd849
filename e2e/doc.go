// Package e2e holds Petrel's end-to-end tests: they build the petrel
// command, start the synthetic web on loopback, crawl it through the
// command's stable flags, and judge the crawl from the synthetic web's own
// request log and from the WARC files read back with the gowarc library.
package e2e
