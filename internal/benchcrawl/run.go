package benchcrawl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Run runs the crawl benchmark described by opts: it starts "petrel
// testweb" as a separate process, runs each selected crawler against it as a
// separate process with the same politeness settings, measures the web's own
// limit with wrk, and writes the report as JSON to jsonOut and as a table to
// tableOut (either may be nil). With opts.Plot set it also writes the SVG
// plot. A peer whose tool is missing is skipped with a note; Run fails only
// when the web cannot start or Petrel cannot run.
func Run(ctx context.Context, opts Options, jsonOut, tableOut io.Writer) error {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	rep, err := run(ctx, o)
	if err != nil {
		return err
	}
	return WriteReport(rep, jsonOut, tableOut, o.Plot, func(path string) error { return writePlotFile(path, rep) })
}

// workDir makes the benchmark's work directory: o.WorkDir, or a temporary
// one that cleanup removes unless o.Keep.
func workDir(o Options) (dir string, cleanup func(), err error) {
	if o.WorkDir != "" {
		if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
			return "", nil, fmt.Errorf("benchcrawl: work directory: %w", err)
		}
		return o.WorkDir, func() {}, nil
	}
	d, err := os.MkdirTemp("", "petrel-benchcrawl-")
	if err != nil {
		return "", nil, fmt.Errorf("benchcrawl: work directory: %w", err)
	}
	if o.Keep {
		return d, func() {}, nil
	}
	return d, func() { os.RemoveAll(d) }, nil
}

// run does the work of Run and returns the report.
func run(ctx context.Context, o Options) (*Report, error) {
	work, cleanup, err := workDir(o)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rep := &Report{
		Date:      time.Now().UTC().Format(time.RFC3339),
		Machine:   machine(),
		Mode:      "headline",
		HostDelay: o.HostDelay.String(),
		IPDelay:   o.IPDelay.String(),
		MaxURLs:   o.MaxURLs,
		TimeBound: o.TimeBound.String(),
	}
	if o.PolitenessBound {
		rep.Mode = "politeness-bound"
	}
	o.Log.Info("benchcrawl: starting the synthetic web", "hosts", o.Hosts, "per_ip", o.HostsPerIP, "pages", o.PagesPerHost, "dir", work)
	hitLog := filepath.Join(work, "web-requests.jsonl")
	web, err := startWeb(ctx, o, filepath.Join(work, "web"), hitLog)
	if err != nil {
		return nil, err
	}
	defer web.stop()
	rep.Web = webOf(o, web)
	if o.Shape != "" {
		rep.Mode = "shape " + o.Shape
	}

	if o.CPUProfileDir != "" {
		if err := os.MkdirAll(o.CPUProfileDir, 0o755); err != nil {
			return nil, fmt.Errorf("benchcrawl: profiles: %w", err)
		}
	}
	all, err := runRounds(ctx, o, web, work)
	if err != nil {
		return nil, err
	}
	web.stop() // writes its request log
	if err := judgePoliteness(all, hitLog, o.HostDelay, o.IPDelay); err != nil {
		rep.Notes = append(rep.Notes, "politeness not judged: "+err.Error())
	}
	rep.Runs = medianRuns(all)
	if o.Agents > 1 {
		rep.Agents = summarizeAgents(all, o.Agents, web.linkShare)
	}
	if o.Ops {
		rep.Ops = summarizeOps(all)
	}
	if o.Repeat > 1 {
		for _, r := range all {
			r.Series = nil
			rep.Repeats = append(rep.Repeats, r)
		}
	}
	if o.has(PeerLimit) {
		rep.limit(ctx, o, work)
	}
	if o.PolitenessBound {
		rep.efficiency(o, web)
	}
	rep.ratios()
	return rep, nil
}

// runner is one crawler of a sitting: its name and how to run it once.
type runner struct {
	peer string
	fn   func(context.Context, Options, *webProc, string) RunResult
}

// runners lists the crawlers of a sitting in the order each round runs
// them: Petrel first, then the agents and the operator's run when asked,
// then the peers.
func runners(o Options) []runner {
	rs := []runner{
		{PeerPetrel, runPetrel},
		{PeerColly, runColly},
		{PeerWget, runWget},
		{PeerScrapy, runScrapy},
		{PeerCrawlee, runCrawlee},
	}
	if o.Agents > 1 {
		rs = slices.Insert(rs, 1, runner{agentsName(o.Agents), runAgents})
	}
	if o.Ops {
		rs = slices.Insert(rs, 1, runner{opsName, runOps})
	}
	return rs
}

