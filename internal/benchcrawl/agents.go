package benchcrawl

import (
	"context"
	"fmt"
	"github.com/petrel-crawler/petrel/internal/coord"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The crawl of several agents (Options.Agents): N "petrel crawl" processes
// of one crawl on this machine, each on its own loopback address
// (AgentFirstIP and the next ones, membership port 7946, exchange 7947),
// with one cluster key, --cluster-wait N, the same seeds and each its own
// directory. Each is bounded to MaxURLs/N pages (--max-urls is per agent),
// so that the crawl fetches as many pages as the single agent it is
// compared with; the crawl ends by itself (termination detection) once
// every agent is at its bound or out of work. The agents share the
// machine's cores out (GOMAXPROCS = AgentProcs each, by default
// max(1, cores ÷ N)): N Go runtimes each sized for every core preempt one
// another's threads on the shared cores, a cost that agents on machines
// of their own do not pay.

// agentsName is the crawler name of a crawl of n agents in reports.
func agentsName(n int) string { return "petrel×" + strconv.Itoa(n) }

// agentPort is every agent's membership port; the exchange is on the next.
const agentPort = 7946

// perAgent is each agent's page bound: the crawl's bound shared out,
// rounded up (0: none).
func perAgent(maxURLs int64, n int) int64 {
	if maxURLs <= 0 {
		return 0
	}
	return (maxURLs + int64(n) - 1) / int64(n)
}

// agentBinds returns the membership addresses of n agents from first.
func agentBinds(first netip.Addr, n int) []string {
	out := make([]string, n)
	a := first
	for i := range out {
		out[i] = netip.AddrPortFrom(a, agentPort).String()
		a = a.Next()
	}
	return out
}

// runAgents crawls the web with o.Agents agents of one crawl.
func runAgents(ctx context.Context, o Options, web *webProc, dir string) RunResult {
	n := o.Agents
	res := RunResult{Crawler: agentsName(n), Agents: n, PagesChecked: -1}
	names, specs, err := agentSpecs(ctx, o, web, dir, &res)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	prs := make([]procResult, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prs[i] = runMeasured(ctx, specs[i])
		}()
	}
	wg.Wait()
	res.ElapsedS = time.Since(start).Seconds()
	res.collectAgents(dir, names, prs)
	if s, r := res.Exchange["ClusterSent"]+res.Exchange["ClusterForwarded"]+res.Exchange["ClusterReadySent"], res.Exchange["ClusterReceived"]+res.Exchange["ClusterReadyReceived"]; s != r {
		res.Notes = append(res.Notes, fmt.Sprintf("the agents sent %d URLs and received %d", s, r))
	}
	procs := "Go's default GOMAXPROCS"
	if o.AgentProcs > 0 {
		procs = "GOMAXPROCS=" + strconv.Itoa(o.AgentProcs)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d agents from %s, --max-urls %d each, the crawl's etcd embedded in agent1, %s each; CPU, pages, bytes and peak RSS summed over the agents (etcd's included); wall time from the first exec to the last exit",
		n, o.AgentFirstIP, perAgent(o.MaxURLs, n), procs))
	if !o.SkipVerifyWARC {
		var warcs []string
		for _, name := range names {
			warcs = append(warcs, filepath.Join(dir, name, "warc"))
		}
		res.checkWARC(warcs...)
	}
	return res
}

// agentSpecs makes the crawl's key in dir and returns the agents' names
// and measured processes; res gets the first agent's command.
func agentSpecs(ctx context.Context, o Options, web *webProc, dir string, res *RunResult) ([]string, []procSpec, error) {
	n := o.Agents
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	key := filepath.Join(dir, "cluster.key")
	if out, err := exec.CommandContext(ctx, o.Petrel, "cluster", "keygen", key).CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("cluster keygen: %v: %s", err, strings.TrimSpace(string(out)))
	}
	binds := agentBinds(o.AgentFirstIP, n)
	names := make([]string, n)
	specs := make([]procSpec, n)
	for i := range n {
		names[i] = "agent" + strconv.Itoa(i+1)
		args := append(petrelArgs(o, web, filepath.Join(dir, names[i]), perAgent(o.MaxURLs, n), filepath.Base(dir)+"-"+names[i]),
			"--agent", names[i], "--cluster-bind", binds[i], "--coordinators", coord.AgentCoordinator(names[0], netip.MustParseAddrPort(binds[0])).String(),
			"--cluster-key-file", key, "--cluster-wait", strconv.Itoa(n), "--cluster-name", "bench")
		if o.ClusterBatchDelay > 0 {
			args = append(args, "--cluster-batch-delay", o.ClusterBatchDelay.String())
		}
		if i == 0 {
			res.Command = o.Petrel + " " + strings.Join(args, " ") + fmt.Sprintf("  (and %d more agents alike)", n-1)
		}
		specs[i] = petrelSpec(o, args, new(atomic.Int64))
		if o.AgentProcs > 0 {
			specs[i].env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(o.AgentProcs))
		}
	}
	return names, specs, nil
}

