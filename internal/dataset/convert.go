package dataset

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// MaxBlock bounds the bytes of a record's block that are read; a longer
// block is described from its first MaxBlock bytes (its HTML metadata
// and text are those of that part).
const MaxBlock = 32 << 20

// Options says what Convert makes of a WARC file.
type Options struct {
	WAT bool // write NAME.warc.wat.gz beside NAME.warc.gz
	WET bool // write NAME.warc.wet.gz
	// Text is what a WET record holds of its page (default TextMain).
	Text Text
	// Rows returns the file's index rows (Result.Rows).
	Rows bool
	// Filename is the warc_filename of the rows (default: the file's base
	// name).
	Filename string
	// GzipLevel compresses the WAT and WET records (default 1).
	GzipLevel int
	// Software names the converter in the warcinfo records (default
	// "Petrel").
	Software string
}

// Result is what Convert made.
type Result struct {
	Records  int   // records read
	Pages    int   // HTML pages parsed
	Texts    int   // WET conversion records written
	WATBytes int64 // bytes of the WAT file
	WETBytes int64
	Rows     []Row
}

// WATName returns the WAT file of a WARC file, as Common Crawl names
// them: NAME.warc.wat.gz for NAME.warc.gz (or NAME.warc).
func WATName(warcPath string) string { return derivedName(warcPath, ".wat.gz") }

// WETName returns the WET file of a WARC file: NAME.warc.wet.gz.
func WETName(warcPath string) string { return derivedName(warcPath, ".wet.gz") }

func derivedName(p, ext string) string {
	return strings.TrimSuffix(strings.TrimSuffix(p, openSuffix), ".gz") + ext
}

func baseName(p string) string { return filepath.Base(strings.TrimSuffix(p, openSuffix)) }

// Convert reads the WARC file at path (Petrel's or any crawler's) once
// and writes what o asks: its WAT file, its WET file, its index rows.
// The outputs are written as NAME.open and renamed when complete; on an
// error they are removed.
func Convert(path string, o Options) (res Result, err error) {
	if o.GzipLevel == 0 {
		o.GzipLevel = 1
	}
	if o.Software == "" {
		o.Software = "Petrel"
	}
	if o.Filename == "" {
		o.Filename = baseName(path)
	}
	switch o.Text {
	case "":
		o.Text = TextMain
	case TextMain, TextAll:
	default:
		return res, fmt.Errorf("dataset: text %q: want %s or %s", o.Text, TextMain, TextAll)
	}
	rs, err := store.OpenRecords(path, 0)
	if err != nil {
		return res, fmt.Errorf("dataset: %s: %w", path, err)
	}
	defer rs.Close()
	c := converter{o: o, name: baseName(path), compressed: strings.HasSuffix(path, ".gz")}
	defer c.abort()
	now := time.Now()
	if o.WAT {
		if c.wat, err = createWARC(WATName(path), o.GzipLevel); err != nil {
			return res, err
		}
		if err := c.wat.warcinfo(o.Software, c.name, "WAT metadata of "+c.name, now); err != nil {
			return res, err
		}
	}
	if o.WET {
		if c.wet, err = createWARC(WETName(path), o.GzipLevel); err != nil {
			return res, err
		}
		if err := c.wet.warcinfo(o.Software, c.name, "WET text of "+c.name, now); err != nil {
			return res, err
		}
	}
	if err := rs.Each("dataset: ", c.record); err != nil {
		return c.res, err
	}
	return c.finish()
}

// converter holds the state of one Convert.
type converter struct {
	o          Options
	name       string // the WARC file's base name
	compressed bool
	wat, wet   *warcOut
	crawl      string // isPartOf of the file's warcinfo
	meta       parse.PageMeta
	res        Result
}

// record converts one record.
func (c *converter) record(gr gowarc.Record) error {
	rec, err := c.read(gr)
	if err != nil {
		return err
	}
	c.res.Records++
	if rec.typ == gowarc.Warcinfo && c.crawl == "" {
		c.crawl = fieldsObjValue(rec.block, "isPartOf")
	}
	if c.wat != nil {
		if err := c.wat.record(derivedFields(rec, "metadata", "application/json"), watJSON(rec, c.name)); err != nil {
			return err
		}
	}
	if rec.meta != nil && (c.wet != nil || c.o.Rows) {
		rec.text, rec.langs = pageText(rec, c.o.Text)
	}
	if c.wet != nil && rec.meta != nil {
		f := derivedFields(rec, "conversion", "text/plain")
		if rec.langs != "" { // before Content-Type, as in Common Crawl's
			f = append(f[:len(f)-1], field{"WARC-Identified-Content-Language", rec.langs}, f[len(f)-1])
		}
		if err := c.wet.record(f, rec.text); err != nil {
			return err
		}
		c.res.Texts++
	}
	if c.o.Rows {
		if row, ok := rowOf(rec, c.o.Filename, c.crawl); ok {
			c.res.Rows = append(c.res.Rows, row)
		}
	}
	return nil
}

