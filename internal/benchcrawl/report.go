package benchcrawl

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is everything one benchmark measured; Run writes it as JSON.
type Report struct {
	Date    string  `json:"date"`
	Machine Machine `json:"machine"`
	Mode    string  `json:"mode"` // "headline" or "politeness-bound"
	Web     Web     `json:"web"`
	// HostDelay and IPDelay are the politeness settings given to every
	// crawler, as Go durations.
	HostDelay string `json:"host_delay"`
	IPDelay   string `json:"ip_delay"`
	MaxURLs   int64  `json:"max_urls"`
	TimeBound string `json:"time_bound"`
	// Runs holds one entry per crawler, Petrel first: its run of median
	// pages/s when Options.Repeat > 1.
	Runs []RunResult `json:"runs"`
	// Repeats lists every run, in the order they ran, without their
	// series (Options.Repeat > 1 only).
	Repeats []RunResult `json:"repeats,omitempty"`
	// Limit is the wrk measurement (nil when not run).
	Limit *Limit `json:"limit,omitempty"`
	// AllowedRate is the rate the delays allow on this web (pages/s; see
	// AllowedRateHow), reported in the politeness-bound mode.
	AllowedRate    float64 `json:"allowed_rate,omitempty"`
	AllowedRateHow string  `json:"allowed_rate_how,omitempty"`
	// Agents compares the crawl of several agents with the single agent
	// (Options.Agents > 1 only).
	Agents *AgentsSummary `json:"agents,omitempty"`
	// Ops compares the operations on and off (Options.Ops only).
	Ops   *OpsSummary `json:"ops,omitempty"`
	Notes []string    `json:"notes,omitempty"`
}

// Machine describes where the benchmark ran.
type Machine struct {
	NumCPU    int    `json:"nproc"`               // runtime.NumCPU
	MemBytes  int64  `json:"mem_bytes"`           // MemTotal of /proc/meminfo
	CPUModel  string `json:"cpu_model,omitempty"` // first "model name" of /proc/cpuinfo
	Kernel    string `json:"kernel,omitempty"`
	GoVersion string `json:"go_version"` // of the harness
}

// Web is the synthetic web's shape.
type Web struct {
	Shape        string `json:"shape,omitempty"` // "" or "real" (see Options.Shape)
	Hosts        int    `json:"hosts"`
	Addresses    int    `json:"addresses"`
	HostsPerIP   int    `json:"hosts_per_ip"`
	PagesPerHost int    `json:"pages_per_host"`
	LinksPerPage int    `json:"links_per_page"`
	PageBytes    int    `json:"page_bytes"`
	// CrossHostLinkShare is the share of the pages' links whose target is
	// on another host (as "petrel testweb" counts them; 0 if it did not say).
	CrossHostLinkShare float64 `json:"cross_host_link_share"`
}