// collectAgents adds the agents' measured processes and their
// stats.json figures to r.
func (r *RunResult) collectAgents(dir string, names []string, prs []procResult) {
	for i, pr := range prs {
		ar := AgentRun{Name: names[i], ElapsedS: pr.wall.Seconds(), CPUSeconds: pr.cpu.Seconds(), PeakRSSBytes: pr.maxRSS}
		r.CPUSeconds += ar.CPUSeconds
		r.PeakRSSBytes += pr.maxRSS
		r.StoppedAtBound = r.StoppedAtBound || pr.stopped
		if pr.err != nil {
			ar.Error = pr.err.Error()
			r.Error = joinErr(r.Error, names[i]+": "+ar.Error)
		}
		st, err := readStats(filepath.Join(dir, names[i], "state", "stats.json"))
		if err != nil {
			r.Error = joinErr(r.Error, names[i]+": "+err.Error())
			ar.Pages = pr.pages
			r.Pages += pr.pages
		} else {
			ar.Pages = st["Fetched"]
			r.fromStats(st)
			r.addExchange(st)
		}
		r.AgentRuns = append(r.AgentRuns, ar)
	}
	r.Series = sumSeries(prs)
	r.BytesWritten = dirBytes(dir)
	r.URLsExchangedPerPage = exchangedPerPage(r.Exchange, r.Pages)
}

// addExchange adds an agent's exchange counters (stats.json's keys that
// start with "Cluster").
func (r *RunResult) addExchange(st map[string]int64) {
	if r.Exchange == nil {
		r.Exchange = map[string]int64{}
	}
	for k, v := range st {
		if strings.HasPrefix(k, "Cluster") {
			r.Exchange[k] += v
		}
	}
}

// exchangedPerPage is the URLs sent from one agent to another — to the
// owner of their key (ClusterSent), to the owner of their address
// (ClusterReadySent) and forwarded to a new owner (any counter ending in
// "Forwarded") — per page.
func exchangedPerPage(ex map[string]int64, pages int64) float64 {
	if pages <= 0 {
		return 0
	}
	sent := ex["ClusterSent"] + ex["ClusterReadySent"]
	for k, v := range ex {
		if strings.HasSuffix(k, "Forwarded") {
			sent += v
		}
	}
	return float64(sent) / float64(pages)
}

// sumSeries adds the agents' page series sample by sample (the agents
// start together and sample at the same interval); the last point is the
// crawl's total at the last agent's exit.
func sumSeries(prs []procResult) []Sample {
	longest := 0
	for _, pr := range prs {
		longest = max(longest, len(pr.series))
	}
	out := make([]Sample, longest)
	for k := range out {
		for _, pr := range prs {
			if len(pr.series) == 0 {
				continue
			}
			s := pr.series[min(k, len(pr.series)-1)]
			if k < len(pr.series) {
				out[k].T = max(out[k].T, s.T)
			}
			out[k].Pages += s.Pages
		}
	}
	return out
}

// AgentsSummary compares the crawl of several agents with the single
// agent, each side's medians taken over its runs independently.
type AgentsSummary struct {
	Agents int `json:"agents"`
	// CrossHostLinkShare is the share of the web's links that point to
	// another host (the web's own count).
	CrossHostLinkShare float64 `json:"cross_host_link_share"`
	// Medians over the runs of each side.
	SinglePagesPerSec    float64 `json:"single_pages_per_s"`
	AgentsPagesPerSec    float64 `json:"agents_pages_per_s"`
	SingleCPUPer1000     float64 `json:"single_cpu_s_per_1000_pages"`
	AgentsCPUPer1000     float64 `json:"agents_cpu_s_per_1000_pages"`
	URLsExchangedPerPage float64 `json:"urls_exchanged_per_page"`
	// Overhead is AgentsCPUPer1000 ÷ SingleCPUPer1000; the target is
	// OverheadTarget or less.
	Overhead       float64 `json:"cpu_per_page_overhead"`
	OverheadTarget float64 `json:"cpu_per_page_overhead_target"`
	// Paired is the median over rounds of each round's agents ÷ single
	// CPU per page (the runs of a round ran next to each other).
	Paired float64 `json:"cpu_per_page_overhead_paired"`
	Rounds int     `json:"rounds"`
}

// overheadTarget is the cluster's CPU per page against one agent's.
const overheadTarget = 1.10

// summarizeAgents computes the summary from every run in order.
func summarizeAgents(all []RunResult, n int, share float64) *AgentsSummary {
	s := &AgentsSummary{Agents: n, CrossHostLinkShare: share, OverheadTarget: overheadTarget}
	var single, multi []RunResult
	for _, r := range all {
		if r.Skipped != "" || r.Pages == 0 {
			continue
		}
		switch r.Crawler {
		case PeerPetrel:
			single = append(single, r)
		case agentsName(n):
			multi = append(multi, r)
		}
	}
	if len(single) == 0 || len(multi) == 0 {
		return s
	}
	med := func(rs []RunResult, f func(RunResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		return median(v)
	}
	pps := func(r RunResult) float64 { return r.PagesPerSec }
	cpu := func(r RunResult) float64 { return r.CPUPer1000 }
	s.SinglePagesPerSec, s.AgentsPagesPerSec = med(single, pps), med(multi, pps)
	s.SingleCPUPer1000, s.AgentsCPUPer1000 = med(single, cpu), med(multi, cpu)
	s.URLsExchangedPerPage = med(multi, func(r RunResult) float64 { return r.URLsExchangedPerPage })
	if s.SingleCPUPer1000 > 0 {
		s.Overhead = s.AgentsCPUPer1000 / s.SingleCPUPer1000
	}
	var pairs []float64
	for i := range min(len(single), len(multi)) {
		if single[i].CPUPer1000 > 0 {
			pairs = append(pairs, multi[i].CPUPer1000/single[i].CPUPer1000)
		}
	}
	s.Paired, s.Rounds = median(pairs), len(pairs)
	return s
}

// median is the middle value of v (the mean of the two middle ones for an
// even count; 0 for none).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
