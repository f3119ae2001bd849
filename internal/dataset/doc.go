// Package dataset derives from WARC files the outputs dataset builders
// take from Common Crawl: WAT files (JSON metadata of every record), WET
// files (the text of every HTML page) and the columnar index (Parquet,
// the cc-index-table's columns), with Petrel's SimHash of each page in
// the WAT and the index.
//
// # One parse per page, at write time or from the file
//
// The outputs of a WARC file are made record by record, in file order,
// by a FileWriter: its WAT record of every record, the WET conversion
// record of every HTML page, and the index row of every response and
// revisit record. A page (a 2xx response whose payload, de-chunked and
// its Content-Encoding undone, is HTML: IsPage) goes through Petrel's
// one-pass parser (internal/parse) with parse.Options.Meta, which
// collects in the same tokenizer pass the elements WAT lists (and, for
// TextAll, the visible text); no other HTML parser is involved. From that
// pass, with the page's main text (package extract's own pass) and its
// languages, comes its Page; a page in which no main text is found has
// its visible text collected then (parse.VisibleText). A Scratch keeps
// the Meta and the main-text extractor's buffers from page to page.
//
// A crawl writes the outputs as the store appends the records
// (store.Options.Appended): the crawl decodes each response as the
// outputs read it (Decode) and, for a page, collects the Meta in its
// own parse, the one whose links it follows; Scratch.Capture makes of it
// the Capture that goes with the exchange to the store (store.Exchange.Note)
// and RecordOf copies each appended record, with its Capture, for the
// FileWriter. Nothing is read back nor parsed again.
//
// Convert does the same from a finished WARC file (Petrel's or another
// crawler's, through github.com/nlnwa/gowarc/v3): it reads the file once
// and hands each record, decoded and parsed, to a FileWriter. Both give
// the same outputs but for the record IDs of the outputs' records and
// the date of their warcinfo records.
//
// # WAT
//
// NAME.warc.wat.gz beside NAME.warc.gz: a warcinfo record, then one
// metadata record (Content-Type application/json, WARC-Refers-To the
// record it describes) per record of the WARC file, WARC/1.0 records in
// gzip members of their own, as Common Crawl writes them. The JSON has
// ia-web-commons' names and nesting: Container (Filename, Compressed,
// Offset), Envelope (Format, WARC-Header-Length, Block-Digest,
// Actual-Content-Length, WARC-Header-Metadata, Payload-Metadata). The
// Payload-Metadata of an HTTP response holds HTTP-Response-Metadata
// (Response-Message, Headers, Headers-Length, Entity-Length,
// Entity-Trailing-Slop-Length, Entity-Digest) and, for an HTML page,
// HTML-Metadata: Head (Title, Base, Metas, Link, Scripts), Links (path
// as "A@/href", url as written, the element's kept attributes and an
// anchor's text) and Petrel's SimHash and SimHash-Shingles. A header
// field the message repeats is a list of its values (as Common Crawl's
// since December 2024). Requests have HTTP-Request-Metadata, warcinfo
// records WARC-Info-Metadata.
//
// # WET
//
// NAME.warc.wet.gz: a warcinfo record, then per HTML page a conversion
// record (text/plain, WARC-Refers-To the response, WARC-Block-Digest,
// WARC-Identified-Content-Language) whose block is, by Options.Text, the
// page's main text (package extract: the title on the first line, then
// the blocks separated by blank lines; the visible text when none is
// found) or its visible text (the title on the first line, then one line
// per block element, PageMeta.Text, as Common Crawl's WET).
//
// # Language
//
// The languages of a page (package lang, ISO 639-3 codes, largest share
// first, comma-separated as Common Crawl writes them) are identified once,
// on the WET text, and go both in the WET record and in the index row's
// content_languages; they are found whenever either is written.
//
// # Columnar index
//
// Row has the cc-index-table's columns that apply (and content_simhash).
// WriteIndex writes one Parquet file (zstd) with one row group per WARC
// file, sorted by url_surtkey; a crawl keeps each closed file's rows in
// NAME.warc.cc-index.parquet (RowsName) until the end, when they are
// merged into indexes/cc-index.parquet.
//
// # Files
//
//	convert.go     Convert, Options, Result: a finished WARC file, read once
//	filewriter.go  FileWriter: the outputs of one WARC file, record by record
//	record.go      record: a WARC record as the outputs describe it, read and decoded
//	capture.go     Decode, Capture, Record: what the crawl hands over at write time
//	page.go        Page and IsPage: an HTML page's part of the outputs
//	wat.go         the WAT JSON of a record
//	text.go        a page's WET text and languages
//	json.go        JSON objects that keep their members' order
//	warcout.go     the WAT and WET files' writer
//	row.go         Row, the index row of a capture
//	parquet.go     the Parquet index: WriteRows, ReadRows, WriteIndex
package dataset