// RunResult holds one crawler's figures. Rates use the crawler's own page
// count (responses received, robots.txt excluded) over the wall time of its
// process, from exec to exit.
type RunResult struct {
	Crawler string `json:"crawler"`
	// Skipped, when set, says why the crawler did not run; no figure is valid.
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
	Command string `json:"command,omitempty"`
	// Pages is the crawler's own count; PagesChecked is a second count
	// from its output (Petrel: page records in its WARC files; wget: files
	// written), -1 when none.
	Pages        int64   `json:"pages"`
	PagesChecked int64   `json:"pages_checked"`
	Robots       int64   `json:"robots_fetched"`
	ElapsedS     float64 `json:"elapsed_s"` // exec to exit
	// SelfReportedS is the crawler's own figure for its duration (Petrel:
	// its summary line, from the start of the crawl to the end of its stop;
	// Colly: its final JSON line), 0 when it gave none.
	SelfReportedS float64 `json:"self_reported_s,omitempty"`
	PagesPerSec   float64 `json:"pages_per_s"`
	CPUSeconds    float64 `json:"cpu_s"`
	CPUPer1000    float64 `json:"cpu_s_per_1000_pages"`
	PeakRSSBytes  int64   `json:"peak_rss_bytes"`
	// AllocsPerPage and AllocBytesPerPage come from Petrel's stats.json
	// (RuntimeMallocs, RuntimeTotalAlloc); 0 for the peers.
	AllocsPerPage     float64 `json:"allocs_per_page,omitempty"`
	AllocBytesPerPage float64 `json:"alloc_bytes_per_page,omitempty"`
	BytesReceived     int64   `json:"bytes_received"`
	BytesWritten      int64   `json:"bytes_written"`
	// WebCPUSeconds is the CPU the synthetic web's process used during
	// this run.
	WebCPUSeconds float64 `json:"web_cpu_s"`
	// StoppedAtBound is true when the crawl was interrupted at the time
	// bound rather than finishing by itself.
	StoppedAtBound bool `json:"stopped_at_bound"`
	// Efficiency is the politeness efficiency (politeness-bound mode): the
	// steady-state page rate (samples after the first quarter of the run)
	// ÷ the allowed rate. EfficiencyWhole is Petrel's over the whole run,
	// robots.txt fetches included.
	Efficiency      float64 `json:"politeness_efficiency,omitempty"`
	EfficiencyWhole float64 `json:"politeness_efficiency_whole,omitempty"`
	// Politeness is what the web's request log shows of this run (nil
	// when it was not judged).
	Politeness *Politeness `json:"politeness,omitempty"`
	// Ratio* compare this crawler with Petrel (this ÷ Petrel).
	RatioPagesPerSec float64  `json:"ratio_pages_per_s,omitempty"`
	RatioCPUPer1000  float64  `json:"ratio_cpu_per_1000,omitempty"`
	RatioPeakRSS     float64  `json:"ratio_peak_rss,omitempty"`
	Series           []Sample `json:"series,omitempty"`
	Notes            []string `json:"notes,omitempty"`

	// A crawl of several agents (Options.Agents): the figures above are
	// the crawl's — pages, CPU, bytes and peak RSS summed over the agents,
	// the wall time from the first agent's exec to the last one's exit.
	Agents    int        `json:"agents,omitempty"`
	AgentRuns []AgentRun `json:"agent_runs,omitempty"`
	// Exchange sums the agents' "Cluster…" counters of stats.json.
	Exchange map[string]int64 `json:"exchange,omitempty"`
	// URLsExchangedPerPage is the URLs one agent sent another (to the
	// owner of their key, then, once new, to the owner of their address,
	// and any forwarded), counted once at the sender, per page fetched.
	URLsExchangedPerPage float64 `json:"urls_exchanged_per_page,omitempty"`

	mallocs, allocBytes int64     // summed RuntimeMallocs and RuntimeTotalAlloc
	began, ended        time.Time // the run's span, to find its requests in the web's log
}