// runRounds runs o.Repeat rounds of the crawlers asked for on web, each
// in its own directory under work, and returns every run in order; a
// Petrel run that failed without a page ends the sitting with its error.
func runRounds(ctx context.Context, o Options, web *webProc, work string) ([]RunResult, error) {
	var all []RunResult
	for round := range o.Repeat {
		for _, r := range runners(o) {
			if !o.has(r.peer) && r.peer != agentsName(o.Agents) && r.peer != opsName {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("benchcrawl: %w", err)
			}
			dir := filepath.Join(work, r.peer)
			if o.Repeat > 1 {
				dir = fmt.Sprintf("%s-%d", dir, round+1)
			}
			o.Log.Info("benchcrawl: crawling", "crawler", r.peer, "round", round+1, "bound", o.TimeBound)
			before, _ := procCPU(web.pid)
			began := time.Now()
			res := r.fn(ctx, o, web, dir)
			res.began, res.ended = began, time.Now()
			after, _ := procCPU(web.pid)
			res.WebCPUSeconds = (after - before).Seconds()
			res.finish()
			if (r.peer == PeerPetrel || res.Agents > 0) && res.Skipped == "" && res.Error != "" && res.Pages == 0 {
				return nil, fmt.Errorf("benchcrawl: petrel failed: %s", res.Error)
			}
			o.Log.Info("benchcrawl: done", "crawler", r.peer, "pages", res.Pages, "pages_per_s", res.PagesPerSec, "cpu_s", res.CPUSeconds, "skipped", res.Skipped)
			all = append(all, res)
		}
	}
	return all, nil
}

// limit measures the web's limit with wrk into rep, on a web started
// afresh without a request log (not on the real shape, whose HTTPS hosts
// wrk cannot reach).
func (rep *Report) limit(ctx context.Context, o Options, work string) {
	if o.Shape != "" {
		rep.Notes = append(rep.Notes, "limit not measured: wrk's Host header cannot reach the real shape's HTTPS hosts (SNI)")
		return
	}
	web, err := startWeb(ctx, o, filepath.Join(work, "web-limit"), "")
	if err != nil {
		rep.Notes = append(rep.Notes, "limit not measured: "+err.Error())
		return
	}
	defer web.stop()
	o.Log.Info("benchcrawl: measuring the web's limit with wrk")
	before, _ := procCPU(web.pid)
	lim, err := measureLimit(ctx, o, web, filepath.Join(work, "wrk"))
	if err != nil {
		rep.Notes = append(rep.Notes, "limit not measured: "+err.Error())
		return
	}
	after, _ := procCPU(web.pid)
	lim.WebCPUSecond = (after - before).Seconds()
	rep.Limit = lim
}

// efficiency sets, for the politeness-bound shape, the rate the delays
// allow on web and each run's efficiency against it.
func (rep *Report) efficiency(o Options, web *webProc) {
	rep.AllowedRate = allowedRate(web.hosts, o.HostDelay, o.IPDelay)
	rep.AllowedRateHow = fmt.Sprintf("sum over the %d addresses of min(1/ip-delay, hosts on the address/host-delay), response times neglected", len(web.hosts.addrs))
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if r.Skipped != "" || rep.AllowedRate <= 0 {
			continue
		}
		cut := o.TimeBound.Seconds()
		if !r.StoppedAtBound {
			cut = 0
		}
		r.Efficiency = steadyRate(r.Series, cut) / rep.AllowedRate
		if r.Crawler == PeerPetrel && r.ElapsedS > 0 {
			r.EfficiencyWhole = float64(r.Pages+r.Robots) / r.ElapsedS / rep.AllowedRate
		}
	}
}

// medianRuns returns, for each crawler in the order of its first run, its
// run of median pages/s (the lower of the two middle ones for an even
// count); a skipped run counts only when every run of its crawler was.
func medianRuns(all []RunResult) []RunResult {
	var order []string
	by := map[string][]RunResult{}
	for _, r := range all {
		if _, ok := by[r.Crawler]; !ok {
			order = append(order, r.Crawler)
		}
		by[r.Crawler] = append(by[r.Crawler], r)
	}
	out := make([]RunResult, 0, len(order))
	for _, c := range order {
		runs := by[c]
		ran := slices.DeleteFunc(slices.Clone(runs), func(r RunResult) bool { return r.Skipped != "" })
		if len(ran) == 0 {
			out = append(out, runs[0])
			continue
		}
		slices.SortStableFunc(ran, func(a, b RunResult) int { return cmp.Compare(a.PagesPerSec, b.PagesPerSec) })
		out = append(out, ran[(len(ran)-1)/2])
	}
	return out
}

