package benchscale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/petrel-crawler/petrel/internal/benchcrawl"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// maxSamples bounds the samples of a run (a day at one every 5 s).
const maxSamples = 17280

// Bounds of the phases after N is reached.
const (
	checkpointWait = 15 * time.Minute // for the checkpoint asked at N
	stopWait       = 15 * time.Minute // for the clean stop
	recoverWait    = 15 * time.Minute // for the first page after a restart
)

// Run runs the benchmark and writes the report as JSON to jsonOut and as a
// table to tableOut (either may be nil), and the plot to opts.Plot when
// set.
func Run(ctx context.Context, opts Options, jsonOut, tableOut io.Writer) error {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	rep, err := run(ctx, o)
	if err != nil {
		return err
	}
	return benchcrawl.WriteReport(rep, jsonOut, tableOut, o.Plot, func(path string) error { return writePlotFile(path, rep) })
}

// child is a running process of the benchmark.
type child struct {
	cmd  *exec.Cmd
	out  *benchcrawl.LineWriter
	done chan struct{}
	err  error
}

// start runs name with args in its own process group.
func start(name string, args []string, onLine func(string)) (*child, error) {
	c := &child{cmd: exec.Command(name, args...), out: benchcrawl.NewLineWriter(onLine), done: make(chan struct{})}
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("benchscale: start %s: %w", name, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		c.out.Flush()
		close(c.done)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// signal sends sig to the child's process group.
func (c *child) signal(sig syscall.Signal) { _ = syscall.Kill(-c.pid(), sig) }

// wait waits up to d for the child to exit, then kills its group; it
// reports whether the child exited in time.
func (c *child) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
		c.signal(syscall.SIGKILL)
		return true
	case <-t.C:
		c.signal(syscall.SIGKILL)
		<-c.done
		return false
	}
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// lastLines returns the child's last n lines joined.
func (c *child) lastLines(n int) string {
	l := c.out.Lines()
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, " | ")
}

// web is the running generated web.
type web struct {
	*child
	seeds, dns string
}

