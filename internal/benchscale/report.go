package benchscale

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/petrel-crawler/petrel/internal/benchcrawl"
)

// Sample is the crawl at one moment. Counters are cumulative since the
// crawl started; pages_per_s and cpu_s_per_1000_pages are over the
// interval since the previous sample.
type Sample struct {
	T                float64   `json:"t_s"`
	Pages            int64     `json:"pages"`
	Known            int64     `json:"known"`
	QueuedRAM        int64     `json:"queued_ram"`  // URLs of visit-state queues in RAM
	QueuedDisk       int64     `json:"queued_disk"` // URLs of the ready queue and of virtualized visit-state queues
	Ready            int64     `json:"ready"`
	Virtualized      int64     `json:"virtualized"`
	RSS              int64     `json:"rss_bytes"`
	Heap             int64     `json:"heap_bytes"`
	Disk             int64     `json:"disk_bytes"`
	DiskBy           DiskBytes `json:"disk"`
	PagesPerS        float64   `json:"pages_per_s"`
	CPU              float64   `json:"cpu_s"`
	CPUPer1000       float64   `json:"cpu_s_per_1000_pages"`
	WebCPU           float64   `json:"web_cpu_s"`
	VisitStates      int64     `json:"visit_states"`
	Robots           int64     `json:"robots"`
	Errors           int64     `json:"errors"`
	OverBudget       int64     `json:"over_budget"`
	SieveFlushes     int64     `json:"sieve_flushes"`
	SieveFlushS      float64   `json:"sieve_flush_s"` // sum of flush durations
	SieveFlushMaxS   float64   `json:"sieve_flush_max_s"`
	SieveLastFlushS  float64   `json:"sieve_last_flush_s"`
	Checkpoints      int64     `json:"checkpoints"`
	CheckpointPauseS float64   `json:"checkpoint_pause_s"` // of the last checkpoint
	FetcherWaitS     float64   `json:"fetcher_wait_s"`     // summed over fetchers
}

// Checkpoint is one checkpoint seen during the run.
type Checkpoint struct {
	Known  int64   `json:"known"`
	Queued int64   `json:"queued"` // ready + visit-state URLs at the sample that saw it
	PauseS float64 `json:"pause_s"`
	AtN    bool    `json:"at_n,omitempty"` // the one asked for when N was reached
}

// Summary is what the run shows.
type Summary struct {
	Known              int64          `json:"known"`
	Pages              int64          `json:"pages"`
	WallS              float64        `json:"wall_s"` // start to N known (or to the time bound)
	PeakRSSBytes       int64          `json:"peak_rss_bytes"`
	DiskBytesPerKnown  float64        `json:"disk_bytes_per_known"` // sieve + ready queue + virtualizer, per URL known
	RateSecondTenth    float64        `json:"rate_second_tenth"`    // pages/s over the second tenth of wall_s
	RateLastTenth      float64        `json:"rate_last_tenth"`
	CheckpointPauseS   float64        `json:"checkpoint_pause_s"` // of the checkpoint at N (else the longest seen)
	Reached            bool           `json:"reached"`
	RSSAtTenthBytes    int64          `json:"rss_at_tenth_known_bytes"` // RSS at the first sample with N/10 known
	RSSAtEndBytes      int64          `json:"rss_at_end_bytes"`
	DiskBytes          int64          `json:"disk_bytes"`
	DiskBy             DiskBytes      `json:"disk"`
	CPUSecPer1000Pages float64        `json:"cpu_s_per_1000_pages"`
	WebCPUSeconds      float64        `json:"web_cpu_s"`
	Robots             int64          `json:"robots"`
	VisitStates        int64          `json:"visit_states"`
	SieveFlushes       int64          `json:"sieve_flushes"`
	SieveFlushMaxS     float64        `json:"sieve_flush_max_s"`
	SieveFlushMeanS    float64        `json:"sieve_flush_mean_s"`
	Checkpoints        []Checkpoint   `json:"checkpoints"`
	StopS              float64        `json:"stop_s,omitempty"`    // SIGINT to exit after N
	RecoverS           float64        `json:"recover_s,omitempty"` // restart after kill -9 to the first new page
	RecoverOpenS       float64        `json:"recover_open_s,omitempty"`
	CountsFileBytes    int64          `json:"counts_file_bytes"`        // the per-key URL counts saved at the stop
	CountsKeys         int64          `json:"counts_keys"`              // keys (hosts) in it
	CountsMax          int64          `json:"counts_max"`               // the largest count (the per-key budget caps it)
	OverBudget         int64          `json:"over_budget"`              // URLs refused by the per-key budget
	DigestFilters      string         `json:"digest_filters,omitempty"` // the crawl's summary line on its digest filters
	PayloadFilter      *FilterFigures `json:"payload_filter,omitempty"`
	TextFilter         *FilterFigures `json:"text_filter,omitempty"`
}

