package dataset

import (
	"bytes"
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/store"
)

// TestConvertReadsWholeBlocks: a page far longer than what gowarc
// buffers of a record's header has its whole text in the WET record,
// its last paragraph included.
func TestConvertReadsWholeBlocks(t *testing.T) {
	var body strings.Builder
	body.WriteString("<html><head><title>Long</title></head><body><article>")
	for i := range 400 {
		body.WriteString("<p>A paragraph of plain words that goes on for a while, number ")
		body.WriteString(strings.Repeat("x", i%7+1))
		body.WriteString(".</p>\n")
	}
	body.WriteString("<p>The very last paragraph of the page.</p></article></body></html>")
	warc := writeExchanges(t, t.TempDir(), []store.Exchange{{TargetURI: "http://a.example/long",
		Response: htmlResponse("200 OK", "", body.String())}})
	if _, err := Convert(warc, Options{WET: true}); err != nil {
		t.Fatal(err)
	}
	_, blocks := readWARC(t, WETName(warc))
	if len(blocks) != 2 || !bytes.Contains(blocks[1], []byte("The very last paragraph of the page.")) {
		t.Fatalf("WET text of a %d-byte page: %d records, the last %d bytes", body.Len(), len(blocks), len(blocks[len(blocks)-1]))
	}
}
