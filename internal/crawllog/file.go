package crawllog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// lineFile is one rotated log file behind a bounded buffer. append is
// called by any goroutine; flush only by the Log's writer goroutine.
type lineFile struct {
	path     string
	maxFile  int64 // rotate past this size
	maxTotal int64 // stop writing once the file and its rotated ones hold this (0: no cap)
	bound    int   // buffer bound: append waits while the buffer holds this

	mu      sync.Mutex
	roomy   *sync.Cond // signalled when a flush empties the buffer
	buf     []byte
	closed  bool
	lines   int64 // lines appended (and written, or counted as over the cap)
	dropped int64 // lines over the total cap: counted, not written

	// Owned by the writer goroutine.
	f     *os.File
	size  int64 // of the current file
	total int64 // of the current file and the rotated ones
	next  int   // number of the next rotated file
	spare []byte
}

// openLineFile opens (appending to) path and finds its rotated files.
func openLineFile(path string, maxFile, maxTotal int64, bound int) (*lineFile, error) {
	lf := &lineFile{path: path, maxFile: maxFile, maxTotal: maxTotal, bound: bound, next: 1}
	lf.roomy = sync.NewCond(&lf.mu)
	rotated, _ := filepath.Glob(path + ".*")
	for _, r := range rotated {
		n, err := strconv.Atoi(strings.TrimPrefix(r, path+"."))
		if err != nil || n < 1 {
			continue
		}
		lf.next = max(lf.next, n+1)
		if fi, err := os.Stat(r); err == nil {
			lf.total += fi.Size()
		}
	}
	if err := lf.open(); err != nil {
		return nil, err
	}
	lf.total += lf.size
	return lf, nil
}

func (lf *lineFile) open() error {
	f, err := os.OpenFile(lf.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	lf.f, lf.size = f, fi.Size()
	return nil
}

// append adds one formatted line, waiting while the buffer is at its
// bound. It reports whether the buffer passed a quarter of its bound (the
// writer should flush soon). Lines appended after close are dropped.
func (lf *lineFile) append(line []byte) (flushSoon bool) {
	lf.mu.Lock()
	for len(lf.buf) >= lf.bound && !lf.closed {
		lf.roomy.Wait()
	}
	if lf.closed {
		lf.mu.Unlock()
		return false
	}
	lf.buf = append(lf.buf, line...)
	lf.lines++
	flushSoon = len(lf.buf) >= lf.bound/4
	lf.mu.Unlock()
	return flushSoon
}

// take swaps the buffer out (the writer goroutine then owns the bytes).
func (lf *lineFile) take() []byte {
	lf.mu.Lock()
	b := lf.buf
	lf.buf = lf.spare[:0]
	lf.roomy.Broadcast()
	lf.mu.Unlock()
	return b
}

// write writes the lines of b (whole lines), rotating past maxFile and
// counting, not writing, what would pass maxTotal; b becomes the spare
// buffer.
func (lf *lineFile) write(b []byte) error {
	whole := b
	defer func() { lf.spare = whole[:0] }()
	for len(b) > 0 {
		if lf.maxTotal > 0 && lf.total >= lf.maxTotal {
			n := int64(bytes.Count(b, []byte{'\n'}))
			lf.mu.Lock()
			lf.dropped += n
			lf.mu.Unlock()
			return nil
		}
		if lf.size >= lf.maxFile {
			if err := lf.rotate(); err != nil {
				return err
			}
		}
		chunk := b
		if room := lf.maxFile - lf.size; int64(len(chunk)) > room {
			// Cut after the last whole line that fits (at least one line).
			i := bytes.LastIndexByte(chunk[:max(room, 0)], '\n')
			if i < 0 {
				i = bytes.IndexByte(chunk, '\n')
			}
			if i >= 0 {
				chunk = chunk[:i+1]
			}
		}
		if lf.maxTotal > 0 && lf.total+int64(len(chunk)) > lf.maxTotal {
			room := lf.maxTotal - lf.total
			i := bytes.LastIndexByte(chunk[:max(room, 0)], '\n')
			chunk = chunk[:i+1] // may be empty: the rest is counted above
		}
		if len(chunk) > 0 {
			n, err := lf.f.Write(chunk)
			lf.size += int64(n)
			lf.total += int64(n)
			if err != nil {
				return fmt.Errorf("crawllog: write %s: %w", lf.path, err)
			}
		}
		b = b[len(chunk):]
		if len(chunk) == 0 && lf.maxTotal > 0 {
			lf.total = lf.maxTotal // what is left does not fit: count it
		}
	}
	return nil
}

// rotate renames the current file to path.N and starts a new one.
func (lf *lineFile) rotate() error {
	if err := lf.f.Close(); err != nil {
		return fmt.Errorf("crawllog: close %s: %w", lf.path, err)
	}
	if err := os.Rename(lf.path, lf.path+"."+strconv.Itoa(lf.next)); err != nil {
		return fmt.Errorf("crawllog: rotate %s: %w", lf.path, err)
	}
	lf.next++
	return lf.open()
}

// shut marks the file closed: appends are dropped from now on, waiting
// ones released. What is buffered is still written by the next flush.
func (lf *lineFile) shut() {
	lf.mu.Lock()
	lf.closed = true
	lf.roomy.Broadcast()
	lf.mu.Unlock()
}

// counts returns the lines appended and those dropped over the cap.
func (lf *lineFile) counts() (lines, dropped int64) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	return lf.lines, lf.dropped
}

// Files returns the files of the log at path (e.g. logs/skipped.jsonl),
// oldest first: its rotated files path.1, path.2, …, then path itself
// when it exists.
func Files(path string) []string {
	type rotated struct {
		n    int
		path string
	}
	var rs []rotated
	matches, _ := filepath.Glob(path + ".*")
	for _, m := range matches {
		if n, err := strconv.Atoi(strings.TrimPrefix(m, path+".")); err == nil && n >= 1 {
			rs = append(rs, rotated{n, m})
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].n < rs[j].n })
	out := make([]string, 0, len(rs)+1)
	for _, r := range rs {
		out = append(out, r.path)
	}
	if _, err := os.Stat(path); err == nil {
		out = append(out, path)
	}
	return out
}
