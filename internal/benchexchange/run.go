package benchexchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/coord"
)

// Options configure one side of the benchmark.
type Options struct {
	URLs      int            // URLs sent
	BatchURLs int            // records per batch
	Senders   int            // goroutines routing URLs at once
	Dir       string         // state directory of this side
	Bind      netip.AddrPort // this side.s address (the exchange on its port + 1)
	Peer      netip.AddrPort // the receiver.s (it runs the coordinator on its port + 2)
	Key       cluster.Key
}

// Side is what one side reports.
type Side struct {
	URLs      int64   `json:"urls"`
	Batches   uint64  `json:"batches"`
	Bytes     int64   `json:"bytes"`  // batches' wire bytes
	Fsyncs    int64   `json:"fsyncs"` // outbox (sender) or inbox (receiver)
	Seconds   float64 `json:"seconds"`
	DoneNanos int64   `json:"done_unix_nanos"` // when the last URL was applied (receiver)
	MeanLen   float64 `json:"mean_url_bytes,omitempty"`
	// GenerateCPU is the CPU time the sender spends making the URLs
	// (URL) alone, measured apart on one thread before the run: it
	// is part of the sender's CPU, not of the exchange's.
	GenerateCPU time.Duration `json:"generate_cpu_ns,omitempty"`
}

// generateCPU returns the CPU time of making URLs 0 to n−1 on this
// thread.
func generateCPU(n int) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const rusageThread = 1 // RUSAGE_THREAD
	var before, after syscall.Rusage
	syscall.Getrusage(rusageThread, &before)
	var buf []byte
	var sum int
	for i := range n {
		buf = URL(buf[:0], i)
		sum += len(buf)
	}
	syscall.Getrusage(rusageThread, &after)
	if sum == 0 {
		return 0
	}
	return time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
}

// URL is the i-th URL of the benchmark: the shape of the synthetic
// web's URLs (host names of a large web, paths of a few segments).
func URL(dst []byte, i int) []byte {
	dst = append(dst, "https://h"...)
	h := i % 100_000
	for d := 100_000; d >= 1; d /= 10 { // six digits, zero-padded
		dst = append(dst, byte('0'+h/d%10))
	}
	dst = append(dst, ".petrel.test/section-"...)
	dst = strconv.AppendInt(dst, int64(i%37), 10)
	dst = append(dst, "/page-"...)
	dst = strconv.AppendInt(dst, int64(i/37), 10)
	dst = append(dst, ".html?ref="...)
	return strconv.AppendInt(dst, int64(i%7), 10)
}

type countingHost struct {
	n    atomic.Int64
	want int64
	done chan struct{}
	once sync.Once
}

func (h *countingHost) Apply(b *cluster.Batch) error {
	if h.n.Add(int64(len(b.Records))) >= h.want {
		h.once.Do(func() { close(h.done) })
	}
	return nil
}
func (h *countingHost) Idle() bool                 { return true }
func (h *countingHost) Stop(string)                {}
func (h *countingHost) Progress() cluster.Progress { return cluster.Progress{} }

// The benchmark's two agents keep one view: nothing moves, nothing is
// re-routed, no setting changes, no one asks why.
func (h *countingHost) Owner(cluster.Kind, []byte) string                          { return "" }
func (h *countingHost) ViewChanged(cluster.ViewChange)                             {}
func (h *countingHost) ResumeHolds([]cluster.PendingHold, map[string]time.Time)    {}
func (h *countingHost) ApplyHandoff(*cluster.Handoff) error                        { return nil }
func (h *countingHost) PrepareConfig(map[string]any) error                         { return nil }
func (h *countingHost) CommitConfig(context.Context, uint64, map[string]any) error { return nil }
func (h *countingHost) WhyJSON(context.Context, string, bool) ([]byte, error) {
	return nil, errors.New("the exchange benchmark answers no why")
}

var _ cluster.Host = (*countingHost)(nil)