// startWeb runs "petrel testweb --lazy" and waits for its files.
func startWeb(ctx context.Context, o Options, dir string) (*web, error) {
	args := []string{"testweb", "--lazy", "--out", dir, "--web-first-ip", o.FirstIP.String(),
		"--web-port", strconv.Itoa(o.Port), "--web-seed", strconv.FormatInt(o.Seed, 10)}
	for _, f := range []struct {
		name string
		v    int
	}{{"--web-hosts", o.Hosts}, {"--web-pages", o.PagesPerHost}, {"--web-ips", o.Addrs}, {"--web-links", o.LinksPerPage}} {
		if f.v > 0 {
			args = append(args, f.name, strconv.Itoa(f.v))
		}
	}
	ready := make(chan struct{}, 1)
	c, err := start(o.Petrel, args, func(l string) {
		if strings.HasPrefix(l, "testweb: generated web") {
			select {
			case ready <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		return nil, err
	}
	w := &web{child: c, seeds: filepath.Join(dir, "seeds.txt")}
	t := time.NewTimer(o.WebStartTimeout)
	defer t.Stop()
	select {
	case <-ready:
	case <-c.done:
		return nil, fmt.Errorf("benchscale: the web exited at start: %s", c.lastLines(5))
	case <-t.C:
		c.wait(0)
		return nil, fmt.Errorf("benchscale: the web did not start within %s (--web-start-timeout)", o.WebStartTimeout)
	case <-ctx.Done():
		c.wait(0)
		return nil, fmt.Errorf("benchscale: %w", ctx.Err())
	}
	b, err := os.ReadFile(filepath.Join(dir, "dns"))
	if err != nil {
		c.wait(0)
		return nil, fmt.Errorf("benchscale: the web's DNS address: %w", err)
	}
	w.dns = strings.TrimSpace(string(b))
	return w, nil
}

// run does the work of Run.
func run(ctx context.Context, o Options) (*Report, error) {
	work := o.WorkDir
	if work == "" {
		d, err := os.MkdirTemp("", "petrel-benchscale-")
		if err != nil {
			return nil, fmt.Errorf("benchscale: work directory: %w", err)
		}
		work = d
		if !o.Keep {
			defer os.RemoveAll(d)
		}
	}
	crawlDir := filepath.Join(work, "crawl")
	resumed, err := prepareCrawlDir(o, crawlDir)
	if err != nil {
		return nil, err
	}
	g, err := testweb.NewGen(testweb.GenConfig{Hosts: o.Hosts, PagesPerHost: o.PagesPerHost, Addrs: o.Addrs,
		LinksPerPage: o.LinksPerPage, Seed: o.Seed, Port: 80})
	if err != nil {
		return nil, err
	}
	gc := g.Config()
	ul := g.URLLengths(20000, 1)
	rep := &Report{
		Date: time.Now().UTC().Format(time.RFC3339), Machine: benchcrawl.ThisMachine(), N: o.Known,
		HostDelay: o.HostDelay.String(), IPDelay: o.IPDelay.String(),
		Web: WebShape{Hosts: gc.Hosts, PagesPerHost: gc.PagesPerHost, Addrs: gc.Addrs, LinksPerPage: gc.LinksPerPage,
			URLMeanBytes: ul.Mean, URLP50Bytes: ul.P50, URLP90Bytes: ul.P90},
	}
	if resumed != "" {
		rep.Notes = append(rep.Notes, resumed)
	}
	if o.Port != 80 {
		rep.Notes = append(rep.Notes, "web not on port 80: every URL carries its port, longer than the lengths stated")
	}
	o.Log.Info("benchscale: starting the generated web", "hosts", gc.Hosts, "pages_per_host", gc.PagesPerHost, "addresses", gc.Addrs)
	w, err := startWeb(ctx, o, filepath.Join(work, "web"))
	if err != nil {
		return nil, err
	}
	defer func() {
		w.signal(syscall.SIGTERM)
		w.wait(10 * time.Second)
	}()
	progress := min(o.Every, 2*time.Second)
	args := append([]string{"crawl", "--dir", crawlDir, "--seeds", w.seeds, "--allow-private",
		"--system-dns=true", "--dns-server", w.dns,
		"--host-delay", o.HostDelay.String(), "--ip-delay", o.IPDelay.String(),
		"--progress", progress.String(), "--checkpoint-every", o.CheckpointEvery.String()}, o.CrawlArgs...)
	rep.Command = o.Petrel + " " + strings.Join(args, " ")
	webCPU0, _ := benchcrawl.ProcCPU(w.pid())
	s := &sampler{crawlDir: crawlDir, start: time.Now(), webPID: w.pid(), webCPU0: webCPU0}
	c, err := start(o.Petrel, args, nil)
	if err != nil {
		return nil, err
	}
	defer c.wait(0)
	o.Log.Info("benchscale: crawling", "until_known", o.Known, "bound", o.TimeBound, "dir", crawlDir)
	if err := crawlUntil(ctx, o, rep, s, c); err != nil {
		return nil, err
	}
	rep.summarize(o.Known, s.peakRSS)
	if err := afterN(ctx, o, rep, s, c, args, crawlDir); err != nil {
		rep.Notes = append(rep.Notes, err.Error())
	}
	counts := filepath.Join(crawlDir, "state", "counts")
	if fi, err := os.Stat(counts); err == nil {
		rep.Summary.CountsFileBytes = fi.Size()
		if rep.Summary.CountsKeys, rep.Summary.CountsMax, err = readCounts(counts); err != nil {
			rep.Notes = append(rep.Notes, err.Error())
		}
	}
	for _, f := range []struct {
		name string
		to   **FilterFigures
	}{{"payload-digests", &rep.Summary.PayloadFilter}, {"text-digests", &rep.Summary.TextFilter}} {
		if ff, err := readFilter(filepath.Join(crawlDir, "state", f.name)); err == nil {
			*f.to = &ff
		} else if !errors.Is(err, os.ErrNotExist) {
			rep.Notes = append(rep.Notes, err.Error())
		}
	}
	w.signal(syscall.SIGTERM)
	w.wait(10 * time.Second)
	for _, l := range w.out.Lines() {
		if strings.HasPrefix(l, "testweb: served") {
			rep.Web.Served = strings.TrimPrefix(l, "testweb: ")
		}
	}
	return rep, nil
}

// prepareCrawlDir empties crawlDir for a new crawl, or with o.Resume
// checks that it holds one and returns a note of where it stood.
func prepareCrawlDir(o Options, crawlDir string) (string, error) {
	if !o.Resume {
		if err := os.RemoveAll(crawlDir); err != nil {
			return "", fmt.Errorf("benchscale: work directory: %w", err)
		}
		return "", nil
	}
	if _, err := os.Stat(filepath.Join(crawlDir, "state")); err != nil {
		return "", fmt.Errorf("benchscale: nothing to resume in %s: %w", crawlDir, err)
	}
	m, err := readProgress(crawlDir)
	if err != nil {
		return fmt.Sprintf("resumed the crawl in %s", crawlDir), nil
	}
	return fmt.Sprintf("resumed the crawl in %s at %d known, %d pages", crawlDir, m["SieveNew"], m["Fetched"]), nil
}

// crawlUntil samples the crawl until N URLs are known, the time bound
// passes, the crawl ends or ctx is done.
func crawlUntil(ctx context.Context, o Options, rep *Report, s *sampler, c *child) error {
	tick := time.NewTicker(o.Every)
	defer tick.Stop()
	bound := time.NewTimer(o.TimeBound)
	defer bound.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("benchscale: %w", ctx.Err())
		case <-bound.C:
			rep.Notes = append(rep.Notes, fmt.Sprintf("N not reached within the time bound %s", o.TimeBound))
			return nil
		case <-c.done:
			if len(rep.Samples) == 0 {
				return fmt.Errorf("benchscale: the crawl exited: %v: %s", c.err, c.lastLines(5))
			}
			rep.Notes = append(rep.Notes, fmt.Sprintf("the crawl ended before N was reached (%v): %s", c.err, c.lastLines(3)))
			return nil
		case now := <-tick.C:
			sm, err := s.take(c.pid(), now)
			if err != nil {
				continue // exiting; the done case reports it
			}
			if len(rep.Samples) < maxSamples {
				rep.Samples = append(rep.Samples, sm)
			}
			if len(rep.Samples)%12 == 0 {
				o.Log.Info("benchscale: sample", "t_s", int(sm.T), "pages", sm.Pages, "known", sm.Known,
					"pages_per_s", int(sm.PagesPerS), "rss_mib", int(mib(sm.RSS)), "disk_mib", int(mib(sm.Disk)))
			}
			if sm.Known >= o.Known {
				return nil
			}
		}
	}
}

// afterN takes the checkpoint at N and then stops the crawl, or kills and
// recovers it.
func afterN(ctx context.Context, o Options, rep *Report, s *sampler, c *child, args []string, crawlDir string) error {
	if c.exited() {
		return nil
	}
	m, err := readProgress(crawlDir)
	if err != nil {
		return fmt.Errorf("checkpoint at N not taken: %w", err)
	}
	before := m["Checkpoints"]
	o.Log.Info("benchscale: N reached; asking for a checkpoint", "known", m["SieveNew"])
	c.signal(syscall.SIGUSR1)
	deadline := time.Now().Add(checkpointWait)
	for m["Checkpoints"] <= before {
		if time.Now().After(deadline) || c.exited() || ctx.Err() != nil {
			return fmt.Errorf("the checkpoint asked at N did not complete within %s", checkpointWait)
		}
		time.Sleep(250 * time.Millisecond)
		if mm, err := readProgress(crawlDir); err == nil {
			m = mm
		}
	}
	cp := Checkpoint{Known: m["SieveNew"], Queued: m["Queued"] + m["Ready"], PauseS: float64(m["CheckpointPauseNano"]) / 1e9, AtN: true}
	rep.Summary.Checkpoints = append(rep.Summary.Checkpoints, cp)
	rep.Summary.CheckpointPauseS = cp.PauseS
	o.Log.Info("benchscale: checkpoint at N", "pause_s", cp.PauseS, "queued", cp.Queued)
	if !o.Recover {
		t0 := time.Now()
		c.signal(syscall.SIGINT)
		if !c.wait(stopWait) {
			return fmt.Errorf("the clean stop did not finish within %s", stopWait)
		}
		rep.Summary.StopS = time.Since(t0).Seconds()
		rep.Summary.DigestFilters = filterLine(c)
		return nil
	}
	c.signal(syscall.SIGKILL)
	c.wait(time.Minute)
	os.Remove(filepath.Join(crawlDir, "state", "progress.json"))
	t0 := time.Now()
	r, err := start(o.Petrel, args, nil)
	if err != nil {
		return err
	}
	defer r.wait(0)
	var first int64 = -1
	for {
		if time.Since(t0) > recoverWait || ctx.Err() != nil {
			return fmt.Errorf("no page fetched within %s of the restart after kill -9", recoverWait)
		}
		if r.exited() {
			return fmt.Errorf("the restarted crawl exited: %v: %s", r.err, r.lastLines(5))
		}
		time.Sleep(100 * time.Millisecond)
		mm, err := readProgress(crawlDir)
		if err != nil {
			continue
		}
		if first < 0 {
			first = mm["Fetched"]
			rep.Summary.RecoverOpenS = time.Since(t0).Seconds()
			continue
		}
		if mm["Fetched"] > first {
			rep.Summary.RecoverS = time.Since(t0).Seconds()
			break
		}
	}
	o.Log.Info("benchscale: recovered", "open_s", rep.Summary.RecoverOpenS, "first_page_s", rep.Summary.RecoverS)
	t1 := time.Now()
	r.signal(syscall.SIGINT)
	if !r.wait(stopWait) {
		return errors.New("the restarted crawl did not stop in time")
	}
	rep.Summary.StopS = time.Since(t1).Seconds()
	rep.Summary.DigestFilters = filterLine(r)
	return nil
}

// filterLine returns the crawl summary's line on the digest filters.
func filterLine(c *child) string {
	for _, l := range c.out.Lines() {
		if strings.Contains(l, "digest filters") {
			return l
		}
	}
	return ""
}
