package dataset

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// record is one WARC record as the outputs describe it.
type record struct {
	typ        gowarc.RecordType
	header     *gowarc.WarcFields
	offset     int64 // of the record (its gzip member) in the file
	size       int64 // bytes of the record in the file
	compressed bool
	headerLen  int    // bytes of the WARC header
	block      []byte // the block, at most MaxBlock bytes of it (nil when payload says all)
	blockLen   int64  // the block's Content-Length
	payload    *store.Payload
	page       *Page // nil unless the payload was parsed as an HTML page
}

// newRecord returns the record of header h at offset (size bytes in the
// file), its block not yet read.
func newRecord(h *gowarc.WarcFields, typ gowarc.RecordType, offset, size int64, compressed bool) *record {
	rec := &record{typ: typ, header: h, offset: offset, size: size, compressed: compressed}
	rec.headerLen = len("WARC/1.1\r\n\r\n")
	for _, nv := range *h {
		rec.headerLen += len(nv.Name) + len(nv.Value) + 4
	}
	return rec
}

// read reads gr's block and, for an HTML response, parses its payload.
func (c *converter) read(gr gowarc.Record) (*record, error) {
	wr := gr.WarcRecord
	h := wr.WarcHeader()
	rec := newRecord(h, wr.Type(), gr.Offset, gr.Size, c.compressed)
	rd, err := wr.Block().RawBytes()
	if err != nil {
		return nil, fmt.Errorf("dataset: %s: offset %d: %w", c.name, gr.Offset, err)
	}
	rec.block, err = io.ReadAll(io.LimitReader(rd, MaxBlock))
	if err != nil {
		return nil, fmt.Errorf("dataset: %s: offset %d: %w", c.name, gr.Offset, err)
	}
	c.complete(rec)
	return rec, nil
}

// complete sets what rec's block makes of it: the length of the block,
// and for an HTTP response or revisit its decoded payload and, for an
// HTML response, its page.
func (c *converter) complete(rec *record) {
	var err error
	if rec.blockLen, err = rec.header.GetInt64(gowarc.ContentLength); err != nil {
		rec.blockLen = int64(len(rec.block))
	}
	if rec.payload != nil || (rec.typ != gowarc.Response && rec.typ != gowarc.Revisit) || !rec.isHTTP() {
		return
	}
	p := store.DecodeResponse(rec.block, rec.header.Get(gowarc.WarcTruncated), MaxBlock)
	rec.payload = &p
	if rec.typ == gowarc.Response && IsPage(&p) {
		if base, err := urlx.Parse(rec.header.Get(gowarc.WarcTargetURI)); err == nil {
			res := parse.HTML(base, p.Header, p.Body, parse.Options{Meta: &c.scratch.Meta})
			rec.page = newPage(&p, &res, &c.scratch.Meta, &c.scratch.ext, c.o)
		}
	}
}

// isHTTP reports whether the block is an HTTP message.
func (r *record) isHTTP() bool {
	return strings.HasPrefix(r.header.Get(gowarc.ContentType), "application/http")
}

// httpHeader returns the HTTP header at the start of the block, the blank
// line included (the whole block when it has no blank line).
func (r *record) httpHeader() []byte {
	if r.payload != nil {
		return r.payload.RawHeader
	}
	b := r.block
	if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
		return b[:i+4]
	}
	if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
		return b[:i+2]
	}
	return b
}

// blockDigest returns the record's WARC-Block-Digest, or computes it.
func (r *record) blockDigest() string {
	if d := r.header.Get(gowarc.WarcBlockDigest); d != "" {
		return d
	}
	return store.SHA1Digest(r.block)
}

// contentType returns the payload's Content-Type.
func (r *record) contentType() string {
	if r.payload == nil {
		return ""
	}
	return r.payload.Header.Get("Content-Type")
}

// fieldsObjValue returns the value of the field name in an
// application/warc-fields block.
func fieldsObjValue(block []byte, name string) string {
	for _, m := range fieldsObj(block) {
		if m.key == name {
			return m.value.(string)
		}
	}
	return ""
}