// finish closes the outputs.
func (c *converter) finish() (Result, error) {
	for _, w := range []*warcOut{c.wat, c.wet} {
		if w == nil {
			continue
		}
		if err := w.close(); err != nil {
			return c.res, err
		}
	}
	// Both are closed: nothing is left to abort.
	if c.wat != nil {
		c.res.WATBytes = c.wat.bytes
	}
	if c.wet != nil {
		c.res.WETBytes = c.wet.bytes
	}
	c.wat, c.wet = nil, nil
	return c.res, nil
}

// abort removes the outputs not finished.
func (c *converter) abort() {
	for _, w := range []*warcOut{c.wat, c.wet} {
		if w != nil {
			w.abort()
		}
	}
}

// derivedFields are the WARC fields of the WAT or WET record of rec.
func derivedFields(rec *record, typ, contentType string) []field {
	// Common Crawl gives the record of a warcinfo record the file name as
	// its WARC-Target-URI, which is not a URI: it has none here.
	target := rec.header.Get(gowarc.WarcTargetURI)
	f := []field{{"WARC-Type", typ}}
	if target != "" {
		f = append(f, field{"WARC-Target-URI", target})
	}
	f = append(f, field{"WARC-Date", rec.header.Get(gowarc.WarcDate)}, field{"WARC-Record-ID", store.NewRecordID()})
	if id := rec.header.Get(gowarc.WarcRecordID); id != "" {
		f = append(f, field{"WARC-Refers-To", id})
	}
	return append(f, field{"Content-Type", contentType})
}

// record is one WARC record read for conversion.
type record struct {
	typ        gowarc.RecordType
	header     *gowarc.WarcFields
	offset     int64 // of the record (its gzip member) in the file
	size       int64 // bytes of the record in the file
	compressed bool
	headerLen  int    // bytes of the WARC header
	block      []byte // the block, at most MaxBlock bytes of it
	blockLen   int64  // the block's Content-Length
	payload    *store.Payload
	page       parse.Result
	meta       *parse.PageMeta // nil unless the payload was parsed as HTML
	// text is the page's text (pageText) and langs its languages, as the
	// WET record and the index row have them; set for an HTML page when
	// either is written.
	text  []byte
	langs string
}

// read reads gr's block and, for an HTML response, parses its payload.
func (c *converter) read(gr gowarc.Record) (*record, error) {
	wr := gr.WarcRecord
	h := wr.WarcHeader()
	rec := &record{typ: wr.Type(), header: h, offset: gr.Offset, size: gr.Size, compressed: c.compressed}
	rec.headerLen = len("WARC/1.1\r\n\r\n")
	for _, nv := range *h {
		rec.headerLen += len(nv.Name) + len(nv.Value) + 4
	}
	rd, err := wr.Block().RawBytes()
	if err != nil {
		return nil, fmt.Errorf("dataset: %s: offset %d: %w", c.name, gr.Offset, err)
	}
	rec.block, err = io.ReadAll(io.LimitReader(rd, MaxBlock))
	if err != nil {
		return nil, fmt.Errorf("dataset: %s: offset %d: %w", c.name, gr.Offset, err)
	}
	if rec.blockLen, err = h.GetInt64(gowarc.ContentLength); err != nil {
		rec.blockLen = int64(len(rec.block))
	}
	if (rec.typ == gowarc.Response || rec.typ == gowarc.Revisit) && rec.isHTTP() {
		p := store.DecodeResponse(rec.block, h.Get(gowarc.WarcTruncated), MaxBlock)
		rec.payload = &p
		if rec.typ == gowarc.Response {
			c.parse(rec)
		}
	}
	return rec, nil
}

// parse parses the payload of rec when it is an HTML page.
func (c *converter) parse(rec *record) {
	p := rec.payload
	if p.Status < 200 || p.Status >= 300 || !parse.IsHTML(p.Header, p.Body) {
		return
	}
	base, err := urlx.Parse(rec.header.Get(gowarc.WarcTargetURI))
	if err != nil {
		return
	}
	rec.page = parse.HTML(base, p.Header, p.Body, parse.Options{Meta: &c.meta})
	rec.meta = &c.meta
	c.res.Pages++
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
