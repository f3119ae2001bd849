package dataset

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/petrel-crawler/petrel/internal/store"
)

// openSuffix marks an output file still being written.
const openSuffix = ".open"

// warcOut writes a WAT or WET file: WARC/1.0 records (as Common Crawl's
// are), each its own gzip member, to NAME.open, renamed NAME by close.
type warcOut struct {
	path  string // final name
	f     *os.File
	bw    *bufio.Writer
	zw    *gzip.Writer
	buf   []byte // the record being serialised
	bytes int64  // the file's size, once closed
}

// field is one WARC named field.
type field struct{ name, value string }

// createWARC creates path+".open" for records compressed at level.
func createWARC(path string, level int) (*warcOut, error) {
	f, err := os.Create(path + openSuffix)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	zw, err := gzip.NewWriterLevel(bw, level)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dataset: gzip level %d: %w", level, err)
	}
	return &warcOut{path: path, f: f, bw: bw, zw: zw}, nil
}

// record appends one record with fields (WARC-Type first), its
// WARC-Block-Digest, Content-Length and block.
func (w *warcOut) record(fields []field, block []byte) error {
	b := append(w.buf[:0], "WARC/1.0\r\n"...)
	for _, f := range fields {
		b = append(b, f.name...)
		b = append(b, ": "...)
		b = append(b, f.value...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "WARC-Block-Digest: "...)
	b = append(b, store.SHA1Digest(block)...)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(block)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, block...)
	b = append(b, "\r\n\r\n"...)
	w.buf = b
	w.zw.Reset(w.bw)
	if _, err := w.zw.Write(b); err != nil {
		return fmt.Errorf("dataset: write %s: %w", w.path, err)
	}
	if err := w.zw.Close(); err != nil {
		return fmt.Errorf("dataset: write %s: %w", w.path, err)
	}
	return nil
}

// warcinfo appends the file's warcinfo record: the software, the WARC file
// it was made from and when.
func (w *warcOut) warcinfo(software, source, description string, now time.Time) error {
	block := []byte("software: " + software + "\r\n" +
		"extractedDate: " + now.UTC().Format(time.RFC3339) + "\r\n" +
		"format: WARC File Format 1.0\r\n" +
		"conformsTo: http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf\r\n" +
		"source: " + source + "\r\n" +
		"description: " + description + "\r\n")
	return w.record([]field{
		{"WARC-Type", "warcinfo"},
		{"WARC-Date", now.UTC().Format(time.RFC3339)},
		{"WARC-Filename", baseName(w.path)},
		{"WARC-Record-ID", store.NewRecordID()},
		{"Content-Type", "application/warc-fields"},
	}, block)
}

// close flushes, syncs and closes the file and gives it its final name.
func (w *warcOut) close() error {
	err := w.bw.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if fi, serr := w.f.Stat(); err == nil && serr == nil {
		w.bytes = fi.Size()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.path+openSuffix, w.path)
	}
	if err != nil {
		os.Remove(w.path + openSuffix)
		return fmt.Errorf("dataset: write %s: %w", w.path, err)
	}
	return nil
}

// abort closes and removes the unfinished file.
func (w *warcOut) abort() {
	w.f.Close()
	os.Remove(w.path + openSuffix)
}
