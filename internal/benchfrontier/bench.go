package benchfrontier

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/petrel-crawler/petrel/internal/diskq"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/sieve"
	"github.com/petrel-crawler/petrel/internal/stats"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// Options shape a frontier benchmark.
type Options struct {
	Keys           int           // politeness keys (hosts), default 100,000
	URLs           int           // URLs scheduled in the throughput phase, default 2,000,000
	QueuedURLs     int           // URLs queued in the memory phase, default 10,000,000 (0: skip the phase)
	HostDelay      time.Duration // default 200ms
	IPDelay        time.Duration // default 50ms
	KeysPerIP      int           // default 1
	Fetchers       int           // fake fetchers, default 512
	WorkbenchBytes int64         // default 512 MiB
	Dir            string        // scratch directory (default a temporary one)
	Timeout        time.Duration // bound on each phase, default 5 minutes
}

func (o *Options) defaults() {
	if o.Keys <= 0 {
		o.Keys = 100_000
	}
	if o.URLs <= 0 {
		o.URLs = 2_000_000
	}
	if o.QueuedURLs < 0 {
		o.QueuedURLs = 0
	}
	if o.HostDelay == 0 {
		o.HostDelay = 200 * time.Millisecond
	}
	if o.IPDelay == 0 {
		o.IPDelay = 50 * time.Millisecond
	}
	if o.KeysPerIP <= 0 {
		o.KeysPerIP = 1
	}
	if o.Fetchers <= 0 {
		o.Fetchers = 512
	}
	if o.WorkbenchBytes <= 0 {
		o.WorkbenchBytes = 512 << 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
}

// Result holds the figures of one run.
type Result struct {
	Date    string `json:"date"`
	Machine string `json:"machine"`

	Keys              int     `json:"keys"`
	URLs              int     `json:"urls"`
	HostDelayMS       float64 `json:"host_delay_ms"`
	IPDelayMS         float64 `json:"ip_delay_ms"`
	ScheduledPerSec   float64 `json:"urls_scheduled_per_sec"`
	PolitenessLimit   float64 `json:"politeness_limit_per_sec"` // the rate the delays allow
	Violations        int64   `json:"politeness_violations"`
	ThroughputSeconds float64 `json:"throughput_seconds"`

	QueuedURLs         int     `json:"queued_urls"`
	WorkbenchBytes     int64   `json:"workbench_budget_bytes"`
	QueuedInRAM        int64   `json:"queued_in_ram"`
	QueueBytesInRAM    int64   `json:"queue_bytes_in_ram"`
	AvgPathQueryBytes  float64 `json:"avg_path_query_bytes"`
	RAMPerQueuedURL    float64 `json:"queue_ram_bytes_per_url"`
	HeapPerQueuedURL   float64 `json:"heap_bytes_per_queued_url"`
	Virtualized        int64   `json:"virtualized_urls"`
	DiskPerVirtualized float64 `json:"disk_bytes_per_virtualized_url"`
	RSSBytes           int64   `json:"rss_bytes"`
	PeakRSSBytes       int64   `json:"peak_rss_bytes"`
	RSSLimitBytes      int64   `json:"rss_limit_bytes"` // budget + 256 MiB
	FillSeconds        float64 `json:"fill_seconds"`
	CheckpointPauseS   float64 `json:"checkpoint_pause_seconds"`
	CheckpointTodo     int64   `json:"checkpoint_todo_urls"`
	CheckpointVirtual  int64   `json:"checkpoint_virtualized_urls"`      // saved by the virtualizer's own checkpoint
	PauseSieveS        float64 `json:"checkpoint_pause_sieve_seconds"`   // of the pause: saving the sieve
	PauseVirtualS      float64 `json:"checkpoint_pause_virtual_seconds"` // of the pause: the virtualizer's checkpoint
	PauseTodoS         float64 `json:"checkpoint_pause_todo_seconds"`    // of the pause, the rest: marking the ready queue, walking the visit states, writing the todo file
	CheckpointGCs      uint32  `json:"checkpoint_gc_cycles"`             // GC cycles that ended during the checkpoint
	PausePerMillion    float64 `json:"checkpoint_pause_seconds_per_million_queued"`
}

// Run runs the benchmark and prints JSON to jsonOut and a table to tableOut.
func Run(ctx context.Context, opts Options, jsonOut, tableOut io.Writer) error {
	opts.defaults()
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "petrel-bench-frontier-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	res := Result{
		Date:    time.Now().UTC().Format(time.RFC3339),
		Machine: machine(),
		Keys:    opts.Keys, URLs: opts.URLs,
		HostDelayMS: float64(opts.HostDelay) / 1e6, IPDelayMS: float64(opts.IPDelay) / 1e6,
		QueuedURLs: opts.QueuedURLs, WorkbenchBytes: opts.WorkbenchBytes,
		RSSLimitBytes: opts.WorkbenchBytes + 256<<20,
	}
	if err := throughput(ctx, opts, filepath.Join(dir, "throughput"), &res); err != nil {
		return err
	}
	runtime.GC()
	if opts.QueuedURLs > 0 {
		if err := memory(ctx, opts, filepath.Join(dir, "memory"), &res); err != nil {
			return err
		}
	}
	enc := json.NewEncoder(jsonOut)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(tableOut, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\tvalue\ttarget\n")
	fmt.Fprintf(tw, "URLs scheduled/s (%d keys, %v/%v delays)\t%.0f\t≥ 200000\n", res.Keys, opts.HostDelay, opts.IPDelay, res.ScheduledPerSec)
	fmt.Fprintf(tw, "rate the delays allow\t%.0f\t\n", res.PolitenessLimit)
	fmt.Fprintf(tw, "politeness violations\t%d\t0\n", res.Violations)
	if opts.QueuedURLs > 0 {
		fmt.Fprintf(tw, "queued URLs (in RAM / virtualized)\t%d / %d\t\n", res.QueuedInRAM, res.Virtualized)
		fmt.Fprintf(tw, "queue RAM per URL in the workbench (avg path+query %.1f B)\t%.1f B\t≤ %.1f B\n", res.AvgPathQueryBytes, res.RAMPerQueuedURL, res.AvgPathQueryBytes+24)
		fmt.Fprintf(tw, "heap per queued URL (all structures)\t%.1f B\t\n", res.HeapPerQueuedURL)
		fmt.Fprintf(tw, "disk per virtualized URL\t%.1f B\t\n", res.DiskPerVirtualized)
		fmt.Fprintf(tw, "RSS / peak RSS\t%s / %s\t≤ %s\n", mib(res.RSSBytes), mib(res.PeakRSSBytes), mib(res.RSSLimitBytes))
		fmt.Fprintf(tw, "checkpoint pause (%d URLs saved, %d virtualized linked)\t%.2f s (%.2f s per million queued)\t< 1 s per million\n", res.CheckpointTodo, res.CheckpointVirtual, res.CheckpointPauseS, res.PausePerMillion)
		fmt.Fprintf(tw, "of which the ready queue and todo / the sieve / the virtualizer\t%.2f s / %.2f s / %.2f s (%d GC cycles)\t\n", res.PauseTodoS, res.PauseSieveS, res.PauseVirtualS, res.CheckpointGCs)
	}
	return tw.Flush()
}

// MemoryLimit is the process's soft memory limit the benchmark's figures
// assume: the workbench budget plus the fixed allowance an agent has
// (agent.Config.MemoryBudget, without the URL-cache share: this
// benchmark's cache is 16 MiB, inside the allowance). The command that
// runs the benchmark sets it, as petrel crawl sets the agent's; Run sets
// no limit.
func (o Options) MemoryLimit() int64 {
	o.defaults()
	return o.WorkbenchBytes + 192<<20
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// allowAll is a robots.txt without rules.
type allowAll struct{}

func (allowAll) Allowed(string) bool       { return true }
func (allowAll) CrawlDelay() time.Duration { return 0 }

// resolver gives key i the address 10.x.y.z of its IP group.
type resolver struct{ keysPerIP int }

func (r resolver) Lookup(_ context.Context, host string) ([]netip.Addr, error) {
	// host is "kN.bench.test"
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(host, "k"), ".bench.test"))
	if err != nil {
		return nil, fmt.Errorf("bench: unknown host %q", host)
	}
	ip := n / r.keysPerIP
	return []netip.Addr{netip.AddrFrom4([4]byte{10, byte(ip >> 16), byte(ip >> 8), byte(ip)})}, nil
}

