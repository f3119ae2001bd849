package benchcrawl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The operations' overhead (Options.Ops): every round runs Petrel twice,
// side by side on the same web — "petrel" with the operations off
// (--crawl-log=false and no console, so no crawl.log, no skipped.jsonl,
// no histograms, no console tally), then "petrel+ops" with them on: the
// console on a loopback port and a poller in this process that asks what
// an open console page asks (the status with its history and the top
// hosts every pollEvery, the crawl log followed as server-sent events).
// The summary compares the two sides' medians of CPU per page and pages/s
// with the target (opsTarget).

// opsName is the crawler name of the run with the operations on.
const opsName = "petrel+ops"

// pollEvery is how often an open console page refreshes its status.
const pollEvery = 2 * time.Second

// opsTarget is the operations' CPU per page against none.
const opsTarget = 1.03

// consoleLine is the line a crawl prints when its console listens.
var consoleLine = regexp.MustCompile(`console at (http://[^/ ]+)/`)

// runOps crawls the web with the console on and polled.
func runOps(ctx context.Context, o Options, web *webProc, dir string) RunResult {
	res := RunResult{Crawler: opsName, PagesChecked: -1}
	_ = os.RemoveAll(dir)
	args := append(petrelArgs(o, web, dir, o.MaxURLs, filepath.Base(dir)), "--console-addr", "127.0.0.1:0")
	res.Command = o.Petrel + " " + strings.Join(args, " ") + "  (the console polled as an open page polls it)"
	var elapsed atomic.Int64
	spec := petrelSpec(o, args, &elapsed)
	pollCtx, stopPoll := context.WithCancel(ctx)
	p := &poller{dir: dir}
	var once sync.Once
	onLine := spec.onLine
	spec.onLine = func(l string, pages *atomic.Int64) {
		if m := consoleLine.FindStringSubmatch(l); m != nil {
			once.Do(func() { p.start(pollCtx, m[1]) })
		}
		onLine(l, pages)
	}
	pr := runMeasured(ctx, spec)
	stopPoll()
	p.wait()
	res.petrelDone(o, pr, dir, time.Duration(elapsed.Load()))
	res.Notes = append(res.Notes, p.summary())
	return res
}

// poller is an open console page, as far as the crawl can tell: the
// status with its history and the top hosts every pollEvery, the crawl
// log followed as server-sent events.
type poller struct {
	dir                  string
	wg                   sync.WaitGroup
	polls, errs, sseByte atomic.Int64
	firstErr             atomic.Pointer[string]
}

