package crawllog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
)

// Options are the limits of a Log. Zero values take the defaults.
type Options struct {
	Dir string // the crawl's logs directory (required unless Off)
	// Off opens a Log that writes nothing and opens no file: its methods
	// do nothing, Figures are zero, a subscription ends at once.
	Off bool
	// MaxFileBytes rotates crawl.log past this size (default 256 MiB).
	MaxFileBytes int64
	// SkippedFileBytes rotates skipped.jsonl past this size (default 64 MiB).
	SkippedFileBytes int64
	// SkippedTotalBytes caps skipped.jsonl with its rotated files (default
	// 1 GiB); refusals past it are counted, not written.
	SkippedTotalBytes int64
	// BufferBytes bounds each log's buffer (default 1 MiB).
	BufferBytes int
	// FlushEvery is the longest a line waits in the buffer (default 200 ms).
	FlushEvery time.Duration
}

// Defaults of Options.
const (
	DefaultMaxFileBytes      = 256 << 20
	DefaultSkippedFileBytes  = 64 << 20
	DefaultSkippedTotalBytes = 1 << 30
	DefaultBufferBytes       = 1 << 20
	DefaultFlushEvery        = 200 * time.Millisecond
)

// recentRefusals is the size of the table that suppresses repeated
// refusals (8 bytes a slot).
const recentRefusals = 1 << 16

// Log is a crawl's crawl.log and skipped.jsonl. Create it with Open, write
// with Fetch and Refuse from any goroutine, end it with Close.
type Log struct {
	crawl, skipped *lineFile
	every          time.Duration
	off            bool

	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	subMu       sync.Mutex
	subs        map[*Subscription]struct{}
	goneDropped int64 // lines missed by subscriptions since closed

	recent [recentRefusals]atomic.Uint64
	bufs   sync.Pool
	err    atomic.Pointer[error]
	once   sync.Once
}

// Open opens the logs in opts.Dir, appending to those of an earlier run,
// and starts the writer goroutine.
func Open(opts Options) (*Log, error) {
	if opts.Off {
		l := &Log{off: true, stop: make(chan struct{}), done: make(chan struct{}), subs: map[*Subscription]struct{}{}}
		close(l.stop)
		close(l.done)
		return l, nil
	}
	if opts.Dir == "" {
		return nil, errors.New("crawllog: no directory")
	}
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&opts.MaxFileBytes, DefaultMaxFileBytes)
	def(&opts.SkippedFileBytes, DefaultSkippedFileBytes)
	def(&opts.SkippedTotalBytes, DefaultSkippedTotalBytes)
	if opts.BufferBytes <= 0 {
		opts.BufferBytes = DefaultBufferBytes
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = DefaultFlushEvery
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("crawllog: %w", err)
	}
	crawl, err := openLineFile(filepath.Join(opts.Dir, "crawl.log"), opts.MaxFileBytes, 0, opts.BufferBytes)
	if err != nil {
		return nil, fmt.Errorf("crawllog: %w", err)
	}
	skipped, err := openLineFile(filepath.Join(opts.Dir, "skipped.jsonl"), opts.SkippedFileBytes, opts.SkippedTotalBytes, opts.BufferBytes)
	if err != nil {
		crawl.f.Close()
		return nil, fmt.Errorf("crawllog: %w", err)
	}
	l := &Log{crawl: crawl, skipped: skipped, every: opts.FlushEvery,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		subs: map[*Subscription]struct{}{}}
	l.bufs.New = func() any { b := make([]byte, 0, 512); return &b }
	go l.writeLoop()
	return l, nil
}

// Off reports whether the Log writes nothing (Options.Off): callers skip
// making its lines.
func (l *Log) Off() bool { return l.off }

// Fetch logs one fetch (or failed fetch) to crawl.log.
func (l *Log) Fetch(e *Entry) {
	if l.off {
		return
	}
	bp := l.bufs.Get().(*[]byte)
	*bp = e.AppendTo((*bp)[:0])
	if l.crawl.append(*bp) {
		l.poke()
	}
	l.bufs.Put(bp)
}