// sink is a frontier.VirtualCheckpointSink writing to files, as the
// agent's does: the sieve is flushed before the pause and saved without a
// merge in it (CheckpointPending), the virtualizer by its own checkpoint,
// the first todo records held in RAM (frontier.TodoHold) and written after
// the pause, the rest written to the file in it.
type sink struct {
	ready   *diskq.Queue
	virt    *diskq.Queues
	sv      *sieve.DRUM
	dir     string
	w       *bufio.Writer
	held    frontier.TodoHold
	spilled bool
	hdr     [binary.MaxVarintLen64]byte

	finishVirtual          func() error
	sieveTime, virtualTime time.Duration
}

func (k *sink) MarkReady() error {
	_, err := k.ready.Mark()
	return err
}
func (k *sink) WriteTodo(rec []byte) error {
	if !k.spilled && k.held.Hold(rec) {
		return nil
	}
	if !k.spilled {
		if _, err := k.held.WriteTo(k.w); err != nil {
			return err
		}
		k.spilled = true
	}
	k.w.Write(binary.AppendUvarint(k.hdr[:0], uint64(len(rec))))
	_, err := k.w.Write(rec)
	return err
}
func (k *sink) CheckpointSieve() error {
	defer timed(&k.sieveTime)()
	return k.sv.CheckpointPending(filepath.Join(k.dir, "sieve"))
}
func (k *sink) CheckpointVirtual([]frontier.VirtualKey) error {
	defer timed(&k.virtualTime)()
	var err error
	k.finishVirtual, err = k.virt.Checkpoint(filepath.Join(k.dir, "virtual"))
	return err
}

