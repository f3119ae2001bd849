package agent

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// The failed-URL record. state/failed holds the URLs the crawl gave up
// after failures (their host unreachable past --host-down-give-up or
// broken, their tries used up, their robots.txt or their name
// unavailable), one line each:
//
//	REASON TAB META TAB URL
//
// META being the record's frontier.Meta in hex (how the URL was found).
// A line whose reason is "requeued" takes back the failures of its URL
// before it: POST /seeds queued it again. logs/skipped.jsonl tells people
// (and `petrel why`) of the same URLs; this file is the one the crawl
// reads back: `petrel crawl --retry-failed` moves it to state/failed.retry
// and queues each URL whose last line is a failure straight to the ready
// queue (the sieve knows them and would drop them); the clean close of
// that run removes failed.retry, its URLs being then queued in the saved
// state, so that a crash before leaves them for the next --retry-failed.
//
// Bounds: the file stops growing at failedMaxBytes; the URLs given up past
// it are in skipped.jsonl only, counted in FailedUnrecorded. Lines are
// buffered (failedBuffer) and written at each checkpoint and at the close.
const (
	failedFile      = "failed"
	failedRetryFile = "failed.retry"
	failedMaxBytes  = 64 << 20
	failedBuffer    = 64 << 10
	requeuedReason  = "requeued"
)

// failedLog appends to state/failed. Safe for concurrent use; nil (no
// state directory) records nothing.
type failedLog struct {
	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	size    int64
	dropped int64 // URLs not recorded: past failedMaxBytes
	failed  int64 // failures recorded or not (requeued lines aside)
	log     *slog.Logger
}

// openFailedLog opens state/failed for appending.
func openFailedLog(state string, log *slog.Logger) (*failedLog, error) {
	f, err := os.OpenFile(filepath.Join(state, failedFile), os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("agent: failed-URL record: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("agent: failed-URL record: %w", err)
	}
	l := &failedLog{f: f, w: bufio.NewWriterSize(f, failedBuffer), size: st.Size(), log: log}
	var last [1]byte
	if l.size > 0 {
		if _, err := f.ReadAt(last[:], l.size-1); err == nil && last[0] != '\n' {
			l.w.WriteByte('\n') // after a line a crash cut short
			l.size++
		}
	}
	return l, nil
}

// add records url (found as m says) given up for reason.
func (l *failedLog) add(reason, url string, m frontier.Meta) {
	if l == nil {
		return
	}
	var mb [frontier.MetaLen]byte
	meta := m.Append(mb[:0])
	n := int64(len(reason) + 2*len(meta) + len(url) + 3)
	l.mu.Lock()
	defer l.mu.Unlock()
	if reason != requeuedReason {
		l.failed++
	}
	if l.size+n > failedMaxBytes {
		if l.dropped == 0 {
			l.log.Warn("state/failed is full: URLs given up from now on are in logs/skipped.jsonl only, and --retry-failed does not see them", "bytes", l.size)
		}
		l.dropped++
		return
	}
	l.size += n
	l.w.WriteString(reason)
	l.w.WriteByte('\t')
	var hb [2 * frontier.MetaLen]byte
	hex.Encode(hb[:], meta)
	l.w.Write(hb[:2*len(meta)])
	l.w.WriteByte('\t')
	l.w.WriteString(url)
	l.w.WriteByte('\n')
}

// flush writes the buffered lines out.
func (l *failedLog) flush() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Flush()
}

// close flushes and closes the file, and returns the URLs given up after
// failures since it opened and those of them not recorded.
func (l *failedLog) close() (failed, unrecorded int64, err error) {
	if l == nil {
		return 0, 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	err = errors.Join(l.w.Flush(), l.f.Close())
	return l.failed, l.dropped, err
}

// failedURL is a URL of the failed-URL record whose last line is a
// failure: its ready-queue record (Meta, then URL) and its reason.
type failedURL struct {
	rec    []byte
	reason string
}

// readFailed returns the URLs of the record files given (those missing
// are skipped) whose last line is a failure, in the order of their last
// lines, and the number of lines that could not be read (cut short or
// malformed: skipped).
func readFailed(paths ...string) (urls []failedURL, bad int, err error) {
	type line struct {
		fail failedURL
		hash uint64
	}
	var lines []line
	last := map[uint64]int{} // URL hash → index in lines of its last line
	for _, p := range paths {
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			reason, rec, ok := parseFailedLine(sc.Bytes())
			if !ok {
				bad++
				continue
			}
			h := xxhash.Sum64(rec[frontier.MetaLen:])
			last[h] = len(lines)
			lines = append(lines, line{failedURL{rec, reason}, h})
		}
		err = errors.Join(sc.Err(), f.Close())
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, bad, fmt.Errorf("agent: read %s: %w", p, err)
		}
	}
	for i, l := range lines {
		if last[l.hash] == i && l.fail.reason != requeuedReason {
			urls = append(urls, l.fail)
		}
	}
	return urls, bad, nil
}

