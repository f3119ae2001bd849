package dataset

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/parquet-go/parquet-go"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

// CrawlIndex returns the columnar index of a crawl directory,
// indexes/cc-index.parquet.
func CrawlIndex(crawlDir string) string {
	return filepath.Join(crawlDir, "indexes", "cc-index.parquet")
}

// RowsName returns the file that holds a WARC file's index rows between
// its closing and the end of the crawl: NAME.warc.cc-index.parquet.
func RowsName(warcPath string) string { return derivedName(warcPath, ".cc-index.parquet") }

// sortRows orders rows by url_surtkey, then fetch_time, then offset.
func sortRows(rows []Row) {
	slices.SortFunc(rows, func(a, b Row) int {
		if c := cmp.Compare(a.URLSurtKey, b.URLSurtKey); c != 0 {
			return c
		}
		if c := a.FetchTime.Compare(b.FetchTime); c != 0 {
			return c
		}
		return cmp.Compare(a.WARCRecordOffset, b.WARCRecordOffset)
	})
}

// WriteRows writes rows, sorted, as the Parquet file path (written whole
// or not at all).
func WriteRows(path string, rows []Row) error {
	sortRows(rows)
	return atomicfile.Write(path, atomicfile.Options{Sync: true, Buffer: 256 << 10}, func(f io.Writer) error {
		w := newRowWriter(f)
		if _, err := w.Write(rows); err != nil {
			return err
		}
		return w.Close()
	})
}

func newRowWriter(f io.Writer) *parquet.GenericWriter[Row] {
	return parquet.NewGenericWriter[Row](f, parquet.Compression(&parquet.Zstd))
}

// ReadRows reads the rows of a Parquet file WriteRows or WriteIndex wrote.
func ReadRows(path string) ([]Row, error) {
	rows, err := parquet.ReadFile[Row](path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %s: %w", path, err)
	}
	return rows, nil
}

// IndexReport is what WriteIndex did.
type IndexReport struct {
	Files   int // WARC files indexed
	Rows    int
	Reused  int     // files whose rows came from their RowsName file
	Skipped []error // files that could not be read through, left out
}

// WriteIndex writes the columnar index of files to out: one row group
// per WARC file, its rows sorted by url_surtkey then fetch_time, with
// warc_filename set to name(file). A file's rows come from its RowsName
// file when that is not older than it, else from reading the file. A
// file that cannot be read through is left out and reported.
func WriteIndex(files []string, name func(string) string, out string) (IndexReport, error) {
	var rep IndexReport
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return rep, fmt.Errorf("dataset: %w", err)
	}
	err := atomicfile.Write(out, atomicfile.Options{Sync: true, Buffer: 256 << 10}, func(f io.Writer) error {
		w := newRowWriter(f)
		for _, p := range files {
			rows, reused, err := fileRows(p)
			if err != nil {
				rep.Skipped = append(rep.Skipped, err)
				continue
			}
			for i := range rows {
				rows[i].WARCFilename = name(p)
			}
			sortRows(rows)
			if _, err := w.Write(rows); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
			rep.Files++
			rep.Rows += len(rows)
			if reused {
				rep.Reused++
			}
		}
		return w.Close()
	})
	if err != nil {
		return rep, fmt.Errorf("dataset: write %s: %w", out, err)
	}
	return rep, nil
}

// fileRows returns the rows of the WARC file p, and whether they came
// from its RowsName file.
func fileRows(p string) ([]Row, bool, error) {
	if Current(p, RowsName(p)) {
		if rows, err := ReadRows(RowsName(p)); err == nil {
			return rows, true, nil
		}
	}
	res, err := Convert(p, Options{Rows: true})
	return res.Rows, false, err
}

// Current reports whether derived (an output of the WARC file warcPath)
// exists and is not older than it.
func Current(warcPath, derived string) bool {
	wi, err := os.Stat(warcPath)
	if err != nil {
		return false
	}
	di, err := os.Stat(derived)
	return err == nil && !di.ModTime().Before(wi.ModTime())
}