// timed returns a function that stores the time since timed was called in d.
func timed(d *time.Duration) func() {
	t0 := time.Now()
	return func() { *d = time.Since(t0) }
}

// open builds a frontier over a DRUM sieve, a disk ready queue and a disk
// virtualizer in dir.
func open(opts Options, dir string, st *stats.Crawl, front int) (*frontier.Frontier, func() error, error) {
	f, _, closeAll, err := openWithSink(opts, dir, st, front)
	return f, closeAll, err
}

func openWithSink(opts Options, dir string, st *stats.Crawl, front int) (*frontier.Frontier, *sink, func() error, error) {
	ready, err := diskq.Open(filepath.Join(dir, "ready"), diskq.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	virt, err := diskq.OpenQueues(filepath.Join(dir, "virtual"), diskq.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var sv *sieve.DRUM
	f, err := frontier.New(frontier.Config{
		Settings: frontier.Settings{HostDelay: opts.HostDelay, IPDelay: opts.IPDelay,
			WorkbenchBytes: opts.WorkbenchBytes, FrontSize: front},
		Ready: ready, Virtualizer: virt, Resolver: resolver{opts.KeysPerIP},
		Cache: sieve.NewURLCache(16 << 20), Hash: sieve.Hash,
		Stats: st, Logger: quiet, DNSWorkers: 64,
		OpenSieve: func(r *frontier.Receiver) (frontier.Sieve, error) {
			var err error
			sv, err = sieve.Open(filepath.Join(dir, "sieve"), r, sieve.Options{Logger: quiet, KeyPrefix: frontier.MetaLen, BufferKeys: 1 << 20,
				GroupHash: frontier.Assign{}.GroupHash})
			if err != nil {
				return nil, err
			}
			return sv, nil
		},
	})
	if err != nil {
		virt.Close()
		ready.Close()
		return nil, nil, nil, err
	}
	closeAll := func() error {
		err := f.Close()
		virt.Close()
		ready.Close()
		return err
	}
	return f, &sink{ready: ready, virt: virt, sv: sv, dir: filepath.Join(dir, "checkpoint")}, closeAll, nil
}

// url returns the j-th URL of key k: a path+query of realistic length.
func url(k, j int) urlx.URL {
	return urlx.URL{Scheme: "http", Host: "k" + strconv.Itoa(k) + ".bench.test",
		PathQuery: "/section/" + strconv.Itoa(j%17) + "/article-" + strconv.Itoa(j) + ".html?ref=front"}
}

// throughput schedules URLs across the keys with zero-latency fetchers
// that check every politeness gap.
func throughput(ctx context.Context, opts Options, dir string, res *Result) error {
	st := new(stats.Crawl)
	f, closeAll, err := open(opts, dir, st, opts.Keys)
	if err != nil {
		return err
	}
	perKey := max(1, opts.URLs/opts.Keys)
	for j := 0; j < perKey; j++ {
		for k := 0; k < opts.Keys; k++ {
			if err := f.Enqueue(url(k, j), frontier.Meta{}); err != nil {
				return err
			}
		}
	}
	total := perKey * opts.Keys
	pol := newPoliceman(opts)
	var wg sync.WaitGroup
	var pages atomic.Int64
	start := time.Now()
	for i := 0; i < opts.Fetchers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range f.Todo() {
				now := time.Now()
				pol.begin(t, now)
				o := frontier.Outcome{Task: t, Result: frontier.Fetched}
				if t.Robots {
					o.Robots = allowAll{}
				} else {
					pages.Add(1)
				}
				o.End = time.Now()
				pol.end(t, o.End)
				f.Done(o)
			}
		}()
	}
	rctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	runErr := f.Run(rctx)
	wg.Wait()
	elapsed := time.Since(start)
	if err := closeAll(); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("bench: throughput phase: %w", runErr)
	}
	if int(pages.Load()) != total {
		return fmt.Errorf("bench: %d URLs fetched, want %d", pages.Load(), total)
	}
	res.URLs = total
	res.ThroughputSeconds = elapsed.Seconds()
	res.ScheduledPerSec = float64(total) / elapsed.Seconds()
	// Each key can go once per host delay, each IP once per IP delay:
	// robots.txt at time 0, then perKey pages, each a delay after the
	// previous request, so the run lasts at least perKey delays.
	keyLimit := float64(opts.Keys) / opts.HostDelay.Seconds()
	ipLimit := float64(opts.Keys/opts.KeysPerIP) / opts.IPDelay.Seconds()
	res.PolitenessLimit = min(keyLimit, ipLimit)
	res.Violations = pol.violations.Load()
	return nil
}