// benchNode starts one side of the benchmark; the receiver runs the
// crawl's one coordinator, on its address's port + 2.
func benchNode(o Options, name string, recv netip.AddrPort, host cluster.Host) (*cluster.Node, error) {
	coordinator := coord.AgentCoordinator("receiver", recv)
	n, err := cluster.Start(cluster.Config{Name: name, Bind: o.Bind, Key: o.Key, Wait: 2, CrawlName: "bench",
		Coordinators: []coord.Coordinator{coordinator}, LeaseTTL: 5 * time.Second,
		Dir:       filepath.Join(o.Dir, name),
		BatchURLs: o.BatchURLs, BatchDelay: 20 * time.Millisecond,
		InboxBytes: 4 << 30, OutboxBytes: 1 << 30, Window: 8,
		Logger: slog.New(slog.DiscardHandler)}, host)
	if err == nil {
		n.Follow()
	}
	return n, err
}

// RunReceiver is the receiving side: it reports (JSON on out) once it
// has applied o.URLs URLs, then stops.
func RunReceiver(ctx context.Context, o Options, out io.Writer) error {
	h := &countingHost{want: int64(o.URLs), done: make(chan struct{})}
	n, err := benchNode(o, "receiver", o.Bind, h)
	if err != nil {
		return err
	}
	defer n.Close(time.Second)
	if _, err := n.WaitReady(ctx); err != nil {
		return err
	}
	start := time.Now()
	select {
	case <-h.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	done := time.Now()
	t := n.Traffic()
	return json.NewEncoder(out).Encode(Side{URLs: h.n.Load(), Batches: t.AppliedBatches,
		Bytes: t.InboxBytes, Fsyncs: t.InboxSyncs, Seconds: done.Sub(start).Seconds(), DoneNanos: done.UnixNano()})
}

// RunSender is the sending side: it joins the receiver, routes
// o.URLs URLs from o.Senders goroutines, and returns once its outbox is
// empty (every batch acknowledged).
func RunSender(ctx context.Context, o Options) (Side, time.Time, error) {
	gen := generateCPU(o.URLs)
	n, err := benchNode(o, "sender", o.Peer, &countingHost{want: 1 << 62})
	if err != nil {
		return Side{}, time.Time{}, err
	}
	defer n.Close(time.Second)
	if _, err := n.WaitReady(ctx); err != nil {
		return Side{}, time.Time{}, err
	}
	start := time.Now()
	var wg sync.WaitGroup
	var total atomic.Int64
	errc := make(chan error, o.Senders)
	for w := 0; w < o.Senders; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := benchRoute(n, w, o, &total); err != nil {
				errc <- err
			}
		}()
	}
	wg.Wait()
	routed := time.Since(start)
	defer func() { fmt.Fprintf(os.Stderr, "bench exchange: routed in %s\n", routed) }()
	select {
	case err := <-errc:
		return Side{}, start, err
	default:
	}
	if err := n.Flush(); err != nil {
		return Side{}, start, err
	}
	if err := n.WaitSent(ctx); err != nil {
		return Side{}, start, err
	}
	t := n.Traffic()
	return Side{URLs: int64(o.URLs), Batches: t.SentBatches, Bytes: t.OutboxWritten,
		Fsyncs: t.OutboxSyncs, Seconds: time.Since(start).Seconds(),
		MeanLen: float64(total.Load()) / float64(o.URLs), GenerateCPU: gen}, start, nil
}

// benchRouteChunk is how many URLs a sender of the benchmark routes at
// once (RouteAll): a page's links, about.
const benchRouteChunk = 64

// benchRoute routes the URLs w, w+o.Senders, w+2·o.Senders… of the
// benchmark, benchRouteChunk at a time, and adds their bytes to total.
func benchRoute(n *cluster.Node, w int, o Options, total *atomic.Int64) error {
	var arena []byte
	ends := make([]int, 0, benchRouteChunk)
	recs := make([][]byte, 0, benchRouteChunk)
	for i := w; i < o.URLs; {
		arena, ends, recs = arena[:0], ends[:0], recs[:0]
		for ; i < o.URLs && len(ends) < benchRouteChunk; i += o.Senders {
			arena = URL(arena, i)
			ends = append(ends, len(arena))
		}
		start := 0
		for _, end := range ends {
			recs = append(recs, arena[start:end:end])
			start = end
		}
		total.Add(int64(len(arena)))
		if err := n.RouteAll("receiver", cluster.KindURLs, recs); err != nil {
			return err
		}
	}
	return nil
}
