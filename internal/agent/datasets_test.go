package agent

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-crawler/petrel/internal/dataset"
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// TestDatasetsConvertWhatWasNotConverted: a WARC file the store closed
// without handing it over (as one repaired after a crash, or written
// before --wat was asked for) gets its outputs at the end, and the index.
func TestDatasetsConvertWhatWasNotConverted(t *testing.T) {
	dir := t.TempDir()
	w, err := store.Open(store.Options{Dir: filepath.Join(dir, "warc")})
	if err != nil {
		t.Fatal(err)
	}
	body := "<html><title>T</title><p>text</p></html>"
	if _, err := w.Write(&store.Exchange{TargetURI: "http://a.example/", IP: "127.0.0.1",
		Request:  []byte("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"),
		Response: []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 40\r\n\r\n" + body)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d := newDatasets(store.Settings{WAT: true, WET: true, CCIndex: true, GzipLevel: 1}, slog.New(slog.DiscardHandler))
	if errs := d.close(dir, true); len(errs) > 0 {
		t.Fatal(errs)
	}
	files, _ := store.WARCFiles([]string{dir})
	if len(files) != 1 {
		t.Fatalf("WARC files %v", files)
	}
	for _, p := range []string{dataset.WATName(files[0]), dataset.WETName(files[0])} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	rows, err := dataset.ReadRows(dataset.CrawlIndex(dir))
	if err != nil || len(rows) != 1 || rows[0].WARCFilename != "warc/"+filepath.Base(files[0]) {
		t.Fatalf("index rows %+v, %v", rows, err)
	}
}

// TestDatasetsWrittenAsStored: the outputs of a WARC file are written
// from the records as the store appends them, a response's page from
// the Capture that goes with it (its title here is the Capture's, not
// the stored page's), with no conversion at the end.
func TestDatasetsWrittenAsStored(t *testing.T) {
	dir := t.TempDir()
	d := newDatasets(store.Settings{WAT: true, WET: true, CCIndex: true, GzipLevel: 1}, slog.New(slog.DiscardHandler))
	w, err := store.Open(store.Options{Dir: filepath.Join(dir, "warc"), Closed: d.closed, Appended: d.appended})
	if err != nil {
		t.Fatal(err)
	}
	resp := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><title>Stored</title><p>text</p></html>"
	p := dataset.Decode([]byte(resp), "", nil)
	s := dataset.NewScratch(d.opts)
	base, _ := urlx.Parse("http://a.example/")
	res := parse.HTML(base, p.Header, p.Body, parse.Options{Meta: &s.Meta})
	res.Title = "Captured"
	if _, err := w.Write(&store.Exchange{TargetURI: "http://a.example/", IP: "127.0.0.1",
		Request: []byte("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"), Response: []byte(resp),
		Note: s.Capture(p, &res, d.opts)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if errs := d.close(dir, false); len(errs) > 0 {
		t.Fatal(errs)
	}
	files, _ := store.WARCFiles([]string{dir})
	if len(files) != 1 {
		t.Fatalf("WARC files %v", files)
	}
	wat := readOutput(t, dataset.WATName(files[0]))
	wet := readOutput(t, dataset.WETName(files[0]))
	rows, err := dataset.ReadRows(dataset.RowsName(files[0]))
	if len(wat) != 4 || len(wet) != 2 || err != nil || len(rows) != 1 {
		t.Fatalf("%d WAT records, %d WET records, rows %v (%v)", len(wat), len(wet), rows, err)
	}
	if !bytes.Contains(wat[3].block, []byte(`"Title":"Captured"`)) || !bytes.HasPrefix(wet[1].block, []byte("Captured\n")) {
		t.Errorf("the page is not the Capture's:\n%v\n%s\n%v %s", wat[3].fields, wat[3].block, wet[1].fields, wet[1].block)
	}
}