// AgentRun is one agent's part of a crawl of several agents.
type AgentRun struct {
	Name         string  `json:"name"`
	Pages        int64   `json:"pages"`
	ElapsedS     float64 `json:"elapsed_s"`
	CPUSeconds   float64 `json:"cpu_s"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	Error        string  `json:"error,omitempty"`
}

// Sample is one point of a crawler's progress: its page count T seconds
// after it started.
type Sample struct {
	T     float64 `json:"t"`
	Pages int64   `json:"pages"`
}

// Limit is the synthetic web's own maximum rate, measured with wrk.
type Limit struct {
	PagesPerSec  float64  `json:"pages_per_s"`             // sum over the wrk processes
	PerAddress   []string `json:"per_address"`             // "address: rate" per wrk process
	Non2xx       int64    `json:"non_2xx_3xx"`             // responses other than 2xx/3xx seen by wrk
	How          string   `json:"how"`                     // how the pages and addresses were chosen
	PetrelShare  float64  `json:"petrel_fraction"`         // Petrel's pages/s ÷ PagesPerSec
	DurationS    float64  `json:"duration_s"`              // duration of each wrk run
	Connections  int      `json:"connections_per_address"` // wrk -c
	Commands     []string `json:"commands"`                // the wrk command lines
	WebCPUSecond float64  `json:"web_cpu_s"`               // CPU the web used during the measurement
}

// finish computes the derived figures of r.
func (r *RunResult) finish() {
	if r.ElapsedS > 0 {
		r.PagesPerSec = float64(r.Pages) / r.ElapsedS
	}
	if r.Pages > 0 {
		r.CPUPer1000 = r.CPUSeconds / float64(r.Pages) * 1000
	}
}

// ratios fills every peer's ratios to Petrel and the limit's fraction.
func (rep *Report) ratios() {
	var p *RunResult
	for i := range rep.Runs {
		if rep.Runs[i].Crawler == PeerPetrel && rep.Runs[i].Skipped == "" {
			p = &rep.Runs[i]
		}
	}
	if p == nil {
		return
	}
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if r.Skipped != "" {
			continue
		}
		r.RatioPagesPerSec = div(r.PagesPerSec, p.PagesPerSec)
		r.RatioCPUPer1000 = div(r.CPUPer1000, p.CPUPer1000)
		r.RatioPeakRSS = div(float64(r.PeakRSSBytes), float64(p.PeakRSSBytes))
	}
	if rep.Limit != nil {
		rep.Limit.PetrelShare = div(p.PagesPerSec, rep.Limit.PagesPerSec)
	}
}

// WriteTable writes the report as an aligned text table.
func (rep *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "crawl benchmark (%s), %s; %d CPUs, %.1f GiB, %s\n", rep.Mode, rep.Date,
		rep.Machine.NumCPU, float64(rep.Machine.MemBytes)/(1<<30), rep.Machine.GoVersion)
	pages := fmt.Sprintf("%d links/page, %d-byte pages", rep.Web.LinksPerPage, rep.Web.PageBytes)
	if rep.Web.Shape != "" {
		pages = "links and page sizes of the " + rep.Web.Shape + " shape"
	}
	fmt.Fprintf(w, "web: %d hosts on %d addresses, %d pages/host, %s; host delay %s, IP delay %s; time bound %s; max URLs %d\n",
		rep.Web.Hosts, rep.Web.Addresses, rep.Web.PagesPerHost, pages,
		rep.HostDelay, rep.IPDelay, rep.TimeBound, rep.MaxURLs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "crawler\tpages\tchecked\ts\tpages/s\tCPU s/1k pages\tpeak RSS MiB\tallocs/page\twritten MiB\tweb CPU s\t×P pages/s\t×P CPU/1k\t×P RSS\teff.\tviolations host/IP\t")
	for _, r := range rep.Runs {
		if r.Skipped != "" {
			fmt.Fprintf(tw, "%s\tskipped: %s\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n", r.Crawler, r.Skipped)
			continue
		}
		checked := "-"
		if r.PagesChecked >= 0 {
			checked = strconv.FormatInt(r.PagesChecked, 10)
		}
		eff := "-"
		if r.Efficiency > 0 {
			eff = fmt.Sprintf("%.3f", r.Efficiency)
		}
		allocs := "-"
		if r.AllocsPerPage > 0 {
			allocs = fmt.Sprintf("%.0f", r.AllocsPerPage)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%.1f\t%.3f\t%.0f\t%s\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%s\t%s\t\n",
			r.Crawler, r.Pages, checked, r.ElapsedS, r.PagesPerSec, r.CPUPer1000,
			float64(r.PeakRSSBytes)/(1<<20), allocs, float64(r.BytesWritten)/(1<<20), r.WebCPUSeconds,
			r.RatioPagesPerSec, r.RatioCPUPer1000, r.RatioPeakRSS, eff, r.Politeness)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("benchcrawl: table: %w", err)
	}
	if len(rep.Repeats) > 0 {
		fmt.Fprintln(w, "each crawler's median run by pages/s; every run (pages/s, CPU s/1k pages), in the order they ran:")
		for _, r := range rep.Runs {
			var runs []string
			for _, x := range rep.Repeats {
				if x.Crawler == r.Crawler && x.Skipped == "" {
					runs = append(runs, fmt.Sprintf("%.1f/%.3f", x.PagesPerSec, x.CPUPer1000))
				}
			}
			fmt.Fprintf(w, "  %s: %s\n", r.Crawler, strings.Join(runs, ", "))
		}
	}
	if a := rep.Agents; a != nil {
		rep.writeAgents(w, a)
	}
	if s := rep.Ops; s != nil {
		writeOps(w, s)
	}
	if rep.Limit != nil {
		fmt.Fprintf(w, "limit (wrk): %.0f pages/s; Petrel reaches %.1f%% of it\n", rep.Limit.PagesPerSec, 100*rep.Limit.PetrelShare)
	}
	if rep.AllowedRate > 0 {
		fmt.Fprintf(w, "allowed by the delays: %.1f pages/s (%s)\n", rep.AllowedRate, rep.AllowedRateHow)
	}
	for _, r := range rep.Runs {
		for _, n := range r.Notes {
			fmt.Fprintf(w, "note (%s): %s\n", r.Crawler, n)
		}
		if r.Error != "" {
			fmt.Fprintf(w, "error (%s): %s\n", r.Crawler, r.Error)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// writeAgents writes the comparison of a crawl of several agents with
// the single agent.
func (rep *Report) writeAgents(w io.Writer, a *AgentsSummary) {
	fmt.Fprintf(w, "%d agents against one, medians of %d rounds each (web: %.1f %% of its links cross hosts):\n",
		a.Agents, a.Rounds, 100*a.CrossHostLinkShare)
	fmt.Fprintf(w, "  pages/s: %.1f (one agent) and %.1f (%d agents)\n", a.SinglePagesPerSec, a.AgentsPagesPerSec, a.Agents)
	met := "met"
	if a.Overhead > a.OverheadTarget {
		met = "NOT met"
	}
	fmt.Fprintf(w, "  CPU s per 1,000 pages: %.3f and %.3f: overhead %.3f (target ≤ %.2f: %s; median of the rounds' own ratios %.3f)\n",
		a.SingleCPUPer1000, a.AgentsCPUPer1000, a.Overhead, a.OverheadTarget, met, a.Paired)
	fmt.Fprintf(w, "  URLs exchanged per page: %.2f\n", a.URLsExchangedPerPage)
	for _, r := range rep.Runs {
		for _, ar := range r.AgentRuns {
			fmt.Fprintf(w, "  %s (median run): %d pages, %.1f s, %.2f CPU s, peak RSS %.0f MiB\n",
				ar.Name, ar.Pages, ar.ElapsedS, ar.CPUSeconds, float64(ar.PeakRSSBytes)/(1<<20))
		}
		if len(r.Exchange) > 0 {
			keys := make([]string, 0, len(r.Exchange))
			for k := range r.Exchange {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s %d", k, r.Exchange[k]))
			}
			fmt.Fprintf(w, "  exchange (median run, summed over the agents): %s\n", strings.Join(parts, ", "))
		}
	}
}

// WriteJSON writes the report as one indented JSON object.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("benchcrawl: json: %w", err)
	}
	return nil
}

// machine describes this machine.
func machine() Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				m.MemBytes = kb * 1024
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// steadyRate is the page rate of s over its samples taken no later than
// cutoff seconds (cutoff <= 0: all) after the first quarter of that span:
// (pages at the last such sample − pages at the first sample past a
// quarter) ÷ the time between them. It returns 0 if there are too few
// samples.
func steadyRate(s []Sample, cutoff float64) float64 {
	if cutoff > 0 {
		k := len(s)
		for k > 0 && s[k-1].T > cutoff {
			k--
		}
		s = s[:k]
	}
	if len(s) < 3 {
		return 0
	}
	end := s[len(s)-1]
	var from *Sample
	for i := range s {
		if s[i].T >= end.T/4 {
			from = &s[i]
			break
		}
	}
	if from == nil || end.T <= from.T {
		return 0
	}
	return float64(end.Pages-from.Pages) / (end.T - from.T)
}