// Refuse logs a refused URL to crawl.log (with e's fields, its status and
// a skip annotation set from s) and to skipped.jsonl, unless the same URL
// was refused for the same reason recently. It reports whether it logged.
func (l *Log) Refuse(e *Entry, s *Skip) bool {
	if l.off || !l.fresh(s) {
		return false
	}
	e.Time, e.Status, e.URL, e.Via = s.Time, s.Status, s.URL, s.Via
	if e.Size == 0 && e.Start.IsZero() {
		e.Size = -1
		e.NoResponse = true
	}
	var ann [4]string
	e.Annotations = append(append(ann[:0], e.Annotations...), "skip:"+string(s.Reason))
	bp := l.bufs.Get().(*[]byte)
	*bp = e.AppendTo((*bp)[:0])
	kick := l.crawl.append(*bp)
	*bp = s.AppendTo((*bp)[:0])
	if l.skipped.append(*bp) || kick {
		l.poke()
	}
	l.bufs.Put(bp)
	return true
}

// Skip logs a refusal to skipped.jsonl only: for a URL that was fetched
// and has its crawl.log line, but was then kept from a later stage
// (parse, follow, store). Repeats are suppressed as by Refuse.
func (l *Log) Skip(s *Skip) bool {
	if l.off || !l.fresh(s) {
		return false
	}
	bp := l.bufs.Get().(*[]byte)
	*bp = s.AppendTo((*bp)[:0])
	if l.skipped.append(*bp) {
		l.poke()
	}
	l.bufs.Put(bp)
	return true
}

// fresh reports whether s's URL and reason were not refused recently, and
// fills in its time and status.
func (l *Log) fresh(s *Skip) bool {
	h := xxhash.Sum64String(s.URL) ^ xxhash.Sum64String(string(s.Reason))
	if h == 0 {
		h = 1
	}
	if l.recent[h%recentRefusals].Swap(h) == h {
		return false
	}
	if s.Time.IsZero() {
		s.Time = time.Now()
	}
	if s.Status == 0 {
		s.Status = s.Reason.Status()
	}
	return true
}

func (l *Log) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// writeLoop writes the buffers out every l.every or when poked, until
// Close.
func (l *Log) writeLoop() {
	defer close(l.done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		case <-l.kick:
		}
		l.flush()
	}
}

// flush writes both buffers and sends crawl.log's lines to subscribers.
func (l *Log) flush() {
	b := l.crawl.take()
	l.publish(b)
	if err := l.crawl.write(b); err != nil {
		l.setErr(err)
	}
	if err := l.skipped.write(l.skipped.take()); err != nil {
		l.setErr(err)
	}
}

func (l *Log) setErr(err error) { l.err.CompareAndSwap(nil, &err) }

// Err returns the first write error (the log goes on trying).
func (l *Log) Err() error {
	if p := l.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Figures are the counts of a Log.
type Figures struct {
	CrawlLines     int64 // lines written to crawl.log
	SkippedLines   int64 // refusals logged to skipped.jsonl (written or over its cap)
	SkippedDropped int64 // refusals over skipped.jsonl's total cap: counted, not written
	StreamDropped  int64 // lines subscribers missed
}

// Figures returns the Log's counts.
func (l *Log) Figures() Figures {
	var f Figures
	if l.off {
		return f
	}
	f.CrawlLines, _ = l.crawl.counts()
	f.SkippedLines, f.SkippedDropped = l.skipped.counts()
	l.subMu.Lock()
	for s := range l.subs {
		f.StreamDropped += s.dropped.Load()
	}
	f.StreamDropped += l.goneDropped
	l.subMu.Unlock()
	return f
}

// Close writes what is buffered, ends the subscriptions and closes the
// files. Lines logged after Close are dropped.
func (l *Log) Close() error {
	var err error
	if l.off {
		return nil
	}
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		l.crawl.shut()
		l.skipped.shut()
		l.flush()
		err = errors.Join(l.crawl.f.Close(), l.skipped.f.Close(), l.Err())
		l.subMu.Lock()
		for s := range l.subs {
			l.unsubscribe(s)
		}
		l.subMu.Unlock()
	})
	return err
}