// webProc is the running synthetic web.
type webProc struct {
	cmd                  *exec.Cmd
	pid                  int
	dir                  string
	hostsPath, seedsPath string
	caPath               string // the web's certificate authority (real shape), or ""
	hosts                *hostsFile
	seeds                []string
	linkShare            float64 // cross-host share of the links, from the web's first line
	done                 chan struct{}
}

// startWeb runs "petrel testweb" and waits until it has written its files;
// with hitLog set, the web writes its request log there once stopped.
func startWeb(ctx context.Context, o Options, dir, hitLog string) (*webProc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("benchcrawl: web: %w", err)
	}
	args := webArgs(o, dir)
	if hitLog != "" {
		args = append(args, "--hit-log", hitLog)
	}
	cmd := exec.Command(o.Petrel, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	ready := make(chan struct{})
	var once atomic.Bool
	var share atomic.Uint64
	lw := &lineWriter{fn: func(l string) {
		if strings.HasPrefix(l, "testweb:") && once.CompareAndSwap(false, true) {
			if v, ok := parseLinkShare(l); ok {
				share.Store(math.Float64bits(v))
			}
			close(ready)
		}
	}}
	cmd.Stderr, cmd.Stdout = lw, lw
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("benchcrawl: start web: %w", err)
	}
	w := &webProc{cmd: cmd, pid: cmd.Process.Pid, dir: dir, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(w.done) }()
	t := time.NewTimer(o.WebStartTimeout)
	defer t.Stop()
	select {
	case <-ready:
	case <-w.done:
		return nil, fmt.Errorf("benchcrawl: web exited at start: %s", strings.Join(lastN(lw.lines(), 5), " | "))
	case <-t.C:
		w.stop()
		return nil, fmt.Errorf("benchcrawl: web did not start within %s (--web-start-timeout)", o.WebStartTimeout)
	case <-ctx.Done():
		w.stop()
		return nil, fmt.Errorf("benchcrawl: start web: %w", ctx.Err())
	}
	w.linkShare = math.Float64frombits(share.Load())
	w.hostsPath, w.seedsPath = filepath.Join(dir, "hosts"), filepath.Join(dir, "seeds.txt")
	if o.Shape != "" {
		w.caPath = filepath.Join(dir, "ca.pem")
	}
	f, err := os.Open(w.hostsPath)
	if err != nil {
		w.stop()
		return nil, fmt.Errorf("benchcrawl: web: %w", err)
	}
	w.hosts, err = parseHosts(f)
	f.Close()
	if err == nil {
		w.seeds, err = readSeeds(w.seedsPath)
	}
	if err != nil {
		w.stop()
		return nil, err
	}
	return w, nil
}

// webOf describes the web o asked for and web serves.
func webOf(o Options, web *webProc) Web {
	if o.Shape != "" {
		return Web{Shape: o.Shape, Hosts: o.Hosts, Addresses: len(web.hosts.addrs),
			HostsPerIP: o.Hosts / max(1, len(web.hosts.addrs)), PagesPerHost: o.PagesPerHost}
	}
	return Web{Hosts: len(web.hosts.ipOf), Addresses: len(web.hosts.addrs), HostsPerIP: o.HostsPerIP,
		PagesPerHost: o.PagesPerHost, LinksPerPage: o.LinksPerPage, PageBytes: o.PageBytes, CrossHostLinkShare: web.linkShare}
}

// webArgs are the arguments of the "petrel testweb" serving o's web.
func webArgs(o Options, dir string) []string {
	if o.Shape != "" {
		port := max(o.Port, 0) // -1: an ephemeral port, as for the plain web
		return []string{"testweb", "--out", dir, "--shape", o.Shape,
			"--web-hosts", strconv.Itoa(o.Hosts), "--web-pages", strconv.Itoa(o.PagesPerHost),
			"--web-first-ip", o.FirstIP.String(), "--web-port", strconv.Itoa(port), "--web-dns", "off",
			"--web-seeds", strconv.Itoa(max(1, o.Hosts/20))}
	}
	return []string{"testweb", "--out", dir,
		"--web-hosts", strconv.Itoa(o.Hosts), "--web-hosts-per-ip", strconv.Itoa(o.HostsPerIP),
		"--web-pages", strconv.Itoa(o.PagesPerHost), "--web-links", strconv.Itoa(o.LinksPerPage),
		"--web-page-bytes", strconv.Itoa(o.PageBytes), "--web-first-ip", o.FirstIP.String(),
		"--web-port", strconv.Itoa(o.Port)}
}

