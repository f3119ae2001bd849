// Package wacz packages crawl directories as a WACZ 1.1.1 file (Web Archive
// Collection Zipped, https://specs.webrecorder.net/wacz/1.1.1/) and checks
// such files.
//
// # Layout
//
// A package written by Write holds, in this order:
//
//	archive/NAME.warc.gz       every WARC file of every crawl directory, stored (not compressed)
//	indexes/index.cdxj         the merged CDXJ index of them all, stored, when at most
//	                           Options.CompressIndexAbove bytes (default 50 kB); else
//	indexes/index.cdx.gz       the same lines in gzip members of IndexBlockLines lines, stored,
//	indexes/index.idx          and one line per member: its first line's key and timestamp,
//	                           {"offset","length","digest","filename"} (a ZipNum index, as
//	                           Browsertrix writes it), after a "!meta" header line
//	pages/pages.jsonl          a json-pages-1.0 header, then the seeds' pages
//	pages/extraPages.jsonl     a json-pages-1.0 header, then every other HTML page
//	datapackage.json           profile, wacz_version, title, created, software, mainPageUrl,
//	                           mainPageDate, and every file above under resources with
//	                           path, hash (sha256:HEX) and bytes
//	datapackage-digest.json    path and hash of datapackage.json
//
// Page lists come from each crawl's logs/pages.jsonl (URL, date, title as
// parsed, status, media type, seed or not), written while crawling; the
// index from each crawl's indexes/index.cdxj, brought up to date first as
// "petrel warc index" does.
//
// # Invariants
//
//   - Memory stays bounded whatever the crawl's size: WARC files are
//     streamed into the ZIP (hashed on the way), index lines are merged
//     from sorted files, pages are copied line by line; only the index.idx
//     lines (one per IndexBlockLines captures) and the resource list are
//     held.
//   - WARC file names are unique across the crawl directories packaged
//     (the index names files by base name); a clash is an error.
//   - Check verifies what Write promises: every resource's size and hash,
//     the digest file, stored (uncompressed) archive/ and indexes/ entries,
//     and that every index line points at a record of its WARC file with
//     that URL, payload digest and length.
package wacz
