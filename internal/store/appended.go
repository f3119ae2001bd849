package store

import (
	"path/filepath"
	"strconv"
)

// Appended is a record as the appender wrote it, for Options.Appended:
// where it is, its WARC header and its block.
type Appended struct {
	Path   string  // the WARC file's final path (without ".open")
	Offset int64   // of the record's gzip member in the file
	Length int64   // of that gzip member
	Header []Field // the WARC header fields in order, Content-Length last
	// Block is the record's block: Block[0] followed by Block[1].
	Block [2][]byte
	Note  any // the Exchange's Note; nil for a warcinfo record
}

// Field is one WARC header field.
type Field struct{ Name, Value string }

// Type returns the record's WARC-Type (its first field).
func (a *Appended) Type() string {
	if len(a.Header) == 0 {
		return ""
	}
	return a.Header[0].Value
}

// appended tells Options.Appended of the record r, appended to the
// current file at off in a gzip member of n bytes. The appender calls it.
func (w *Writer) appended(r *recordSpec, off, n int64, note any) {
	if w.opts.Appended == nil {
		return
	}
	a := &w.app
	a.Path = filepath.Join(w.opts.Dir, w.cur.name)
	a.Offset, a.Length, a.Note = off, n, note
	a.Header = a.Header[:0]
	for _, f := range r.fields {
		a.Header = append(a.Header, Field{f.name, f.value})
	}
	a.Header = append(a.Header, Field{"Content-Length", strconv.Itoa(r.blockLen())})
	a.Block = [2][]byte{r.block1, r.block2}
	w.opts.Appended(a)
	a.Note, a.Block = nil, [2][]byte{}
}