// stop ends the web: SIGTERM to its process group, SIGKILL after 10s.
func (w *webProc) stop() {
	_ = syscall.Kill(-w.pid, syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-w.pid, syscall.SIGKILL)
		<-w.done
	}
}

// runPetrel crawls the web with "petrel crawl".
func runPetrel(ctx context.Context, o Options, web *webProc, dir string) RunResult {
	res := RunResult{Crawler: PeerPetrel, PagesChecked: -1}
	_ = os.RemoveAll(dir)
	args := petrelArgs(o, web, dir, o.MaxURLs, filepath.Base(dir))
	if o.Ops {
		args = append(args, "--crawl-log=false") // and no console: the operations off
	}
	res.Command = o.Petrel + " " + strings.Join(args, " ")
	var elapsed atomic.Int64
	pr := runMeasured(ctx, petrelSpec(o, args, &elapsed))
	res.petrelDone(o, pr, dir, time.Duration(elapsed.Load()))
	return res
}

// petrelDone fills in the figures of a Petrel crawl into dir once its
// process pr has ended (elapsed: the duration of its summary line).
func (res *RunResult) petrelDone(o Options, pr procResult, dir string, elapsed time.Duration) {
	res.fromProc(pr)
	if elapsed > 0 {
		res.SelfReportedS = elapsed.Seconds()
	} else {
		res.Notes = append(res.Notes, "no summary line")
	}
	st, err := readStats(filepath.Join(dir, "state", "stats.json"))
	if err != nil {
		res.Error = joinErr(res.Error, err.Error())
		res.Pages = pr.pages
		return
	}
	res.fromStats(st)
	res.BytesWritten = dirBytes(dir)
	res.Notes = append(res.Notes, fmt.Sprintf("WARC bytes %d (gzip per record), parsing on", st["WARCBytes"]))
	if !o.SkipVerifyWARC {
		res.checkWARC(filepath.Join(dir, "warc"))
	}
}

// petrelArgs are the arguments of one "petrel crawl" of the web into dir,
// bounded to maxURLs pages (0: none); name names its CPU profile.
func petrelArgs(o Options, web *webProc, dir string, maxURLs int64, name string) []string {
	args := []string{"crawl", "--dir", dir, "--hosts", web.hostsPath, "--seeds", web.seedsPath,
		"--allow-private", "--system-dns=false",
		"--host-delay", o.HostDelay.String(), "--ip-delay", o.IPDelay.String(),
		"--progress", o.Progress.String()}
	if maxURLs > 0 {
		args = append(args, "--max-urls", strconv.FormatInt(maxURLs, 10))
	}
	if web.caPath != "" {
		args = append(args, "--ca-file", web.caPath)
	}
	if o.CPUProfileDir != "" {
		args = append(args, "--cpuprofile", filepath.Join(o.CPUProfileDir, name+".pprof"))
	}
	return args
}

// petrelSpec is the measured process of a "petrel crawl" with args; the
// elapsed time of its summary line goes to elapsed.
func petrelSpec(o Options, args []string, elapsed *atomic.Int64) procSpec {
	return procSpec{
		name: o.Petrel, args: args, bound: o.TimeBound, every: o.Progress, stop: syscall.SIGINT,
		onLine: func(l string, pages *atomic.Int64) {
			if n, ok := parseProgress(l); ok {
				pages.Store(n)
			} else if d, ok := parseFinished(l); ok {
				elapsed.Store(int64(d))
			}
		},
	}
}

// fromStats adds the figures of a Petrel's state/stats.json.
func (r *RunResult) fromStats(st map[string]int64) {
	r.Pages += st["Fetched"]
	r.Robots += st["RobotsFetched"]
	r.BytesReceived += st["BytesReceived"]
	r.mallocs += st["RuntimeMallocs"]
	r.allocBytes += st["RuntimeTotalAlloc"]
	if r.Pages > 0 {
		r.AllocsPerPage = float64(r.mallocs) / float64(r.Pages)
		r.AllocBytesPerPage = float64(r.allocBytes) / float64(r.Pages)
	}
}