func (p *poller) start(ctx context.Context, base string) {
	c := &http.Client{Timeout: 10 * time.Second}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		for {
			for _, path := range []string{"/api/v1/status?history=1", "/api/v1/hosts?sort=queued&limit=8"} {
				if !p.get(ctx, c, base+path) {
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	go func() {
		defer p.wg.Done()
		p.follow(ctx, base)
	}()
}

func (p *poller) wait() { p.wg.Wait() }

func (p *poller) fail(err error) {
	p.errs.Add(1)
	s := err.Error()
	p.firstErr.CompareAndSwap(nil, &s)
}

// get asks url once; false when the console is gone (it refuses
// connections after answering before: the crawl has ended).
func (p *poller) get(ctx context.Context, c *http.Client, url string) bool {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := c.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) && p.polls.Load() > 0 {
			return false
		}
		if ctx.Err() == nil {
			p.fail(err)
		}
		return ctx.Err() == nil
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		p.fail(fmt.Errorf("GET %s: %s", url, resp.Status))
	} else {
		p.polls.Add(1)
	}
	return true
}

// follow reads the crawl log's event stream until ctx ends, with the
// token from the crawl's directory (as the page holds it).
func (p *poller) follow(ctx context.Context, base string) {
	var tok []byte
	for tok == nil && ctx.Err() == nil {
		b, err := os.ReadFile(filepath.Join(p.dir, "state", "console.token"))
		if err == nil && len(strings.TrimSpace(string(b))) > 0 {
			tok = b
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/log?follow=1&tail=200", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			p.fail(err)
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		p.fail(fmt.Errorf("GET /api/v1/log?follow=1: %s", resp.Status))
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p.sseByte.Add(int64(len(sc.Bytes()) + 1))
	}
}

// summary says what the poller did, for the run's notes.
func (p *poller) summary() string {
	s := fmt.Sprintf("console polled: %d answers to status and hosts calls every %s, %d bytes of the crawl log's event stream", p.polls.Load(), pollEvery, p.sseByte.Load())
	if n := p.errs.Load(); n > 0 {
		s += fmt.Sprintf("; %d poll errors, the first: %s", n, *p.firstErr.Load())
	}
	return s
}

// OpsSummary compares the runs with the operations on and off, each
// side's medians taken over its runs.
type OpsSummary struct {
	OffPagesPerSec float64 `json:"off_pages_per_s"`
	OnPagesPerSec  float64 `json:"on_pages_per_s"`
	OffCPUPer1000  float64 `json:"off_cpu_s_per_1000_pages"`
	OnCPUPer1000   float64 `json:"on_cpu_s_per_1000_pages"`
	// Overhead is OnCPUPer1000 ÷ OffCPUPer1000; the target is Target or
	// less. Paired is the median over rounds of each round's own ratio.
	Overhead float64 `json:"cpu_per_page_overhead"`
	Target   float64 `json:"cpu_per_page_overhead_target"`
	Paired   float64 `json:"cpu_per_page_overhead_paired"`
	// RatePaired is the median over rounds of on ÷ off pages/s.
	RatePaired float64 `json:"pages_per_s_ratio_paired"`
	Rounds     int     `json:"rounds"`
}

// summarizeOps computes the summary from every run in order.
func summarizeOps(all []RunResult) *OpsSummary { return summarizePair(all, opsName, opsTarget) }

// summarizePair compares, from every run in order, the runs of crawler
// on with the plain Petrel runs beside them, against target.
func summarizePair(all []RunResult, on string, target float64) *OpsSummary {
	s := &OpsSummary{Target: target}
	side := map[string][]RunResult{}
	for _, r := range all {
		if r.Skipped == "" && r.Pages > 0 && (r.Crawler == PeerPetrel || r.Crawler == on) {
			side[r.Crawler] = append(side[r.Crawler], r)
		}
	}
	off, onRuns := side[PeerPetrel], side[on]
	return s.fill(off, onRuns)
}

// fill computes s's medians and ratios from the runs off and on.
func (s *OpsSummary) fill(off, on []RunResult) *OpsSummary {
	if len(off) == 0 || len(on) == 0 {
		return s
	}
	of := func(rs []RunResult, f func(RunResult) float64) []float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		return v
	}
	pps := func(r RunResult) float64 { return r.PagesPerSec }
	cpu := func(r RunResult) float64 { return r.CPUPer1000 }
	s.OffPagesPerSec, s.OnPagesPerSec = median(of(off, pps)), median(of(on, pps))
	s.OffCPUPer1000, s.OnCPUPer1000 = median(of(off, cpu)), median(of(on, cpu))
	if s.OffCPUPer1000 > 0 {
		s.Overhead = s.OnCPUPer1000 / s.OffCPUPer1000
	}
	var cpuRatios, rateRatios []float64
	for i := range min(len(off), len(on)) {
		if off[i].CPUPer1000 > 0 && off[i].PagesPerSec > 0 {
			cpuRatios = append(cpuRatios, on[i].CPUPer1000/off[i].CPUPer1000)
			rateRatios = append(rateRatios, on[i].PagesPerSec/off[i].PagesPerSec)
		}
	}
	s.Paired, s.RatePaired, s.Rounds = median(cpuRatios), median(rateRatios), len(cpuRatios)
	return s
}

// writeOps writes the comparison of what (e.g. "operations (console
// polled, metrics, crawl log)") on and off.
func writeOps(w io.Writer, what string, s *OpsSummary) {
	met := "met"
	if s.Overhead > s.Target {
		met = "NOT met"
	}
	fmt.Fprintf(w, "%s on against off, medians of %d rounds each:\n", what, s.Rounds)
	fmt.Fprintf(w, "  pages/s: %.1f (off) and %.1f (on); median of the rounds' own ratios %.3f\n", s.OffPagesPerSec, s.OnPagesPerSec, s.RatePaired)
	fmt.Fprintf(w, "  CPU s per 1,000 pages: %.3f (off) and %.3f (on): overhead %.3f (target ≤ %.2f: %s; median of the rounds' own ratios %.3f)\n",
		s.OffCPUPer1000, s.OnCPUPer1000, s.Overhead, s.Target, met, s.Paired)
}
