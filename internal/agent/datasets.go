package agent

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/petrel-crawler/petrel/internal/dataset"
	"github.com/petrel-crawler/petrel/internal/store"
)

// closedQueue bounds the closed WARC files waiting for their conversion;
// the store's appender waits when it is full.
const closedQueue = 4

// datasets makes the dataset outputs of a crawl (package dataset): the WAT
// and WET files and the index rows of each WARC file once the store has
// closed it, one file at a time on a goroutine of its own, and the
// columnar index at the end. The goroutine ends when close is called.
type datasets struct {
	files   chan string // closed WARC files waiting
	done    chan struct{}
	opts    dataset.Options
	ccIndex bool
	log     *slog.Logger
	errs    []error // the goroutine's, read after done
}

// newDatasets starts the conversion of the files s asks for; nil when
// s asks for none.
func newDatasets(s store.Settings, log *slog.Logger) *datasets {
	if !s.WAT && !s.WET && !s.CCIndex {
		return nil
	}
	d := &datasets{
		files:   make(chan string, closedQueue),
		done:    make(chan struct{}),
		opts:    dataset.Options{WAT: s.WAT, WET: s.WET, Text: dataset.Text(s.WETText), Rows: s.CCIndex, GzipLevel: s.GzipLevel, Software: "Petrel/" + Version},
		ccIndex: s.CCIndex,
		log:     log,
	}
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

// closed queues a WARC file the store has closed (store.Options.Closed).
func (d *datasets) closed(path string) { d.files <- path }

func (d *datasets) run() {
	defer close(d.done)
	for p := range d.files {
		if err := d.convert(p); err != nil {
			d.log.Error("datasets: conversion failed", "file", p, "err", err)
			d.errs = append(d.errs, err)
		}
	}
}

// convert writes the outputs of the WARC file p.
func (d *datasets) convert(p string) error {
	res, err := dataset.Convert(p, d.opts)
	if err != nil {
		return err
	}
	if d.opts.Rows {
		if err := dataset.WriteRows(dataset.RowsName(p), res.Rows); err != nil {
			return fmt.Errorf("dataset: %w", err)
		}
	}
	d.log.Debug("datasets: converted", "file", filepath.Base(p), "records", res.Records, "pages", res.Pages,
		"wat_bytes", res.WATBytes, "wet_bytes", res.WETBytes, "rows", len(res.Rows))
	return nil
}

// close waits for the files queued and, when index is set (the crawl
// opened and its WARC files are whole), converts the WARC files of the
// crawl directory dir whose outputs are missing or older than them (files
// repaired after a crash, closed by a run that stopped before converting
// them, or written before the outputs were asked for), then writes the
// columnar index of them all if the crawl asks for it. It returns what
// failed.
func (d *datasets) close(dir string, index bool) []error {
	close(d.files)
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
