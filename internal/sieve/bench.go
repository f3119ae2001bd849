package sieve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// errNoPebble is RunBench's answer to the Pebble baseline in a build
// without it (see BenchBaselines).
var errNoPebble = errors.New("sieve: bench: the pebble baseline is not in this build: build petrel with -tags petrelbench (go build -tags petrelbench ./cmd/petrel)")

// BenchOptions configures RunBench.
type BenchOptions struct {
	Keys       int      // keys in the stream (duplicates included)
	DupRatio   float64  // fraction of the stream that repeats an earlier key, in [0, 1)
	Dir        string   // scratch directory; each run uses (and then removes) a subdirectory
	Baselines  []string // "map", "pebble"
	Compressed bool     // gap-coded store for Petrel's sieve
	BufferKeys int      // Petrel's buffer size; 0 means DefaultBufferKeys
	// BaselineTimeout stops a baseline after this long and reports its rate
	// over the keys it did (0: no limit).
	BaselineTimeout time.Duration
	// NoSync disables fsync in Petrel's sieve (Pebble runs without sync
	// either way).
	NoSync bool
}

// BenchResult is one run's figures, as RunBench prints them.
type BenchResult struct {
	Name               string  `json:"name"`
	Keys               int64   `json:"keys"`
	Distinct           int64   `json:"distinct"`
	Seconds            float64 `json:"seconds"`
	KeysPerSec         float64 `json:"keys_per_sec"`
	RAMBytesPerBufKey  float64 `json:"ram_bytes_per_buffered_key,omitempty"`
	DiskBytesPerKey    float64 `json:"disk_bytes_per_distinct_key"`
	Flushes            uint64  `json:"flushes,omitempty"`
	FlushMeanMs        float64 `json:"flush_mean_ms,omitempty"`
	FlushMaxMs         float64 `json:"flush_max_ms,omitempty"`
	FlushTotalMs       float64 `json:"flush_total_ms,omitempty"`
	PeakRSSBytes       int64   `json:"peak_rss_bytes"`
	PeakHeapBytes      int64   `json:"peak_heap_bytes"`
	StoppedAtTimeLimit bool    `json:"stopped_at_time_limit,omitempty"`
}

// BenchReport is RunBench's JSON output.
type BenchReport struct {
	Keys       int           `json:"keys"`
	DupRatio   float64       `json:"dup_ratio"`
	KeyBytes   float64       `json:"mean_key_bytes"`
	GoMaxProcs int           `json:"gomaxprocs"`
	Results    []BenchResult `json:"results"`
}

// keyStream generates a deterministic stream of URL-like keys of about 60
// bytes: each position repeats an earlier key with probability DupRatio,
// otherwise it is the next distinct key.
type keyStream struct {
	dup      uint64 // threshold on a 32-bit random number
	rng      uint64
	distinct uint64
	buf      []byte
}

func newKeyStream(dupRatio float64) *keyStream {
	return &keyStream{dup: uint64(dupRatio * (1 << 32)), rng: 0x9e3779b97f4a7c15, buf: make([]byte, 0, 128)}
}

func splitmix(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// next returns the next key; it is valid until the following call.
func (g *keyStream) next() []byte {
	r := splitmix(&g.rng)
	var id uint64
	if g.distinct > 0 && r&(1<<32-1) < g.dup {
		id = (r >> 32) % g.distinct
	} else {
		id = g.distinct
		g.distinct++
	}
	return appendKey(g.buf[:0], id)
}

func appendKey(b []byte, id uint64) []byte {
	x := id * 0x9e3779b97f4a7c15
	b = append(b, "https://www."...)
	b = strconv.AppendUint(b, x%50000, 36)
	b = append(b, ".example.org/section"...)
	b = strconv.AppendUint(b, (x>>20)%300, 10)
	b = append(b, "/item-"...)
	b = strconv.AppendUint(b, id, 10)
	return append(b, ".html"...)
}

// hostGroup is the group hash the benchmark gives the sieve, as the
// frontier does for the host policies: the hash of the key's host.
func hostGroup(key []byte) uint64 {
	_, rest, _ := bytes.Cut(key, []byte("://"))
	host, _, _ := bytes.Cut(rest, []byte("/"))
	return Hash(host)
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// countRecv counts the keys it receives.
type countRecv struct{ n int64 }

func (c *countRecv) PrepareToAppend() error      { return nil }
func (c *countRecv) Append(uint64, []byte) error { c.n++; return nil }
func (c *countRecv) FinishedAppending() error    { return nil }
func (c *countRecv) NoMoreAppend() error         { return nil }

// peakSampler samples RSS and heap every 50 ms until stopped.
type peakSampler struct {
	rss, heap atomic.Int64
	stop      chan struct{}
	wg        sync.WaitGroup
}

func startSampler() *peakSampler {
	p := &peakSampler{stop: make(chan struct{})}
	runtime.GC()
	p.sample()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.sample()
			}
		}
	}()
	return p
}

func (p *peakSampler) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if h := int64(ms.HeapInuse); h > p.heap.Load() {
		p.heap.Store(h)
	}
	if r := readRSS(); r > p.rss.Load() {
		p.rss.Store(r)
	}
}

func (p *peakSampler) finish(r *BenchResult) {
	close(p.stop)
	p.wg.Wait()
	p.sample()
	r.PeakRSSBytes, r.PeakHeapBytes = p.rss.Load(), p.heap.Load()
}

