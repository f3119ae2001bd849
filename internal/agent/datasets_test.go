package agent

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-crawler/petrel/internal/dataset"
	"github.com/petrel-crawler/petrel/internal/store"
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
