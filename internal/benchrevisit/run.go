// Package benchrevisit is "petrel bench revisit": it crawls the changing
// synthetic web (testweb with a ChangeDay) with petrel crawl --revisit
// once per revisit policy, at the same budget, each on a fresh web of the
// same seed, and judges each crawl from the web's request log alone:
// time-averaged freshness and age of the copies from the end of the first
// pass to the stop (testweb.Web.Freshness), revisits a second, the body
// bytes a revisit cost against those it would have cost without
// validators, and the requests that came sooner than the politeness
// delays allow.
package benchrevisit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// Options configure a run. Durations are real time; the web's day lasts Day.
type Options struct {
	Petrel             string   // the petrel binary
	Policies           []string // revisit policies, in order
	Budget             float64  // --revisit-budget, fetches per second
	Day                time.Duration
	Duration           time.Duration // each crawl's length
	Hosts, Pages       int
	HostDelay, IPDelay time.Duration
	Min, Max           time.Duration // --revisit-min, --revisit-max
	Dir                string        // scratch directory
	FirstIP            netip.Addr    // the first policy's web; the next ones take the next /24s
}

// Result is one policy's crawl judged.
type Result struct {
	Policy     string
	F          testweb.Freshness
	Window     time.Duration // from the end of the first pass to the stop
	Rate       float64       // revisits a second in the window
	Violations int           // requests sooner than the host or IP delay allows
}

// Run crawls once per policy and writes a Markdown table to out.
func Run(ctx context.Context, o Options, out, log io.Writer) error {
	var res []Result
	for i, p := range o.Policies {
		ip := o.FirstIP.As4()
		ip[2] += byte(i)
		r, err := crawl(ctx, o, p, netip.AddrFrom4(ip), filepath.Join(o.Dir, p), log)
		if err != nil {
			return fmt.Errorf("bench revisit: %s: %w", p, err)
		}
		res = append(res, r)
		fmt.Fprintf(log, "%s: freshness %.3f, %d revisits\n", p, r.F.Freshness, r.F.Revisits)
	}
	report(out, o, res)
	return nil
}

// crawl runs one policy's crawl and judges it.
func crawl(ctx context.Context, o Options, policy string, ip netip.Addr, dir string, log io.Writer) (Result, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := testweb.Start(wctx, testweb.Config{Hosts: o.Hosts, PagesPerHost: o.Pages, Seed: 1, ChangeDay: o.Day, FirstIP: ip})
	if err != nil {
		return Result{}, err
	}
	defer w.Close()
	hosts, seeds, err := w.WriteFiles(dir)
	if err != nil {
		return Result{}, err
	}
	cmd := exec.CommandContext(ctx, o.Petrel, "crawl", "--dir", filepath.Join(dir, "crawl"), "--hosts", hosts, "--seeds", seeds,
		"--allow-private", "--system-dns=false", "--progress", "0", "--host-delay", o.HostDelay.String(), "--ip-delay", o.IPDelay.String(),
		"--revisit", "--revisit-policy", policy, "--revisit-budget", fmt.Sprint(o.Budget),
		"--revisit-min", o.Min.String(), "--revisit-max", o.Max.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return Result{}, err
	}
	select {
	case <-time.After(o.Duration):
	case <-ctx.Done():
	}
	stop := time.Now()
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		return Result{}, fmt.Errorf("petrel crawl: %v\n%s", err, stderr.String())
	}
	fmt.Fprint(log, lastLines(stderr.String(), 3))
	hits := w.Hits()
	from := firstPassEnd(w, hits)
	r := Result{Policy: policy, F: w.Freshness(hits, from, stop), Window: stop.Sub(from),
		Violations: violations(hits, o.HostDelay, o.IPDelay)}
	r.Rate = float64(r.F.Revisits) / r.Window.Seconds()
	return r, nil
}

// firstPassEnd is when the last changing page got its first 200.
func firstPassEnd(w *testweb.Web, hits []testweb.Hit) time.Time {
	seen := map[string]bool{}
	var end time.Time
	for _, h := range hits {
		k := h.Host + " " + h.Path
		if h.Status != 200 || !w.Changing(h.Host, h.Path) || seen[k] {
			continue
		}
		seen[k] = true
		if h.End.After(end) {
			end = h.End
		}
	}
	return end
}

// violations counts the requests that started sooner after the end of the
// previous one to their host (or IP) than the host (or IP) delay, less 8 ms.
func violations(hits []testweb.Hit, host, ip time.Duration) int {
	const tol = 8 * time.Millisecond
	n := 0
	for _, by := range []func(testweb.Hit) string{
		func(h testweb.Hit) string { return "h " + h.Host },
		func(h testweb.Hit) string { return "i " + h.IP.String() },
	} {
		groups := map[string][]testweb.Hit{}
		for _, h := range hits {
			groups[by(h)] = append(groups[by(h)], h)
		}
		for k, hs := range groups {
			d := host
			if strings.HasPrefix(k, "i ") {
				d = ip
			}
			sort.Slice(hs, func(i, j int) bool { return hs[i].Start.Before(hs[j].Start) })
			for i := 1; i < len(hs); i++ {
				if hs[i].Start.Sub(hs[i-1].End) < d-tol {
					n++
				}
			}
		}
	}
	return n
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n") + "\n"
}

// report writes the table.
func report(out io.Writer, o Options, res []Result) {
	fmt.Fprintf(out, "Changing web: %d hosts × %d pages, a day lasts %v; mix: %s.\n", o.Hosts, o.Pages, o.Day, testweb.ChangeMix)
	fmt.Fprintf(out, "Each crawl %v, budget %g revisits/s, --revisit-min %v (the anchors' hour), --revisit-max %v, host delay %v, IP delay %v.\n\n",
		o.Duration, o.Budget, o.Min, o.Max, o.HostDelay, o.IPDelay)
	fmt.Fprintln(out, "| policy | pages | window | freshness | mean age | revisits/s | 304 share | body bytes/revisit | without validators | saved | politeness violations |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range res {
		f := r.F
		per := func(b int64) float64 { return float64(b) / float64(max(f.Validated, 1)) }
		saved := 0.0
		if f.FullBytes > 0 {
			saved = 1 - float64(f.BodyBytes)/float64(f.FullBytes)
		}
		fmt.Fprintf(out, "| %s | %d | %v | %.3f | %v | %.2f | %.0f %% | %.0f | %.0f | %.0f %% | %d |\n", r.Policy, f.Pages, r.Window.Round(time.Second),
			f.Freshness, f.Age.Round(time.Millisecond), r.Rate, 100*float64(f.NotMod)/float64(max(f.Revisits, 1)), per(f.BodyBytes), per(f.FullBytes), 100*saved, r.Violations)
	}
}
