package crawllog

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Bounds of logs/events.jsonl as the agent opens it: a file rotates past
// EventFileBytes, and the oldest rotated files are removed so that the log
// and its rotated files hold no more than EventTotalBytes.
const (
	EventFileBytes  = 16 << 20
	EventTotalBytes = 128 << 20
)

// EventLog is the writer of the event log (logs/events.jsonl, the
// agent's slog records): each Write is appended whole to the file. Past
// maxFile bytes the file is renamed path.N (N = 1, 2, …, the highest the
// newest, as crawl.log's) and a new one started; the oldest rotated files
// are removed so that the log and its rotated files hold no more than
// maxTotal (the newest events are kept). A record longer than maxFile
// gets a file of its own. Safe for concurrent use.
type EventLog struct {
	path     string
	maxFile  int64
	maxTotal int64

	mu      sync.Mutex
	f       *os.File
	size    int64
	rotated []eventFile // oldest first
	next    int
	err     error // the first rotation error: writes go on to the open file
}

type eventFile struct {
	path string
	size int64
}

// OpenEventLog opens (appending to) the event log at path, finding its
// rotated files.
func OpenEventLog(path string, maxFile, maxTotal int64) (*EventLog, error) {
	l := &EventLog{path: path, maxFile: maxFile, maxTotal: maxTotal, next: 1}
	for _, r := range Files(path) {
		if r == path {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(r, path+"."))
		l.next = max(l.next, n+1)
		if fi, err := os.Stat(r); err == nil {
			l.rotated = append(l.rotated, eventFile{r, fi.Size()})
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	l.f, l.size = f, fi.Size()
	l.trim()
	return l, nil
}

// Write appends p (one record), rotating first when the file would pass
// its bound.
func (l *EventLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, os.ErrClosed
	}
	if l.size > 0 && l.size+int64(len(p)) > l.maxFile {
		l.rotate()
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// rotate renames the file to path.N, starts a new one and trims the
// rotated files. A failure is kept (Err) and the writes go on to the file
// that is open.
func (l *EventLog) rotate() {
	name := l.path + "." + strconv.Itoa(l.next)
	if err := os.Rename(l.path, name); err != nil {
		l.err = firstErr(l.err, fmt.Errorf("crawllog: rotate %s: %w", l.path, err))
		return
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		l.err = firstErr(l.err, fmt.Errorf("crawllog: rotate %s: %w", l.path, err))
		return // the old file, renamed, stays open
	}
	l.f.Close()
	l.rotated = append(l.rotated, eventFile{name, l.size})
	l.f, l.size = f, 0
	l.next++
	l.trim()
}

// trim removes the oldest rotated files until they hold no more than
// maxTotal less the room of a whole current file, so that the log never
// holds more than maxTotal.
func (l *EventLog) trim() {
	total := max(l.size, l.maxFile)
	for _, r := range l.rotated {
		total += r.size
	}
	for len(l.rotated) > 0 && total > l.maxTotal {
		if err := os.Remove(l.rotated[0].path); err != nil && !os.IsNotExist(err) {
			l.err = firstErr(l.err, fmt.Errorf("crawllog: %w", err))
			return
		}
		total -= l.rotated[0].size
		l.rotated = l.rotated[1:]
	}
}

func firstErr(old, err error) error {
	if old != nil {
		return old
	}
	return err
}

// Err returns the first error met rotating the log (nil: none).
func (l *EventLog) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Close closes the file; later writes fail.
func (l *EventLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
