package store

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	gowarc "github.com/nlnwa/gowarc/v3"
)

// Repair makes the WARC files in dir whole after a crash: every file still
// named .warc.gz.open (the writer died before closing it) is read through
// with gowarc, cut after its last complete record (a torn record at the end
// is dropped), fsynced and renamed to its final name, and with index its
// CDXJ index is written beside it (NAME.cdxj). It returns a report of what
// it cut and kept, empty when there was nothing to do.
func Repair(dir string, index bool, o IndexOptions) (string, error) {
	open, err := filepath.Glob(filepath.Join(dir, "*"+openSuffix))
	if err != nil {
		return "", err
	}
	var notes []string
	for _, p := range open {
		fi, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("store: repair: %w", err)
		}
		good, records := completeRecords(p)
		final := strings.TrimSuffix(p, openSuffix)
		if good == 0 {
			if err := os.Remove(p); err != nil {
				return "", fmt.Errorf("store: repair: %w", err)
			}
			notes = append(notes, fmt.Sprintf("removed %s (no complete record)", filepath.Base(p)))
			continue
		}
		if good < fi.Size() {
			if err := os.Truncate(p, good); err != nil {
				return "", fmt.Errorf("store: repair: cut %s: %w", filepath.Base(p), err)
			}
			notes = append(notes, fmt.Sprintf("cut a torn record (%d bytes) off %s, %d records kept", fi.Size()-good, filepath.Base(final), records))
		}
		if f, err := os.OpenFile(p, os.O_RDWR, 0); err == nil {
			f.Sync()
			f.Close()
		}
		if err := os.Rename(p, final); err != nil {
			return "", fmt.Errorf("store: repair: %w", err)
		}
		if index {
			if err := IndexFile(final, o); err != nil {
				return "", fmt.Errorf("store: repair: %w", err)
			}
		}
		notes = append(notes, fmt.Sprintf("%s closed with %d records", filepath.Base(final), records))
	}
	return strings.Join(notes, "; "), nil
}

// openSuffix marks a WARC file being written.
const openSuffix = ".open"

// completeRecords returns the offset just after the last complete record
// of the file and how many records precede it.
func completeRecords(path string) (end int64, records int) {
	r, err := openLenient(path, 0)
	if err != nil {
		return 0, 0
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if err != nil {
			return end, records
		}
		// Read the block through, so that a member cut short shows.
		ok := true
		if rr, err := rec.WarcRecord.Block().RawBytes(); err != nil {
			ok = false
		} else if _, err := io.Copy(io.Discard, rr); err != nil {
			ok = false
		}
		if cerr := rec.Close(); cerr != nil {
			ok = false
		}
		if !ok {
			return end, records
		}
		end = rec.Offset + rec.Size
		records++
	}
}

// CountResponsesAfter counts the response and revisit records in dir's
// WARC files that lie beyond the sizes recorded in before (file name →
// size); files absent from before count whole. It tells how many fetches a
// crash recovery may repeat.
func CountResponsesAfter(dir string, before map[string]int64) int {
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	n := 0
	for _, p := range files {
		// A file that cannot be read, or read to its end, counts up to there.
		_ = EachRecord(p, before[filepath.Base(p)], "", func(rec gowarc.Record) error {
			if t := rec.WarcRecord.Type(); t == gowarc.Response || t == gowarc.Revisit {
				n++
			}
			return nil
		})
	}
	return n
}
