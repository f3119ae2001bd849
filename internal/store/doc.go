// Package store writes what Petrel fetches as WARC/1.1 files and reads them
// back for listing, checking and indexing.
//
// # Writing
//
// A Writer turns each Exchange (an HTTP request and its response, as sent
// and received) into a request record and a response record linked by
// WARC-Concurrent-To, or into a request record and a revisit record when
// the response's payload was stored before. Files are named
// PREFIX-YYYYMMDDhhmmss-NNNNN.warc.gz, carry the suffix ".open" while being
// written, start with a warcinfo record, and rotate once they hold
// Options.MaxFileBytes compressed bytes. Every record is its own gzip
// member, so any record can be read from its offset alone, as pywb, warcio
// and gowarc expect.
//
// The writer is a pipeline, as in BUbiNG's parallel WARC writer:
//
//	Write (many goroutines): digests, revisit decision, record headers
//	  │ admitted in order under one lock, into two bounded queues
//	  ▼
//	compressors (Options.Compressors goroutines): one gzip member per record,
//	  pooled gzip writers and buffers
//	  │
//	  ▼
//	appender (one goroutine): waits for each exchange in admission order,
//	  appends its members, flushes a batch, rotates files, then releases
//	  the batch's Write calls with their file and offset.
//
// Invariants:
//   - Records appear in files in the order Write calls were admitted; the
//     request and response of one exchange are adjacent, in the same file.
//   - Write returns only once its records have been handed to the
//     operating system (or failed), so Result.File and Result.Offset are
//     final and the Exchange's byte slices, which are not copied, are no
//     longer referenced.
//   - At most Options.QueueLength exchanges are in flight; Write blocks
//     when the queue is full (back-pressure). Each batch of the appender
//     is bounded to 64 exchanges or 1 MiB.
//   - The first write error is sticky: it is returned, wrapped as
//     "store: write FILE: ...", from the Write calls it affects, from every
//     later Write and from Close; the failed file keeps its ".open" suffix.
//   - Files are fsynced (and the directory after the rename) on rotation
//     and Close, and in the background each time the open file has grown
//     by Options.SyncEvery (64 MiB): at most one such sync runs, and the
//     appender waits for it only at rotation and Close. A failed sync is
//     sticky like a write error, wrapped as "store: sync FILE: ...": the
//     records it covered were already reported stored, so every later
//     Write and Close return it and the file keeps its ".open" suffix.
//
// # Digests
//
// WARC-Block-Digest is the SHA-1 (base 32) of the record block as stored.
// WARC-Payload-Digest of a response is the SHA-1 of the entity body: the
// bytes after the HTTP header, de-chunked when Transfer-Encoding is chunked
// (a body cut short is digested as far as it goes), but with any
// Content-Encoding kept, as warcio does. gowarc digests chunked payloads as
// transferred, so CheckFile verifies those itself.
//
// # Revisits
//
// Payload digests of whole 2xx responses with a non-empty payload go into a
// scalable Bloom filter (internal/bloom) whose first stage holds
// Options.DigestsExpected digests and whose compound false-positive rate
// stays within Options.DigestsFalsePositive (a false positive would lose a
// unique page, hence the default of 1e-9) as it grows. The URI, date and
// record ID of the first capture of the most recent Options.RevisitRefs
// digests (default 65536, about 10 MB) are kept. A response is written as
// a revisit record (profile identical-payload-digest, the block the HTTP
// header only) when its digest tests positive and its first capture is
// remembered: every revisit carries WARC-Refers-To,
// WARC-Refers-To-Target-URI and WARC-Refers-To-Date, which replay tools
// resolve it by. A duplicate whose first capture was forgotten is stored
// in full and becomes the capture later duplicates refer to. SaveDigests
// writes the filter and the remembered captures (a clean stop saves them,
// LoadDigests brings them back at the resume).
//
// A 304 answer to a conditional request that names the capture it
// confirms (Exchange.NotModified) is a revisit record with the profile
// server-not-modified of WARC 1.1, its block the HTTP header, referring to
// that capture by WARC-Refers-To, -Target-URI and -Date; Result.RecordID
// is the ID a later 304 refers to.
//
// Options.Prior is asked about each whole 200 response with a payload
// that this crawl has not stored: a payload an earlier crawl archived is a
// revisit record (identical-payload-digest) referring to that capture by
// WARC-Refers-To-Target-URI and -Date only (Result.Prior). A DedupIndex
// (dedup.go) is such a Prior: the payload digests of an earlier crawl's
// 200 responses, read from its CDXJ index (Petrel's, pywb's or warcio's
// lines) into a sorted array of 40 bytes a digest plus the URL, bounded in
// entries; NoPrior is the Prior of a crawl without one.
//
// A truncated capture (Exchange.Truncated set: connection reset, body
// shorter than its Content-Length, timeout, size cap) is always a response
// record with WARC-Truncated, however often the same cut transfer is
// retried, and its digest never enters the filter: no revisit refers to a
// truncated capture.
//
// # Indexes
//
// With Options.Index the writer keeps the CDXJ lines of the open file
// (memory bounded by Options.IndexBudget, then sorted runs on disk) and
// writes them, sorted, to NAME.cdxj beside NAME.warc.gz when the file is
// closed; an Exchange's Languages (the page's, when the crawl detects
// them) end its line as the field "languages", as in Common Crawl's CDXJ
// index. The WARC records do not carry them: an index made again from
// the WARC file (IndexFile, WriteCDXJ, IndexCrawl, Repair) has them only
// when its IndexOptions has a Languages, which detects them in each 2xx
// response's payload as the crawl did (indexlang.go; a revisit record
// gets those of the response with its payload read before it in the same
// making). IndexCrawl merges the per-file indexes of a crawl directory into
// indexes/index.cdxj, rebuilding from the WARC file any that is missing or
// older than its file; a file that cannot be read through (cut short) is
// left out and reported, not an error. Repair, after a crash, cuts each
// file left open after its last whole record, renames it and writes its
// index. WARCFiles leaves open files out; OpenWARCFiles lists them, so
// that "petrel warc ls" and "check" can say what they skipped. Every index is
// sorted by the bytes of its lines and written as warcio's cdx-index
// writes it (see index.go).
//
// Options.Appended is told of each record once it is appended (the
// warcinfo record of each file first, then the records in file order):
// its file, offset, gzip member length, WARC header fields and block,
// and the Exchange's Note, which the store hands on without reading it.
// Options.Closed is told of each file once it is closed and renamed.
// The crawler writes its WAT and WET files and index rows from them
// (package dataset) as the records are written.
//
// # Compression level
//
// Compression uses github.com/klauspost/compress/gzip (a drop-in for
// compress/gzip, faster). DefaultGzipLevel stays gzip.DefaultCompression:
// smaller files for more compression time; set Options.GzipLevel to 1 when
// the crawl is CPU-bound (the crawler's --warc-gzip-level does, by
// default). Level 9 is never worth it. BenchmarkWrite measures the levels;
// its figures are in BENCHMARKS.md.
//
// Whatever the level, a deflate block pays for building its Huffman tables
// (a few microseconds) however short it is, which a request record of a
// few hundred bytes does not repay: records under Options.StoreBelow (1 KiB
// by default) go in a stored block of their gzip member, for a little less
// CPU and slightly larger files (BENCHMARKS.md has the figures). Readers
// see ordinary gzip members either way.
//
// A response whose body came compressed (a Content-Encoding other than
// identity, or a compressed format by its Content-Type: JPEG, PNG, WOFF,
// zip, ...) is still one gzip member, but its deflate stream carries the
// body in stored blocks: deflating it again would cost many times the CPU
// of copying it and gain next to nothing. The WARC and HTTP
// headers before it are deflated when they reach Options.StoreBelow, else
// stored too (member.go has the layout and the rule).
//
// # Files
//
//	writer.go    Writer: Open, Write, the compressors and the appender
//	appended.go  Appended: each record as appended, for Options.Appended
//	record.go    record headers, IDs, digests, the warcinfo block
//	member.go    the gzip member of a record whose body is stored
//	http.go      the HTTP response split into header and body, dechunking
//	index.go     CDXJ lines, the open file's index, IndexCrawl, WriteCDXJ
//	indexlang.go IndexOptions: the languages of an index made from WARC files
//	surt.go      SURT keys
//	read.go      ListRecords, CheckFile, Records, EachRecord
//	cat.go       Archive, ReadRecord, ReadPayload ("petrel warc cat")
//	repair.go    Repair of files left open by a crash
//	fetchrecords.go  EachFetchRecord: what each response and revisit record says of its fetch
//	settings.go  the store's settings of a crawl
//
// # Reading
//
// ListRecords, CheckFile, WriteCDXJ and IndexCrawl read files with
// github.com/nlnwa/gowarc/v3, never with this package's writer code, and
// back "petrel warc ls", "check", "cdxj" and "index". Archive finds the
// captures of a URL (through indexes/index.cdxj, or the files themselves)
// and ReadRecord and Archive.ReadPayload print one, for "petrel warc cat".
// EachFetchRecord reads what each response and revisit record says of its
// fetch (status, validators, digest, record ID, date) from the files
// modified since a time: the revisit schedule settles after a crash the
// fetches it had claimed from it.
//
// OpenRecords and EachRecord read leniently (gowarc's syntax errors, spec
// violations and unknown record types ignored), and gowarc then keeps of
// each block only what its header's parse buffered (a few KiB): enough
// for the HTTP header. OpenRecordBlocks reads as leniently but keeps the
// whole blocks (spec violations as warnings, so that gowarc reads each
// block through its digest check), for the dataset conversion and an
// index with languages.
//
// Files: writer.go (the Writer, its pipeline and revisit decisions),
// appended.go (each record as appended, for Options.Appended), record.go (record headers, digests, warcinfo), http.go (what a response
// is made of: status, header, payload; de-chunking), dedup.go (Prior and DedupIndex,
// an earlier crawl's payloads), index.go (CDXJ lines, sorting, merging,
// IndexCrawl), indexlang.go (the languages of an index made from WARC
// files), read.go (ls, check, cdxj), cat.go (Archive: captures of a
// URL, "warc cat"), repair.go (files left open by a crash), fetchrecords.go
// (what a record says of its fetch), surt.go (SURT keys), settings.go (the
// store's settings).
package store