// policeman checks, from the fetchers' side, that no key or IP has two
// requests in flight and that the gaps hold. It is sharded by address (all
// keys of one address fall in one shard) so that the check does not become
// the benchmark's bottleneck.
type policeman struct {
	hostDelay, ipDelay time.Duration
	shards             [64]policeShard
	violations         atomic.Int64
}

type policeShard struct {
	mu   sync.Mutex
	keys map[string]*slot
	ips  map[netip.Addr]*slot
}

type slot struct {
	busy bool
	end  time.Time
}

func newPoliceman(o Options) *policeman {
	p := &policeman{hostDelay: o.HostDelay, ipDelay: o.IPDelay}
	for i := range p.shards {
		p.shards[i] = policeShard{keys: map[string]*slot{}, ips: map[netip.Addr]*slot{}}
	}
	return p
}

func (p *policeman) shard(a netip.Addr) *policeShard {
	b := a.As16()
	return &p.shards[(b[15]^b[14]*7)&63]
}

func (p *policeman) begin(t *frontier.Task, now time.Time) {
	sh := p.shard(t.Addr)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	check := func(s *slot, delay time.Duration) {
		if s.busy || (!s.end.IsZero() && now.Sub(s.end) < delay) {
			p.violations.Add(1)
		}
		s.busy = true
	}
	ks := sh.keys[t.SchemeAuthority]
	if ks == nil {
		ks = &slot{}
		sh.keys[t.SchemeAuthority] = ks
	}
	is := sh.ips[t.Addr]
	if is == nil {
		is = &slot{}
		sh.ips[t.Addr] = is
	}
	check(ks, p.hostDelay)
	check(is, p.ipDelay)
}

func (p *policeman) end(t *frontier.Task, end time.Time) {
	sh := p.shard(t.Addr)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, s := range []*slot{sh.keys[t.SchemeAuthority], sh.ips[t.Addr]} {
		s.busy = false
		s.end = end
	}
}

