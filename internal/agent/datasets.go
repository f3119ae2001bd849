package agent

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/petrel-crawler/petrel/internal/dataset"
	"github.com/petrel-crawler/petrel/internal/store"
)

// eventQueue bounds the records and closings waiting for the datasets'
// goroutine; the store's appender waits when it is full.
const eventQueue = 256

// datasets makes the dataset outputs of a crawl (package dataset): the WAT
// and WET files and the index rows of each WARC file as the store appends
// its records (each response with the Capture the parsers made of it, so
// that its page is not parsed again), written by a goroutine of its own
// in file order, and the columnar index at the end. The goroutine ends
// when close is called.
type datasets struct {
	events  chan datasetEvent // from the store's appender, in file order
	done    chan struct{}
	opts    dataset.Options
	ccIndex bool
	log     *slog.Logger
	scratch sync.Pool // *dataset.Scratch for the parsers
	// owned by the goroutine
	cur     *dataset.FileWriter // the outputs of the file being written
	curPath string              // that file ("" before the first)
	errs    []error             // the goroutine's, read after done
}

// datasetEvent is a record appended, or else a file closed.
type datasetEvent struct {
	rec    *dataset.Record
	closed string
}

// newDatasets starts the goroutine that writes the outputs s asks for;
// nil when s asks for none.
func newDatasets(s store.Settings, log *slog.Logger) *datasets {
	if !s.WAT && !s.WET && !s.CCIndex {
		return nil
	}
	d := &datasets{
		events:  make(chan datasetEvent, eventQueue),
		done:    make(chan struct{}),
		opts:    dataset.Options{WAT: s.WAT, WET: s.WET, Text: dataset.Text(s.WETText), Rows: s.CCIndex, GzipLevel: s.GzipLevel, Software: "Petrel/" + Version},
		ccIndex: s.CCIndex,
		log:     log,
	}
	d.scratch.New = func() any { return dataset.NewScratch(d.opts) }
	go d.run()
	return d
}

// stale reports whether an output asked for of the WARC file p is
// missing or older than it.
func (d *datasets) stale(p string) bool {
	return d.opts.WAT && !dataset.Current(p, dataset.WATName(p)) ||
		d.opts.WET && !dataset.Current(p, dataset.WETName(p)) ||
		d.opts.Rows && !dataset.Current(p, dataset.RowsName(p))
}

// appended queues a copy of a record the store appended
// (store.Options.Appended).
func (d *datasets) appended(a *store.Appended) { d.events <- datasetEvent{rec: dataset.RecordOf(a)} }

// closed queues a WARC file the store has closed (store.Options.Closed).
func (d *datasets) closed(path string) { d.events <- datasetEvent{closed: path} }

func (d *datasets) run() {
	defer close(d.done)
	for ev := range d.events {
		var err error
		if ev.rec != nil {
			err = d.add(ev.rec)
		} else {
			err = d.finish(ev.closed)
		}
		if err != nil {
			d.log.Error("datasets: writing failed", "file", d.curPath, "err", err)
			d.errs = append(d.errs, err)
		}
	}
	if d.cur != nil { // its WARC file was never closed: it failed
		d.cur.Abort()
	}
}

// add writes the outputs of a record, starting those of its file with its
// first record. After a failure the file's outputs are dropped (the end
// of the run converts it).
func (d *datasets) add(r *dataset.Record) error {
	if r.Path() != d.curPath {
		if d.cur != nil {
			d.cur.Abort()
		}
		d.curPath = r.Path()
		var err error
		if d.cur, err = dataset.Create(d.curPath, d.opts); err != nil {
			return err
		}
	}
	if d.cur == nil {
		return nil
	}
	if err := d.cur.Add(r); err != nil {
		d.cur.Abort()
		d.cur = nil
		return err
	}
	return nil
}

// finish completes the outputs of the WARC file p once the store has
// closed it: the WAT and WET files get their names, the index rows go to
// its RowsName file.
func (d *datasets) finish(p string) error {
	if d.cur == nil || d.curPath != p {
		return nil
	}
	w := d.cur
	d.cur = nil
	res, err := w.Close()
	if err != nil {
		return err
	}
	return d.written(p, res)
}

// convert writes the outputs of the finished WARC file p from the file.
func (d *datasets) convert(p string) error {
	res, err := dataset.Convert(p, d.opts)
	if err != nil {
		return err
	}
	return d.written(p, res)
}

// written writes the index rows of the WARC file p, whose WAT and WET
// files res describes.
func (d *datasets) written(p string, res dataset.Result) error {
	if d.opts.Rows {
		if err := dataset.WriteRows(dataset.RowsName(p), res.Rows); err != nil {
			return fmt.Errorf("dataset: %w", err)
		}
	}
	d.log.Debug("datasets: written", "file", filepath.Base(p), "records", res.Records, "pages", res.Pages,
		"wat_bytes", res.WATBytes, "wet_bytes", res.WETBytes, "rows", len(res.Rows))
	return nil
}

// close waits for the records and closings queued (the store is
// closed) and, when index is set (the crawl
// opened and its WARC files are whole), converts the WARC files of the
// crawl directory dir whose outputs are missing or older than them (files
// repaired after a crash, closed by a run that stopped before converting
// them, or written before the outputs were asked for), then writes the
// columnar index of them all if the crawl asks for it. It returns what
// failed.
func (d *datasets) close(dir string, index bool) []error {
	close(d.events)
	<-d.done
	errs := d.errs
	if !index {
		return errs
	}
	files, err := store.WARCFiles([]string{dir})
	if err != nil {
		return append(errs, fmt.Errorf("agent: datasets: %w", err))
	}
	for _, p := range files {
		if d.stale(p) {
			if err := d.convert(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if !d.ccIndex {
		return errs
	}
	rel := func(p string) string {
		if r, err := filepath.Rel(dir, p); err == nil {
			return filepath.ToSlash(r)
		}
		return filepath.Base(p)
	}
	rep, err := dataset.WriteIndex(files, rel, dataset.CrawlIndex(dir))
	for _, s := range rep.Skipped {
		d.log.Warn("columnar index: WARC file left out", "err", s)
	}
	if err != nil {
		return append(errs, fmt.Errorf("agent: columnar index: %w", err))
	}
	return errs
}
