package dataset

import (
	"bytes"
	"strings"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/extract"
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/store"
)

// sniffLen is what net/http.DetectContentType reads of a body, all that
// the index row needs of a payload whose page is already made.
const sniffLen = 512

// Decode returns the payload of an HTTP response (as received, truncated
// as its record's WARC-Truncated says) as Convert reads it from the
// response record: de-chunked, its Content-Encoding undone by decode
// (which gives what fetch.DecodeBody gives; nil: store.DecodeResponse's),
// the block and the body cut at MaxBlock bytes.
func Decode(response []byte, truncated string, decode store.BodyDecoder) store.Payload {
	if len(response) > MaxBlock {
		response = response[:MaxBlock]
	}
	if decode == nil {
		return store.DecodeResponse(response, truncated, MaxBlock)
	}
	return store.DecodeResponseWith(response, truncated, MaxBlock, decode)
}

// Capture is what the outputs need of a response the crawl has read
// before storing it, for the record the store writes of it (handed over
// as store.Exchange.Note): the payload's header and the start of its
// body, and the page, made from the crawl's own parse.
type Capture struct {
	payload store.Payload // its Body the first sniffLen bytes
	page    *Page
}

// Scratch is what the reading of a page for the outputs uses, kept from
// one page to the next by a caller that reads pages one at a time (a
// sync.Pool of them serves many goroutines).
type Scratch struct {
	// Meta is the parse.Options.Meta of the page's parse.
	Meta parse.PageMeta
	ext  extract.Extractor
}

// NewScratch returns a Scratch for the pages whose outputs o asks for.
// Its Meta collects the visible text only when o's WET text is TextAll;
// the pages in which no main text is found have theirs collected apart.
func NewScratch(o Options) *Scratch {
	return &Scratch{Meta: parse.PageMeta{NoText: o.Text != TextAll}}
}

// Capture returns the Capture of the payload p (from Decode). When
// IsPage(p), res is its parse by parse.HTML with parse.Options.Meta set
// to &s.Meta (the crawl's own parse, with any other options); else res is
// nil. p, res and s may be reused once it returns.
func (s *Scratch) Capture(p store.Payload, res *parse.Result, o Options) *Capture {
	c := &Capture{payload: p}
	if res != nil {
		if o.Text == "" {
			o.Text = TextMain
		}
		c.page = newPage(&p, res, &s.Meta, &s.ext, o)
	}
	c.payload.RawHeader = bytes.Clone(p.RawHeader)
	c.payload.Body = bytes.Clone(p.Body[:min(len(p.Body), sniffLen)])
	return c
}

// Record is a record the store appended (store.Options.Appended), copied
// for a FileWriter.
type Record struct {
	path string // the WARC file's
	rec  *record
}

// RecordOf copies what the outputs need of the record a: its header and
// block, or, for a response record that carries a Capture as its Note,
// the Capture instead of the block. It is cheap enough for the store's
// appender to call.
func RecordOf(a *store.Appended) *Record {
	h := make(gowarc.WarcFields, 0, len(a.Header))
	for _, f := range a.Header {
		h.Add(f.Name, f.Value)
	}
	rec := newRecord(&h, recordType(a.Type()), a.Offset, a.Length, strings.HasSuffix(a.Path, ".gz"))
	if c, ok := a.Note.(*Capture); ok && rec.typ == gowarc.Response {
		rec.payload, rec.page = &c.payload, c.page
	} else {
		n := min(len(a.Block[0])+len(a.Block[1]), MaxBlock)
		rec.block = append(make([]byte, 0, n), a.Block[0][:min(len(a.Block[0]), n)]...)
		rec.block = append(rec.block, a.Block[1][:n-len(rec.block)]...)
	}
	return &Record{path: a.Path, rec: rec}
}

// Path returns the path of the WARC file r is a record of.
func (r *Record) Path() string { return r.path }

// recordType is the gowarc.RecordType of a WARC-Type.
func recordType(s string) gowarc.RecordType {
	switch s {
	case "warcinfo":
		return gowarc.Warcinfo
	case "response":
		return gowarc.Response
	case "resource":
		return gowarc.Resource
	case "request":
		return gowarc.Request
	case "metadata":
		return gowarc.Metadata
	case "revisit":
		return gowarc.Revisit
	case "conversion":
		return gowarc.Conversion
	case "continuation":
		return gowarc.Continuation
	}
	return 0
}