// readRSS returns the resident set size from /proc/self/statm (0 elsewhere).
func readRSS() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// RunBench runs Petrel's DRUM sieve and the requested baselines over the same
// deterministic key stream and writes a BenchReport as JSON to jsonOut and as
// a table to tableOut (either may be nil). Times include generating the keys
// (the same work for every run). ctx cancels a run between keys.
func RunBench(ctx context.Context, opts BenchOptions, jsonOut, tableOut io.Writer) error {
	if opts.Keys <= 0 || opts.DupRatio < 0 || opts.DupRatio >= 1 {
		return fmt.Errorf("sieve: bench: need keys > 0 and 0 <= dup-ratio < 1")
	}
	for _, b := range opts.Baselines {
		switch {
		case b == "pebble" && !strings.Contains(BenchBaselines, "pebble"):
			return errNoPebble // before the sieve's run, not after it
		case !slices.Contains(strings.Split(BenchBaselines, ","), b):
			return fmt.Errorf("sieve: bench: unknown baseline %q (this build has %s)", b, BenchBaselines)
		}
	}
	if opts.Dir == "" {
		d, err := os.MkdirTemp("", "petrel-sieve-bench")
		if err != nil {
			return fmt.Errorf("sieve: bench: %w", err)
		}
		defer os.RemoveAll(d)
		opts.Dir = d
	}
	rep := BenchReport{Keys: opts.Keys, DupRatio: opts.DupRatio, GoMaxProcs: runtime.GOMAXPROCS(0)}
	var total int
	g := newKeyStream(opts.DupRatio)
	for i := 0; i < 1000; i++ {
		total += len(g.next())
	}
	rep.KeyBytes = float64(total) / 1000
	runs := []string{"petrel"}
	runs = append(runs, opts.Baselines...)
	for _, name := range runs {
		var r BenchResult
		var err error
		switch name {
		case "petrel":
			r, err = benchPetrel(ctx, opts)
		case "map":
			r, err = benchMap(ctx, opts)
		case "pebble":
			r, err = benchPebble(ctx, opts)
		default:
			err = fmt.Errorf("sieve: bench: unknown baseline %q", name)
		}
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	if jsonOut != nil {
		enc := json.NewEncoder(jsonOut)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("sieve: bench: %w", err)
		}
	}
	if tableOut != nil {
		tw := tabwriter.NewWriter(tableOut, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "run\tkeys\tdistinct\tseconds\tkeys/s\tRAM B/buffered key\tdisk B/key\tflushes\tflush mean ms\tflush max ms\tpeak RSS MiB\tpeak heap MiB\t\n")
		for _, r := range rep.Results {
			name := r.Name
			if r.StoppedAtTimeLimit {
				name += " (stopped at time limit)"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.0f\t%.1f\t%.2f\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t\n", name, r.Keys, r.Distinct,
				r.Seconds, r.KeysPerSec, r.RAMBytesPerBufKey, r.DiskBytesPerKey, r.Flushes, r.FlushMeanMs, r.FlushMaxMs,
				float64(r.PeakRSSBytes)/(1<<20), float64(r.PeakHeapBytes)/(1<<20))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("sieve: bench: %w", err)
		}
	}
	return nil
}

func benchPetrel(ctx context.Context, opts BenchOptions) (BenchResult, error) {
	r := BenchResult{Name: "petrel"}
	if opts.Compressed {
		r.Name = "petrel-compressed"
	}
	dir := filepath.Join(opts.Dir, "petrel")
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	recv := &countRecv{}
	ps := startSampler()
	start := time.Now()
	s, err := Open(dir, recv, Options{BufferKeys: opts.BufferKeys, Compressed: opts.Compressed, NoSync: opts.NoSync,
		Logger: quietLogger(), GroupHash: hostGroup})
	if err != nil {
		return r, err
	}
	g := newKeyStream(opts.DupRatio)
	for i := 0; i < opts.Keys; i++ {
		if i&0xffff == 0 && ctx.Err() != nil {
			s.Close()
			return r, ctx.Err()
		}
		if _, err := s.Enqueue(g.next()); err != nil {
			s.Close()
			return r, err
		}
	}
	if err := s.Close(); err != nil {
		return r, err
	}
	r.Seconds = time.Since(start).Seconds()
	ps.finish(&r)
	st := s.Stats()
	r.Keys, r.Distinct = int64(st.Enqueued), recv.n
	r.KeysPerSec = float64(r.Keys) / r.Seconds
	bufKeys := opts.BufferKeys
	if bufKeys <= 0 {
		bufKeys = DefaultBufferKeys
	}
	r.RAMBytesPerBufKey = float64(st.RAMBytes) / float64(bufKeys)
	r.DiskBytesPerKey = float64(dirBytes(dir)) / float64(max(r.Distinct, 1))
	r.Flushes = st.Flushes
	if st.Flushes > 0 {
		r.FlushMeanMs = float64(st.TotalFlush.Milliseconds()) / float64(st.Flushes)
	}
	r.FlushMaxMs = float64(st.MaxFlush.Milliseconds())
	r.FlushTotalMs = float64(st.TotalFlush.Milliseconds())
	return r, nil
}

func benchMap(ctx context.Context, opts BenchOptions) (BenchResult, error) {
	r := BenchResult{Name: "map"}
	ps := startSampler()
	start := time.Now()
	seen := make(map[uint64]struct{})
	g := newKeyStream(opts.DupRatio)
	var deadline time.Time
	if opts.BaselineTimeout > 0 {
		deadline = start.Add(opts.BaselineTimeout)
	}
	i := 0
	for ; i < opts.Keys; i++ {
		if i&0xffff == 0 {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				r.StoppedAtTimeLimit = true
				break
			}
		}
		h := Hash(g.next())
		if _, ok := seen[h]; !ok {
			seen[h] = struct{}{}
			r.Distinct++
		}
	}
	r.Seconds = time.Since(start).Seconds()
	ps.finish(&r)
	r.Keys = int64(i)
	r.KeysPerSec = float64(r.Keys) / r.Seconds
	runtime.KeepAlive(seen)
	return r, nil
}
