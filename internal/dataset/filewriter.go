package dataset

import (
	"strings"
)

// FileWriter writes the outputs of one WARC file as its records are
// written (Options.Filename, when empty, is the WARC file's base name):
// given the file's records in order, it writes what Convert of the
// finished file writes, but for the record IDs and dates of the
// outputs' own warcinfo records and the record IDs of their other
// records.
type FileWriter struct {
	c converter
}

// Create starts the outputs o asks for of the WARC file warcPath (its
// final name), as NAME.open files until Close.
func Create(warcPath string, o Options) (*FileWriter, error) {
	if err := o.normalize(warcPath); err != nil {
		return nil, err
	}
	w := &FileWriter{c: converter{o: o, name: baseName(warcPath), compressed: strings.HasSuffix(warcPath, ".gz"), scratch: NewScratch(o)}}
	if err := w.c.open(warcPath); err != nil {
		w.c.abort()
		return nil, err
	}
	return w, nil
}

// Add writes the outputs of the next record of the file: a response
// record copied with its Capture is not decoded nor parsed again; any
// other is, as Convert does.
func (w *FileWriter) Add(r *Record) error {
	w.c.complete(r.rec)
	return w.c.record(r.rec)
}

// Close finishes the outputs and gives them their final names; Result
// has the index rows when Options.Rows asked for them.
func (w *FileWriter) Close() (Result, error) { return w.c.finish() }

// Abort removes the outputs not finished; after Close it does nothing.
func (w *FileWriter) Abort() { w.c.abort() }
