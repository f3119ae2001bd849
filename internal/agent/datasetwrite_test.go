package agent

import (
	"bytes"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/dataset"
	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestDatasetsAtWriteTime crawls with every dataset output on (and the
// languages, whose parse is the same one), in small WARC files, then
// converts a copy of each WARC file with dataset.Convert: the WAT and
// WET files written as the crawl stored its records are those of the
// conversion record by record (but for the record IDs of the outputs'
// records and the dates of their warcinfo records), and so are the index
// rows.
func TestDatasetsAtWriteTime(t *testing.T) {
	c := newTestCrawl(t, "127.61.4.1", 3, 20, func(cfg *Config, w *testweb.Web) {
		cfg.Store.WAT, cfg.Store.WET, cfg.Store.CCIndex, cfg.Store.Languages = true, true, true, true
		cfg.Store.MaxFileBytes, cfg.Store.GzipLevel = 64<<10, 1
	})
	c.run(t)
	files, err := store.WARCFiles([]string{c.cfg.Dir})
	if err != nil || len(files) < 2 {
		t.Fatalf("WARC files %v, %v: want several", files, err)
	}
	pages, described := 0, 0
	for _, p := range files {
		cp := filepath.Join(t.TempDir(), filepath.Base(p))
		if err := copyFile(p, cp); err != nil {
			t.Fatal(err)
		}
		res, err := dataset.Convert(cp, dataset.Options{WAT: true, WET: true, Rows: true, GzipLevel: 1, Software: "Petrel/" + Version})
		if err != nil {
			t.Fatal(err)
		}
		pages += res.Pages
		for _, r := range readOutput(t, dataset.WATName(p)) {
			if bytes.Contains(r.block, []byte(`"HTML-Metadata"`)) {
				described++
			}
		}
		sameOutput(t, dataset.WATName(p), dataset.WATName(cp))
		sameOutput(t, dataset.WETName(p), dataset.WETName(cp))
		rows, err := dataset.ReadRows(dataset.RowsName(p))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := dataset.ReadRows(writeRows(t, cp, res.Rows))
		if !reflect.DeepEqual(rows, want) {
			t.Errorf("%s: index rows differ from the conversion's", filepath.Base(p))
		}
	}
	if pages == 0 || described != pages {
		t.Errorf("%d pages in the WARC files, %d described in the WAT files", pages, described)
	}
}

// writeRows writes rows as the crawl writes a file's rows, and returns
// where.
func writeRows(t *testing.T, warcPath string, rows []dataset.Row) string {
	t.Helper()
	p := dataset.RowsName(warcPath)
	if err := dataset.WriteRows(p, rows); err != nil {
		t.Fatal(err)
	}
	return p
}

// outRecord is a record of a WAT or WET file.
type outRecord struct {
	fields [][2]string
	block  []byte
}

func readOutput(t *testing.T, path string) []outRecord {
	t.Helper()
	r, err := gowarc.NewWarcFileReader(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []outRecord
	for {
		gr, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var o outRecord
		for _, nv := range *gr.WarcRecord.WarcHeader() {
			o.fields = append(o.fields, [2]string{nv.Name, nv.Value})
		}
		rd, err := gr.WarcRecord.Block().RawBytes()
		if err == nil {
			o.block, err = io.ReadAll(rd)
		}
		gr.Close()
		if err != nil {
			t.Fatalf("%s: offset %d: %v", path, gr.Offset, err)
		}
		out = append(out, o)
	}
}

// sameOutput compares two WAT or WET files record by record, but for what
// differs between two makings of one output: the record IDs, and the
// date of the warcinfo record (its WARC-Date, the extractedDate of its
// block, hence its digest).
func sameOutput(t *testing.T, got, want string) {
	t.Helper()
	g, w := readOutput(t, got), readOutput(t, want)
	if len(g) != len(w) || len(g) == 0 {
		t.Fatalf("%s: %d records, the conversion %d", filepath.Base(got), len(g), len(w))
	}
	for i := range g {
		info := i == 0
		if !reflect.DeepEqual(comparable(g[i], info), comparable(w[i], info)) {
			t.Errorf("%s: record %d differs:\n%s\n%s\nwant\n%s\n%s", filepath.Base(got), i,
				g[i].fields, g[i].block, w[i].fields, w[i].block)
			return
		}
	}
}

// comparable is what of r two makings of its file have the same.
func comparable(r outRecord, warcinfo bool) outRecord {
	var c outRecord
	for _, f := range r.fields {
		switch {
		case f[0] == "WARC-Record-ID":
		case warcinfo && (f[0] == "WARC-Date" || f[0] == "WARC-Block-Digest"):
		default:
			c.fields = append(c.fields, f)
		}
	}
	for l := range bytes.Lines(r.block) {
		if !(warcinfo && strings.HasPrefix(string(l), "extractedDate:")) {
			c.block = append(c.block, l...)
		}
	}
	return c
}