// Report is a whole run.
type Report struct {
	Date      string             `json:"date"`
	Machine   benchcrawl.Machine `json:"machine"`
	Command   string             `json:"command"`
	Web       WebShape           `json:"web"`
	HostDelay string             `json:"host_delay"`
	IPDelay   string             `json:"ip_delay"`
	N         int64              `json:"n"`
	Samples   []Sample           `json:"samples"`
	Summary   Summary            `json:"summary"`
	Notes     []string           `json:"notes,omitempty"`
}

// WebShape is the generated web's shape.
type WebShape struct {
	Hosts        int     `json:"hosts"`
	PagesPerHost int     `json:"pages_per_host"`
	Addrs        int     `json:"addresses"`
	LinksPerPage int     `json:"links_per_page"`
	URLMeanBytes float64 `json:"url_mean_bytes"`
	URLP50Bytes  int     `json:"url_p50_bytes"`
	URLP90Bytes  int     `json:"url_p90_bytes"`
	Served       string  `json:"served,omitempty"` // the web's own count line at its exit
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the samples (at most about 40 rows) and the summary.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "t s\tpages\tpages/s\tknown\tqueued RAM\tqueued disk\tRSS MiB\theap MiB\tfrontier disk MiB\tWARC MiB\tflush max s\tcp pause s\tCPU s/1000\t")
	step := max(1, len(r.Samples)/40)
	for i, s := range r.Samples {
		if i%step != 0 && i != len(r.Samples)-1 {
			continue
		}
		fmt.Fprintf(tw, "%.0f\t%d\t%.0f\t%d\t%d\t%d\t%.0f\t%.0f\t%.1f\t%.0f\t%.2f\t%.3f\t%.2f\t\n",
			s.T, s.Pages, s.PagesPerS, s.Known, s.QueuedRAM, s.QueuedDisk, mib(s.RSS), mib(s.Heap),
			mib(s.DiskBy.Frontier()), mib(s.DiskBy.WARC), s.SieveFlushMaxS, s.CheckpointPauseS, s.CPUPer1000)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	m := r.Summary
	fmt.Fprintf(w, "\nN %d known: reached %v in %.0f s; %d pages (%d robots.txt), %d visit states\n", r.N, m.Reached, m.WallS, m.Pages, m.Robots, m.VisitStates)
	fmt.Fprintf(w, "pages/s: second tenth %.0f, last tenth %.0f (ratio %.2f); CPU %.2f s per 1,000 pages; web CPU %.0f s\n",
		m.RateSecondTenth, m.RateLastTenth, ratio(m.RateLastTenth, m.RateSecondTenth), m.CPUSecPer1000Pages, m.WebCPUSeconds)
	fmt.Fprintf(w, "RSS: peak %.0f MiB, at N/10 %.0f MiB, at N %.0f MiB\n", mib(m.PeakRSSBytes), mib(m.RSSAtTenthBytes), mib(m.RSSAtEndBytes))
	d := m.DiskBy
	fmt.Fprintf(w, "disk: %.1f B per known URL (sieve store %.0f MiB, sieve buffers %.0f MiB, ready %.0f MiB, virtualizer %.0f MiB); WARC %.0f MiB, checkpoints %.0f MiB, other %.0f MiB\n",
		m.DiskBytesPerKnown, mib(d.SieveStore), mib(d.SieveBuffers), mib(d.Ready), mib(d.Virtualizer), mib(d.WARC), mib(d.Checkpoints), mib(d.Other))
	fmt.Fprintf(w, "sieve: %d flushes, mean %.2f s, max %.2f s\n", m.SieveFlushes, m.SieveFlushMeanS, m.SieveFlushMaxS)
	for _, c := range m.Checkpoints {
		fmt.Fprintf(w, "checkpoint at %d known (%d queued): pause %.3f s%s\n", c.Known, c.Queued, c.PauseS, map[bool]string{true: " (at N)"}[c.AtN])
	}
	if m.StopS > 0 {
		fmt.Fprintf(w, "clean stop after N: %.1f s\n", m.StopS)
	}
	if m.RecoverS > 0 {
		fmt.Fprintf(w, "kill -9 at N, restart: open %.1f s, first new page %.1f s\n", m.RecoverOpenS, m.RecoverS)
	}
	fmt.Fprintf(w, "per-key counts: %d keys, largest %d, %d URLs over budget, file %.1f MiB\n", m.CountsKeys, m.CountsMax, m.OverBudget, mib(m.CountsFileBytes))
	for _, f := range []struct {
		name string
		f    *FilterFigures
	}{{"payload", m.PayloadFilter}, {"text", m.TextFilter}} {
		if f.f != nil {
			fmt.Fprintf(w, "%s digest filter: %d keys in %d stages, %.1f MiB, false positives ≤ %.0e budgeted, %.1e estimated from its fill\n",
				f.name, f.f.Keys, f.f.Stages, mib(f.f.Bytes), f.f.Budget, f.f.Estimated)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// summarize computes the summary from the samples.
func (r *Report) summarize(n int64, peakRSS int64) {
	m := &r.Summary
	ss := r.Samples
	if len(ss) == 0 {
		return
	}
	last := ss[len(ss)-1]
	m.Known, m.Pages, m.WallS = last.Known, last.Pages, last.T
	m.Reached = last.Known >= n
	m.PeakRSSBytes = peakRSS
	for _, s := range ss {
		m.PeakRSSBytes = max(m.PeakRSSBytes, s.RSS)
		if m.RSSAtTenthBytes == 0 && s.Known >= n/10 {
			m.RSSAtTenthBytes = s.RSS
		}
	}
	m.RSSAtEndBytes = last.RSS
	m.DiskBy, m.DiskBytes = last.DiskBy, last.Disk
	if last.Known > 0 {
		m.DiskBytesPerKnown = float64(last.DiskBy.Frontier()) / float64(last.Known)
	}
	m.RateSecondTenth = rateBetween(ss, 0.1*last.T, 0.2*last.T)
	m.RateLastTenth = rateBetween(ss, 0.9*last.T, last.T)
	if last.Pages > 0 {
		m.CPUSecPer1000Pages = last.CPU / float64(last.Pages) * 1000
	}
	m.WebCPUSeconds = last.WebCPU
	m.Robots, m.VisitStates, m.OverBudget = last.Robots, last.VisitStates, last.OverBudget
	m.SieveFlushes, m.SieveFlushMaxS = last.SieveFlushes, last.SieveFlushMaxS
	if last.SieveFlushes > 0 {
		m.SieveFlushMeanS = last.SieveFlushS / float64(last.SieveFlushes)
	}
	var prev int64
	for _, s := range ss {
		if s.Checkpoints > prev {
			m.Checkpoints = append(m.Checkpoints, Checkpoint{Known: s.Known, Queued: s.QueuedRAM + s.QueuedDisk, PauseS: s.CheckpointPauseS})
			prev = s.Checkpoints
		}
	}
	for _, c := range m.Checkpoints {
		m.CheckpointPauseS = max(m.CheckpointPauseS, c.PauseS)
	}
}

// rateBetween returns pages/s between times a and b, the page counts
// interpolated linearly between samples.
func rateBetween(ss []Sample, a, b float64) float64 {
	if b <= a {
		return 0
	}
	return (pagesAt(ss, b) - pagesAt(ss, a)) / (b - a)
}

func pagesAt(ss []Sample, t float64) float64 {
	prevT, prevP := 0.0, 0.0
	for _, s := range ss {
		if s.T >= t {
			if s.T == prevT {
				return float64(s.Pages)
			}
			return prevP + (float64(s.Pages)-prevP)*(t-prevT)/(s.T-prevT)
		}
		prevT, prevP = s.T, float64(s.Pages)
	}
	return prevP
}