// parseFailedLine splits a line of the record into its reason and the
// ready-queue record of its URL.
func parseFailedLine(b []byte) (reason string, rec []byte, ok bool) {
	r, rest, ok1 := bytes.Cut(b, []byte{'\t'})
	mh, url, ok2 := bytes.Cut(rest, []byte{'\t'})
	if !ok1 || !ok2 || len(r) == 0 || len(url) == 0 || len(mh) != 2*frontier.MetaLen {
		return "", nil, false
	}
	rec = make([]byte, frontier.MetaLen, frontier.MetaLen+len(url))
	if _, err := hex.Decode(rec, mh); err != nil {
		return "", nil, false
	}
	if _, err := frontier.DecodeMeta(rec); err != nil {
		return "", nil, false
	}
	return string(r), append(rec, url...), true
}

// hasFailed reports whether the crawl in dir recorded URLs given up after
// failures: --retry-failed resumes a complete crawl that did.
func hasFailed(dir string) bool {
	state := filepath.Join(dir, "state")
	urls, _, err := readFailed(filepath.Join(state, failedRetryFile), filepath.Join(state, failedFile))
	return err == nil && len(urls) > 0
}

// openFailed opens state/failed. With --retry-failed it first moves the
// record to state/failed.retry (after what a retry that did not close
// cleanly left there), whose URLs requeueFailed queues, and lifts the
// complete mark of the crawl.
func (a *Agent) openFailed(state string) (err error) {
	if a.cfg.RetryFailed {
		if err := moveFailed(state); err != nil {
			return err
		}
		if err := os.Remove(filepath.Join(state, completeFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("agent: --retry-failed: %w", err)
		}
	}
	a.failed, err = openFailedLog(state, a.log)
	return err
}

// moveFailed appends state/failed to state/failed.retry and removes it.
func moveFailed(state string) error {
	from, to := filepath.Join(state, failedFile), filepath.Join(state, failedRetryFile)
	b, err := os.ReadFile(from)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("agent: --retry-failed: %w", err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = b[:bytes.LastIndexByte(b, '\n')+1] // a line cut short by a crash
	}
	f, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("agent: --retry-failed: %w", err)
	}
	_, err = f.Write(b)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("agent: --retry-failed: %w", err)
	}
	return os.Remove(from)
}

// requeueFailed queues the URLs of state/failed.retry again, past the
// sieve, when --retry-failed asks for it, and says how many on the
// progress writer.
func (a *Agent) requeueFailed(state string) error {
	if !a.cfg.RetryFailed {
		return nil
	}
	urls, bad, err := readFailed(filepath.Join(state, failedRetryFile))
	if err != nil {
		return err
	}
	for _, u := range urls {
		if err := a.frontier.AcceptReady(u.rec); err != nil {
			return fmt.Errorf("agent: --retry-failed: %w", err)
		}
	}
	a.retried = true
	a.log.Info("retry-failed: URLs given up queued again", "urls", len(urls), "unreadable lines", bad)
	if a.progress != nil {
		fmt.Fprintf(a.progress, "petrel: --retry-failed: %d URLs given up after failures queued again\n", len(urls))
	}
	return nil
}

// knownSeed decides what becomes of u, offered by POST /seeds, when the
// sieve knows it (reporting known): queued again past the sieve when its
// last outcome was a failure recorded in state/failed (r says so, and a
// "requeued" line takes the failure back), else refused as known. A
// crawl of several agents only refuses it: the URL's address may be
// another agent's.
func (a *Agent) knownSeed(u urlx.URL, r *console.SeedResult) (known bool, err error) {
	key := u.AppendString(frontier.Meta{}.Append(nil))
	found, buffered, _, err := a.sieve.Contains(key)
	if err != nil || !found || buffered {
		return false, err
	}
	r.Reason = "already known to the crawl (fetched, queued or refused): petrel why " + u.String() + " says what became of it"
	if a.node != nil || a.failed == nil {
		return true, nil
	}
	if err := a.failed.flush(); err != nil {
		return true, err
	}
	state := filepath.Join(a.cfg.Dir, "state")
	paths := []string{filepath.Join(state, failedRetryFile), filepath.Join(state, failedFile)}
	if a.retried {
		paths = paths[1:] // those of failed.retry are queued already
	}
	urls, _, err := readFailed(paths...)
	if err != nil {
		return true, err
	}
	url := u.String()
	for _, f := range urls {
		if string(f.rec[frontier.MetaLen:]) != url {
			continue
		}
		if err := a.frontier.AcceptReady(f.rec); err != nil {
			return true, err
		}
		m, _ := frontier.DecodeMeta(f.rec)
		a.failed.add(requeuedReason, url, m)
		r.Reason, r.Accepted, r.Requeued = "", true, true
		a.log.Info("a URL given up after failures queued again", "url", url, "was", f.reason)
		return true, nil
	}
	return true, nil
}