// checkWARC counts the page records of the WARC files in dir into
// PagesChecked (a count of -1 becomes the first directory's) and notes a
// count that differs from Pages once every directory is counted.
func (r *RunResult) checkWARC(dirs ...string) {
	var total int64
	for _, d := range dirs {
		n, err := countWARCPages(d)
		if err != nil {
			r.Notes = append(r.Notes, "WARC count: "+err.Error())
			return
		}
		total += n
	}
	r.PagesChecked = total
	if total != r.Pages {
		r.Notes = append(r.Notes, fmt.Sprintf("WARC holds %d page records, stats.json says %d pages", total, r.Pages))
	}
}

// fromProc copies the measured process figures.
func (r *RunResult) fromProc(pr procResult) {
	r.ElapsedS = pr.wall.Seconds()
	r.CPUSeconds = pr.cpu.Seconds()
	r.PeakRSSBytes = pr.maxRSS
	r.Series = pr.series
	r.StoppedAtBound = pr.stopped
	if pr.err != nil {
		r.Error = pr.err.Error()
	}
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// runColly crawls the web with the Colly crawler of bench/colly.
func runColly(ctx context.Context, o Options, web *webProc, dir string) RunResult {
	res := RunResult{Crawler: PeerColly, PagesChecked: -1}
	bin, err := collyBinary(ctx, o, dir)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	args := []string{"--hosts", web.hostsPath, "--seeds", web.seedsPath,
		"--host-delay", o.HostDelay.String(), "--ip-delay", o.IPDelay.String(),
		"--progress", o.Progress.String()}
	if o.MaxURLs > 0 {
		args = append(args, "--max-urls", strconv.FormatInt(o.MaxURLs, 10))
	}
	if web.caPath != "" {
		args = append(args, "--ca-file", web.caPath)
	}
	res.Command = bin + " " + strings.Join(args, " ")
	pr := runMeasured(ctx, procSpec{
		name: bin, args: args, bound: o.TimeBound, every: o.Progress, stop: syscall.SIGINT,
		onLine: progressLine,
	})
	res.fromPeer(pr)
	res.Notes = append(res.Notes, "Colly expresses the host delay (one LimitRule per host: Parallelism 1, Delay) but not the per-IP delay; stores nothing; robots.txt group matched by User-Agent prefix \"petrel-bench-colly\", i.e. the petrel group, so it may crawl the same pages as Petrel")
	return res
}

// collyBinary returns the Colly crawler, building it if needed.
func collyBinary(ctx context.Context, o Options, dir string) (string, error) {
	if o.Colly != "" {
		if _, err := os.Stat(o.Colly); err != nil {
			return "", fmt.Errorf("colly binary: %w", err)
		}
		return o.Colly, nil
	}
	src := o.CollySource
	if src == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("colly source: %w", err)
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "bench", "colly", "go.mod")); err == nil {
				src = filepath.Join(d, "bench", "colly")
				break
			}
			if filepath.Dir(d) == d {
				return "", errors.New("bench/colly not found above the working directory (set Options.Colly or CollySource)")
			}
		}
	}
	goCmd := o.Go
	if goCmd == "" {
		if p, err := exec.LookPath("go"); err == nil {
			goCmd = p
		} else if _, err := os.Stat("/usr/local/go/bin/go"); err == nil {
			goCmd = "/usr/local/go/bin/go"
		} else {
			return "", errors.New("no go command to build bench/colly")
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("colly build: %w", err)
	}
	bin := filepath.Join(dir, "colly-bench")
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(bctx, goCmd, "build", "-o", bin, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("colly build in %s: %w: %s", src, err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// runWget crawls the web with GNU wget -r in a private mount namespace
// whose /etc/hosts is the web's hosts file and whose name service consults
// files only.
func runWget(ctx context.Context, o Options, web *webProc, dir string) RunResult {
	res := RunResult{Crawler: PeerWget, PagesChecked: -1}
	wget := o.Wget
	if wget == "" {
		p, err := exec.LookPath("wget")
		if err != nil {
			res.Skipped = "wget not installed (apt-get install -y wget)"
			return res
		}
		wget = p
	}
	unshare, ns, ok := enterNamespace(ctx, web, dir, &res)
	if !ok {
		return res
	}
	seeds := filepath.Join(dir, "seeds.txt")
	if err := os.WriteFile(seeds, []byte(strings.Join(web.seeds, "\n")+"\n"), 0o644); err != nil {
		res.Error = err.Error()
		return res
	}
	out := filepath.Join(dir, "out")
	wargs := []string{wget, "--no-config", "-r", "-l", "inf", "-H", "--domains=test",
		"--wait=" + strconv.FormatFloat(o.HostDelay.Seconds(), 'f', -1, 64),
		"-e", "robots=on", "--tries=1", "--timeout=10", "-P", out, "--no-verbose", "-i", seeds}
	if web.caPath != "" {
		wargs = append(wargs, "--ca-certificate="+web.caPath)
	}
	args := ns.wrap(wargs)
	res.Command = unshare + " " + strings.Join(args, " ")
	var robots atomic.Int64
	pr := runMeasured(ctx, procSpec{
		name: unshare, args: args, bound: o.TimeBound, every: o.Progress, stop: syscall.SIGTERM,
		env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir, "LC_ALL=C"},
		onLine: func(l string, pages *atomic.Int64) {
			switch classifyWget(l) {
			case wgetPage, wgetError:
				pages.Add(1)
			case wgetRobots:
				robots.Add(1)
			}
		},
	})
	res.fromProc(pr)
	if pr.stopped || (pr.err != nil && strings.Contains(pr.err.Error(), "exit status 8")) {
		res.Error = "" // exit 8: some server answered with an error (404s); expected
	}
	res.Pages = pr.pages
	res.Robots = robots.Load()
	var files int64
	_ = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && d.Name() != "robots.txt" {
			files++
		}
		return nil
	})
	res.PagesChecked = files
	res.BytesWritten = dirBytes(out)
	res.Notes = append(res.Notes, "wget is single-threaded and --wait applies between all its requests, so it never exceeds 1/host-delay pages/s; it obeys the robots.txt group \"*\", not petrel's, so it may see fewer pages; bounded by time only (no page limit); rusage covers wget through unshare's wait")
	return res
}

