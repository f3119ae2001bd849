package dataset

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/store"
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

// normalize sets o's defaults and checks its text form.
func (o *Options) normalize(warcPath string) error {
	if o.GzipLevel == 0 {
		o.GzipLevel = 1
	}
	if o.Software == "" {
		o.Software = "Petrel"
	}
	if o.Filename == "" {
		o.Filename = baseName(warcPath)
	}
	switch o.Text {
	case "":
		o.Text = TextMain
	case TextMain, TextAll:
	default:
		return fmt.Errorf("dataset: text %q: want %s or %s", o.Text, TextMain, TextAll)
	}
	return nil
}

// Convert reads the WARC file at path (Petrel's or any crawler's) once
// and writes what o asks: its WAT file, its WET file, its index rows.
// The outputs are written as NAME.open and renamed when complete; on an
// error they are removed.
func Convert(path string, o Options) (res Result, err error) {
	if err := o.normalize(path); err != nil {
		return res, err
	}
	rs, err := store.OpenRecordBlocks(path, 0)
	if err != nil {
		return res, fmt.Errorf("dataset: %s: %w", path, err)
	}
	defer rs.Close()
	w, err := Create(path, o)
	if err != nil {
		return res, err
	}
	defer w.Abort()
	err = rs.Each("dataset: ", func(gr gowarc.Record) error {
		rec, err := w.c.read(gr)
		if err != nil {
			return err
		}
		return w.c.record(rec)
	})
	if err != nil {
		return w.c.res, err
	}
	return w.Close()
}

// converter holds the state of the conversion of one WARC file.
type converter struct {
	o          Options
	name       string // the WARC file's base name
	compressed bool
	wat, wet   *warcOut
	crawl      string   // isPartOf of the file's warcinfo
	scratch    *Scratch // NewScratch(o)
	json       []byte   // the WAT record being made
	res        Result
}

// open creates the outputs o asks for of the WARC file path, each with
// its warcinfo record.
func (c *converter) open(path string) error {
	now := time.Now()
	var err error
	if c.o.WAT {
		if c.wat, err = createWARC(WATName(path), c.o.GzipLevel); err != nil {
			return err
		}
		if err := c.wat.warcinfo(c.o.Software, c.name, "WAT metadata of "+c.name, now); err != nil {
			return err
		}
	}
	if c.o.WET {
		if c.wet, err = createWARC(WETName(path), c.o.GzipLevel); err != nil {
			return err
		}
		if err := c.wet.warcinfo(c.o.Software, c.name, "WET text of "+c.name, now); err != nil {
			return err
		}
	}
	return nil
}

// record writes the outputs of one record, read whole (its payload
// decoded and, for a page, parsed).
func (c *converter) record(rec *record) error {
	c.res.Records++
	if rec.page != nil {
		c.res.Pages++
	}
	if rec.typ == gowarc.Warcinfo && c.crawl == "" {
		c.crawl = fieldsObjValue(rec.block, "isPartOf")
	}
	if c.wat != nil {
		c.json = appendWATJSON(c.json[:0], rec, c.name)
		if err := c.wat.record(derivedFields(rec, "metadata", "application/json"), c.json); err != nil {
			return err
		}
	}
	if c.wet != nil && rec.page != nil {
		f := derivedFields(rec, "conversion", "text/plain")
		if rec.page.langs != "" { // before Content-Type, as in Common Crawl's
			f = append(f[:len(f)-1], field{"WARC-Identified-Content-Language", rec.page.langs}, f[len(f)-1])
		}
		if err := c.wet.record(f, rec.page.text); err != nil {
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
	c.wat, c.wet = nil, nil
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