// memory queues QueuedURLs URLs over the keys with no fetcher running, and
// measures what they cost once the distributor has moved them all out of
// the ready queue into the workbench (RAM up to the budget, the rest
// virtualized).
func memory(ctx context.Context, opts Options, dir string, res *Result) error {
	st := new(stats.Crawl)
	f, snk, closeAll, err := openWithSink(opts, dir, st, opts.Keys)
	if err != nil {
		return err
	}
	defer closeAll()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	perKey := max(1, opts.QueuedURLs/opts.Keys)
	var pqBytes int64
	start := time.Now()
	for j := 0; j < perKey; j++ {
		for k := 0; k < opts.Keys; k++ {
			u := url(k, j)
			pqBytes += int64(len(u.PathQuery))
			if err := f.Enqueue(u, frontier.Meta{}); err != nil {
				return err
			}
		}
	}
	total := int64(perKey * opts.Keys)
	rctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.Run(rctx) }()
	// No fetcher takes tasks: wait until every URL sits in the workbench.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for st.Queued.Load() < total {
		select {
		case <-rctx.Done():
			return fmt.Errorf("bench: memory phase: only %d of %d URLs queued within %v", st.Queued.Load(), total, opts.Timeout)
		case err := <-done:
			return fmt.Errorf("bench: memory phase: scheduler ended: %v", err)
		case <-tick.C:
		}
	}
	res.FillSeconds = time.Since(start).Seconds()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	res.Virtualized = st.Virtualized.Load()
	res.QueuedInRAM = total - res.Virtualized
	res.QueueBytesInRAM = st.QueuedBytes.Load()
	res.AvgPathQueryBytes = float64(pqBytes) / float64(total)
	if res.QueuedInRAM > 0 {
		res.RAMPerQueuedURL = float64(res.QueueBytesInRAM) / float64(res.QueuedInRAM)
	}
	res.HeapPerQueuedURL = float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / float64(total)
	if res.Virtualized > 0 {
		res.DiskPerVirtualized = float64(dirSize(filepath.Join(dir, "virtual"))) / float64(res.Virtualized)
	}
	res.RSSBytes, res.PeakRSSBytes = rss()
	// A checkpoint of the full workbench: how long the scheduler stops.
	if err := os.MkdirAll(snk.dir, 0o755); err != nil {
		return err
	}
	tf, err := os.Create(filepath.Join(snk.dir, "todo"))
	if err != nil {
		return err
	}
	snk.w = bufio.NewWriterSize(tf, 1<<20)
	if err := snk.sv.Flush(); err != nil {
		tf.Close()
		return fmt.Errorf("bench: checkpoint: sieve: %w", err)
	}
	var gc0, gc1 runtime.MemStats
	runtime.ReadMemStats(&gc0)
	info, err := f.Checkpoint(rctx, snk)
	runtime.ReadMemStats(&gc1)
	res.CheckpointGCs = gc1.NumGC - gc0.NumGC
	if err == nil {
		_, err = snk.held.WriteTo(snk.w)
	}
	if err == nil {
		err = snk.w.Flush()
	}
	if err == nil && snk.finishVirtual != nil {
		err = snk.finishVirtual()
	}
	tf.Close()
	if err != nil {
		return fmt.Errorf("bench: checkpoint: %w", err)
	}
	res.CheckpointPauseS = info.Pause.Seconds()
	res.CheckpointTodo = info.Todo
	res.CheckpointVirtual = info.Virtual
	res.PauseSieveS, res.PauseVirtualS = snk.sieveTime.Seconds(), snk.virtualTime.Seconds()
	res.PauseTodoS = (info.Pause - snk.sieveTime - snk.virtualTime).Seconds()
	res.PausePerMillion = info.Pause.Seconds() / (float64(total) / 1e6)
	cancel()
	// The tasks the scheduler handed out went nowhere: hand them back.
	for t := range f.Todo() {
		f.Done(frontier.Outcome{Task: t, Result: frontier.Abandoned})
	}
	<-done
	return nil
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// rss reads this process's resident and peak resident set sizes.
func rss() (cur, peak int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var kb int64
		if strings.HasPrefix(line, "VmRSS:") {
			fmt.Sscanf(strings.TrimPrefix(line, "VmRSS:"), "%d", &kb)
			cur = kb << 10
		}
		if strings.HasPrefix(line, "VmHWM:") {
			fmt.Sscanf(strings.TrimPrefix(line, "VmHWM:"), "%d", &kb)
			peak = kb << 10
		}
	}
	return cur, peak
}

func machine() string {
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		mem = strings.Fields(strings.SplitN(string(b), "\n", 2)[0])[1] + " kB"
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s, %d CPUs, %s RAM, %s", host, runtime.NumCPU(), mem, runtime.Version())
}