// namespace holds the files bind-mounted over /etc in wget's namespace.
type namespace struct {
	hosts, nsswitch, resolv string
}

// wrap returns the unshare arguments that run cmd in the namespace.
func (n namespace) wrap(cmd []string) []string {
	script := `mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/nsswitch.conf && mount --bind "$3" /etc/resolv.conf && shift 3 && exec "$@"`
	return append([]string{"--mount", "--fork", "sh", "-c", script, "sh", n.hosts, n.nsswitch, n.resolv}, cmd...)
}

// Addresses of the decoy name server of the namespace check.
const decoyDNS = "127.53.53.53"

// prepareNamespace writes the namespace's files and proves that a name is
// resolved there from the hosts file only: present must resolve, a name
// missing from the hosts file must fail at once, and a decoy name server
// on loopback, the only one resolv.conf names, must receive no packet.
func prepareNamespace(ctx context.Context, unshare, hostsPath, present, dir string) (namespace, error) {
	ns := namespace{hosts: hostsPath, nsswitch: filepath.Join(dir, "nsswitch.conf"), resolv: filepath.Join(dir, "resolv.conf")}
	if err := os.WriteFile(ns.nsswitch, []byte("hosts: files\n"), 0o644); err != nil {
		return ns, err
	}
	if err := os.WriteFile(ns.resolv, []byte("nameserver "+decoyDNS+"\noptions timeout:1 attempts:1\n"), 0o644); err != nil {
		return ns, err
	}
	return ns, checkNamespace(ctx, unshare, ns, present)
}

// checkNamespace runs getent in the namespace; see prepareNamespace.
func checkNamespace(ctx context.Context, unshare string, ns namespace, present string) error {
	dns, err := listenDecoy()
	if err != nil {
		return err
	}
	defer dns.Close()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	missing := "benchcrawl-absent-name.test"
	script := []string{"sh", "-c", `getent hosts "$1" || exit 3; if getent hosts "$2"; then exit 4; fi; exit 0`, "sh", present, missing}
	cmd := exec.CommandContext(cctx, unshare, ns.wrap(script)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		return fmt.Errorf("namespace check (%s): %w: %s", took.Round(time.Millisecond), err, strings.TrimSpace(string(out)))
	}
	if n := dns.packets(200 * time.Millisecond); n > 0 {
		return fmt.Errorf("namespace check: the decoy name server got %d packets", n)
	}
	if took > 5*time.Second {
		return fmt.Errorf("namespace check: a missing name took %s to fail (a resolver was consulted)", took)
	}
	if !strings.Contains(string(out), present) {
		return fmt.Errorf("namespace check: %s did not resolve from the hosts file: %s", present, out)
	}
	return nil
}
